package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/lifecycle"
)

// fakeTicks is a ticker the test sends on: a send returns once the loop
// has taken the tick, so the run before it has finished.
type fakeTicks struct {
	c       chan time.Time
	period  time.Duration
	stopped bool
}

func (f *fakeTicks) ticks(d time.Duration) (<-chan time.Time, func()) {
	f.period = d
	return f.c, func() { f.stopped = true }
}

// The loop runs at once (unless Later), once per tick and once per
// wake-up, with the period it was given, and stops its ticker when its
// context ends.
func TestLoop(t *testing.T) {
	for _, tc := range []struct {
		name         string
		later        bool
		ticks, wakes int
		want         int
	}{
		{name: "at once, then each tick", ticks: 2, want: 3},
		{name: "later: the first run is the first tick", later: true, ticks: 2, want: 2},
		{name: "later, never ticked", later: true, want: 0},
		{name: "a wake-up runs it before the next tick", ticks: 1, wakes: 2, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeTicks{c: make(chan time.Time)}
			wake := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			runs := 0
			done := make(chan struct{})
			go func() {
				defer close(done)
				lifecycle.Loop{Interval: time.Minute, Wake: wake, Later: tc.later, Ticks: fake.ticks}.
					Run(ctx, func(context.Context) { runs++ })
			}()
			for range tc.ticks {
				fake.c <- time.Time{}
			}
			for range tc.wakes {
				wake <- struct{}{}
			}
			cancel()
			<-done
			if runs != tc.want {
				t.Errorf("%d runs, want %d", runs, tc.want)
			}
			if fake.period != time.Minute || !fake.stopped {
				t.Errorf("ticker of %v, stopped %v; want 1m, stopped", fake.period, fake.stopped)
			}
		})
	}
}

// With Recovered set, a run that panics is reported (value and stack)
// and the loop runs again at its next tick.
func TestLoopRecoversAPanic(t *testing.T) {
	fake := &fakeTicks{c: make(chan time.Time)}
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	var got []any
	var stacks int
	done := make(chan struct{})
	go func() {
		defer close(done)
		lifecycle.Loop{Interval: time.Minute, Ticks: fake.ticks, Recovered: func(v any, stack []byte) {
			got = append(got, v)
			if len(stack) > 0 {
				stacks++
			}
		}}.Run(ctx, func(context.Context) {
			runs++
			if runs == 1 {
				panic("a poison row")
			}
		})
	}()
	fake.c <- time.Time{}
	fake.c <- time.Time{}
	cancel()
	<-done
	if runs != 3 || len(got) != 1 || got[0] != "a poison row" || stacks != 1 {
		t.Fatalf("%d runs, recovered %v (%d stacks); want 3 runs, the first recovered", runs, got, stacks)
	}
}

func TestEveryStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	lifecycle.Every(ctx, time.Hour, func(context.Context) {
		n++
		cancel() // the first run at once; then the loop sees the end
	})
	if n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
}
