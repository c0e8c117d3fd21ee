package lifecycle

import (
	"context"
	"log/slog"
	"time"
)

// TurnStore holds named turns (a run's right to ask one outside party,
// shared by every instance): one conditional statement takes the turn
// name when it is free at now (its end at or before now, or none yet)
// and holds it until next; false: another run holds it.
type TurnStore interface {
	ClaimReconcileTurn(ctx context.Context, name string, now, next time.Time) (bool, error)
}

// Turns takes, keeps and gives back named turns (TurnStore) for runs
// that must not ask an outside party at once: two instances, an
// instance and an admin, a run and the command line.
type Turns struct {
	Store TurnStore
	// Clock is the time the turns are written in (every instance's the
	// same: the database's).
	Clock func() time.Time
	// Ticks paces Keep's renewals (nil: RealTicks).
	Ticks Ticks
	Log   *slog.Logger
}

// Claim takes the turn of each of names at now, held until now+hold.
// held are the names another run holds; with stop, the first one held
// ends the claims (held then names it and those after it): two runs that
// claim in the same order at once do not share the names out, one runs
// and the other runs none. On an error the turns taken are given back.
func (t Turns) Claim(ctx context.Context, names []string, now time.Time, hold time.Duration, stop bool) (claimed, held []string, err error) {
	for i, name := range names {
		ok, err := t.Store.ClaimReconcileTurn(ctx, name, now, now.Add(hold))
		if err != nil {
			t.release(ctx, claimed, now.Add(hold))
			return nil, nil, err
		}
		switch {
		case ok:
			claimed = append(claimed, name)
		case stop:
			return claimed, append(held, names[i:]...), nil
		default:
			held = append(held, name)
		}
	}
	return claimed, held, nil
}

// Keep holds the turns of names, claimed at claimedAt for hold, for as
// long as the run goes on: every third of hold it moves each on to a
// hold from then (the same statement, matching only a turn still this
// run's), so that a run longer than its hold (a slow bank, a short
// interval's hold) never lets another start beside it, while a run
// killed half-way holds them no longer than hold. The context it returns
// ends when a turn could not be kept (another run took it after a late
// renewal, or the store did not answer before the turn ran out): the run
// stops asking. done stops keeping and gives the turns back.
func (t Turns) Keep(ctx context.Context, names []string, claimedAt time.Time, hold time.Duration) (kept context.Context, done func()) {
	kept, cancel := context.WithCancel(ctx)
	if len(names) == 0 {
		return kept, cancel
	}
	ticks := t.Ticks
	if ticks == nil {
		ticks = RealTicks
	}
	c, stopTicks := ticks(max(hold/3, time.Millisecond))
	untils := make([]time.Time, len(names))
	for i := range untils {
		untils[i] = claimedAt.Add(hold)
	}
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		defer stopTicks()
		for {
			select {
			case <-quit:
				return
			case <-kept.Done():
				return
			case <-c:
			}
			if !t.renew(kept, names, untils, hold) {
				cancel()
				return
			}
		}
	}()
	return kept, func() {
		close(quit)
		<-ended // untils are this goroutine's again
		cancel()
		for i, name := range names {
			t.release(ctx, []string{name}, untils[i])
		}
	}
}

// renew moves each of names, held until its untils[i], on to a hold from
// now, and writes the new ends into untils: false when one is no longer
// this run's, or could not be moved before it ran out.
func (t Turns) renew(ctx context.Context, names []string, untils []time.Time, hold time.Duration) bool {
	next := t.Clock().Add(hold)
	for i, name := range names {
		// No longer than the turn still lasts: a store that hangs past
		// its end must not leave this run asking while another starts.
		rctx, cancel := context.WithTimeout(ctx, max(untils[i].Sub(t.Clock()), time.Millisecond))
		ok, err := t.Store.ClaimReconcileTurn(rctx, name, untils[i], next)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && t.Clock().Before(untils[i]):
			// Held still: the next tick tries again.
			t.Log.WarnContext(ctx, "keeping a run's turn", "turn", name, "err", err)
		case err != nil:
			// Ran out unrenewed: it may be another run's now.
			t.Log.WarnContext(ctx, "a run's turn ran out: stopping", "turn", name, "err", err)
			return false
		case !ok:
			t.Log.WarnContext(ctx, "a run's turn was taken by another run: stopping", "turn", name)
			return false
		default:
			untils[i] = next
		}
	}
	return true
}

// release gives back the turns of names held until until, when the run
// has ended: the same conditional statement moves a turn that is still
// this run's to now, so that the next run (an admin's) need not wait out
// the hold. A turn not given back (an error) ends with its hold.
func (t Turns) release(ctx context.Context, names []string, until time.Time) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	now := t.Clock()
	if !now.Before(until) {
		return // the hold is over: the turn may be another run's now
	}
	for _, name := range names {
		if _, err := t.Store.ClaimReconcileTurn(ctx, name, until, now); err != nil {
			t.Log.WarnContext(ctx, "giving back a run's turn", "turn", name, "err", err)
		}
	}
}
