package admin

import "time"

// CardRefundsView is the top-up page's "refund to card": what may go back
// to the payer's card now (or why nothing may), the form, and the
// top-up's card refunds.
type CardRefundsView struct {
	TopUpPublicID string
	// OK: the form is offered, for MinRials to MaxRials (exactly
	// MaxRials when Whole: a reverse of the whole sale), until Until
	// (when set). Why is the message key of why not.
	OK                 bool
	Why                string
	Method             string // "refund" or "reverse"
	MinRials, MaxRials int64
	Whole              bool
	Until              *time.Time
	// LeftRials is what of the top-up is not refunded yet; SpentRials
	// what of that the wallet no longer holds.
	LeftRials, SpentRials int64
	// The form as typed, and what was wrong with it (a message key and
	// its arguments), after a refused submit.
	Amount, Note string
	ErrorKey     string
	ErrorArgs    []any
	Refunds      []CardRefundRow
}

// CardRefundRow is one card refund of the top-up.
type CardRefundRow struct {
	PublicID    string
	Status      string
	Reason      string // in words
	Method      string
	AmountRials int64
	BankRef     string
	AdminEmail  string
	Note        string
	CreatedAt   time.Time
	ResolvedAt  *time.Time
	// UnderReview: an admin may ask the bank again, or close it.
	UnderReview bool
}

// cardRefundClass is the dot's colour class of a card refund's status.
func cardRefundClass(status string) string {
	switch status {
	case "refunded":
		return "ok"
	case "failed":
		return "failed"
	case "needs_review":
		return "review"
	}
	return "pending"
}
