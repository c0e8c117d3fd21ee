// Package lifecycle is the skeleton every movement whose outcome an
// outside party decides runs on: a top-up (the bank's verify), and next a
// withdrawal (the payout provider's answer). It holds what such a
// lifecycle shares and nothing of any one of them:
//
//   - Machine: the table of allowed status changes, who may take each and
//     whether it needs the lease. A lifecycle's one writer checks every
//     change against it, then writes it with one conditional UPDATE on the
//     expected status (and lease owner) plus its event, in one transaction.
//   - NewLeaseToken: the token a lease is taken with. A lease is held by
//     whoever talks to the outside party about an item or ends it, taken
//     only when free or expired, sized to one call.
//   - Backoff and NextCheck: when the worker asks again about an item still
//     unknown, with exponential back-off, jitter and a pacing floor.
//   - Round: one worker round: claim due items (the claim pushes their next
//     check forward in one transaction, SKIP LOCKED on PostgreSQL), resolve
//     them with bounded concurrency, give back what shutdown left unstarted.
//   - Loop and Every: a background loop at an interval (and on a wake-up),
//     until its context ends. Every background loop of an instance runs on
//     it, so that a test drives any of them with fake ticks.
//
// The decisions stay pure functions of each lifecycle (topup.Decide);
// its store keeps the SQL. A new lifecycle is a status type, an edge table,
// a store with Claim/Unclaim and a resolve function: an instance of this,
// not a copy.
package lifecycle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// ErrIllegalTransition is a programming error: an edge the table lacks, or
// an actor it does not allow.
var ErrIllegalTransition = errors.New("illegal transition")

// Rule says who may take an edge and whether the lease is required.
type Rule[A comparable] struct {
	Actors []A
	Lease  bool
}

// Edge is one allowed status change.
type Edge[S, A comparable] struct {
	From, To S
	Actors   []A
	Lease    bool
}

// Machine is a lifecycle's table of edges (read-only once made).
type Machine[S, A comparable] struct {
	edges map[[2]S]Rule[A]
}

// NewMachine returns the machine of edges, keyed {from, to}.
func NewMachine[S, A comparable](edges map[[2]S]Rule[A]) Machine[S, A] {
	m := Machine[S, A]{edges: make(map[[2]S]Rule[A], len(edges))}
	for k, r := range edges {
		m.edges[k] = Rule[A]{Actors: slices.Clone(r.Actors), Lease: r.Lease}
	}
	return m
}

// Allowed returns the rule of from → to when actor may take it, else an
// error wrapping ErrIllegalTransition.
func (m Machine[S, A]) Allowed(from, to S, actor A) (Rule[A], error) {
	r, ok := m.edges[[2]S{from, to}]
	if !ok {
		return Rule[A]{}, fmt.Errorf("%w: %v → %v", ErrIllegalTransition, from, to)
	}
	if !slices.Contains(r.Actors, actor) {
		return Rule[A]{}, fmt.Errorf("%w: %v → %v by %v", ErrIllegalTransition, from, to, actor)
	}
	return r, nil
}

// Edges lists the table.
func (m Machine[S, A]) Edges() []Edge[S, A] {
	out := make([]Edge[S, A], 0, len(m.edges))
	for k, r := range m.edges {
		out = append(out, Edge[S, A]{From: k[0], To: k[1], Actors: slices.Clone(r.Actors), Lease: r.Lease})
	}
	return out
}

// NewLeaseToken is a fresh lease owner's token.
func NewLeaseToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Backoff is the delay before the next check after n attempts: exponential
// from base, capped at maxDelay, with jitter (in [0,1)) taking it into
// [50%, 100%] of that.
func Backoff(n int, base, maxDelay time.Duration, jitter float64) time.Duration {
	d := base
	for i := 1; i < n && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// NextCheck is when an item still unknown is checked next: after the
// back-off, never sooner than the pacing window after its last check.
func NextCheck(lastChecked *time.Time, now time.Time, backoff, recheck time.Duration) time.Time {
	next := now.Add(backoff)
	if lastChecked != nil {
		if paced := lastChecked.Add(recheck); paced.After(next) {
			next = paced
		}
	}
	return next
}

// Worker is one lifecycle's side of a round.
type Worker interface {
	// Claim takes due items for this worker (their next check pushed
	// forward in the claiming transaction, so no other worker takes
	// them).
	Claim(ctx context.Context) ([]int64, error)
	// Unclaim gives back items claimed but not started (shutdown).
	Unclaim(ids []int64)
	// Resolve works one claimed item; ended reports that it reached a
	// terminal status.
	Resolve(ctx context.Context, id int64) (ended bool, err error)
	// Failed is told of an item whose Resolve failed.
	Failed(ctx context.Context, id int64, err error)
}

// resolve is w.Resolve(ctx, id), a panic in it returned as an error
// (with its stack): the item is Failed like any other, its claim's push
// the back-off, and the round and the process go on. The store's
// transaction it was in, if any, was rolled back by the panic.
func resolve(ctx context.Context, w Worker, id int64) (ended bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			ended, err = false, fmt.Errorf("panic resolving %d: %v\n%s", id, v, debug.Stack())
		}
	}()
	return w.Resolve(ctx, id)
}

// RoundResult counts what one round did.
type RoundResult struct {
	Claimed int
	Ended   int
}

// Round claims due items and resolves them, at most concurrency at once.
// Each resolve runs on a context detached from ctx's cancellation and
// bounded by inFlight: work under way finishes when shutdown starts, and
// what was claimed but not started is given back.
func Round(ctx context.Context, w Worker, concurrency int, inFlight time.Duration) (RoundResult, error) {
	var rr RoundResult
	ids, err := w.Claim(ctx)
	if err != nil || len(ids) == 0 {
		return rr, err
	}
	rr.Claimed = len(ids)
	sem := make(chan struct{}, max(concurrency, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, id := range ids {
		// Waiting for a place ends when shutdown starts, and ctx is looked
		// at again once one is taken: a shutdown that began meanwhile
		// starts no fresh check, and what is left is given back.
		taken := false
		select {
		case sem <- struct{}{}:
			taken = true
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			if taken {
				<-sem
			}
			w.Unclaim(ids[i:])
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inFlight)
			defer cancel()
			ended, err := resolve(wctx, w, id)
			if err != nil {
				w.Failed(ctx, id, err)
				return
			}
			if ended {
				mu.Lock()
				rr.Ended++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return rr, nil
}
