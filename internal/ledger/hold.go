package ledger

import (
	"fmt"
	"time"
)

// HoldStatus is where a hold stands. It ends exactly once: captured,
// released or expired.
type HoldStatus string

// The statuses of a hold.
const (
	HoldOpen     HoldStatus = "open"
	HoldCaptured HoldStatus = "captured"
	HoldReleased HoldStatus = "released"
	HoldExpired  HoldStatus = "expired"
)

// CheckHold checks a hold request before anything is written: a positive
// amount, a reason and a reference, and a time to expire after the time it
// is made (a hold born expired would only wait for the sweep).
func CheckHold(r HoldRequest) error {
	if r.AmountRials <= 0 {
		return fmt.Errorf("%w: hold of %d rials", ErrBadAmount, r.AmountRials)
	}
	if r.Reason == "" || r.Reference == "" {
		return fmt.Errorf("ledger: a hold needs a reason and a reference")
	}
	if r.ExpiresAt.IsZero() || !r.ExpiresAt.After(r.Now) {
		return fmt.Errorf("ledger: hold %s %s expires at %s, not after it is made (%s)", r.Reason, r.Reference,
			r.ExpiresAt.UTC().Format(time.RFC3339), r.Now.UTC().Format(time.RFC3339))
	}
	return nil
}

// Hold reserves an amount of an account's balance for a reason until it
// is captured, released or expires. While open it counts in the account's
// held figure, so available = posted − held.
type Hold struct {
	ID            int64
	AccountID     int64
	AmountRials   int64
	Reason        string // what holds it: "charge", "withdrawal", "card_refund"
	Reference     string // the holder's id; (reason, reference) is unique
	Status        HoldStatus
	CapturedRials int64
	TransactionID *int64 // the capture's transaction
	ExpiresAt     time.Time
	CreatedAt     time.Time
	EndedAt       *time.Time
}

// HoldRequest asks for a hold.
type HoldRequest struct {
	AccountID   int64
	AmountRials int64
	Reason      string
	Reference   string
	ExpiresAt   time.Time
	Now         time.Time
}

// EndAction is what a caller asks of an open hold.
type EndAction int

// The ways to end a hold.
const (
	EndCapture EndAction = iota
	EndRelease
	EndExpire
)

// EndDecision is what ending a hold does, decided from the hold as it is
// (DecideEnd).
type EndDecision struct {
	// Apply: the hold is open and ends now, as To.
	Apply bool
	To    HoldStatus
	// Replay: the same ending happened before; answer with the hold as
	// it is (its first result).
	Replay bool
	// Err: the hold cannot end this way (ended otherwise, or a bad
	// amount).
	Err error
}

// DecideEnd is the pure decision of ending hold h by action a (a capture
// of captureRials) at now. A second capture or release of the same hold
// answers with the first result (whatever amount the second capture
// names); a capture after the hold's time has
// passed is refused (the hold expires, even before the worker sweeps it).
func DecideEnd(h Hold, a EndAction, captureRials int64, now time.Time) EndDecision {
	want := map[EndAction]HoldStatus{EndCapture: HoldCaptured, EndRelease: HoldReleased, EndExpire: HoldExpired}[a]
	if h.Status != HoldOpen {
		if h.Status == want {
			return EndDecision{Replay: true}
		}
		return EndDecision{Err: fmt.Errorf("%w: hold %d is %s", ErrHoldEnded, h.ID, h.Status)}
	}
	switch a {
	case EndCapture:
		if captureRials <= 0 || captureRials > h.AmountRials {
			return EndDecision{Err: fmt.Errorf("%w: capture %d of a hold of %d rials", ErrBadAmount, captureRials, h.AmountRials)}
		}
		if !now.Before(h.ExpiresAt) {
			return EndDecision{Apply: true, To: HoldExpired, Err: fmt.Errorf("%w: hold %d expired at %s", ErrHoldEnded, h.ID, h.ExpiresAt.UTC().Format(time.RFC3339))}
		}
	case EndExpire:
		if now.Before(h.ExpiresAt) {
			return EndDecision{Err: fmt.Errorf("ledger: hold %d is not due until %s", h.ID, h.ExpiresAt.UTC().Format(time.RFC3339))}
		}
	}
	return EndDecision{Apply: true, To: want}
}
