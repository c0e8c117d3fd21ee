package withdrawal

import (
	"github.com/kifpool/kifpool/internal/lifecycle"
)

// The state machine: every status change of a withdrawal is one edge of
// this table, taken by the store's one writer (Store.Move), which writes
// it with a conditional UPDATE on the expected status (and on the lease
// owner where the edge needs the lease) and appends its event, its ledger
// movement and an admin's audit row in the same transaction.
//
//	requested ──admin approve──▶ approved          (review required)
//	requested ──admin reject───▶ rejected          hold released
//	requested ──owner cancel───▶ cancelled         hold released
//	approved ───owner cancel───▶ cancelled         hold released
//	requested ──worker send────▶ submitted [lease] (no review required)
//	approved ───worker send────▶ submitted [lease]
//	submitted ──transferred────▶ paid      [lease] hold captured into payouts in flight
//	submitted ──failed, refused─▶ failed   [lease] hold released
//	submitted ──unknown, not taken, in progress too long▶ needs_review [lease]
//	needs_review ─transferred──▶ paid      [lease] (an admin: on the provider's word)
//	needs_review ─failed, admin─▶ failed   [lease] hold released
//	paid ───────returned───────▶ returned  [lease] withdrawal_return: the money back
//
// The move to submitted is written before the provider is called; every
// edge out of submitted, needs_review and paid needs the lease, so that
// no admin or reconciliation overrules a provider's answer in flight.
var machine = lifecycle.NewMachine(map[[2]Status]lifecycle.Rule[Actor]{
	{StatusRequested, StatusApproved}:    {Actors: []Actor{ActorAdmin}},
	{StatusRequested, StatusRejected}:    {Actors: []Actor{ActorAdmin}},
	{StatusRequested, StatusCancelled}:   {Actors: []Actor{ActorUser}},
	{StatusApproved, StatusCancelled}:    {Actors: []Actor{ActorUser}},
	{StatusRequested, StatusSubmitted}:   {Actors: []Actor{ActorWorker}, Lease: true},
	{StatusApproved, StatusSubmitted}:    {Actors: []Actor{ActorWorker}, Lease: true},
	{StatusSubmitted, StatusPaid}:        {Actors: []Actor{ActorWorker, ActorReconcile}, Lease: true},
	{StatusSubmitted, StatusFailed}:      {Actors: []Actor{ActorWorker, ActorReconcile}, Lease: true},
	{StatusSubmitted, StatusNeedsReview}: {Actors: []Actor{ActorWorker, ActorReconcile}, Lease: true},
	{StatusNeedsReview, StatusPaid}:      {Actors: []Actor{ActorWorker, ActorReconcile, ActorAdmin}, Lease: true},
	{StatusNeedsReview, StatusFailed}:    {Actors: []Actor{ActorWorker, ActorReconcile, ActorAdmin}, Lease: true},
	{StatusPaid, StatusReturned}:         {Actors: []Actor{ActorWorker, ActorReconcile}, Lease: true},
})

// Edge is one allowed status change.
type Edge = lifecycle.Edge[Status, Actor]

// Transitions returns the table.
func Transitions() []Edge { return machine.Edges() }

// ErrIllegalTransition is a programming error: an edge the table lacks.
var ErrIllegalTransition = lifecycle.ErrIllegalTransition

// EdgeNeedsLease checks that actor may take from → to and reports
// whether the edge needs the mover's lease. The store asks it before
// every move.
func EdgeNeedsLease(from, to Status, actor Actor) (bool, error) {
	r, err := machine.Allowed(from, to, actor)
	return r.Lease, err
}

// Money is what a move does to the ledger, in its transaction.
type Money int

// The ledger effects of an edge.
const (
	MoneyNone    Money = iota
	MoneyRelease       // the hold is released: the amount is spendable again
	MoneyCapture       // the hold is captured into the provider's payouts-in-flight account
	MoneyReturn        // a withdrawal_return gives the amount back to the wallet
)

// MoneyOf is the ledger effect of moving into status to: one place, so
// that no edge forgets its money.
func MoneyOf(to Status) Money {
	switch to {
	case StatusFailed, StatusRejected, StatusCancelled:
		return MoneyRelease
	case StatusPaid:
		return MoneyCapture
	case StatusReturned:
		return MoneyReturn
	}
	return MoneyNone
}
