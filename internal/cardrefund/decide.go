package cardrefund

import (
	"errors"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/lifecycle"
)

// Config tunes the lifecycle.
type Config struct {
	// NotDoneAfter: a bank's record that holds no such refund is believed
	// (the refund failed) only this long after the call was sent: a call
	// whose answer never came may still be landing.
	NotDoneAfter time.Duration
	// CheckBudget: a refund still unknown this long after the call goes to
	// an admin (needs_review), its money still held.
	CheckBudget time.Duration
	// HoldFor is how long the wallet's hold is made for: longer than any
	// card refund stays open, so that it never expires under a refund the
	// bank may have made (the hold ends by the refund's own moves, never
	// by time; the ledger's sweep skips it). A shorter one would refuse
	// the capture of a refund an admin confirms late, and leave only the
	// release: money back in the wallet that the card also received.
	HoldFor time.Duration
	// ReverseMargin: a reverse is offered, and sent, only while at least
	// this much of its window is left (the call itself takes time, and our
	// clock is not the bank's).
	ReverseMargin time.Duration
	// Lease is how long an actor holds a card refund while it talks to
	// the bank about it: one call, and its recording.
	Lease time.Duration
	// BaseBackoff and MaxBackoff pace the worker's questions.
	BaseBackoff, MaxBackoff time.Duration
	// Batch and Concurrency size a worker round.
	Batch, Concurrency int
}

// DefaultConfig is the lifecycle's tuning unless a caller says otherwise.
func DefaultConfig() Config {
	return Config{
		NotDoneAfter:  24 * time.Hour,
		CheckBudget:   72 * time.Hour,
		HoldFor:       HoldLife,
		ReverseMargin: 5 * time.Minute,
		Lease:         2 * time.Minute,
		BaseBackoff:   30 * time.Second,
		MaxBackoff:    time.Hour,
		Batch:         50,
		Concurrency:   4,
	}
}

// Why says why a top-up cannot go back to the card now: a code the admin
// console translates ("cardrefund.why.<code>").
type Why string

const (
	WhyNotCredited   Why = "not_credited"   // the top-up was never credited
	WhyNoWay         Why = "no_way"         // the gateway offers no way back (Zibal)
	WhyNotConfigured Why = "not_configured" // the gateway could, but this instance is not set up for it (Zarinpal without its access token)
	WhySettled       Why = "settled"        // a reverse only before settle, and a credited top-up is settled (Mellat)
	WhyWindowClosed  Why = "window_closed"  // a reverse's window has closed
	WhyInProgress    Why = "in_progress"    // another card refund of the top-up is not resolved
	WhyAllRefunded   Why = "all_refunded"   // nothing of the top-up is left to refund
	WhyReversed      Why = "reversed"       // a reverse is of the whole sale, once, and there was one
	WhySpent         Why = "spent"          // the wallet holds less than the smallest refund (or, for a reverse, than the whole top-up)
)

// Facts are what an offer is decided from.
type Facts struct {
	TopUp TopUp
	// Open is the top-up's unresolved card refund, if any.
	Open *CardRefund
	// RefundedRials is what of the top-up its card refunds gave back.
	RefundedRials int64
	// AvailableRials is what the wallet may spend now.
	AvailableRials int64
	// Capabilities are the gateway's (its driver's record); Known false
	// when no driver of that name exists any more.
	Capabilities gateway.Capabilities
	Known        bool
	// CanRefund: the instance's gateway has the operation (Ops.Refund).
	CanRefund bool
	Now       time.Time
}

// Offer is what an admin may do: refund between MinRials and MaxRials
// (exactly MaxRials when Whole), or nothing, for Why.
type Offer struct {
	OK       bool
	Why      Why
	Method   Method
	MinRials int64
	MaxRials int64
	// Whole: a reverse gives back the whole top-up, no other amount.
	Whole bool
	// Until is when the offer ends (a reverse's window, less the margin);
	// zero when it does not.
	Until time.Time
	// LeftRials is what of the top-up is not yet refunded; SpentRials
	// what of it the wallet no longer holds (money spent cannot go back).
	LeftRials  int64
	SpentRials int64
}

// OfferFor decides what may go back to the card (pure): at most the
// smaller of the top-up's un-refunded amount and the wallet's available
// balance, by the gateway's own way, while it is open.
func OfferFor(f Facts, cfg Config) Offer {
	c := f.Capabilities.CardRefund
	left := max(f.TopUp.AmountRials-f.RefundedRials, 0)
	o := Offer{LeftRials: left, SpentRials: max(left-f.AvailableRials, 0)}
	switch {
	case !f.TopUp.Credited:
		o.Why = WhyNotCredited
		return o
	case !f.Known || c.Method == gateway.CardRefundNone || c.Method == 0:
		o.Why = WhyNoWay
		return o
	case c.Method == gateway.CardRefundReverse && c.BeforeSettleOnly && f.Capabilities.Settle.Kind == gateway.WindowWithin:
		// Settle is a step of ours before the credit: a credited top-up
		// of this gateway is settled, and no longer reversible.
		o.Why = WhySettled
		return o
	case !f.CanRefund:
		o.Why = WhyNotConfigured
		return o
	case f.Open != nil:
		o.Why = WhyInProgress
		return o
	}
	switch c.Method {
	case gateway.CardRefundReverse:
		o.Method, o.Whole = MethodReverse, true
		o.Until = reverseUntil(f.TopUp, f.Capabilities, cfg)
		switch {
		case !f.Now.Before(o.Until):
			o.Why = WhyWindowClosed
		case f.RefundedRials > 0:
			o.Why = WhyReversed
		case f.AvailableRials < f.TopUp.AmountRials:
			o.Why = WhySpent
		default:
			o.OK, o.MinRials, o.MaxRials = true, f.TopUp.AmountRials, f.TopUp.AmountRials
		}
	case gateway.CardRefundAPI:
		o.Method = MethodRefund
		o.MinRials, o.MaxRials = c.MinAmountRials, min(left, f.AvailableRials)
		switch {
		case left == 0:
			o.Why = WhyAllRefunded
		case left < c.MinAmountRials:
			o.Why = WhyAllRefunded // what is left is below the bank's smallest refund
		case o.MaxRials < c.MinAmountRials:
			o.Why = WhySpent
		case !c.Partial && f.AvailableRials < left:
			// A bank that refunds only the whole of what is left cannot
			// be sent less: the wallet must still hold all of it.
			o.Why = WhySpent
		default:
			o.OK = true
		}
		if !c.Partial {
			o.Whole, o.MinRials, o.MaxRials = true, left, left
		}
	}
	return o
}

// reverseUntil is when a reverse of t can last be sent: its window counts
// from the payment at the bank, which is after the top-up was made, so
// counting from the top-up's making closes it early, never late; less the
// margin.
func reverseUntil(t TopUp, caps gateway.Capabilities, cfg Config) time.Time {
	if caps.ReverseWindow.Kind != gateway.WindowWithin {
		return time.Time{}
	}
	return t.CreatedAt.Add(caps.ReverseWindow.Within - cfg.ReverseMargin)
}

// Check says whether the offer takes amount rials.
func (o Offer) Check(amount int64) error {
	switch {
	case !o.OK:
		return ErrNotOffered
	case amount < o.MinRials:
		return ErrAmountTooSmall
	case amount > o.MaxRials:
		return ErrAmountTooLarge
	}
	return nil
}

// Step is what a decision does to a card refund: move it To (with
// Reason), or, when Stay, leave it as it is and ask again at NextCheck.
type Step struct {
	Stay      bool
	To        Status
	Reason    Reason
	Code      *int
	NextCheck time.Time
}

// BeforeSend decides, for a held card refund about to be sent, whether it
// may still go (pure): its reverse window open, its gateway able.
func BeforeSend(c CardRefund, t TopUp, caps gateway.Capabilities, canRefund bool, now time.Time, cfg Config) (Step, bool) {
	switch {
	case !canRefund:
		return Step{To: StatusFailed, Reason: ReasonUnavailable}, false
	case c.Method == MethodReverse && !now.Before(reverseUntil(t, caps, cfg)):
		return Step{To: StatusFailed, Reason: ReasonWindowClosed}, false
	}
	return Step{}, true
}

// AfterCall decides what the bank's answer to the call means (pure): its
// acceptance is a refund made; its refusal a refund failed; a call
// certainly never sent goes back to held, to be sent later (or, past the
// budget, fails: nothing was sent); anything else is unknown, and the
// bank's record is asked later.
func AfterCall(c CardRefund, err error, now time.Time, cfg Config, jitter float64) Step {
	var rej *gateway.RejectedError
	switch {
	case err == nil:
		return Step{To: StatusRefunded, Reason: ReasonBankAccepted}
	case errors.As(err, &rej):
		code := rej.Code
		return Step{To: StatusFailed, Reason: ReasonBankRefused, Code: &code}
	case errors.Is(err, gateway.ErrRefundNotSent) || errors.Is(err, gateway.ErrUnavailable):
		return Step{To: StatusHeld, Reason: ReasonNotSent, NextCheck: now.Add(backoff(c.Attempts, cfg, jitter))}
	}
	return Step{Stay: true, NextCheck: now.Add(backoff(c.Checks+1, cfg, jitter))}
}

// NeverSent decides for a held card refund whose calls were never sent
// for longer than the budget: it fails (nothing was sent, so nothing can
// have happened), the money back to the wallet.
func NeverSent(c CardRefund, now time.Time, cfg Config) (Step, bool) {
	if now.Sub(c.CreatedAt) >= cfg.CheckBudget {
		return Step{To: StatusFailed, Reason: ReasonNotSent}, true
	}
	return Step{}, false
}

// AfterStatus decides what the bank's record of a refund whose answer
// never came says (pure): made, the refund is done; not made, it failed,
// but only once the call is long past (NotDoneAfter); differing figures,
// or no definite word within the budget, go to an admin.
func AfterStatus(c CardRefund, st gateway.RefundState, err error, now time.Time, cfg Config, jitter float64) Step {
	since := time.Duration(0)
	if c.SubmittedAt != nil {
		since = now.Sub(*c.SubmittedAt)
	}
	next := now.Add(backoff(c.Checks+1, cfg, jitter))
	if err == nil {
		code := st.Code
		switch st.Outcome {
		case gateway.RefundDone:
			return Step{To: StatusRefunded, Reason: ReasonBankConfirmed, Code: &code}
		case gateway.RefundDiffers:
			return Step{To: StatusNeedsReview, Reason: ReasonBankDiffers, Code: &code}
		case gateway.RefundNotDone:
			if since >= cfg.NotDoneAfter {
				return Step{To: StatusFailed, Reason: ReasonNotAtBank, Code: &code}
			}
			// Not yet believed: ask again once it may be.
			if c.SubmittedAt != nil {
				next = maxTime(next, c.SubmittedAt.Add(cfg.NotDoneAfter))
			}
		}
	}
	if since >= cfg.CheckBudget {
		return Step{To: StatusNeedsReview, Reason: ReasonBudgetSpent}
	}
	return Step{Stay: true, NextCheck: next}
}

// NotMadeFrom is when an admin's close of c as not made may first be
// believed (pure): as the worker's (AfterStatus), NotDoneAfter after the
// call was sent (SubmittedAt, written with each attempt). Before it, the
// bank's record showing ours not made (nothing, or figures short of ours)
// may be a refund it accepted and has not counted yet. Zero when no call
// was ever sent (no SubmittedAt): nothing can land, it closes at once.
func NotMadeFrom(c CardRefund, cfg Config) time.Time {
	if c.SubmittedAt == nil {
		return time.Time{}
	}
	return c.SubmittedAt.Add(cfg.NotDoneAfter)
}

// backoff is the delay before the next question after n attempts
// (lifecycle.Backoff), at least a second.
func backoff(n int, cfg Config, jitter float64) time.Duration {
	return max(lifecycle.Backoff(max(n, 1), cfg.BaseBackoff, cfg.MaxBackoff, jitter), time.Second)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
