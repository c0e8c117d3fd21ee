package topup_test

// Unit-level tests of the worker: the claim hands each due payment to one
// worker even when several instances run RunOnce at the same time, the
// back-off grows and stays within its bounds, and an open breaker
// postpones checks instead of spending them.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/wallet"
)

var wkUserSeq atomic.Int64

// wkPayer signs up a payer and returns the StartInput template.
func wkPayer(t *testing.T, db *store.DB) topup.StartInput {
	t.Helper()
	ctx := context.Background()
	email := fmt.Sprintf("worker%d@example.com", wkUserSeq.Add(1))
	u, err := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, email, "correct horse battery", "", "fa")
	if err != nil {
		t.Fatalf("sign up: %v", err)
	}
	w, err := wallet.NewService(db, nil).ForUser(ctx, u.ID)
	if err != nil {
		t.Fatalf("wallet: %v", err)
	}
	return topup.StartInput{UserID: u.ID, WalletID: w.ID, Email: email, AmountRials: 10_000}
}

func wkService(db *store.DB, gw gateway.Gateway, now func() time.Time) *topup.Service {
	cfg := topuptest.Config()
	cfg.RecheckDelay = 100 * time.Millisecond // short pacing window: these tests are about the back-off
	return topup.NewService(sqlstore.New(db), gateway.Set{gw}, now, nil, cfg)
}

func wkStart(t *testing.T, svc *topup.Service, in topup.StartInput, amount int64) topup.TopUp {
	t.Helper()
	in.FormToken, in.AmountRials = topup.NewFormToken(), amount
	r, err := svc.StartTopUp(context.Background(), in)
	if err != nil || r.TopUp.Status != topup.StatusAwaitingPayment {
		t.Fatalf("StartTopUp: %+v %v", r, err)
	}
	return r.TopUp
}

func wkRow(t *testing.T, db *store.DB, id int64) topup.TopUp {
	t.Helper()
	var p topup.TopUp
	if err := db.Gorm.Take(&p, id).Error; err != nil {
		t.Fatalf("payment %d: %v", id, err)
	}
	return p
}

// Three instances run their workers at the same moment over the same due
// payments: each payment is claimed by exactly one of them and verified
// exactly once.
func TestWorkerClaimsEachDueTopUpOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const n, instances = 30, 3
		gw := newDelayedGateway(10 * time.Millisecond)
		clock := topuptest.NewFrozenClock()
		in := wkPayer(t, db)
		var workers []*topup.Worker
		for range instances {
			// Each instance has its own service over the shared database.
			svc := wkService(db, gw, clock.Now)
			wc := topuptest.WorkerConfig()
			wc.AbandonedAfter, wc.Batch, wc.Concurrency = time.Minute, 7, 3
			workers = append(workers, svc.NewWorker(wc))
		}
		starter := wkService(db, gw, clock.Now)
		var total int64
		for i := range n {
			amount := int64(10_000 + 10*i)
			wkStart(t, starter, in, amount)
			total += amount
		}
		clock.Advance(2 * time.Minute) // every payment is now due (abandoned)

		ctx := context.Background()
		claimed := make([]int, instances)
		rounds := make([]int, instances)
		errs := make([]error, instances)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for rounds[i] < 50 {
					rounds[i]++
					rr, err := w.RunOnce(ctx)
					if err != nil {
						errs[i] = err
						return
					}
					claimed[i] += rr.Claimed
					if rr.Claimed == 0 {
						return
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		t.Logf("claims per instance %v in rounds %v", claimed, rounds)
		sum := 0
		for i := range instances {
			if errs[i] != nil {
				t.Errorf("worker %d: %v", i, errs[i])
			}
			sum += claimed[i]
		}
		if sum != n {
			t.Errorf("%d claims for %d due payments, want each claimed once", sum, n)
		}
		counts, verifies := gw.VerifyCounts()
		if verifies != n || len(counts) != n {
			t.Errorf("%d verifies of %d authorities, want %d of %d", verifies, len(counts), n, n)
		}
		for a, c := range counts {
			if c != 1 {
				t.Errorf("authority %s verified %d times", a, c)
			}
		}
		if got := storetest.Count(t, db, `SELECT COUNT(*) FROM topups WHERE status = 'credited'`); got != n {
			t.Errorf("%d credited, want %d", got, n)
		}
		if got := storetest.Count(t, db, `SELECT posted_rials FROM ledger_accounts WHERE wallet_id = ?`, in.WalletID); got != total {
			t.Errorf("balance %d, want %d", got, total)
		}
		// Nothing is left to claim.
		for i, w := range workers {
			if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 0 {
				t.Errorf("worker %d after the work: %+v %v", i, rr, err)
			}
		}
		if _, v := gw.VerifyCounts(); v != n {
			t.Errorf("%d verifies after an idle round, want %d", v, n)
		}
		topuptest.CheckInvariants(t, db)
	})
}

// While the outcome stays unknown, the delay before the next check doubles
// from BaseBackoff up to MaxBackoff, with jitter in [50%, 100%] of it.
func TestWorkerBackoffGrowsWithinBounds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		gw := topuptest.NewGateway()
		gw.Unknown.Store(true)
		clock := topuptest.NewFrozenClock()
		svc := wkService(db, gw, clock.Now)
		const base, maxB = time.Second, 10 * time.Second
		jitters := []float64{0, 0.999, 0.5, 0, 0.999, 0.25, 0.75, 0.999, 0}
		var round atomic.Int64
		wc := topuptest.WorkerConfig()
		wc.BaseBackoff, wc.MaxBackoff, wc.AbandonedAfter = base, maxB, time.Second
		wc.AuthorityLifetime, wc.MaxUnknown = 48*time.Hour, 24*time.Hour
		wc.Jitter = func() float64 { return jitters[round.Load()] }
		w := svc.NewWorker(wc)
		p := wkStart(t, svc, wkPayer(t, db), 50_000)
		clock.Advance(2 * time.Second)
		ctx := context.Background()
		prevCeil := time.Duration(0)
		for k := 1; k <= len(jitters); k++ {
			round.Store(int64(k - 1))
			rr, err := w.RunOnce(ctx)
			if err != nil || rr.Claimed != 1 || rr.Resolved != 0 {
				t.Fatalf("round %d: %+v %v", k, rr, err)
			}
			row := wkRow(t, db, p.ID)
			if row.Status != topup.StatusPendingVerification || row.Attempts != k || row.NextCheckAt == nil || row.LeaseUntil != nil {
				t.Fatalf("round %d: status %s attempts %d next %v lease %v", k, row.Status, row.Attempts, row.NextCheckAt, row.LeaseUntil)
			}
			ceil := min(base<<(k-1), maxB)
			j := jitters[k-1]
			want := ceil/2 + time.Duration(j*float64(ceil/2))
			delay := row.NextCheckAt.Sub(clock.Now())
			if d := delay - want; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("round %d (jitter %v): next check in %v, want %v", k, j, delay, want)
			}
			if delay < ceil/2 || delay > ceil || delay > maxB {
				t.Errorf("round %d: next check in %v, outside [%v, %v]", k, delay, ceil/2, ceil)
			}
			if ceil < prevCeil {
				t.Errorf("round %d: back-off ceiling shrank from %v to %v", k, prevCeil, ceil)
			}
			prevCeil = ceil
			// Not due a moment before; due exactly then.
			clock.Advance(delay - time.Millisecond)
			if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 0 {
				t.Fatalf("round %d: claimed before it was due: %+v %v", k, rr, err)
			}
			clock.Advance(time.Millisecond)
		}
		if _, v := gw.VerifyCounts(); v != len(jitters) {
			t.Errorf("%d verifies, want %d (one per due check)", v, len(jitters))
		}
		if got := storetest.Count(t, db, `SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'topup'`); got != 0 {
			t.Errorf("%d ledger entries for an unknown outcome", got)
		}
		topuptest.CheckInvariants(t, db)
	})
}

// With the gateway's breaker open the worker claims nothing and spends no
// check; once it closes, the due payment is checked.
func TestWorkerPostponesWhileBreakerOpen(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		gw := topuptest.NewGateway()
		clock := topuptest.NewFrozenClock()
		svc := wkService(db, gw, clock.Now)
		wc := topuptest.WorkerConfig()
		wc.AbandonedAfter = time.Second
		w := svc.NewWorker(wc)
		p := wkStart(t, svc, wkPayer(t, db), 20_000)
		clock.Advance(time.Minute)
		ctx := context.Background()

		gw.Open.Store(true)
		if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 0 {
			t.Fatalf("round with the breaker open: %+v %v", rr, err)
		}
		if row := wkRow(t, db, p.ID); row.Status != topup.StatusAwaitingPayment || row.Attempts != 0 || row.NextCheckAt != nil {
			t.Fatalf("after a postponed round: status %s attempts %d next %v", row.Status, row.Attempts, row.NextCheckAt)
		}
		if _, v := gw.VerifyCounts(); v != 0 {
			t.Fatalf("%d verifies with the breaker open", v)
		}

		gw.Open.Store(false)
		if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 1 || rr.Resolved != 1 {
			t.Fatalf("round with the breaker closed: %+v %v", rr, err)
		}
		if row := wkRow(t, db, p.ID); row.Status != topup.StatusCredited || row.Attempts != 1 {
			t.Fatalf("after the check: status %s attempts %d", row.Status, row.Attempts)
		}
		topuptest.CheckInvariants(t, db)
	})
}

// newDelayedGateway is the fake gateway answering each verify after delay.
func newDelayedGateway(delay time.Duration) *topuptest.Gateway {
	g := topuptest.NewGateway()
	g.VerifyDelay = delay
	return g
}

// The worker's deadline (AuthorityLifetime) must never overrule a callback
// that took the lease right after the worker released it and is hearing
// "paid" from the bank: the payment ends credited, once.
func TestDeadlineNeverOverrulesAVerifyInFlight(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(50_000)
		e.clock.Advance(21 * time.Minute)
		verifying := make(chan struct{})
		release := make(chan struct{})
		e.gw.Set(func(f *topuptest.Gateway) {
			f.InquireFn = topuptest.Inquiry(gateway.InquiryInBank)
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				if n == 1 {
					return gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51}, nil
				}
				close(verifying)
				<-release
				return topuptest.Paid(777)(n, in)
			}
		})
		var once sync.Once
		var cbDone = make(chan topup.TopUp, 1)
		db.Gorm.Callback().Update().After("gorm:update").Register("test:callback-after-release", func(tx *gorm.DB) {
			m, ok := tx.Statement.Dest.(map[string]any)
			if !ok {
				return
			}
			if v, has := m["lease_until"]; has && v == nil {
				if _, st := m["status"]; !st {
					once.Do(func() {
						// the payer pays and the callback arrives right after the worker released
						go func() { got, _ := e.back(ctx, p.PublicID, p.AuthorityString()); cbDone <- got }()
						<-verifying
					})
				}
			}
		})
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		rr, err := w.RunOnce(ctx)
		t.Logf("worker round %+v err %v; row now %s", rr, err, dump(e.row(p.ID)))
		close(release)
		got := <-cbDone
		t.Logf("callback result %s", dump(got))
		t.Logf("bank verified 100 (ref 777); balance=%d", e.balance())
		if got.Status != topup.StatusCredited {
			t.Errorf("LOST: bank verified the payment but it ended %s", got.Status)
		}
		if b := e.balance(); b != 50_000 {
			t.Errorf("balance %d, want 50000", b)
		}
		checkInvariants(t, db)
	})
}

// A stale "created" payment that cannot be failed (its write refused)
// costs the round nothing else: the due payments are still resolved in
// the same round, the error is reported, and the stale one's lease is let
// go at once, so that the next round fails it.
func TestOneBadStalePaymentDoesNotHoldUpTheRound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		stale := e.staleCreated("stalecreated00000000002")
		paid := e.start(30_000) // paid at the bank, its payer never came back
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(91_001) })
		e.clock.Advance(5 * time.Minute)
		refused := errors.New("the outbox refused the row")
		e.store.set(func(h *hookStore) {
			h.move = func(m topup.Move) error {
				if m.TopUpID == stale {
					return refused
				}
				return nil
			}
		})
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		rr, err := w.RunOnce(ctx)
		if !errors.Is(err, refused) {
			t.Fatalf("RunOnce: %v, want the stale payment's error reported", err)
		}
		if rr.Resolved != 1 {
			t.Fatalf("round %+v: the due payment was not resolved", rr)
		}
		e.assertCredited(paid, 91_001)
		if row := e.row(stale); row.Status != topup.StatusCreated || row.LeaseOwner != "" {
			t.Fatalf("the stale payment after its refused move: %s, want created and unheld", dump(row))
		}
		e.store.set(func(h *hookStore) { h.move = nil })
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if row := e.row(stale); row.Status != topup.StatusFailed {
			t.Fatalf("the next round: %s, want failed", dump(row))
		}
		checkInvariants(t, db)
	})
}

// staleCreated writes a payment whose submit died before the bank
// answered (created, no authority), made now, and returns its id.
func (e *env) staleCreated(publicID string) int64 {
	e.t.Helper()
	now := e.clock.Now()
	if err := e.db.Gorm.Exec(`INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, status, created_at, updated_at, opened_at)
		VALUES (?, ?, ?, 20000, 'zarinpal', ?, 'created', ?, ?, ?)`,
		publicID, e.user.ID, e.wallet.ID, "form-"+publicID, now, now, now).Error; err != nil {
		e.t.Fatal(err)
	}
	return e.count(`SELECT id FROM topups WHERE public_id = ?`, publicID)
}

// The worker's "submit died" deadline takes the lease like every other
// actor: a created payment that reconciliation is recovering (it holds the
// lease, the bank lists the authority paid) is not failed under its feet;
// once the lease is free, the deadline applies.
func TestStaleCreatedWaitsForTheLeaseHolder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		id := e.staleCreated("stalecreated00000000001")
		e.clock.Advance(5 * time.Minute) // well past StaleCreated (1 min)
		at := e.clock.Now()
		if _, ok, err := e.store.Claim(ctx, topup.Claim{ID: id, Statuses: []topup.Status{topup.StatusCreated},
			Token: "reconciliation", Now: at, Until: at.Add(30 * time.Second)}); err != nil || !ok {
			t.Fatalf("reconciliation's claim: %v %v", ok, err)
		}
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if row := e.row(id); row.Status != topup.StatusCreated || row.LeaseOwner != "reconciliation" {
			t.Fatalf("under reconciliation's lease the worker moved it: %s", dump(row))
		}
		e.clock.Advance(time.Minute) // the holder died: its lease ran out
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if row := e.row(id); row.Status != topup.StatusFailed || row.LeaseOwner != "" {
			t.Fatalf("after the lease ran out: %s, want failed and unheld", dump(row))
		}
		checkInvariants(t, db)
	})
}

// A top-up whose resolve always fails (here a panic reading it) is backed
// off further with each failure in a row, never sooner than the claim's
// own push, up to a bound: it is not asked, and logged, every half minute
// for ever; the round goes on.
func TestAResolveThatKeepsFailingIsBackedOff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		gw := topuptest.NewGateway()
		clock := topuptest.NewFrozenClock()
		cfg := topuptest.Config()
		hs := &hookStore{Store: sqlstore.New(db)}
		svc := topup.NewService(hs, gateway.Set{gw}, clock.Now, nil, cfg)
		wc := topuptest.WorkerConfig()
		wc.AbandonedAfter = time.Second
		wc.Jitter = func() float64 { return 0.999 }
		w := svc.NewWorker(wc)
		p := wkStart(t, svc, wkPayer(t, db), 50_000)
		clock.Advance(2 * time.Second)
		hs.mu.Lock()
		hs.read = func(r topup.TopUp) topup.TopUp {
			if r.ID == p.ID {
				panic("a row this build cannot read")
			}
			return r
		}
		hs.mu.Unlock()
		push := cfg.LeaseDuration + cfg.VerifyTimeout // the claim's own
		prev := time.Duration(0)
		for k := 1; k <= 8; k++ {
			rr, err := w.RunOnce(context.Background())
			if err != nil || rr.Claimed != 1 {
				t.Fatalf("failure %d: %+v %v", k, rr, err)
			}
			row := wkRow(t, db, p.ID)
			if row.NextCheckAt == nil {
				t.Fatalf("failure %d: no next check", k)
			}
			wait := row.NextCheckAt.Sub(clock.Now())
			if wait <= push || wait > 10*time.Minute || wait < prev {
				t.Fatalf("failure %d: next check in %s, want more than the claim's push %s, at least the last %s, at most 10m", k, wait, push, prev)
			}
			prev = wait
			clock.Advance(wait)
		}
		if prev < 5*time.Minute {
			t.Errorf("after 8 failures in a row the wait is %s, want it near the bound", prev)
		}
		if st := wkRow(t, db, p.ID).Status; st != topup.StatusAwaitingPayment {
			t.Errorf("status %s: a failing resolve changed it", st)
		}
		// A next check another actor sets meanwhile (a callback's) stands:
		// only the one this claim wrote is moved.
		soon := clock.Now().Add(3 * time.Second)
		hs.mu.Lock()
		hs.read = func(r topup.TopUp) topup.TopUp {
			if r.ID == p.ID {
				otherSchedules(t, hs.Store, p.ID, clock.Now(), soon)
				panic("a row this build cannot read")
			}
			return r
		}
		hs.mu.Unlock()
		if rr, err := w.RunOnce(context.Background()); err != nil || rr.Claimed != 1 {
			t.Fatalf("the last failure: %+v %v", rr, err)
		}
		if next := wkRow(t, db, p.ID).NextCheckAt; next == nil || !next.Equal(soon) {
			t.Errorf("next check %v, want the other actor's %s kept", next, soon)
		}
	})
}

// otherSchedules is another actor (a callback) setting a payment's next
// check to at, at now, as it does: under the payment's lease, released
// with the next check.
func otherSchedules(t *testing.T, st topup.Store, id int64, now, at time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, ok, err := st.Claim(ctx, topup.Claim{ID: id, Statuses: []topup.Status{topup.StatusAwaitingPayment, topup.StatusPendingVerification, topup.StatusSettling},
		Token: "other-actor", Now: now, Until: now.Add(time.Minute)}); err != nil || !ok {
		t.Errorf("the other actor's claim: %v %v", ok, err)
		return
	}
	if _, err := st.Release(ctx, id, "other-actor", topup.Fields{NextCheckAt: &at}); err != nil {
		t.Error(err)
	}
}

// A resolve skipped because another actor held the top-up (a callback, an
// admin's check) is neither a success nor a failure: a top-up whose
// resolves keep failing goes on backing off across it, instead of
// starting again from the first failure's wait.
func TestABusySkipKeepsTheFailureCount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		gw := topuptest.NewGateway()
		clock := topuptest.NewFrozenClock()
		cfg := topuptest.Config()
		cfg.LeaseDuration = cfg.VerifyTimeout + 2*time.Second // set: the claim's push is computed below
		hs := &hookStore{Store: sqlstore.New(db)}
		svc := topup.NewService(hs, gateway.Set{gw}, clock.Now, nil, cfg)
		wc := topuptest.WorkerConfig()
		wc.AbandonedAfter = time.Second
		wc.Jitter = func() float64 { return 0.999 }
		w := svc.NewWorker(wc)
		p := wkStart(t, svc, wkPayer(t, db), 50_000)
		clock.Advance(2 * time.Second)
		ctx := context.Background()
		failing := func(r topup.TopUp) topup.TopUp {
			if r.ID == p.ID {
				panic("a row this build cannot read")
			}
			return r
		}
		push := cfg.LeaseDuration + cfg.VerifyTimeout // the claim's own
		fail := func(n int) {
			t.Helper()
			hs.set(func(h *hookStore) { h.read, h.claimDue = failing, nil })
			if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 1 {
				t.Fatalf("failure %d: %+v %v", n, rr, err)
			}
			row := wkRow(t, db, p.ID)
			want := topup.Backoff(n+1, push, 10*time.Minute, 0.999)
			if row.NextCheckAt == nil {
				t.Fatalf("failure %d: no next check", n)
			}
			if wait := row.NextCheckAt.Sub(clock.Now()); wait != want {
				t.Fatalf("failure %d in a row: next check in %s, want %s", n, wait, want)
			}
			clock.Advance(row.NextCheckAt.Sub(clock.Now()))
		}
		fail(1)
		fail(2)
		// A callback takes the lease right after the worker's claim: the
		// worker's check is skipped.
		hs.set(func(h *hookStore) {
			h.read = nil
			h.claimDue = func(ids []int64) []int64 {
				now := clock.Now()
				if _, ok, err := hs.Store.Claim(ctx, topup.Claim{ID: p.ID, Statuses: []topup.Status{topup.StatusAwaitingPayment},
					Token: "callback", Now: now, Until: now.Add(time.Minute)}); err != nil || !ok {
					t.Errorf("the callback's claim: %v %v", ok, err)
				}
				return ids
			}
		})
		if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 1 {
			t.Fatalf("the busy round: %+v %v", rr, err)
		}
		if _, v := gw.VerifyCounts(); v != 0 {
			t.Fatalf("%d verifies under another actor's lease", v)
		}
		if _, err := hs.Store.Release(ctx, p.ID, "callback", topup.Fields{}); err != nil {
			t.Fatal(err)
		}
		row := wkRow(t, db, p.ID)
		if row.NextCheckAt == nil || row.LeaseOwner != "" {
			t.Fatalf("after the busy round: %s", dump(row))
		}
		clock.Advance(row.NextCheckAt.Sub(clock.Now()))
		// The third failure in a row is backed off as the third, not as a
		// first.
		fail(3)
	})
}

// The worker's next check after a resolve, and the give-back of claims
// at shutdown, move only the next check its claim wrote: one another
// actor (a callback) set after the claim stands.
func TestTheWorkerLeavesANextCheckAnotherActorSet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		gw := topuptest.NewGateway()
		gw.Unknown.Store(true)
		clock := topuptest.NewFrozenClock()
		hs := &hookStore{Store: sqlstore.New(db)}
		svc := topup.NewService(hs, gateway.Set{gw}, clock.Now, nil, topuptest.Config())
		wc := topuptest.WorkerConfig()
		wc.AbandonedAfter = time.Second
		wc.Jitter = func() float64 { return 0.5 }
		w := svc.NewWorker(wc)
		in := wkPayer(t, db)
		p := wkStart(t, svc, in, 50_000)
		clock.Advance(2 * time.Second)
		ctx := context.Background()

		// A callback asks the bank between the worker's claim and its
		// resolve, and sets the next check: the worker asks nothing, and
		// its next check does not replace the callback's.
		other := clock.Now().Add(42*time.Second + 7*time.Millisecond)
		hs.set(func(h *hookStore) {
			h.claimDue = func(ids []int64) []int64 {
				now := clock.Now()
				if _, ok, err := hs.Store.Claim(ctx, topup.Claim{ID: p.ID, Statuses: []topup.Status{topup.StatusAwaitingPayment},
					Token: "callback", Now: now, Until: now.Add(time.Minute)}); err != nil || !ok {
					t.Errorf("the callback's claim: %v %v", ok, err)
				}
				if _, err := hs.Store.Release(ctx, p.ID, "callback", topup.Fields{LastCheckedAt: &now, NextCheckAt: &other}); err != nil {
					t.Error(err)
				}
				return ids
			}
		})
		if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 1 {
			t.Fatalf("round: %+v %v", rr, err)
		}
		if _, v := gw.VerifyCounts(); v != 0 {
			t.Errorf("%d verifies right after the callback's", v)
		}
		if next := wkRow(t, db, p.ID).NextCheckAt; next == nil || !next.Equal(other) {
			t.Errorf("next check %v, want the callback's %s kept", next, other)
		}

		// Shutdown right after a claim: what was claimed is due again at
		// once, but for a next check a callback set meanwhile.
		clock.Advance(time.Minute)
		q := wkStart(t, svc, in, 60_000)
		clock.Advance(2 * time.Second)
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		other = clock.Now().Add(17*time.Second + 3*time.Millisecond)
		hs.set(func(h *hookStore) {
			h.claimDue = func(ids []int64) []int64 {
				if len(ids) != 2 {
					t.Errorf("claimed %v, want both", ids)
				}
				otherSchedules(t, hs.Store, p.ID, clock.Now(), other)
				cancel() // shutdown starts: nothing claimed is started
				return ids
			}
		})
		if rr, _ := w.RunOnce(rctx); rr.Claimed != 2 || rr.Resolved != 0 {
			t.Fatalf("round at shutdown: %+v", rr)
		}
		if _, v := gw.VerifyCounts(); v != 0 {
			t.Errorf("%d verifies at shutdown", v)
		}
		if next := wkRow(t, db, p.ID).NextCheckAt; next == nil || !next.Equal(other) {
			t.Errorf("given back: next check %v, want the callback's %s kept", next, other)
		}
		if next := wkRow(t, db, q.ID).NextCheckAt; next == nil || !next.Equal(clock.Now()) {
			t.Errorf("given back: next check %v, want now (%s)", next, clock.Now())
		}
	})
}
