package lifecycle_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/testwait"
)

// turnStore is reconcile_turns in memory: the same conditional claim.
type turnStore struct {
	mu    sync.Mutex
	next  map[string]time.Time
	calls int
	fail  bool
}

func (s *turnStore) ClaimReconcileTurn(_ context.Context, name string, now, next time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail {
		return false, errors.New("database away")
	}
	if at, ok := s.next[name]; ok && at.After(now) {
		return false, nil
	}
	s.next[name] = next
	return true, nil
}

func (s *turnStore) at(name string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next[name]
}

func (s *turnStore) calls0() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *turnStore) setFail(f bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

// tickSender is a ticker the test sends on.
type tickSender struct{ c chan time.Time }

func (f tickSender) ticks(time.Duration) (<-chan time.Time, func()) { return f.c, func() {} }

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func newTurns() (*turnStore, *testclock.Clock, tickSender, lifecycle.Turns) {
	st := &turnStore{next: map[string]time.Time{}}
	clk := testclock.New(t0)
	ticks := tickSender{c: make(chan time.Time)}
	return st, clk, ticks, lifecycle.Turns{Store: st, Clock: clk.Now, Ticks: ticks.ticks, Log: slog.New(slog.DiscardHandler)}
}

func TestClaimTurns(t *testing.T) {
	for _, tc := range []struct {
		name             string
		stop             bool
		wantClaimed      []string
		wantHeld         []string
		wantBUntouchedAt time.Time
	}{
		{"every free one", false, []string{"a", "c"}, []string{"b"}, t0.Add(time.Hour)},
		{"up to the first held", true, []string{"a"}, []string{"b", "c"}, t0.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, _, turns := newTurns()
			st.next["b"] = t0.Add(time.Hour)
			claimed, held, err := turns.Claim(context.Background(), []string{"a", "b", "c"}, t0, time.Minute, tc.stop)
			if err != nil || !slices.Equal(claimed, tc.wantClaimed) || !slices.Equal(held, tc.wantHeld) {
				t.Fatalf("claimed %v held %v err %v, want %v and %v", claimed, held, err, tc.wantClaimed, tc.wantHeld)
			}
			if got := st.at("b"); !got.Equal(tc.wantBUntouchedAt) {
				t.Fatalf("b's turn moved to %v", got)
			}
		})
	}
}

// A run kept past its hold keeps its turn: another run that would have
// found it free after the hold finds it held; when the run ends the turn
// is given back at once.
func TestKeepHoldsATurnPastItsHold(t *testing.T) {
	st, clk, ticks, turns := newTurns()
	ctx := context.Background()
	hold := 3 * time.Second
	if claimed, _, _ := turns.Claim(ctx, []string{"zibal"}, t0, hold, true); len(claimed) != 1 {
		t.Fatal("the first claim failed")
	}
	kept, done := turns.Keep(ctx, []string{"zibal"}, t0, hold)
	for i := 1; i <= 3; i++ {
		clk.Add(2 * time.Second)
		ticks.c <- clk.Now()
		want := clk.Now().Add(hold)
		testwait.Eventually(t, 5*time.Second, "the turn renewed", func() bool { return st.at("zibal").Equal(want) })
	}
	// Six seconds in: twice the hold. Another run finds it held.
	if claimed, held, _ := turns.Claim(ctx, []string{"zibal"}, clk.Now(), hold, true); len(claimed) != 0 || len(held) != 1 {
		t.Fatalf("a second run took a kept turn: claimed %v", claimed)
	}
	if kept.Err() != nil {
		t.Fatal("the run was stopped while its turn was kept")
	}
	clk.Add(time.Second)
	done()
	if got := st.at("zibal"); !got.Equal(clk.Now()) {
		t.Fatalf("the turn ends at %v, want given back at %v", got, clk.Now())
	}
}

// A turn another run took (the renewal came after it ran out) stops the
// run, and is not given back: it is the other run's.
func TestKeepStopsARunThatLostItsTurn(t *testing.T) {
	st, clk, ticks, turns := newTurns()
	ctx := context.Background()
	hold := 3 * time.Second
	turns.Claim(ctx, []string{"sep"}, t0, hold, true)
	kept, done := turns.Keep(ctx, []string{"sep"}, t0, hold)
	clk.Add(4 * time.Second)
	other := clk.Now().Add(hold)
	if claimed, _, _ := turns.Claim(ctx, []string{"sep"}, clk.Now(), hold, true); len(claimed) != 1 {
		t.Fatal("the turn ran out, yet another run could not take it")
	}
	ticks.c <- clk.Now()
	testwait.Eventually(t, 5*time.Second, "the run stopped", func() bool { return kept.Err() != nil })
	done()
	if got := st.at("sep"); !got.Equal(other) {
		t.Fatalf("the other run's turn moved to %v, want %v", got, other)
	}
}

// A store that does not answer: the run goes on while its turn is still
// held, and stops once it has run out unrenewed.
func TestKeepStopsWhenTheTurnRunsOutUnrenewed(t *testing.T) {
	st, clk, ticks, turns := newTurns()
	ctx := context.Background()
	hold := 3 * time.Second
	turns.Claim(ctx, []string{"mellat"}, t0, hold, true)
	kept, done := turns.Keep(ctx, []string{"mellat"}, t0, hold)
	defer done()
	st.setFail(true)
	clk.Add(time.Second)
	calls := st.calls0()
	ticks.c <- clk.Now()
	testwait.Eventually(t, 5*time.Second, "the renewal tried", func() bool { return st.calls0() > calls })
	if kept.Err() != nil {
		t.Fatal("stopped while the turn was still held")
	}
	clk.Add(3 * time.Second)
	ticks.c <- clk.Now()
	testwait.Eventually(t, 5*time.Second, "the run stopped", func() bool { return kept.Err() != nil })
}
