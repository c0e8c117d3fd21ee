package views

import (
	"time"

	"github.com/kifpool/kifpool/internal/charge"
)

// CheckoutView is the payer's checkout page of one charge.
type CheckoutView struct {
	PublicID     string
	MerchantName string
	Description  string
	AmountRials  int64
	// AvailableRials is the payer's available balance; ShortRials what
	// it lacks for the charge (0: enough).
	AvailableRials int64
	ShortRials     int64
	// TopUpRials is what "top up" offers and fills the form with: the
	// shortfall in whole tomans, at least the top-up minimum, at most its
	// maximum.
	TopUpRials int64
	// State is what the page offers: "open" (pay or cancel), "short"
	// (top up the difference, or cancel), "unconfirmed" (the payer
	// confirms their address first, or cancels), "own" (the merchant's own
	// charge), "paid" (automatic capture), "authorized" (manual),
	// "canceled", "expired", or "taken" (another payer's).
	State string
	// Token is the pay form's own token.
	Token string
	// ReturnURL is where the browser goes after (the merchant's
	// return_url with charge_id and status; "" none), and AutoReturn says
	// to go there at once (right after paying or canceling).
	ReturnURL  string
	ReturnHost string
	AutoReturn bool
	// ErrorKey is a refusal's one sentence.
	ErrorKey  string
	ErrorArgs []any
	// OrderID is the merchant's order id (shown to whoever may pay or
	// has paid it; "" to anyone else).
	OrderID string
	// Receipt is the outcome's details for the payer who confirmed it
	// (nil: not confirmed, or not by this payer).
	Receipt *CheckoutReceipt
}

// CheckoutReceipt is what the payer keeps of a charge they confirmed:
// what the merchant took of it (a manual capture may take less than the
// amount, the rest released), what came back, and when.
type CheckoutReceipt struct {
	CapturedRials int64
	RefundedRials int64
	ConfirmedAt   time.Time
	// HoldUntil is when an authorization not captured is released (nil:
	// not held).
	HoldUntil *time.Time
}

// OutcomeRials is the amount the outcome's sentence names: what was
// taken of a charge the payer paid, else its amount.
func (v CheckoutView) OutcomeRials() int64 {
	if v.State == "paid" && v.Receipt != nil {
		return v.Receipt.CapturedRials
	}
	return v.AmountRials
}

// Open reports whether the checkout may still be paid or canceled.
func (v CheckoutView) Open() bool { return v.State == "open" || v.State == "short" }

// MerchantView is the merchant's page: its balance and its charges.
type MerchantView struct {
	Name                                   string
	PostedRials, HeldRials, AvailableRials int64
	Status                                 string
	Statuses                               []string
	Rows                                   []ChargeRow
	NextCursor                             int64
	HasNewer                               bool
	// Charge is the one charge shown with its actions (nil: the list).
	Charge *ChargeDetail
	// Notice and ErrorKey are an action's outcome.
	NoticeKey string
	ErrorKey  string
	ErrorArgs []any
}

// ChargeRow is one charge on the merchant's page or the admin console.
type ChargeRow struct {
	PublicID      string
	OrderID       string
	Description   string
	Status        string
	Capture       string
	AmountRials   int64
	CapturedRials int64
	RefundedRials int64
	PayerEmail    string
	MerchantName  string
	MerchantEmail string
	CreatedAt     time.Time
}

// ChargeDetail is one charge with its refunds, events and the forms of
// the actions it allows.
type ChargeDetail struct {
	ChargeRow
	HoldExpiresAt *time.Time
	ExpiresAt     time.Time
	Refunds       []RefundRow
	Events        []ChargeEventRow
	// CanCapture, CanCancel and CanRefund say which forms it offers;
	// RefundToken is the refund form's own token.
	CanCapture, CanCancel, CanRefund bool
	RefundableRials                  int64
	RefundToken                      string
}

// RefundRow is one refund of a charge.
type RefundRow struct {
	PublicID    string
	AmountRials int64
	CreatedAt   time.Time
}

// ChargeEventRow is one line of a charge's history.
type ChargeEventRow struct {
	Type        string
	FromStatus  string
	ToStatus    string
	Actor       string
	AmountRials int64
	CreatedAt   time.Time
}

// checkoutClass is the status banner's style of a checkout's state.
func checkoutClass(state string) string {
	switch state {
	case "paid", "authorized":
		return "ok"
	case "canceled", "expired", "taken":
		return "failed"
	}
	return "pending"
}

// statusQuery is the merchant list's status filter as a query's part
// (sep: "?" or "&"; "" without a filter).
func statusQuery(status, sep string) string {
	if status == "" {
		return ""
	}
	return sep + "status=" + status
}

// ChargeRow is c as the pages list it.
func ChargeRowOf(c charge.Charge) ChargeRow {
	return ChargeRow{PublicID: c.PublicID, OrderID: c.OrderID, Description: c.Description, Status: string(c.Status),
		Capture: string(c.Capture), AmountRials: c.AmountRials, CapturedRials: c.CapturedRials, RefundedRials: c.RefundedRials,
		PayerEmail: c.PayerEmail, MerchantName: c.MerchantName, MerchantEmail: c.MerchantEmail, CreatedAt: c.CreatedAt}
}

// ChargeDetail is c with its refunds and history (the actions' forms
// are the caller's to allow).
func ChargeDetailOf(c charge.Charge, events []charge.Event) *ChargeDetail {
	d := &ChargeDetail{ChargeRow: ChargeRowOf(c), ExpiresAt: c.ExpiresAt, HoldExpiresAt: c.HoldExpiresAt,
		RefundableRials: c.RefundableRials()}
	for _, r := range c.Refunds {
		d.Refunds = append(d.Refunds, RefundRow{PublicID: r.PublicID, AmountRials: r.AmountRials, CreatedAt: r.CreatedAt})
	}
	for _, e := range events {
		d.Events = append(d.Events, ChargeEventRow{Type: e.Type, FromStatus: string(e.FromStatus), ToStatus: string(e.ToStatus),
			Actor: string(e.Actor), AmountRials: e.AmountRials, CreatedAt: e.CreatedAt})
	}
	return d
}
