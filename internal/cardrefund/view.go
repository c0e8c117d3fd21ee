package cardrefund

import "time"

// View is a card refund as partners see it: the "card_refund" of a
// topup.refunded webhook.
type View struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	AmountRials int64  `json:"amount_rials"`
	// Method is how the gateway gave the money back: "refund" (a refund
	// API) or "reverse" (the whole sale reversed).
	Method string `json:"method"`
	// TopUpRefundedRials is what of the top-up has gone back to the card
	// with this refund.
	TopUpRefundedRials int64      `json:"topup_refunded_rials"`
	CreatedAt          time.Time  `json:"created_at"`
	RefundedAt         *time.Time `json:"refunded_at"`
}

// ViewOf is c as partners see it, refunded at at (nil: not refunded).
func ViewOf(c CardRefund, at *time.Time) View {
	v := View{ID: c.PublicID, Status: string(c.Status), AmountRials: c.AmountRials, Method: string(c.Method),
		TopUpRefundedRials: c.RefundedBeforeRials, CreatedAt: c.CreatedAt.UTC()}
	if c.Status == StatusRefunded {
		v.TopUpRefundedRials += c.AmountRials
		if at != nil {
			t := at.UTC()
			v.RefundedAt = &t
		}
	}
	return v
}
