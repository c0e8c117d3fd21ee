package payment

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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
//	awaiting_payment ─────▶ failed             the bank's definite not-paid; unpaid past the authority's lifetime [lease]
//	awaiting_payment ─────▶ needs_review       verify refused, amount mismatch, paid without reference, reference reused [lease]
//	pending_verification ─▶ failed             the bank's definite not-paid [lease]
//	pending_verification ─▶ needs_review       as above; outcome still unknown at the deadline [lease]
//	failed ───────────────▶ pending_verification reopen: a callback, reconciliation or an admin asks the bank again [lease]
//	needs_review ─────────▶ pending_verification reopen, as above [lease]
//	needs_review ─────────▶ failed             an admin closes it with a written note [lease]
//	awaiting_payment ─────▶ credited           the bank verified it (100/101 with a reference)
//	pending_verification ─▶ credited           the bank verified it
//	failed ───────────────▶ credited           the bank verified it (a verifier whose lease ran out)
//	needs_review ─────────▶ credited           the bank verified it (a verifier whose lease ran out)
//
// A bank-verified payment is always credited, lease or not: the bank holds
// the payer's money as ours, and the unique ledger entry per payment keeps
// it to one credit. Every other edge out of an open status needs the lease,
// so a deadline or an admin can never overrule a verify in flight.

// edge is one allowed status change.
type edge struct{ from, to Status }

// rule says who may take an edge and whether the lease is required.
type rule struct {
	actors []Actor
	lease  bool
}

var (
	verifiers = []Actor{ActorCallback, ActorWorker, ActorReconcile, ActorAdmin}
	reopeners = []Actor{ActorCallback, ActorReconcile, ActorAdmin}
)

// transitions is the table of every allowed edge (read-only).
var transitions = map[edge]rule{
	{StatusCreated, StatusAwaitingPayment}:             {actors: []Actor{ActorSubmit}},
	{StatusCreated, StatusFailed}:                      {actors: []Actor{ActorSubmit, ActorWorker}},
	{StatusCreated, StatusPendingVerification}:         {actors: []Actor{ActorReconcile}, lease: true},
	{StatusAwaitingPayment, StatusPendingVerification}: {actors: verifiers, lease: true},
	{StatusAwaitingPayment, StatusFailed}:              {actors: verifiers, lease: true},
	{StatusAwaitingPayment, StatusNeedsReview}:         {actors: verifiers, lease: true},
	{StatusPendingVerification, StatusFailed}:          {actors: verifiers, lease: true},
	{StatusPendingVerification, StatusNeedsReview}:     {actors: verifiers, lease: true},
	{StatusFailed, StatusPendingVerification}:          {actors: reopeners, lease: true},
	{StatusNeedsReview, StatusPendingVerification}:     {actors: reopeners, lease: true},
	{StatusNeedsReview, StatusFailed}:                  {actors: []Actor{ActorAdmin}, lease: true},
	{StatusAwaitingPayment, StatusCredited}:            {actors: verifiers},
	{StatusPendingVerification, StatusCredited}:        {actors: verifiers},
	{StatusFailed, StatusCredited}:                     {actors: verifiers},
	{StatusNeedsReview, StatusCredited}:                {actors: verifiers},
}

// Edge is one allowed status change, as documentation and tests see it.
type Edge struct {
	From, To Status
	Actors   []Actor
	Lease    bool
}

// Transitions returns the state machine's table.
func Transitions() []Edge {
	out := make([]Edge, 0, len(transitions))
	for e, r := range transitions {
		out = append(out, Edge{From: e.from, To: e.to, Actors: append([]Actor(nil), r.actors...), Lease: r.lease})
	}
	return out
}

// ErrIllegalTransition is a programming error: an edge the table lacks.
var ErrIllegalTransition = errors.New("illegal payment transition")

func allowed(from, to Status, actor Actor) (rule, error) {
	r, ok := transitions[edge{from, to}]
	if !ok {
		return rule{}, fmt.Errorf("%w: %s → %s", ErrIllegalTransition, from, to)
	}
	for _, a := range r.actors {
		if a == actor {
			return r, nil
		}
	}
	return rule{}, fmt.Errorf("%w: %s → %s by %s", ErrIllegalTransition, from, to, actor)
}

// change is one status change to make.
type change struct {
	to          Status
	actor       Actor
	reason      Reason
	gatewayCode *int
	adminID     *int64
	lease       string         // the mover's lease token (edges that need it)
	keepLease   bool           // the mover goes on working under the lease (a reopen)
	set         map[string]any // other columns written with the change
	// also runs in the same transaction after the change (a ledger
	// entry, an audit row); its error rolls everything back.
	also func(tx *gorm.DB) error
}

// errNotMoved: the payment was no longer in the expected status (or the
// lease no longer the mover's); nothing changed.
var errNotMoved = errors.New("payment changed meanwhile")

// move takes one edge of the state machine for p, whose status the caller
// read as from. It returns errNotMoved when another actor changed the row
// first; then nothing was written.
func (s *Service) move(ctx context.Context, p Payment, from Status, c change) (Payment, error) {
	var moved Payment
	err := s.db.Tx(context.WithoutCancel(ctx), func(tx *gorm.DB) error {
		var err error
		moved, err = s.moveTx(tx, p, from, c)
		return err
	})
	if err != nil {
		return p, err
	}
	s.observe(from, c)
	return moved, nil
}

// moveTx is move inside the caller's transaction.
func (s *Service) moveTx(tx *gorm.DB, p Payment, from Status, c change) (Payment, error) {
	r, err := allowed(from, c.to, c.actor)
	if err != nil {
		return p, err
	}
	now := s.clock()
	vals := map[string]any{"status": c.to, "status_reason": string(c.reason), "updated_at": now}
	if !c.keepLease {
		vals["lease_until"], vals["lease_owner"] = nil, ""
	}
	if c.to.Terminal() {
		resolved, err := s.resolvedAt(tx, p, from, c.to, now)
		if err != nil {
			return p, err
		}
		vals["resolved_at"], vals["next_check_at"] = resolved, nil
	} else {
		vals["resolved_at"] = nil // open again: no outcome to show
	}
	for k, v := range c.set {
		vals[k] = v
	}
	// RETURNING hands back the row as changed: no reload afterwards.
	var out Payment
	q := tx.Model(&out).Clauses(clause.Returning{}).Where("id = ? AND status = ?", p.ID, from)
	if r.lease {
		if c.lease == "" {
			return p, fmt.Errorf("%w: %s → %s needs the lease", ErrIllegalTransition, from, c.to)
		}
		q = q.Where("lease_owner = ?", c.lease)
	}
	res := q.Updates(vals)
	if res.Error != nil {
		return p, fmt.Errorf("payment %s %s → %s: %w", p.PublicID, from, c.to, res.Error)
	}
	if res.RowsAffected == 0 {
		return p, errNotMoved
	}
	ev := Event{PaymentID: p.ID, FromStatus: from, ToStatus: c.to, Actor: c.actor, Reason: c.reason,
		GatewayCode: c.gatewayCode, AdminID: c.adminID, CreatedAt: now}
	if err := tx.Create(&ev).Error; err != nil {
		return p, fmt.Errorf("event of payment %s: %w", p.PublicID, err)
	}
	if c.also != nil {
		if err := c.also(tx); err != nil {
			return p, err
		}
	}
	return out, nil
}

// resolvedAt is the resolved_at of a move of p from → to (an ended
// status) at now (ResolvedAt decides; the events are read only when it
// needs them).
func (s *Service) resolvedAt(tx *gorm.DB, p Payment, from, to Status, now time.Time) (time.Time, error) {
	if !ResolvedAtNeedsEvents(from, to) {
		return now, nil
	}
	var evs []Event
	if err := tx.Select("from_status", "to_status", "created_at").Where("payment_id = ?", p.ID).
		Order("id DESC").Find(&evs).Error; err != nil {
		return now, fmt.Errorf("events of payment %s: %w", p.PublicID, err)
	}
	return ResolvedAt(from, to, now, evs), nil
}

// observe tells the observer of a committed change.
func (s *Service) observe(from Status, c change) {
	if s.cfg.Observer != nil {
		s.cfg.Observer.Transitioned(from, c.to, c.actor)
	}
}

// ---- Leases: one rule for every actor ----
//
// A payment's lease (lease_owner, lease_until) is held by whoever talks to
// the bank about it or ends it: a callback, the worker, reconciliation, an
// admin. It is taken only when free or expired, and it is sized to one
// bank operation (the gateway budget plus a margin): a holder that died
// blocks the payment for about one budget, never longer.

func newLeaseToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// claim takes the lease of payment id if its status is one of statuses and
// the lease is free. It returns the token ("" when another actor holds it)
// and the row as it now stands.
func (s *Service) claim(ctx context.Context, id int64, statuses []Status) (string, Payment, error) {
	return s.claimPaced(ctx, id, statuses, false)
}

// claimPaced is claim that, when paced, also requires the bank not to have
// been asked about the payment within RecheckDelay: the pacing rule is
// checked in the same statement that takes the lease, so callbacks racing
// on a stale view cannot ask the bank twice.
func (s *Service) claimPaced(ctx context.Context, id int64, statuses []Status, paced bool) (string, Payment, error) {
	now := s.clock()
	tok := newLeaseToken()
	var cur Payment
	q := s.db.Gorm.WithContext(context.WithoutCancel(ctx)).Model(&cur).Clauses(clause.Returning{}).
		Where("id = ? AND status IN ? AND (lease_until IS NULL OR lease_until < ?)", id, statuses, now)
	if paced {
		q = q.Where("(last_checked_at IS NULL OR last_checked_at <= ?)", now.Add(-s.cfg.RecheckDelay))
	}
	res := q.Updates(map[string]any{"lease_until": now.Add(s.cfg.LeaseDuration), "lease_owner": tok})
	if res.Error != nil {
		return "", Payment{}, fmt.Errorf("claim payment %d: %w", id, res.Error)
	}
	if res.RowsAffected == 1 {
		return tok, cur, nil // the row as claimed (RETURNING)
	}
	p, err := s.reload(ctx, id)
	return "", p, err
}

// claimFirstReturn is the first callback's fast path: in one statement it
// records the callback (returned_at) and takes the lease of an open
// payment that nobody holds and that no callback has reached before. It
// reports false, changing nothing, when any of that is not so; the caller
// then takes the general path (markReturned, then claim or wait).
func (s *Service) claimFirstReturn(ctx context.Context, id int64) (string, Payment, bool, error) {
	now := s.clock()
	tok := newLeaseToken()
	var cur Payment
	res := s.db.Gorm.WithContext(context.WithoutCancel(ctx)).Model(&cur).Clauses(clause.Returning{}).
		Where("id = ? AND status IN ? AND returned_at IS NULL AND (lease_until IS NULL OR lease_until < ?)", id, openForVerify(), now).
		Updates(map[string]any{"lease_until": now.Add(s.cfg.LeaseDuration), "lease_owner": tok, "returned_at": now})
	if res.Error != nil {
		return "", Payment{}, false, fmt.Errorf("claim payment %d on its first callback: %w", id, res.Error)
	}
	if res.RowsAffected != 1 {
		return "", Payment{}, false, nil
	}
	return tok, cur, true, nil
}

// release gives up the lease tok, if still ours, writing set with it
// (a next check, the time the bank was asked). The status is unchanged.
func (s *Service) release(ctx context.Context, p Payment, tok string, set map[string]any) (Payment, error) {
	vals := map[string]any{"lease_until": nil, "lease_owner": ""}
	for k, v := range set {
		vals[k] = v
	}
	var out Payment
	res := s.db.Gorm.WithContext(context.WithoutCancel(ctx)).Model(&out).Clauses(clause.Returning{}).
		Where("id = ? AND lease_owner = ?", p.ID, tok).Updates(vals)
	if res.Error != nil {
		return p, fmt.Errorf("release payment %s: %w", p.PublicID, res.Error)
	}
	if res.RowsAffected == 1 {
		return out, nil
	}
	return s.reload(ctx, p.ID) // the lease was no longer ours
}

// schedule sets when the worker checks an open payment next.
func (s *Service) schedule(ctx context.Context, p Payment, at time.Time) error {
	err := s.db.Gorm.WithContext(context.WithoutCancel(ctx)).Model(&Payment{}).
		Where("id = ? AND status IN ?", p.ID, openForVerify()).Update("next_check_at", at).Error
	if err != nil {
		return fmt.Errorf("schedule payment %s: %w", p.PublicID, err)
	}
	return nil
}
