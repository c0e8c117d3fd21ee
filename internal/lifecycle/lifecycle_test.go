package lifecycle_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/testwait"
)

type status string
type actor string

func TestMachine(t *testing.T) {
	m := lifecycle.NewMachine(map[[2]status]lifecycle.Rule[actor]{
		{"requested", "submitted"}: {Actors: []actor{"worker"}, Lease: true},
		{"submitted", "paid"}:      {Actors: []actor{"worker", "admin"}},
	})
	cases := []struct {
		from, to status
		by       actor
		lease    bool
		err      bool
	}{
		{"requested", "submitted", "worker", true, false},
		{"submitted", "paid", "admin", false, false},
		{"requested", "submitted", "admin", false, true}, // not this actor
		{"requested", "paid", "worker", false, true},     // no such edge
		{"paid", "requested", "worker", false, true},
	}
	for _, tc := range cases {
		r, err := m.Allowed(tc.from, tc.to, tc.by)
		if tc.err != (err != nil) || (err != nil && !errors.Is(err, lifecycle.ErrIllegalTransition)) {
			t.Errorf("%s → %s by %s: %v", tc.from, tc.to, tc.by, err)
		}
		if err == nil && r.Lease != tc.lease {
			t.Errorf("%s → %s: lease %v, want %v", tc.from, tc.to, r.Lease, tc.lease)
		}
	}
	if n := len(m.Edges()); n != 2 {
		t.Errorf("%d edges", n)
	}
}

func TestBackoff(t *testing.T) {
	base, maxDelay := time.Second, 16*time.Second
	for _, tc := range []struct {
		n      int
		jitter float64
		want   time.Duration
	}{
		{1, 0, 500 * time.Millisecond}, {1, 0.999999, time.Second - time.Microsecond},
		{2, 0, time.Second}, {3, 0, 2 * time.Second}, {5, 0, 8 * time.Second},
		{6, 0, 8 * time.Second}, {50, 0.5, 12 * time.Second}, // capped at 16 s: [8, 16]
	} {
		got := lifecycle.Backoff(tc.n, base, maxDelay, tc.jitter)
		if got < tc.want-time.Millisecond || got > tc.want+time.Millisecond {
			t.Errorf("Backoff(%d, jitter %v) = %v, want %v", tc.n, tc.jitter, got, tc.want)
		}
	}
}

func TestNextCheck(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	recent, old := now.Add(-5*time.Second), now.Add(-time.Hour)
	if got := lifecycle.NextCheck(nil, now, time.Second, 20*time.Second); !got.Equal(now.Add(time.Second)) {
		t.Errorf("never checked: %v", got)
	}
	if got := lifecycle.NextCheck(&recent, now, time.Second, 20*time.Second); !got.Equal(recent.Add(20 * time.Second)) {
		t.Errorf("checked 5 s ago: %v, want the pacing floor", got)
	}
	if got := lifecycle.NextCheck(&old, now, time.Minute, 20*time.Second); !got.Equal(now.Add(time.Minute)) {
		t.Errorf("checked long ago: %v", got)
	}
}

type fakeWorker struct {
	mu        sync.Mutex
	ids       []int64
	resolved  []int64
	unclaimed []int64
	failed    []int64
	running   int
	peak      int
	gate      chan struct{}
	panicOn   int64 // Resolve panics on this id (0: none)
	errs      map[int64]error
}

func (w *fakeWorker) Claim(context.Context) ([]int64, error) { return w.ids, nil }
func (w *fakeWorker) Unclaim(ids []int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unclaimed = append(w.unclaimed, ids...)
}
func (w *fakeWorker) Resolve(ctx context.Context, id int64) (bool, error) {
	w.mu.Lock()
	w.running++
	w.peak = max(w.peak, w.running)
	w.mu.Unlock()
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running--
	if id == w.panicOn {
		panic("a reply nobody expected")
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if id%5 == 0 {
		return false, errors.New("bank said nothing")
	}
	w.resolved = append(w.resolved, id)
	return id%2 == 0, nil
}
func (w *fakeWorker) Failed(_ context.Context, id int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failed = append(w.failed, id)
	if w.errs == nil {
		w.errs = map[int64]error{}
	}
	w.errs[id] = err
}

// A panic resolving one item fails that item (its error says so, with the
// stack) and the round goes on with the others.
func TestRoundSurvivesAPanic(t *testing.T) {
	w := &fakeWorker{ids: []int64{1, 2, 3, 4}, panicOn: 3}
	rr, err := lifecycle.Round(context.Background(), w, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(w.resolved)
	if rr.Claimed != 4 || !slices.Equal(w.failed, []int64{3}) || !slices.Equal(w.resolved, []int64{1, 2, 4}) {
		t.Fatalf("round %+v, failed %v, resolved %v", rr, w.failed, w.resolved)
	}
	if e := w.errs[3]; e == nil || !strings.Contains(e.Error(), "panic resolving 3: a reply nobody expected") ||
		!strings.Contains(e.Error(), "goroutine") {
		t.Fatalf("the panicked item's error: %v", e)
	}
}

func TestRound(t *testing.T) {
	w := &fakeWorker{ids: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	rr, err := lifecycle.Round(context.Background(), w, 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// 5 and 10 fail; of the rest, 2, 4, 6 and 8 end.
	if rr.Claimed != 10 || rr.Ended != 4 {
		t.Fatalf("round %+v", rr)
	}
	slices.Sort(w.failed)
	if !slices.Equal(w.failed, []int64{5, 10}) || len(w.resolved) != 8 || w.peak > 3 {
		t.Fatalf("failed %v, resolved %v, peak concurrency %d", w.failed, w.resolved, w.peak)
	}
}

// A round whose context ends gives back what it had not started, and
// finishes what it had (its resolves are detached from the cancellation).
func TestRoundGivesBackOnShutdown(t *testing.T) {
	w := &fakeWorker{ids: []int64{1, 2, 3, 4}, gate: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan lifecycle.RoundResult)
	go func() {
		rr, _ := lifecycle.Round(ctx, w, 1, time.Minute)
		done <- rr
	}()
	// The first resolve is running (concurrency 1): shut down, let it end.
	testwait.Eventually(t, 10*time.Second, "the first resolve running", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.running == 1
	})
	cancel()
	close(w.gate)
	<-done
	if !slices.Contains(w.resolved, 1) || len(w.unclaimed) == 0 || slices.Contains(w.unclaimed, 1) {
		t.Fatalf("resolved %v, given back %v", w.resolved, w.unclaimed)
	}
}

// lookingCtx is a context that runs looked each time Err or Done is
// called (after taking its answer): a test cancels at a chosen look.
type lookingCtx struct {
	context.Context
	looked func()
}

func (c lookingCtx) Err() error {
	err := c.Context.Err()
	c.looked()
	return err
}

func (c lookingCtx) Done() <-chan struct{} {
	d := c.Context.Done()
	c.looked()
	return d
}

// A shutdown that begins while the round waits for a place (the first
// item's check under way, concurrency 1) starts no fresh check: the item
// under way finishes, and every other is given back, whether the context
// ends just after the round last looked at it or while it waits.
func TestRoundStartsNothingAfterShutdownWhileWaitingForAPlace(t *testing.T) {
	for _, cancelAt := range []int{2, 3} {
		w := &fakeWorker{ids: []int64{1, 2, 3, 4}, gate: make(chan struct{})}
		base, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		looks := 0
		ctx := lookingCtx{Context: base, looked: func() {
			mu.Lock()
			defer mu.Unlock()
			if looks++; looks == cancelAt {
				cancel()
			}
		}}
		done := make(chan lifecycle.RoundResult)
		go func() {
			rr, _ := lifecycle.Round(ctx, w, 1, time.Minute)
			done <- rr
		}()
		select {
		case <-base.Done(): // shut down, the first check still under way
		case <-time.After(10 * time.Second): // real time: a bound on another goroutine
			close(w.gate)
			<-done
			t.Fatalf("cancel at look %d: the round never looked at its context %d times (it waited for a place, deaf to the shutdown)", cancelAt, cancelAt)
		}
		close(w.gate)
		rr := <-done
		slices.Sort(w.unclaimed)
		if rr.Claimed != 4 || !slices.Equal(w.resolved, []int64{1}) || !slices.Equal(w.unclaimed, []int64{2, 3, 4}) || len(w.failed) != 0 {
			t.Errorf("cancel at look %d: round %+v, resolved %v, given back %v, failed %v; want 1 resolved, 2-4 given back",
				cancelAt, rr, w.resolved, w.unclaimed, w.failed)
		}
	}
}
