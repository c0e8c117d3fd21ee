package cardrefund

import (
	"fmt"

	"github.com/kifpool/kifpool/internal/lifecycle"
)

// machine is the table of every allowed edge (see the package's diagram),
// an instance of the lifecycle skeleton's: {from, to} → who may take it,
// and whether it needs the lease. A refund the bank made is recorded
// whoever learns of it, lease or not (the conditional UPDATE lets one
// writer win); every other edge out of an open status needs the lease, so
// nothing overrules a call in flight.
var machine = lifecycle.NewMachine(map[[2]Status]lifecycle.Rule[Actor]{
	{StatusHeld, StatusSubmitted}:        {Actors: both, Lease: true},
	{StatusHeld, StatusFailed}:           {Actors: both, Lease: true},
	{StatusSubmitted, StatusHeld}:        {Actors: both, Lease: true},
	{StatusSubmitted, StatusRefunded}:    {Actors: both},
	{StatusSubmitted, StatusFailed}:      {Actors: both, Lease: true},
	{StatusSubmitted, StatusNeedsReview}: {Actors: both, Lease: true},
	{StatusNeedsReview, StatusSubmitted}: {Actors: admins, Lease: true},
	{StatusNeedsReview, StatusRefunded}:  {Actors: admins, Lease: true},
	{StatusNeedsReview, StatusFailed}:    {Actors: admins, Lease: true},
})

var (
	both   = []Actor{ActorAdmin, ActorWorker}
	admins = []Actor{ActorAdmin}
)

// EdgeNeedsLease checks from → to by actor against the table and reports
// whether it needs the lease (an error wrapping ErrIllegalTransition for
// an edge the table lacks).
func EdgeNeedsLease(from, to Status, actor Actor) (bool, error) {
	r, err := machine.Allowed(from, to, actor)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrIllegalTransition, err)
	}
	return r.Lease, nil
}

// Edges lists the table (for its test and the docs).
func Edges() []lifecycle.Edge[Status, Actor] { return machine.Edges() }
