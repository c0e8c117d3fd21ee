package withdrawal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

func TestReconcileDue(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	report := func(ago time.Duration, failed bool) *withdrawal.Report {
		r := &withdrawal.Report{Provider: "jibit", StartedAt: now.Add(-ago)}
		if failed {
			r.Error = "HTTP 503"
		}
		return r
	}
	for _, c := range []struct {
		name     string
		latest   *withdrawal.Report
		interval time.Duration
		due      bool
	}{
		{"never reconciled", nil, day, true},
		{"an hour ago", report(time.Hour, false), day, false},
		{"just under the interval", report(day-time.Second, false), day, false},
		{"the interval ago", report(day, false), day, true},
		{"failed half an hour ago", report(30*time.Minute, true), day, false},
		{"failed an hour ago", report(time.Hour, true), day, true},
		{"failed, a shorter interval", report(20*time.Minute, true), 20 * time.Minute, true},
	} {
		if got := withdrawal.ReconcileDue(c.latest, now, c.interval); got != c.due {
			t.Errorf("%s: due %v, want %v", c.name, got, c.due)
		}
	}
}

// TestReconcileIfDueReadsTheStoredReports: the periodic step reconciles
// a provider with no report at once, not again while its newest report is
// younger than the interval (another instance's, or one made before a
// restart), again once it is as old; a run that failed is tried again
// after ReconcileRetry, not a whole interval later.
func TestReconcileIfDueReadsTheStoredReports(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		e.paid(1_000_000)
		interval := 24 * time.Hour
		run := func(want int) []withdrawal.Report {
			t.Helper()
			reps, err := e.svc.ReconcileIfDue(ctx, e.st, nil, interval)
			if len(reps) != want {
				t.Fatalf("at %s: %d reports (%v), want %d", e.clock.Now().Format(time.RFC3339), len(reps), err, want)
			}
			return reps
		}
		if reps := run(1); reps[0].Error != "" || reps[0].Paid != 1 {
			t.Fatalf("the first run: %+v", reps[0])
		}
		run(0)
		e.clock.Advance(interval - time.Minute)
		run(0)
		e.clock.Advance(time.Minute)
		e.faults("jibit", payouts.ProviderFaults{Maintenance: true})
		if reps := run(1); reps[0].Error == "" {
			t.Fatalf("a run against a provider under maintenance: %+v", reps[0])
		}
		e.clock.Advance(withdrawal.ReconcileRetry - time.Minute)
		run(0)
		e.faults("jibit", payouts.ProviderFaults{})
		e.clock.Advance(time.Minute)
		if reps := run(1); reps[0].Error != "" || reps[0].Paid != 1 {
			t.Fatalf("the retry: %+v", reps[0])
		}
		latest, err := e.svc.LatestReports(ctx)
		if err != nil || len(latest) != 1 || latest[0].Error != "" {
			t.Fatalf("latest reports: %+v %v", latest, err)
		}
	})
}

// TestNewestReportsNameTheNeverReconciled: a provider with no stored
// report is listed with zero times (the metrics' "never"), then with its
// first report once reconciled.
func TestNewestReportsNameTheNeverReconciled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		e.paid(1_000_000)
		reps, err := e.svc.NewestReports(ctx)
		if err != nil || len(reps) != 1 || reps[0].Provider != "jibit" || !reps[0].FinishedAt.IsZero() || reps[0].ID != 0 {
			t.Fatalf("before any run: %+v %v", reps, err)
		}
		if _, err := e.svc.ReconcileIfDue(ctx, e.st, nil, 24*time.Hour); err != nil {
			t.Fatal(err)
		}
		reps, err = e.svc.NewestReports(ctx)
		if err != nil || len(reps) != 1 || reps[0].FinishedAt.IsZero() || reps[0].Paid != 1 {
			t.Fatalf("after the first run: %+v %v", reps, err)
		}
	})
}

// memTurns is reconcile_turns in memory: a turn is taken when free at
// now (its next at or before now), held until next.
type memTurns struct {
	mu    sync.Mutex
	next  map[string]time.Time
	taken []string
	// claimed, when set, runs after a turn is taken (once per name).
	claimed func(name string)
}

func (m *memTurns) ClaimReconcileTurn(_ context.Context, name string, now, next time.Time) (bool, error) {
	m.mu.Lock()
	if at, ok := m.next[name]; ok && at.After(now) {
		m.mu.Unlock()
		return false, nil
	}
	m.next[name] = next
	m.taken = append(m.taken, name)
	hook := m.claimed
	m.claimed = nil
	m.mu.Unlock()
	if hook != nil {
		hook(name)
	}
	return true, nil
}

// TestReconcileIfDueGivesBackATurnItLeaves: a provider found due whose
// run ends elsewhere between the read and the claim (its report stored,
// its turn given back) is left to that run, and the turn this step took
// is given back all the same, not held for ReconcileHold (which would
// answer an admin's "reconcile now" busy with nothing running).
func TestReconcileIfDueGivesBackATurnItLeaves(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		e.paid(1_000_000)
		turns := &memTurns{next: map[string]time.Time{}}
		turns.claimed = func(string) {
			// Another instance's run, ending just now.
			if reps, err := e.svc.ReconcileIfDue(ctx, e.st, nil, 24*time.Hour); err != nil || len(reps) != 1 {
				t.Errorf("the other run: %d reports (%v)", len(reps), err)
			}
		}
		reps, err := e.svc.ReconcileIfDue(ctx, e.st, turns, 24*time.Hour)
		if err != nil || len(reps) != 0 {
			t.Fatalf("this step: %d reports (%v), want none (the other run's report is fresh)", len(reps), err)
		}
		name := withdrawal.TurnName("jibit")
		if at := turns.next[name]; at.After(e.clock.Now()) {
			t.Fatalf("the turn left to the other run is held until %s", at)
		}
		if _, junk := turns.next[withdrawal.TurnName("")]; junk {
			t.Fatal("a turn of no provider was written")
		}
	})
}

// TestReconcileIfDueTakesTheProvidersTurn: the periodic step runs a due
// provider only with its turn, the one an admin's "reconcile now" takes:
// while another run holds it, nothing is asked and no report is stored;
// once free, the step runs and gives the turn back when it ends.
func TestReconcileIfDueTakesTheProvidersTurn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		e.paid(1_000_000)
		turns := &memTurns{next: map[string]time.Time{}}
		name := withdrawal.TurnName("jibit")
		now := e.clock.Now()
		turns.next[name] = now.Add(withdrawal.ReconcileHold) // another run's
		if reps, err := e.svc.ReconcileIfDue(ctx, e.st, turns, 24*time.Hour); err != nil || len(reps) != 0 {
			t.Fatalf("with the turn held elsewhere: %d reports (%v), want none", len(reps), err)
		}
		if latest, err := e.svc.LatestReports(ctx); err != nil || len(latest) != 0 {
			t.Fatalf("a report stored while the turn was held elsewhere: %+v %v", latest, err)
		}
		turns.next[name] = now // given back
		reps, err := e.svc.ReconcileIfDue(ctx, e.st, turns, 24*time.Hour)
		if err != nil || len(reps) != 1 || reps[0].Paid != 1 {
			t.Fatalf("with the turn free: %+v %v", reps, err)
		}
		if at := turns.next[name]; at.After(e.clock.Now()) {
			t.Fatalf("the turn is still held until %s after the run ended", at)
		}
	})
}
