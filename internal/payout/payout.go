// Package payout defines what a withdrawal needs from a payout provider
// (Zibal's wallet checkout, Jibit's Transferor, …): sending money to a
// Sheba, asking where a payout stands by our own id, and the optional
// operations only some providers have (an ownership inquiry, a list for
// reconciliation, the provider's balance), as one value of nil-able
// functions, the way gateways declare theirs (gateway.Ops). Drivers live
// in its sub-packages and are listed once in payout/drivers; Resilient
// runs a driver through a resilient.Caller (time-outs, retries of the
// safe operations only, a breaker, the call log).
//
// Error contract (the gateways' one, gateway.Gateway): a returned error
// means the outcome is NOT known (network error, time-out, HTTP 5xx, an
// answer that cannot be read, "no upstream provider"), unless it is a
// *RefusedError, a definite refusal: the provider took nothing. A
// definite answer about a payout (in progress, transferred, failed) is
// never an error: it is a Status.
package payout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/rail"
)

// Provider is one payout provider's driver. Amounts are integer rials;
// a driver whose wire is in tomans converts at its edge.
type Provider interface {
	// Name is the stable identifier stored with each withdrawal ("jibit").
	Name() string
	// Submit asks the provider to pay o out. Safe to repeat only where
	// Capabilities.IdempotentSubmit says so (the provider refuses a second
	// payout of one id); otherwise never repeated after an unknown
	// outcome: Status by o.ID tells what happened.
	Submit(ctx context.Context, o Order) (Submitted, error)
	// Status asks where the payout of our id stands. Read-only.
	Status(ctx context.Context, id string) (Status, error)
	// Ops are its optional operations, resolved once when it was built.
	Ops() Ops
}

// Order is one payout to send.
type Order struct {
	// ID is our withdrawal's public id: the provider's idempotency id
	// where it has one (Jibit's transferID, Zibal's uniqueCode), and what
	// Status asks by.
	ID          string
	AmountRials int64
	// Sheba is the destination, "IR" and 24 digits (checked).
	Sheba string
	// Rail is the rail to send it on (one of Capabilities.Rails).
	Rail        rail.Rail
	Description string
}

// Submitted is the provider's acceptance of an order.
type Submitted struct {
	// Duplicate: the provider already had a payout of this id (an earlier
	// attempt reached it): accepted before, not now; one payout.
	Duplicate bool
	// Ref is the provider's own reference of the payout, when it gives
	// one.
	Ref string
}

// State is where a payout stands at the provider.
type State string

// The states.
const (
	// StateNotFound: the provider has no payout of this id: it never took
	// one (or has not recorded it yet, moments after a submit).
	StateNotFound State = "not_found"
	// StateInProgress: taken, not yet transferred (queued, in a cycle).
	StateInProgress State = "in_progress"
	// StateTransferred: the money left for the account.
	StateTransferred State = "transferred"
	// StateFailed: the provider will not pay it (failed, cancelled): no
	// money left, and none will.
	StateFailed State = "failed"
	// StateReturned: it was transferred, then failed by hand and the money
	// came back to the provider (Jibit's MANUALLY_FAILED).
	StateReturned State = "returned"
)

// Status is the provider's word on one payout.
type Status struct {
	State State
	// Ref is the bank's or the provider's reference once known (Jibit's
	// bankTransferID, Zibal's refCode).
	Ref string
	// Raw is the provider's own word for the state ("MANUALLY_FAILED"),
	// for logs and the admin's page.
	Raw string
	// AmountRials is the amount the provider holds for it (0: not said).
	AmountRials int64
}

// Listed is one payout in a provider's list (reconciliation).
type Listed struct {
	ID          string // our id, as submitted
	AmountRials int64
	State       State
	Raw         string
	At          time.Time
}

// Ownership is a provider's answer to "does this Sheba belong to this
// national code".
type Ownership int

// The answers.
const (
	// OwnerUnknown: no answer either way ("no upstream provider", bad
	// input on the provider's side, the service refused us): a person
	// decides, never a mismatch.
	OwnerUnknown Ownership = iota
	// OwnerMatch: the Sheba is the national code's.
	OwnerMatch
	// OwnerMismatch: the provider says it is not (or the Sheba does not
	// exist at the bank).
	OwnerMismatch
)

func (o Ownership) String() string {
	switch o {
	case OwnerMatch:
		return "match"
	case OwnerMismatch:
		return "mismatch"
	}
	return "unknown"
}

// Ops are a provider's optional operations: a field is nil when it has
// no such operation. Their errors follow Provider's contract.
type Ops struct {
	// CheckOwner asks whether sheba belongs to nationalCode (Zibal's
	// checkIbanWithNationalCode). Read-only. An unknown answer is
	// OwnerUnknown with a nil error when the provider said so ("no
	// upstream provider"), or an error when nothing definite arrived.
	CheckOwner func(ctx context.Context, sheba, nationalCode string) (Ownership, error)
	// List lists the provider's payouts made from from to to
	// (reconciliation); nil: reconciliation asks Status one by one.
	List func(ctx context.Context, from, to time.Time) ([]Listed, error)
	// Balance is what the provider can still pay out, in rials.
	Balance func(ctx context.Context) (int64, error)
	// Down reports whether the provider is known to be down now (the
	// resilient caller's open breaker); no call is made.
	Down func() bool
}

// RefusedError is a definite refusal: the provider took nothing, and
// says why. It wraps a *gateway.RejectedError, so the resilient caller
// counts it as an answer (the provider is up) and never retries it.
type RefusedError struct {
	// ForNow: the refusal is the provider's state, not the payout's (its
	// balance is short, it refuses our access or IP, maintenance): the
	// same order may be sent again later. Otherwise the payout itself can
	// never go (an invalid Sheba, an amount out of bounds).
	ForNow bool
	Err    *gateway.RejectedError
}

func (e *RefusedError) Error() string {
	if e.ForNow {
		return "refused for now: " + e.Err.Error()
	}
	return "refused: " + e.Err.Error()
}

// Unwrap is the gateway's rejection.
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused makes a *RefusedError of the provider's code and message.
func Refused(op string, forNow bool, code int, message string) *RefusedError {
	return &RefusedError{ForNow: forNow, Err: &gateway.RejectedError{Op: op, Code: code, Message: message}}
}

// IsRefused reports a definite refusal (and whether it is for now).
func IsRefused(err error) (refused, forNow bool) {
	var r *RefusedError
	if errors.As(err, &r) {
		return true, r.ForNow
	}
	return false, false
}

// NotSent reports an error of a call that never reached the provider (an
// open breaker): a submit that ends so was certainly not taken.
func NotSent(err error) bool { return errors.Is(err, gateway.ErrUnavailable) }

// String names the provider's word for logs.
func (s Status) String() string {
	if s.Raw != "" {
		return fmt.Sprintf("%s (%s)", s.State, s.Raw)
	}
	return string(s.State)
}
