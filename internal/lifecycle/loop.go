package lifecycle

import (
	"context"
	"runtime/debug"
	"time"
)

// Ticks starts a ticker of period d: the channel its ticks arrive on, and
// the function that stops it. Production loops use time.NewTicker; tests
// pass ticks they send themselves (no sleeps, no waiting for real time).
type Ticks func(d time.Duration) (c <-chan time.Time, stop func())

// RealTicks is time.NewTicker as Ticks.
func RealTicks(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Loop is one background loop: its function runs at once (unless Later),
// then on every tick of Interval and whenever Wake receives, until the
// context ends; a run in progress finishes first.
type Loop struct {
	// Interval is the period (positive).
	Interval time.Duration
	// Wake, when set, runs the function before the next tick (a queue's
	// Kick). A nil channel never wakes.
	Wake <-chan struct{}
	// Later skips the run at once: the first is one Interval after the
	// start (a loop whose caller has just done the same work).
	Later bool
	// Ticks makes the ticker (nil: RealTicks).
	Ticks Ticks
	// Recovered, when set, is told of a panic in a run (its value and
	// stack), and the loop goes on at its next tick: one bad row or
	// answer does not end the instance, HTTP included, nor every instance
	// in turn as each claims that row. Unset, a panic ends the process.
	Recovered func(v any, stack []byte)
}

// Run runs fn as the loop says until ctx ends.
func (l Loop) Run(ctx context.Context, fn func(context.Context)) {
	ticks := l.Ticks
	if ticks == nil {
		ticks = RealTicks
	}
	c, stop := ticks(l.Interval)
	defer stop()
	if !l.Later {
		l.once(ctx, fn)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c:
		case <-l.Wake:
		}
		l.once(ctx, fn)
	}
}

// once runs fn, recovering a panic when the loop says so.
func (l Loop) once(ctx context.Context, fn func(context.Context)) {
	if l.Recovered != nil {
		defer func() {
			if v := recover(); v != nil {
				l.Recovered(v, debug.Stack())
			}
		}()
	}
	fn(ctx)
}

// Every runs fn at once and then every d, until ctx ends; a run in
// progress finishes first.
func Every(ctx context.Context, d time.Duration, fn func(context.Context)) {
	Loop{Interval: d}.Run(ctx, fn)
}
