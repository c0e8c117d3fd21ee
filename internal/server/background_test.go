package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The background loops and their periods follow the configuration: a
// loop switched off is not started; the reconciliation waits one period;
// mail and webhooks are woken by their queues' kicks.
func TestLoops(t *testing.T) {
	type want struct {
		name     string
		interval time.Duration
		later    bool
	}
	always := []want{{"token last use", 10 * time.Second, false}, {"charges", time.Minute, false}, {"holds", time.Minute, false}, {"retention", time.Hour, false}}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []want
	}{
		{name: "defaults", want: append([]want{{"worker", 2 * time.Second, false}, {"card refunds", 2 * time.Second, false}, {"reconcile", ReconcileCheckEvery, true},
			{"withdrawals", 2 * time.Second, false}, {"payout reconcile", PayoutReconcileCheckEvery, true}, {"mail", 10 * time.Second, false}, {"webhooks", 2 * time.Second, false}, {"idempotency keys", 10 * time.Minute, false}}, always...)},
		{name: "off, or set", env: map[string]string{"WORKER_INTERVAL": "off", "RECONCILE_INTERVAL": "0", "WEBHOOK_INTERVAL": "off",
			"MAIL_INTERVAL": "20ms", "IDEMPOTENCY_KEY_TTL": "1m", "PAYOUT_RECONCILE_INTERVAL": "off"},
			want: append([]want{{"mail", 20 * time.Millisecond, false}, {"idempotency keys", 15 * time.Second, false}}, always...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(testConfig(t, tc.env), storetest.New(t, store.SQLite), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []want
			for _, l := range s.loops(nil) {
				got = append(got, want{l.name, l.Interval, l.Later})
				if wake := map[string]<-chan struct{}{"mail": s.Outbox.Kicks(), "webhooks": s.Hooks.Kicks(), "withdrawals": s.Withdrawals.Wake()}[l.name]; l.Wake != wake {
					t.Errorf("%s: woken by %v, want %v", l.name, l.Wake, wake)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("loops\n %v, want\n %v", got, tc.want)
			}
		})
	}
}

// RunBackground starts every loop on the options' ticks, with its period,
// and stops them all when its context ends.
func TestRunBackgroundStartsAndStopsEveryLoop(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var mu sync.Mutex
		started, stopped := make(chan time.Duration, 16), 0
		ticks := func(d time.Duration) (<-chan time.Time, func()) {
			started <- d
			return nil, func() { mu.Lock(); stopped++; mu.Unlock() }
		}
		s, err := New(testConfig(t, nil), db, Options{Ticks: ticks})
		if err != nil {
			t.Fatal(err)
		}
		var want []time.Duration
		for _, l := range s.loops(nil) {
			want = append(want, l.Interval)
		}
		ctx, cancel := context.WithCancel(context.Background())
		wait := s.RunBackground(ctx, nil)
		var got []time.Duration
		for range want {
			got = append(got, <-started)
		}
		cancel()
		wait()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || stopped != len(want) {
			t.Errorf("tickers of %v, %d stopped; want %v, all stopped", got, stopped, want)
		}
		// Each loop started is in the metrics' list, with its period.
		var noted []time.Duration
		for _, l := range s.loopRuns.all() {
			noted = append(noted, l.Interval)
		}
		slices.Sort(noted)
		if !slices.Equal(noted, want) {
			t.Errorf("loops noted with periods %v, want %v", noted, want)
		}
	})
}

// A loop's run that ends is noted with its time; one that panics is not,
// so that a loop panicking at every beat looks stuck to the metrics.
func TestALoopsRunsAreNoted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s, err := New(testConfig(t, nil), db, Options{})
		if err != nil {
			t.Fatal(err)
		}
		panics := true
		l := s.noted(loop{name: "test loop", Loop: lifecycle.Loop{Interval: time.Minute}, run: func(context.Context) {
			if panics {
				panic("a bad row")
			}
		}})
		last := func() time.Time {
			for _, r := range s.loopRuns.all() {
				if r.Name == "test loop" {
					return r.LastRun
				}
			}
			t.Fatal("the loop is not noted")
			return time.Time{}
		}
		start := last()
		func() {
			defer func() { _ = recover() }()
			l.run(context.Background())
		}()
		if got := last(); !got.Equal(start) {
			t.Fatalf("a panicked run was noted: %v", got)
		}
		panics = false
		l.run(context.Background())
		if got := last(); !got.After(start) {
			t.Fatalf("a run that ended noted at %v, want after %v", got, start)
		}
	})
}

// The mail loop queues what is due and delivers it: a reset link asked
// for lands in DATA_DIR/mail (no SMTP_URL) at its next run.
func TestMailLoopDeliversQueuedMail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cfg := testConfig(t, nil)
		s, err := New(cfg, db, Options{BcryptCost: 4})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := s.Auth.SignUp(ctx, "reset@example.com", "a long enough passphrase", auth.RoleUser, "en"); err != nil {
			t.Fatal(err)
		}
		if err := s.Auth.RequestReset(ctx, "reset@example.com", "test"); err != nil {
			t.Fatal(err)
		}
		runLoop(ctx, s, "mail")
		files, err := os.ReadDir(filepath.Join(cfg.DataDir, "mail"))
		if err != nil || len(files) != 1 {
			t.Fatalf("DATA_DIR/mail holds %v (%v), want the reset mail", files, err)
		}
	})
}

// runLoop runs one beat of the background loop name.
func runLoop(ctx context.Context, s *Server, name string) {
	for _, l := range s.loops(nil) {
		if l.name == name {
			l.run(ctx)
		}
	}
}

// One beat of the mail loop delivers more than one batch when more is
// due: 120 mails queued at once (a burst of receipts) all go out in it,
// not 50 a beat while the queue grows behind.
func TestMailLoopDrainsABurst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cfg := testConfig(t, nil)
		s, err := New(cfg, db, Options{BcryptCost: 4})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		now := time.Now().UTC().Add(-time.Minute)
		if err := db.Gorm.Transaction(func(tx *gorm.DB) error {
			for i := range 120 {
				if err := mail.Enqueue(tx, mail.Row{Kind: "receipt", ToAddr: fmt.Sprintf("payer%d@example.com", i), Subject: "receipt",
					TextBody: "paid", CreatedAt: now}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		runLoop(ctx, s, "mail")
		files, err := os.ReadDir(filepath.Join(cfg.DataDir, "mail"))
		if err != nil || len(files) != 120 {
			t.Fatalf("DATA_DIR/mail holds %d files (%v) after one beat, want all 120", len(files), err)
		}
	})
}

// The holds loop releases a plain hold past its time, and never one whose
// owner ends it with its own status: a charge's, a withdrawal's or a card
// refund's, however long past its time (a payout may be in flight).
func TestHoldsLoopLeavesOwnedHolds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		s, err := New(testConfig(t, nil), db, Options{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		u, err := s.Auth.SignUp(ctx, "holds@example.com", "correct horse battery", auth.RoleUser, "en")
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Wallets.ForUser(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		ledgertest.Fund(t, db, w.AccountID, 1_000_000, "holds")
		reasons := append(ownedHoldReasons(), "plain")
		for _, reason := range reasons {
			if _, err := s.Ledger.Hold(ctx, ledger.HoldRequest{AccountID: w.AccountID, AmountRials: 100_000, Reason: reason,
				Reference: "ref-" + reason, ExpiresAt: now.Add(-time.Hour), Now: now.Add(-2 * time.Hour)}); err != nil {
				t.Fatalf("hold %s: %v", reason, err)
			}
		}
		var holds *loop
		for _, l := range s.loops(slog.New(slog.DiscardHandler)) {
			if l.name == "holds" {
				holds = &l
			}
		}
		if holds == nil {
			t.Fatal("no holds loop")
		}
		holds.run(ctx)
		for _, reason := range reasons {
			h, err := s.Ledger.HoldBy(ctx, reason, "ref-"+reason)
			if err != nil {
				t.Fatal(err)
			}
			want := ledger.HoldOpen
			if reason == "plain" {
				want = ledger.HoldExpired
			}
			if h.Status != want {
				t.Errorf("%s hold: %s, want %s", reason, h.Status, want)
			}
		}
		if got := ledgertest.Held(t, db, w.ID); got != 300_000 {
			t.Errorf("held %d, want 300000 (the three owned holds)", got)
		}
	})
}

// A sweep runs again at once while a round ends a whole batch, so a
// backlog clears within one tick; it stops at a short round, an error or
// the rounds' bound.
func TestSweepAll(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name       string
		backlog    int   // items due
		failAt     int   // round that fails (0: none)
		wantTotal  int   // ended
		wantRounds int   // rounds run
		wantErr    error // returned
	}{
		{"nothing due", 0, 0, 0, 1, nil},
		{"less than a batch", 7, 0, 7, 1, nil},
		{"a backlog of 2.5 batches", 25, 0, 25, 3, nil},
		{"exactly two batches", 20, 0, 20, 3, nil},
		{"more than the rounds take", 1000, 0, 40, 4, nil},
		{"a failing round stops it", 25, 2, 10, 2, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, rounds := tc.backlog, 0
			total, err := sweepAll(context.Background(), 10, 4, func(_ context.Context, limit int) (int, error) {
				rounds++
				if rounds == tc.failAt {
					return 0, boom
				}
				n := min(limit, left)
				left -= n
				return n, nil
			})
			if total != tc.wantTotal || rounds != tc.wantRounds || !errors.Is(err, tc.wantErr) {
				t.Fatalf("ended %d in %d rounds, err %v; want %d in %d, %v", total, rounds, err, tc.wantTotal, tc.wantRounds, tc.wantErr)
			}
		})
	}
}
