package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
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
// backlog clears within one tick; it stops at a short round or the
// rounds' bound. A round's failures (items it went past) do not stop it
// while the round ended a whole batch; a short round with an error (its
// listing failed) does. The failures are reported once each.
func TestSweepAll(t *testing.T) {
	boom := errors.New("boom")
	broken := errors.New("expire item 7: broken")
	for _, tc := range []struct {
		name       string
		backlog    int   // items due
		failAt     int   // round that fails, ending nothing (0: none)
		brokenFrom int   // rounds from which each round reports broken, ending all the same (0: none)
		wantTotal  int   // ended
		wantRounds int   // rounds run
		wantErr    error // returned
	}{
		{"nothing due", 0, 0, 0, 0, 1, nil},
		{"less than a batch", 7, 0, 0, 7, 1, nil},
		{"a backlog of 2.5 batches", 25, 0, 0, 25, 3, nil},
		{"exactly two batches", 20, 0, 0, 20, 3, nil},
		{"more than the rounds take", 1000, 0, 0, 40, 4, nil},
		{"a failing round stops it", 25, 2, 0, 10, 2, boom},
		{"a failing item does not", 25, 0, 1, 25, 3, broken},
		{"nor does one in a later round", 1000, 0, 2, 40, 4, broken},
		{"a failing item, then a failing round", 1000, 3, 1, 20, 3, boom},
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
				if tc.brokenFrom > 0 && rounds >= tc.brokenFrom {
					return n, errors.Join(broken)
				}
				return n, nil
			})
			if total != tc.wantTotal || rounds != tc.wantRounds || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("ended %d in %d rounds, err %v; want %d in %d, %v", total, rounds, err, tc.wantTotal, tc.wantRounds, tc.wantErr)
			}
			if tc.brokenFrom > 0 && strings.Count(err.Error(), broken.Error()) != 1 {
				t.Fatalf("the broken item reported more than once: %v", err)
			}
		})
	}
}

// sweepErrors flattens errors.Join's errors, not an error of its own
// text wrapping several.
func TestSweepErrors(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	if got := sweepErrors(errors.Join(errors.Join(a, b), c)); !slices.Equal(got, []error{a, b, c}) {
		t.Errorf("joined: %v", got)
	}
	own := fmt.Errorf("both %w and %w", a, b)
	if got := sweepErrors(own); !slices.Equal(got, []error{own}) {
		t.Errorf("own text: %v", got)
	}
	if got := sweepErrors(nil); got != nil {
		t.Errorf("nil: %v", got)
	}
}

// One charge that cannot expire (its hold released in the ledger alone,
// as inconsistent data would have it), due before a backlog of more than
// two batches of charges: one beat of the charges loop goes past it and
// expires every other due charge (their holds released, no money moved),
// reporting the broken one once; the next beat tries it again. Before,
// the round that met it stopped the beat: a batch a minute expired.
func TestChargesLoopGoesPastABrokenCharge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
		s, err := New(testConfig(t, nil), db, Options{Now: clk.Now, BcryptCost: 4})
		if err != nil {
			t.Fatal(err)
		}
		hold := time.Duration(s.Config.ChargeHoldHours) * time.Hour
		signUp := func(addr string) (int64, int64) {
			t.Helper()
			u, err := s.Auth.SignUp(ctx, addr, "correct horse battery", auth.RoleUser, "en")
			if err != nil {
				t.Fatal(err)
			}
			w, err := s.Wallets.ForUser(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if addr == "payer@example.com" {
				ledgertest.Fund(t, db, w.AccountID, 10_000_000, "fund payer")
			}
			return u.ID, w.ID
		}
		merchant, _ := signUp("shop@example.com")
		if _, _, err := s.Charges.MakeMerchant(ctx, merchant, "Shop", nil); err != nil {
			t.Fatal(err)
		}
		payer, wallet := signUp("payer@example.com")
		create := func(order string) charge.Charge {
			t.Helper()
			res, err := s.Charges.Create(ctx, charge.CreateRequest{MerchantUserID: merchant, FormToken: formtoken.New(),
				AmountRials: 10_000, Description: "order " + order, OrderID: order, Capture: charge.CaptureManual})
			if err != nil {
				t.Fatalf("create %s: %v", order, err)
			}
			return res.Charge
		}
		authorize := func(order string) charge.Charge {
			t.Helper()
			res, err := s.Charges.Confirm(ctx, payer, create(order).PublicID)
			if err != nil || res.Charge.Status != charge.StatusAuthorized || res.Charge.HoldID == 0 {
				t.Fatalf("confirm %s: %+v %v", order, res.Charge, err)
			}
			return res.Charge
		}
		// The broken one, due first.
		broken := authorize("broken")
		if _, err := s.Ledger.Release(ctx, broken.HoldID, clk.Now()); err != nil {
			t.Fatal(err)
		}
		clk.Add(hold)
		// Behind it: authorizations (due a hold later) and unconfirmed
		// checkouts (due half an hour later), more than two batches.
		var healthy []charge.Charge
		for i := range 20 {
			healthy = append(healthy, authorize(fmt.Sprintf("auth-%d", i)))
		}
		for i := range 2*sweepBatch + 30 {
			healthy = append(healthy, create(fmt.Sprintf("checkout-%d", i)))
		}
		if got := ledgertest.Held(t, db, wallet); got != 200_000 {
			t.Fatalf("held %d before", got)
		}
		clk.Add(hold + time.Hour)

		var logs strings.Builder
		var charges *loop
		for _, l := range s.loops(slog.New(slog.NewTextHandler(&logs, nil))) {
			if l.name == "charges" {
				charges = &l
			}
		}
		if charges == nil {
			t.Fatal("no charges loop")
		}
		beat := func() string {
			t.Helper()
			logs.Reset()
			charges.run(ctx)
			return logs.String()
		}
		out := beat()
		for _, c := range healthy {
			got, err := s.Charges.Admin(ctx, c.PublicID)
			if err != nil || got.Status != charge.StatusExpired || got.EndedAt == nil {
				t.Fatalf("after one beat %s (%s): %+v %v\nlog:\n%s", c.PublicID, c.OrderID, got.Status, err, out)
			}
		}
		m, err := s.Charges.Merchant(ctx, merchant)
		if err != nil {
			t.Fatal(err)
		}
		if held, balance := ledgertest.Held(t, db, wallet), ledgertest.Balance(t, db, wallet); held != 0 || balance != 10_000_000 || m.PostedRials != 0 {
			t.Fatalf("held %d balance %d merchant %d", held, balance, m.PostedRials)
		}
		if n := strings.Count(out, broken.PublicID); n != 1 || !strings.Contains(out, "expire charges") ||
			!strings.Contains(out, fmt.Sprintf("expired charges\" count=%d", len(healthy))) {
			t.Fatalf("the broken charge reported %d times; log:\n%s", n, out)
		}
		if got, err := s.Charges.Admin(ctx, broken.PublicID); err != nil || got.Status != charge.StatusAuthorized || got.EndedAt != nil {
			t.Fatalf("broken charge %+v %v", got, err)
		}
		// The next beat tries it again (and it fails again, nothing moved).
		clk.Add(time.Minute)
		out = beat()
		if n := strings.Count(out, broken.PublicID); n != 1 || strings.Contains(out, "expired charges") {
			t.Fatalf("next beat: the broken charge reported %d times; log:\n%s", n, out)
		}
		if got, err := s.Charges.Admin(ctx, broken.PublicID); err != nil || got.Status != charge.StatusAuthorized {
			t.Fatalf("broken charge after the next beat %+v %v", got, err)
		}
		if held := ledgertest.Held(t, db, wallet); held != 0 {
			t.Fatalf("held %d after the next beat", held)
		}
	})
}
