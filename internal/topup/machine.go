package topup

import (
	"context"
	"errors"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/lifecycle"
)

// The state machine. Every status change of a payment is one edge of this
// table, taken by one function (move) that writes the change with a
// conditional UPDATE on the expected current status — and on the lease
// owner where the edge needs the lease — and appends one payment_events
// row in the same transaction. No other code writes payments.status.
//
//	created ──────────────▶ awaiting_payment   submit: the bank gave an authority
//	created ──────────────▶ failed             submit: request failed/refused (no money taken);
//	                                            worker: submit died before the bank answered
//	created ──────────────▶ pending_verification reconcile: the bank lists it (authority recovered) [lease]
//	awaiting_payment ─────▶ pending_verification verify/inquiry outcome unknown [lease]
//	awaiting_payment ─────▶ settling           verify 0/43 with a reference and our amount, to be settled (Mellat) [lease]
//	pending_verification ─▶ settling           as above [lease]
//	settling ─────────────▶ credited           settle 0/45: the money is ours (lease or not)
//	settling ─────────────▶ failed             settle 48: the bank reversed it [lease]
//	settling ─────────────▶ needs_review       settle refused; still unknown when the settle window closed (or
//	                                            WORKER_MAX_UNKNOWN); reference reused; credit kept failing [lease]
//	awaiting_payment ─────▶ failed             the bank's definite not-paid; unpaid past the authority's lifetime [lease]
//	awaiting_payment ─────▶ needs_review       verify refused, amount mismatch, paid without reference, reference reused [lease]
//	pending_verification ─▶ failed             the bank's definite not-paid [lease]
//	pending_verification ─▶ needs_review       as above; outcome still unknown at the deadline [lease]
//	failed ───────────────▶ pending_verification reopen: a callback, reconciliation, an admin or the worker asks the bank again [lease]
//	needs_review ─────────▶ pending_verification reopen, as above [lease]
//	needs_review ─────────▶ failed             an admin closes it with a written note [lease]
//	failed ───────────────▶ needs_review       the bank verified it with a reference another payment holds, or its credit failed (a verifier whose lease ran out)
//	awaiting_payment ─────▶ credited           the bank verified it (100/101 with a reference)
//	pending_verification ─▶ credited           the bank verified it
//	failed ───────────────▶ credited           the bank verified it (a verifier whose lease ran out)
//	needs_review ─────────▶ credited           the bank verified it (a verifier whose lease ran out)
//	awaiting_payment ─────▶ reversing          verified but not creditable (amount, no reference, receipt alone,
//	                                            reference reused), within the gateway's reverse window [lease]
//	pending_verification ─▶ reversing          as above [lease]
//	settling ─────────────▶ reversing          settle refused, or reference reused, before settle (Mellat) [lease]
//	reversing ────────────▶ failed             the worker's one reverse was accepted, or the bank's record says reversed [lease]
//	reversing ────────────▶ needs_review       the reverse refused, the window closed, the bank's record differs [lease]
//	reversing ────────────▶ settling           the reverse refused because the sale is settled (Mellat 45), of a
//	                                            verified payment whose settle was refused: settled again (45), credited [lease]
//
// A bank-verified payment is always credited, lease or not: the bank holds
// the payer's money as ours, and the unique ledger entry per payment keeps
// it to one credit. One whose reference already belongs to another payment
// is never credited and never left failed either: it goes to review, lease
// or not (failed → needs_review). Every other edge out of an open status needs the lease,
// so a deadline or an admin can never overrule a verify in flight.

var (
	verifiers = []Actor{ActorCallback, ActorWorker, ActorReconcile, ActorAdmin}
	reopeners = []Actor{ActorCallback, ActorReconcile, ActorAdmin}
	// The worker also reopens a payment it failed at the authority's
	// lifetime when its payer came back from the bank (N1).
	failedReopeners = []Actor{ActorCallback, ActorReconcile, ActorAdmin, ActorWorker}
)

// machine is the table of every allowed edge, an instance of the lifecycle
// skeleton's (read-only): {from, to} → who may take it, and whether it
// needs the lease.
var machine = lifecycle.NewMachine(map[[2]Status]lifecycle.Rule[Actor]{
	{StatusCreated, StatusAwaitingPayment}:             {Actors: []Actor{ActorSubmit}},
	{StatusCreated, StatusFailed}:                      {Actors: []Actor{ActorSubmit, ActorWorker}},
	{StatusCreated, StatusPendingVerification}:         {Actors: []Actor{ActorReconcile}, Lease: true},
	{StatusAwaitingPayment, StatusPendingVerification}: {Actors: verifiers, Lease: true},
	{StatusAwaitingPayment, StatusFailed}:              {Actors: verifiers, Lease: true},
	{StatusAwaitingPayment, StatusNeedsReview}:         {Actors: verifiers, Lease: true},
	{StatusPendingVerification, StatusFailed}:          {Actors: verifiers, Lease: true},
	{StatusPendingVerification, StatusNeedsReview}:     {Actors: verifiers, Lease: true},
	{StatusFailed, StatusPendingVerification}:          {Actors: failedReopeners, Lease: true},
	{StatusNeedsReview, StatusPendingVerification}:     {Actors: reopeners, Lease: true},
	{StatusNeedsReview, StatusFailed}:                  {Actors: []Actor{ActorAdmin}, Lease: true},
	{StatusFailed, StatusNeedsReview}:                  {Actors: verifiers},
	{StatusAwaitingPayment, StatusCredited}:            {Actors: verifiers},
	{StatusPendingVerification, StatusCredited}:        {Actors: verifiers},
	{StatusFailed, StatusCredited}:                     {Actors: verifiers},
	{StatusNeedsReview, StatusCredited}:                {Actors: verifiers},
	{StatusAwaitingPayment, StatusSettling}:            {Actors: verifiers, Lease: true},
	{StatusPendingVerification, StatusSettling}:        {Actors: verifiers, Lease: true},
	{StatusSettling, StatusCredited}:                   {Actors: verifiers},
	{StatusSettling, StatusFailed}:                     {Actors: verifiers, Lease: true},
	{StatusSettling, StatusNeedsReview}:                {Actors: verifiers, Lease: true},
	{StatusAwaitingPayment, StatusReversing}:           {Actors: verifiers, Lease: true},
	{StatusPendingVerification, StatusReversing}:       {Actors: verifiers, Lease: true},
	{StatusSettling, StatusReversing}:                  {Actors: verifiers, Lease: true},
	{StatusReversing, StatusFailed}:                    {Actors: []Actor{ActorWorker}, Lease: true},
	{StatusReversing, StatusNeedsReview}:               {Actors: []Actor{ActorWorker}, Lease: true},
	{StatusReversing, StatusSettling}:                  {Actors: []Actor{ActorWorker}, Lease: true},
})

// Edge is one allowed status change, as documentation and tests see it.
type Edge = lifecycle.Edge[Status, Actor]

// Transitions returns the state machine's table.
func Transitions() []Edge { return machine.Edges() }

// ErrIllegalTransition is a programming error: an edge the table lacks.
var ErrIllegalTransition = lifecycle.ErrIllegalTransition

func allowed(from, to Status, actor Actor) (lifecycle.Rule[Actor], error) {
	return machine.Allowed(from, to, actor)
}

// change is one status change to make.
type change struct {
	to          Status
	actor       Actor
	reason      Reason
	gatewayCode *int
	adminID     *int64
	lease       string // the mover's lease token (edges that need it)
	keepLease   bool   // the mover goes on working under the lease (a reopen)
	set         Fields // other fields written with the change
	// calls: gateway attempts written in the change's transaction (the
	// verify of a payment that becomes settling).
	calls []resilient.Call
	// audit, when set, is written in the same transaction (an admin's
	// action).
	audit *audit.Entry
}

// moveOf is the store's Move of p from → c.to at now.
func moveOf(p TopUp, from Status, c change, now time.Time) Move {
	return Move{TopUpID: p.ID, PublicID: p.PublicID, From: from, To: c.to, Actor: c.actor, Reason: c.reason,
		GatewayCode: c.gatewayCode, AdminID: c.adminID, Lease: c.lease, KeepLease: c.keepLease, Now: now,
		Fields: c.set, Audit: c.audit, Calls: c.calls}
}

// move takes one edge of the state machine for p, whose status the caller
// read as from, through the store's one writer (a conditional UPDATE on
// the status, and on the lease owner where the edge needs it, plus the
// event, in one transaction). It returns errNotMoved when another actor
// changed the row first; then nothing was written.
func (s *Service) move(ctx context.Context, p TopUp, from Status, c change) (TopUp, error) {
	if _, err := allowed(from, c.to, c.actor); err != nil {
		return p, err
	}
	moved, err := s.st.Move(ctx, moveOf(p, from, c, s.clock()))
	if err != nil {
		s.outboxFailed(ctx, p, err)
		return p, err
	}
	s.observe(p.Gateway, from, c)
	return moved, nil
}

// outboxFailed tells the observer, and the log, of a move the partners'
// webhook outbox refused (ErrOutbox): it blocks the payment's move, a
// credit too, and is no error of the bank's.
func (s *Service) outboxFailed(ctx context.Context, p TopUp, err error) {
	if !errors.Is(err, ErrOutbox) {
		return
	}
	s.log.ErrorContext(ctx, "the webhook outbox refused a payment's event: its move was rolled back", "payment", p.PublicID, "err", err)
	if o, ok := s.cfg.Observer.(OutboxObserver); ok {
		o.OutboxFailed(p.Gateway)
	}
}

// observe tells the observer of a committed change.
func (s *Service) observe(gw string, from Status, c change) {
	if s.cfg.Observer != nil {
		s.cfg.Observer.Transitioned(gw, from, c.to, c.actor)
	}
}

// ---- Leases: one rule for every actor ----
//
// A payment's lease (lease_owner, lease_until) is held by whoever talks to
// the bank about it or ends it: a callback, the worker, reconciliation, an
// admin. It is taken only when free or expired, and it is sized to one
// bank operation (the gateway budget plus a margin): a holder that died
// blocks the payment for about one budget, never longer.

func newLeaseToken() string { return lifecycle.NewLeaseToken() }

// claim takes the lease of payment id if its status is one of statuses and
// the lease is free. It returns the token ("" when another actor holds it)
// and the row as it now stands.
func (s *Service) claim(ctx context.Context, id int64, statuses []Status) (string, TopUp, error) {
	return s.claimPaced(ctx, id, statuses, false)
}

// claimPaced is claim that, when paced, also requires the bank not to have
// been asked about the payment within RecheckDelay: the pacing rule is
// checked in the same statement that takes the lease, so callbacks racing
// on a stale view cannot ask the bank twice.
func (s *Service) claimPaced(ctx context.Context, id int64, statuses []Status, paced bool) (string, TopUp, error) {
	now := s.clock()
	c := Claim{ID: id, Statuses: statuses, Token: newLeaseToken(), Now: now, Until: now.Add(s.cfg.LeaseDuration)}
	if paced {
		since := now.Add(-s.cfg.RecheckDelay)
		c.NotCheckedSince = &since
	}
	p, ok, err := s.st.Claim(ctx, c)
	if err != nil || !ok {
		return "", p, err
	}
	return c.Token, p, nil
}

// claimFirstReturn is the first callback's fast path: in one statement it
// records the callback (returned_at) and takes the lease of an open
// payment that nobody holds and that no callback has reached before. It
// reports false, changing nothing, when any of that is not so; the caller
// then takes the general path (markReturned, then claim or wait).
func (s *Service) claimFirstReturn(ctx context.Context, id int64) (string, TopUp, bool, error) {
	now := s.clock()
	c := Claim{ID: id, Statuses: openForVerify(), Token: newLeaseToken(), Now: now, Until: now.Add(s.cfg.LeaseDuration), FirstReturn: true}
	p, ok, err := s.st.Claim(ctx, c)
	if err != nil || !ok {
		return "", TopUp{}, false, err
	}
	return c.Token, p, true, nil
}

// release gives up the lease tok, if still ours, writing set with it
// (a next check, the time the bank was asked). The status is unchanged.
func (s *Service) release(ctx context.Context, p TopUp, tok string, set Fields) (TopUp, error) {
	return s.st.Release(ctx, p.ID, tok, set)
}
