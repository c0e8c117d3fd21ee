package charge

import (
	"time"

	"github.com/kifpool/kifpool/internal/webhook"
)

// Action is what a caller asks of a charge.
type Action int

// The actions.
const (
	// ActConfirm: the payer pays (automatic) or authorizes (manual).
	ActConfirm Action = iota
	// ActCancelCheckout: the payer cancels at the checkout.
	ActCancelCheckout
	// ActCapture: the merchant captures an authorization.
	ActCapture
	// ActCancel: the merchant cancels (a checkout, or an authorization).
	ActCancel
	// ActExpire: the worker ends a checkout or an authorization past its
	// time.
	ActExpire
)

// Money is what a move does to the ledger.
type Money int

// The ledger movements of a move.
const (
	MoneyNone Money = iota
	// MoneyCharge: the amount from the payer's wallet to the merchant.
	MoneyCharge
	// MoneyHold: the amount held on the payer's wallet.
	MoneyHold
	// MoneyCapture: CaptureRials of the hold to the merchant, the rest
	// released.
	MoneyCapture
	// MoneyRelease: the hold released.
	MoneyRelease
	// MoneyExpire: the hold expired.
	MoneyExpire
)

// Decision is what a move does, decided from the charge as it is
// (Decide): pure, so that every rule is one table-tested function and the
// store only applies it.
type Decision struct {
	// Apply: the charge moves now to To, with Money and the webhook
	// event Event.
	Apply bool
	To    Status
	Money Money
	// CaptureRials is a capture's amount.
	CaptureRials int64
	Event        string
	// Replay: the same move happened before (a second confirm by the
	// same payer, a second capture or cancel): answer with the charge as
	// it is, its first result.
	Replay bool
	// Err: the move is refused. With Apply, the move is written all the
	// same (a charge found past its time expires) and the caller is told
	// Err.
	Err error
}

// Request is what Decide is asked: who, how much, when.
type Request struct {
	Action Action
	// PayerUserID is the payer of ActConfirm and ActCancelCheckout.
	PayerUserID int64
	// AmountRials is a capture's amount.
	AmountRials int64
	Now         time.Time
}

// Decide is the pure decision of request r on charge c.
func Decide(c Charge, r Request) Decision {
	switch r.Action {
	case ActConfirm:
		return decideConfirm(c, r)
	case ActCancelCheckout:
		return decideCancelCheckout(c, r)
	case ActCapture:
		return decideCapture(c, r)
	case ActCancel:
		return decideCancel(c, r)
	case ActExpire:
		return decideExpire(c, r)
	}
	return Decision{Err: ErrNotFound}
}

// expireNow is the move of a charge found past its time: it expires, and
// the caller is refused with ErrExpired.
func expireNow(money Money) Decision {
	return Decision{Apply: true, To: StatusExpired, Money: money, Event: webhook.TypeChargeExpired, Err: ErrExpired}
}

// checkoutDue: an unconfirmed checkout past its time.
func checkoutDue(c Charge, now time.Time) bool {
	return c.Status == StatusRequiresConfirmation && !now.Before(c.ExpiresAt)
}

// holdDue: an authorization past its hold's time.
func holdDue(c Charge, now time.Time) bool {
	return c.Status == StatusAuthorized && c.HoldExpiresAt != nil && !now.Before(*c.HoldExpiresAt)
}

// ended is the refusal of a charge that ended without money.
func ended(c Charge) error {
	if c.Status == StatusExpired {
		return ErrExpired
	}
	return ErrCanceled
}

func decideConfirm(c Charge, r Request) Decision {
	switch c.Status {
	case StatusRequiresConfirmation:
		if r.PayerUserID == c.MerchantUserID {
			return Decision{Err: ErrPayToSelf}
		}
		if checkoutDue(c, r.Now) {
			return expireNow(MoneyNone)
		}
		if c.Capture == CaptureManual {
			return Decision{Apply: true, To: StatusAuthorized, Money: MoneyHold, Event: webhook.TypeChargeAuthorized}
		}
		return Decision{Apply: true, To: StatusSucceeded, Money: MoneyCharge, CaptureRials: c.AmountRials,
			Event: webhook.TypeChargeSucceeded}
	case StatusAuthorized, StatusSucceeded:
		if c.PayerUserID == r.PayerUserID {
			return Decision{Replay: true} // two tabs, a double click: paid once
		}
		return Decision{Err: ErrPaidByAnother}
	}
	return Decision{Err: ended(c)}
}

func decideCancelCheckout(c Charge, r Request) Decision {
	switch c.Status {
	case StatusRequiresConfirmation:
		if checkoutDue(c, r.Now) {
			return expireNow(MoneyNone)
		}
		return Decision{Apply: true, To: StatusCanceled, Event: webhook.TypeChargeCanceled}
	case StatusCanceled:
		return Decision{Replay: true}
	case StatusExpired:
		return Decision{Err: ErrExpired}
	}
	if c.PayerUserID != r.PayerUserID {
		return Decision{Err: ErrPaidByAnother}
	}
	return Decision{Err: ErrNotCancelable}
}

func decideCapture(c Charge, r Request) Decision {
	switch c.Status {
	case StatusAuthorized:
		if holdDue(c, r.Now) {
			// Its time decides first: past the hold, any capture (a bad
			// amount too) finds it expired, and it is expired now.
			return expireNow(MoneyExpire)
		}
		if r.AmountRials <= 0 || r.AmountRials > c.AmountRials {
			return Decision{Err: ErrBadAmount}
		}
		return Decision{Apply: true, To: StatusSucceeded, Money: MoneyCapture, CaptureRials: r.AmountRials,
			Event: webhook.TypeChargeCaptured}
	case StatusSucceeded:
		if c.Capture != CaptureManual {
			return Decision{Err: ErrNotCapturable} // paid at its confirmation: nothing was ever held
		}
		// Captured once: a second capture of the same amount answers
		// with the first (as a hold's second capture does). Another
		// amount is not its replay: answered as captured, a merchant's
		// system would record a capture that never happened.
		if r.AmountRials <= 0 || r.AmountRials > c.AmountRials {
			return Decision{Err: ErrBadAmount}
		}
		if r.AmountRials != c.CapturedRials {
			return Decision{Err: ErrCapturedOtherAmount}
		}
		return Decision{Replay: true}
	case StatusRequiresConfirmation:
		return Decision{Err: ErrNotCapturable}
	}
	return Decision{Err: ended(c)}
}

func decideCancel(c Charge, r Request) Decision {
	switch c.Status {
	case StatusRequiresConfirmation:
		if checkoutDue(c, r.Now) {
			return expireNow(MoneyNone) // as the payer's moves: its time decides, not who comes first
		}
		return Decision{Apply: true, To: StatusCanceled, Event: webhook.TypeChargeCanceled}
	case StatusAuthorized:
		if holdDue(c, r.Now) {
			return expireNow(MoneyExpire)
		}
		return Decision{Apply: true, To: StatusCanceled, Money: MoneyRelease, Event: webhook.TypeChargeCanceled}
	case StatusCanceled:
		return Decision{Replay: true}
	case StatusExpired:
		return Decision{Err: ErrExpired}
	}
	return Decision{Err: ErrNotCancelable}
}

func decideExpire(c Charge, r Request) Decision {
	switch {
	case checkoutDue(c, r.Now):
		return Decision{Apply: true, To: StatusExpired, Event: webhook.TypeChargeExpired}
	case holdDue(c, r.Now):
		return Decision{Apply: true, To: StatusExpired, Money: MoneyExpire, Event: webhook.TypeChargeExpired}
	case c.Status == StatusExpired:
		return Decision{Replay: true}
	}
	return Decision{} // not due, or ended otherwise: nothing to do
}

// CheckRefund is the pure check of a refund of amountRials on c, before
// the guarded write that enforces it again.
func CheckRefund(c Charge, amountRials int64) error {
	if c.Status != StatusSucceeded {
		return ErrNotRefundable
	}
	if amountRials <= 0 || amountRials > MaxRials {
		return ErrBadAmount
	}
	if amountRials > c.RefundableRials() {
		return ErrRefundExceeds
	}
	return nil
}
