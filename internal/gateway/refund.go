package gateway

import (
	"errors"
	"fmt"
)

// CardRefundMethod is how a gateway gives a verified payment's money back
// to the payer's card (a card refund).
type CardRefundMethod int

const (
	_ CardRefundMethod = iota // 0: unset (Driver.Check refuses it)
	// CardRefundNone: no way the references confirm (Zibal): the action
	// is offered to nobody, with CardRefund.Why.
	CardRefundNone
	// CardRefundReverse: the whole sale is reversed, within
	// Capabilities.ReverseWindow (SEP's ReverseTransaction; Mellat's
	// bpReversalRequest, only before settle).
	CardRefundReverse
	// CardRefundAPI: a refund API returns part or all of a payment, later
	// than any reverse window (Zarinpal's AddRefund).
	CardRefundAPI
)

// CardRefund is what Kifpool knows of a gateway's way back to the card.
type CardRefund struct {
	Method CardRefundMethod
	// MinAmountRials is the smallest refund the API takes (Zarinpal:
	// 20,000 rials); 0 for a reverse (always the whole sale).
	MinAmountRials int64
	// Partial: the API takes part of a payment, and several refunds of one
	// payment up to its amount (CardRefundAPI only).
	Partial bool
	// BeforeSettleOnly: a reverse is refused once the sale is settled
	// (Mellat): a top-up, credited only once settled, can no longer be.
	BeforeSettleOnly bool
	// Why says, for operators, why there is no way back (CardRefundNone).
	Why string
}

// check reports what is missing or contradictory in a driver's record.
func (r CardRefund) check(reverse Window) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("capability CardRefund: "+format, a...)) }
	switch r.Method {
	case CardRefundNone:
		if r.Why == "" {
			bad("no way back to the card needs a reason (Why)")
		}
	case CardRefundReverse:
		if reverse.Kind != WindowWithin {
			bad("a reverse needs ReverseWindow to be a limit")
		}
		if r.MinAmountRials != 0 || r.Partial {
			bad("a reverse is always the whole sale (no minimum, not partial)")
		}
	case CardRefundAPI:
		if r.MinAmountRials <= 0 {
			bad("a refund API needs its smallest amount")
		}
		if r.BeforeSettleOnly {
			bad("BeforeSettleOnly is a reverse's")
		}
	default:
		bad("Method unset")
	}
	return errs
}

// RefundInput is what a card refund is asked for, and asked about, with.
type RefundInput struct {
	// Payment is the verified payment as the top-up keeps it: its
	// authority, amount, order id and receipt (SEP's RefNum, Mellat's
	// SaleReferenceId), the receipt confirmed by the bank's verify.
	Payment VerifyInput
	// RefID is the bank's reference of the payment (verify's).
	RefID int64
	// AmountRials is this refund's amount (a reverse: the whole payment).
	AmountRials int64
	// RefundedRials is what was refunded of the payment before this
	// refund, as our records hold it (at most one refund of a payment is
	// in flight at a time, so it is the bank's figure too).
	RefundedRials int64
	// Reference is our card refund's public id, sent where the bank keeps
	// a description.
	Reference string
}

// RefundResult is the bank's acceptance of a refund.
type RefundResult struct {
	// BankReference is the bank's id of the refund ("" when it gives none).
	BankReference string
	Code          int
	// Status is the bank's own word on the refund's progress, for people
	// (Zarinpal's refund_status); "" when it says none.
	Status string
}

// RefundOutcome is what the bank says became of a refund whose answer
// never came (Ops.RefundStatus).
type RefundOutcome string

const (
	// RefundDone: the bank holds the refund as made.
	RefundDone RefundOutcome = "refunded"
	// RefundNotDone: the bank holds the payment as not refunded by it:
	// the refund did not happen (yet: the caller decides when a request
	// that never answered can no longer land).
	RefundNotDone RefundOutcome = "not_refunded"
	// RefundDiffers: the bank's figures match neither (another refund
	// made elsewhere, a partial amount): a person looks.
	RefundDiffers RefundOutcome = "differs"
)

// RefundState is the bank's definite word on a refund. Errors follow
// Gateway's contract.
type RefundState struct {
	Outcome RefundOutcome
	Code    int
	// RefundedRials is the payment's refunded total as the bank reports
	// it, when it reports one (Zarinpal's refund_amount); -1 when not.
	RefundedRials int64
}

// ErrRefundNotSent is wrapped by a refund's error when the refund was
// certainly not sent (a lookup before it failed): nothing happened at the
// bank, though the bank did not refuse either.
var ErrRefundNotSent = errors.New("refund not sent")
