package topup

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/lifecycle"
)

// WorkerConfig tunes the background resolver of open payments. Every
// field but Batch, VerifyWindow and Jitter is an operator's setting
// (WORKER_*, whose defaults are written once, in internal/config):
// NewWorker refuses to run without them, but for Interval, which only Run
// needs (WORKER_INTERVAL=off leaves it 0: the instance runs no loop, and
// its worker is still built for RunOnce). Batch, VerifyWindow and Jitter
// are no settings: their defaults are written here, and only tests set
// them.
type WorkerConfig struct {
	Interval    time.Duration // how often Run looks for due payments
	Batch       int           // payments claimed per round (default 20)
	Concurrency int           // payments resolved at once
	// AbandonedAfter: an awaiting_payment payment older than this is
	// checked without waiting for its callback (the payer paid and closed
	// the window, or never came back). Banks reverse an unverified payment
	// after 20–30 minutes, so this must be well inside that.
	AbandonedAfter time.Duration
	// AuthorityLifetime: a payment the bank still has not seen paid this
	// long after it started is failed (Zarinpal's authorities
	// live for minutes, the sandbox bank's for 15).
	AuthorityLifetime time.Duration
	// MaxUnknown: a payment whose outcome is still unknown this long after
	// it started goes to needs_review for a person.
	MaxUnknown time.Duration
	// StaleCreated: a payment still "created" this long (its submit died
	// before the bank answered) is failed; it has no authority, so no money
	// can have been taken.
	StaleCreated time.Duration
	// VerifyWindow: a payment failed at its authority's lifetime whose
	// payer came back from the bank within this long is asked about again
	// (the bank keeps an unverified payment verifiable for 20–30 minutes:
	// 30m, the banks' rule, not an operator's setting).
	VerifyWindow time.Duration
	BaseBackoff  time.Duration // first re-check delay
	MaxBackoff   time.Duration // longest re-check delay
	// Jitter returns a number in [0,1) (default math/rand/v2).
	Jitter func() float64
}

func (c *WorkerConfig) defaults() {
	var missing []string
	for _, r := range []struct {
		name string
		ok   bool
	}{
		{"Concurrency", c.Concurrency > 0},
		{"AbandonedAfter", c.AbandonedAfter > 0}, {"AuthorityLifetime", c.AuthorityLifetime > 0},
		{"MaxUnknown", c.MaxUnknown > 0}, {"StaleCreated", c.StaleCreated > 0},
		{"BaseBackoff", c.BaseBackoff > 0}, {"MaxBackoff", c.MaxBackoff > 0},
	} {
		if !r.ok {
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		// A wiring mistake: the configuration always sets them.
		panic("topup.NewWorker: required WorkerConfig fields not set: " + strings.Join(missing, ", "))
	}
	if c.Batch <= 0 {
		c.Batch = 20
	}
	if c.VerifyWindow <= 0 {
		c.VerifyWindow = 30 * time.Minute
	}
	if c.Jitter == nil {
		c.Jitter = rand.Float64
	}
}

// Worker resolves payments whose callback never came or whose outcome was
// unknown. One runs in each instance; several are safe together: a payment
// is claimed by moving its next_check_at forward in the claiming
// transaction (FOR UPDATE SKIP LOCKED on PostgreSQL), and resolved through
// the same Resolve as the callback, under the same lease.
type Worker struct {
	s   *Service
	cfg WorkerConfig

	// failures counts, per top-up, its resolves in a row that failed in
	// this worker (an error, a panic): one that always fails is asked
	// less and less often (round.Failed) instead of at every claim's
	// push, and a success forgets it. A resolve skipped because another
	// actor held the top-up (busy) is neither: the count stands.
	mu       sync.Mutex
	failures map[int64]int
}

// NewWorker returns a worker over the payment service.
func (s *Service) NewWorker(cfg WorkerConfig) *Worker {
	cfg.defaults()
	return &Worker{s: s, cfg: cfg, failures: map[int64]int{}}
}

// failedResolveMax is the longest wait before a top-up whose resolves
// keep failing is claimed again: its deadlines still come round, and a
// bug fixed by a deploy is noticed within it.
const failedResolveMax = 10 * time.Minute

// resolved notes the outcome of a resolve of id: ok forgets its failures;
// a failure counts one more and says how many in a row.
func (w *Worker) resolved(id int64, ok bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ok {
		delete(w.failures, id)
		return 0
	}
	if len(w.failures) >= 10_000 {
		// Ids resolved elsewhere since (a callback) are never forgotten
		// here: a bound, and a fresh count for all.
		clear(w.failures)
	}
	w.failures[id]++
	return w.failures[id]
}

// Run works every Interval until ctx ends; in-flight payments are
// finished (bounded by the verify budget) before it returns.
func (w *Worker) Run(ctx context.Context) {
	lifecycle.Every(ctx, w.cfg.Interval, w.Tick)
}

// Tick does one round, logging a failure: one beat of Run's loop (or of
// the instance's, internal/server).
func (w *Worker) Tick(ctx context.Context) {
	if _, err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
		w.s.log.ErrorContext(ctx, "worker round failed", "err", err)
	}
}

// RoundResult counts what one round did.
type RoundResult struct {
	Claimed  int
	Resolved int // reached a terminal status
	Failed   int // stale "created" payments failed
}

// RunOnce does one round: fail stale created payments, claim due open
// payments, resolve them with bounded concurrency (the lifecycle
// skeleton's round).
func (w *Worker) RunOnce(ctx context.Context) (RoundResult, error) {
	var rr RoundResult
	// A stale payment that could not be failed is reported, and the
	// round goes on: one bad row does not hold up every due payment.
	n, staleErr := w.failStaleCreated(ctx)
	rr.Failed = n
	if w.allDown() {
		return rr, staleErr // every bank is down: postpone, do not spend checks
	}
	// In-flight work finishes even when shutdown starts.
	r, err := lifecycle.Round(ctx, &round{w: w}, w.cfg.Concurrency, 2*w.s.cfg.VerifyTimeout+5*time.Second)
	rr.Claimed, rr.Resolved = r.Claimed, r.Ended
	return rr, errors.Join(staleErr, err)
}

// round is the worker's side of the lifecycle skeleton's round: until is
// the next check its claim wrote.
type round struct {
	w     *Worker
	until time.Time
}

func (r *round) Claim(ctx context.Context) ([]int64, error) {
	ids, until, err := r.w.claim(ctx)
	r.until = until
	return ids, err
}
func (r *round) Unclaim(ids []int64) { r.w.unclaim(ids, r.until) }
func (r *round) Resolve(ctx context.Context, id int64) (bool, error) {
	p, busy, err := r.w.resolveOne(ctx, id, r.until)
	if err == nil && !busy {
		r.w.resolved(id, true)
	}
	return err == nil && p.Status.Terminal(), err
}

// Failed backs a top-up whose resolve failed (an error, a panic) off
// beyond the claim's push, more with each failure in a row, up to
// failedResolveMax: a row that always fails is not asked, and logged,
// every half minute for ever.
func (r *round) Failed(ctx context.Context, id int64, err error) {
	n := r.w.resolved(id, false)
	// From twice the claim's own push: never sooner than it.
	wait := Backoff(n+1, r.w.s.cfg.LeaseDuration+r.w.s.cfg.VerifyTimeout, failedResolveMax, r.w.cfg.Jitter())
	r.w.s.log.ErrorContext(ctx, "worker: resolve failed", "topup_id", id, "failures_in_a_row", n, "next_in", wait.String(), "err", err)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Only the check this claim scheduled is moved: one another actor set
	// since (a callback's, a reopen's) stands.
	if _, serr := r.w.s.st.Postpone(sctx, id, r.until, r.w.s.clock().Add(wait)); serr != nil {
		r.w.s.log.ErrorContext(ctx, "worker: postpone after a failed resolve", "topup_id", id, "err", serr)
	}
}

// claim picks due payments and pushes their next check forward, in one
// transaction, so no other worker takes them meanwhile.
func (w *Worker) claim(ctx context.Context) ([]int64, time.Time, error) {
	now := w.s.clock()
	until := now.Add(w.s.cfg.LeaseDuration + w.s.cfg.VerifyTimeout)
	// The claim: nobody else finds these until the resolve is over.
	ids, err := w.s.st.ClaimDue(ctx, DueClaim{Now: now, AbandonedBefore: now.Add(-w.cfg.AbandonedAfter),
		ReturnedSince: now.Add(-w.cfg.VerifyWindow), Until: until, Batch: w.cfg.Batch})
	return ids, until, err
}

// unclaim makes the payments claimed with until but not started due now:
// those whose next check another actor set since keep it.
func (w *Worker) unclaim(ids []int64, until time.Time) {
	if err := w.s.st.Unclaim(context.Background(), ids, until, w.s.clock()); err != nil {
		w.s.log.Error("worker: release claims", "err", err)
	}
}

// resolveOne checks one payment claimed with until with the bank (unless
// another actor holds it), applies the deadlines and schedules the next
// check. busy: another actor held the payment (or asked the bank about it
// since it was read), so this worker neither checked nor ended it.
func (w *Worker) resolveOne(ctx context.Context, id int64, until time.Time) (p TopUp, busy bool, err error) {
	p, err = w.s.reload(ctx, id)
	if err != nil {
		return p, false, err
	}
	if p.Status == StatusReversing {
		return w.reverseTurn(ctx, p) // reverse.go
	}
	if p.Status == StatusFailed {
		// Failed at its lifetime, but its payer came back from the bank
		// (N1): ask again, paced — reopened at once, checked when the
		// pacing window since the last check has passed.
		var ran bool
		p, ran, err = w.s.reopenPaced(ctx, p, ActorWorker, nil, true, true, "")
		return p, err == nil && !ran && heldBy(p, w.s.clock()), err
	}
	if !p.Status.open() {
		return p, false, nil
	}
	if gateway.Down(w.s.gw(p)) {
		// This payment's bank is down (its breaker is open): postpone the
		// check and the deadlines, do not spend them.
		return p, false, w.schedule(ctx, p, until, NextCheck(p, w.s.clock(), w.backoff(p.Attempts), w.s.cfg.RecheckDelay))
	}
	if at, ok := WaitsForCallback(p, w.rulesFor(p)); ok {
		// Nothing can be asked before the payer comes back (a callback is
		// checked at once): no check, no attempt; the deadlines, else the
		// next look when the gateway's verify window closes.
		d := Decide(Input{Step: StepDeadline, Actor: ActorWorker, TopUp: p, Now: w.s.clock(), Rules: w.rulesFor(p)})
		if d.Action == ActionMove {
			return w.expire(ctx, p, d)
		}
		if now := w.s.clock(); !at.After(now) {
			at = now.Add(w.s.cfg.RecheckDelay)
		}
		return p, false, w.schedule(ctx, p, until, at)
	}
	// from is the next check the row carries if no other actor has set one
	// since: the claim's, or the one this worker's own check wrote.
	from := until
	if w.s.dueForCheck(p) {
		// Paced in the claim: a callback may have asked since the row was
		// read (N3).
		var ran bool
		if p, ran, err = w.s.resolveNow(ctx, id, ActorWorker, true); err != nil || !p.Status.open() {
			return p, false, err
		}
		if !ran {
			// Another actor holds it, or asked the bank since the read:
			// no check of this worker's, whatever follows.
			busy = true
		} else if p.NextCheckAt != nil {
			from = *p.NextCheckAt
		}
	}
	d := Decide(Input{Step: StepDeadline, Actor: ActorWorker, TopUp: p, Now: w.s.clock(), Rules: w.rulesFor(p)})
	if d.Action == ActionMove {
		if d.To == StatusNeedsReview {
			w.s.log.ErrorContext(ctx, "payment outcome unknown for too long", "payment", p.PublicID)
		}
		// Failed past the authority's lifetime: should the payer pay after
		// all, the callback (or reconciliation) reopens and credits it.
		out, held, err := w.expire(ctx, p, d)
		return out, busy || held, err
	}
	// Still open: the next check with backoff and jitter, never sooner
	// than the pacing window after the last one.
	return p, busy, w.schedule(ctx, p, from, NextCheck(p, w.s.clock(), w.backoff(p.Attempts), w.s.cfg.RecheckDelay))
}

// schedule moves p's next check from from (what this worker's claim, or
// its own check, wrote) to at. A next check another actor set since (a
// callback's, an admin's, another instance's claim) stands: someone else
// decided, and this worker leaves it.
func (w *Worker) schedule(ctx context.Context, p TopUp, from, at time.Time) error {
	_, err := w.s.st.Schedule(ctx, p.ID, from, at)
	return err
}

// heldBy reports whether another actor holds p's lease at now (p as read
// after a claim of ours was refused).
func heldBy(p TopUp, now time.Time) bool {
	return p.LeaseUntil != nil && p.LeaseUntil.After(now)
}

// rules are the decision core's time rules with the worker's deadlines.
func (w *Worker) rules() Rules {
	r := w.s.rules()
	r.AuthorityLifetime, r.MaxUnknown, r.StaleCreated = w.cfg.AuthorityLifetime, w.cfg.MaxUnknown, w.cfg.StaleCreated
	return r
}

// rulesFor are the worker's rules for one payment: with its gateway's
// verify deadline (the bank returns an unverified payment to the payer
// then) and settle window (a settling payment still unknown then goes to
// review).
func (w *Worker) rulesFor(p TopUp) Rules {
	r := w.rules()
	g := w.s.cfg.Gateways[p.Gateway]
	r.VerifyDeadline, r.CallbackOnly, r.SettleWindow = g.VerifyDeadline, g.callbackOnly(), g.SettleWindow
	return r
}

// allDown reports whether every gateway's breaker is open.
func (w *Worker) allDown() bool {
	for _, g := range w.s.gws {
		if !gateway.Down(g) {
			return false
		}
	}
	return len(w.s.gws) > 0
}

// expire ends an open payment past one of its deadlines, under the lease
// like every other actor, so it cannot overrule a check in flight. busy:
// another actor held it (nothing done).
func (w *Worker) expire(ctx context.Context, p TopUp, d Decision) (_ TopUp, busy bool, err error) {
	tok, cur, err := w.s.claim(ctx, p.ID, []Status{p.Status})
	if err != nil || tok == "" {
		return cur, err == nil && heldBy(cur, w.s.clock()), err
	}
	// The receipt as it stands now (a callback may have brought one since
	// the decision's read).
	keep := KeepsReceiptAtDeadline(cur, d.To, w.rulesFor(cur))
	out, err := w.s.move(ctx, cur, cur.Status, change{to: d.To, actor: ActorWorker, reason: d.Reason, lease: tok,
		set: Fields{ClearReceipt: (d.ClearReceipt || cur.Receipt != nil) && !keep}})
	if errors.Is(err, errNotMoved) {
		out, err = w.s.release(ctx, cur, tok, Fields{})
	}
	return out, false, err
}

// backoff is the delay before the next check after n attempts: exponential
// from BaseBackoff, capped, with jitter in [50%, 100%].
func (w *Worker) backoff(n int) time.Duration {
	return Backoff(n, w.cfg.BaseBackoff, w.cfg.MaxBackoff, w.cfg.Jitter())
}

// failStaleCreated fails payments whose submit died before the bank
// answered. They have no authority: no payer reached a bank page.
func (w *Worker) failStaleCreated(ctx context.Context) (int, error) {
	now := w.s.clock()
	stale, err := w.s.st.StaleCreated(ctx, now.Add(-w.cfg.StaleCreated), w.cfg.Batch)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, p := range stale {
		d := Decide(Input{Step: StepDeadline, Actor: ActorWorker, TopUp: p, Now: now, Rules: w.rules()})
		if d.Action != ActionMove {
			continue
		}
		// Under the lease, like every other actor: reconciliation may be
		// recovering this payment's authority right now (the bank lists it
		// paid), and failing it under its feet would strand the money.
		tok, cur, err := w.s.claim(ctx, p.ID, []Status{StatusCreated})
		if err != nil {
			errs = append(errs, fmt.Errorf("claim stale payment %s: %w", p.PublicID, err))
			continue
		}
		if tok == "" {
			continue
		}
		_, err = w.s.move(ctx, cur, StatusCreated, change{to: d.To, actor: ActorWorker, reason: d.Reason, lease: tok})
		switch {
		case err == nil:
			n++
		case errors.Is(err, errNotMoved):
			if _, err := w.s.release(ctx, cur, tok, Fields{}); err != nil {
				errs = append(errs, fmt.Errorf("release stale payment %s: %w", p.PublicID, err))
			}
		default:
			// Not failed: its lease is let go at once, so that the next
			// round (or reconciliation) tries it again, and the others
			// of this round go on.
			errs = append(errs, fmt.Errorf("fail stale payment %s: %w", p.PublicID, err))
			if _, rerr := w.s.release(ctx, cur, tok, Fields{}); rerr != nil {
				errs = append(errs, fmt.Errorf("release stale payment %s: %w", p.PublicID, rerr))
			}
		}
	}
	return n, errors.Join(errs...)
}
