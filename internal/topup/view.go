package topup

import "time"

// TopUpView is a top-up as partners see it: the body of the API's
// GET /api/v1/topups/{id}, and the "topup" of every webhook event (built
// by the payment store in the move's transaction). One type, so the two
// cannot drift apart.
type TopUpView struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	AmountRials int64  `json:"amount_rials"`
	// Gateway is the gateway the payment went to (a driver's name): the
	// one asked for, or the next healthy one when it was down.
	Gateway    string  `json:"gateway"`
	PaymentURL *string `json:"payment_url"`
	// PaymentForm, for a gateway whose bank page opens only by POST (SEP,
	// Mellat), is the form a browser posts to open it; absent otherwise.
	PaymentForm *PaymentForm `json:"payment_form,omitempty"`
	RefID       *int64       `json:"ref_id"`
	CreatedAt   time.Time    `json:"created_at"`
	CreditedAt  *time.Time   `json:"credited_at"`
}

// PaymentForm is a POST form to a bank page: its action and hidden fields.
type PaymentForm struct {
	Action string            `json:"action"`
	Fields map[string]string `json:"fields"`
}

// ViewOf is p as partners see it (its Public status). creditedAt is when its credit was
// booked (nil unless credited); payURL, when set, makes the bank's page
// URL of an authority (shown while the payment awaits the payer).
func ViewOf(p TopUp, creditedAt *time.Time, payURL func(authority string) string) TopUpView {
	v := TopUpView{ID: p.PublicID, Status: string(p.Status.Public()), AmountRials: p.AmountRials, Gateway: p.Gateway, CreatedAt: p.CreatedAt.UTC()}
	if p.Status == StatusAwaitingPayment && p.Authority != nil && payURL != nil {
		u := payURL(*p.Authority)
		v.PaymentURL = &u
	}
	if p.Status == StatusCredited {
		v.RefID = p.RefID
		if creditedAt != nil {
			t := creditedAt.UTC()
			v.CreditedAt = &t
		}
	}
	return v
}

// EventType is the webhook event a move to status to sends partners
// ("topup.credited", "topup.failed", "topup.needs_review"), or "" for a
// status that sends none. The payment store's one writer asks it on every
// move, so a new edge into one of these statuses sends its event with no
// code of its own.
func EventType(to Status) string {
	switch to {
	case StatusCredited:
		return "topup.credited"
	case StatusFailed:
		return "topup.failed"
	case StatusNeedsReview:
		return "topup.needs_review"
	}
	return ""
}
