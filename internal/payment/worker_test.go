package payment_test

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

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
)

// wkGateway is a fake gateway that counts verifies per authority. Verify
// answers "paid" (after an optional delay) unless unknown is set; it
// reports an open breaker when open is set.
type wkGateway struct {
	delay   time.Duration
	unknown atomic.Bool
	open    atomic.Bool

	mu       sync.Mutex
	seq      int64
	refs     map[string]int64
	verifies map[string]int
}

var (
	_ gateway.Gateway         = (*wkGateway)(nil)
	_ payment.BreakerReporter = (*wkGateway)(nil)
)

func newWKGateway(delay time.Duration) *wkGateway {
	return &wkGateway{delay: delay, refs: map[string]int64{}, verifies: map[string]int{}}
}

func (g *wkGateway) Name() string { return "wk" }
func (g *wkGateway) PayURL(authority string) string {
	return "https://bank.test/pg/StartPay/" + authority
}
func (g *wkGateway) BreakerOpen() bool { return g.open.Load() }

func (g *wkGateway) Request(_ context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	a := fmt.Sprintf("S%035d", g.seq)
	g.refs[a] = 900_000 + g.seq
	return gateway.RequestResult{Authority: a, Code: 100}, nil
}

func (g *wkGateway) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	g.mu.Lock()
	g.verifies[in.Authority]++
	ref := g.refs[in.Authority]
	g.mu.Unlock()
	if g.delay > 0 {
		select {
		case <-time.After(g.delay):
		case <-ctx.Done():
			return gateway.VerifyResult{}, &gateway.TransientError{Op: "verify", Err: ctx.Err()}
		}
	}
	if g.unknown.Load() {
		return gateway.VerifyResult{}, &gateway.TransientError{Op: "verify", HTTPStatus: 504, Err: errors.New("gateway time-out")}
	}
	return gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, RefID: ref, CardPANMasked: "603799******1234"}, nil
}

func (g *wkGateway) Inquire(context.Context, string) (gateway.InquiryResult, error) {
	return gateway.InquiryResult{Code: 100, Status: gateway.InquiryPaid}, nil
}

func (g *wkGateway) ListUnverified(context.Context) ([]gateway.Unverified, error) { return nil, nil }

func (g *wkGateway) verifyCounts() (map[string]int, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	total := 0
	out := make(map[string]int, len(g.verifies))
	for a, n := range g.verifies {
		out[a] = n
		total += n
	}
	return out, total
}

// wkClock is a clock that moves only when told.
type wkClock struct {
	mu sync.Mutex
	t  time.Time
}

func newWKClock() *wkClock { return &wkClock{t: time.Now().UTC().Truncate(time.Millisecond)} }

func (c *wkClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *wkClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var wkUserSeq atomic.Int64

// wkPayer signs up a payer and returns the StartInput template.
func wkPayer(t *testing.T, db *store.DB) payment.StartInput {
	t.Helper()
	ctx := context.Background()
	email := fmt.Sprintf("worker%d@example.com", wkUserSeq.Add(1))
	u, err := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, email, "correct horse battery", "", "fa")
	if err != nil {
		t.Fatalf("sign up: %v", err)
	}
	w, err := wallet.NewService(db).ForUser(ctx, u.ID)
	if err != nil {
		t.Fatalf("wallet: %v", err)
	}
	return payment.StartInput{UserID: u.ID, WalletID: w.ID, Email: email, AmountRials: 10_000}
}

func wkService(db *store.DB, gw gateway.Gateway, now func() time.Time) *payment.Service {
	return payment.NewService(db, gw, now, nil, payment.Config{
		BaseURL: "http://app.test", MinRials: 10_000, MaxRials: 1_000_000_000, PollInterval: 5 * time.Millisecond,
		// Short pacing window: these tests are about the back-off.
		RecheckDelay: 100 * time.Millisecond,
	})
}

func wkStart(t *testing.T, svc *payment.Service, in payment.StartInput, amount int64) payment.Payment {
	t.Helper()
	in.FormToken, in.AmountRials = payment.NewFormToken(), amount
	r, err := svc.StartTopUp(context.Background(), in)
	if err != nil || r.Payment.Status != payment.StatusAwaitingPayment {
		t.Fatalf("StartTopUp: %+v %v", r, err)
	}
	return r.Payment
}

func wkRow(t *testing.T, db *store.DB, id int64) payment.Payment {
	t.Helper()
	var p payment.Payment
	if err := db.Gorm.Take(&p, id).Error; err != nil {
		t.Fatalf("payment %d: %v", id, err)
	}
	return p
}

// Three instances run their workers at the same moment over the same due
// payments: each payment is claimed by exactly one of them and verified
// exactly once.
func TestWorkerClaimsEachDuePaymentOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const n, instances = 30, 3
		gw := newWKGateway(10 * time.Millisecond)
		clock := &wkClock{t: time.Now().UTC()}
		in := wkPayer(t, db)
		var workers []*payment.Worker
		for range instances {
			// Each instance has its own service over the shared database.
			svc := wkService(db, gw, clock.Now)
			workers = append(workers, svc.NewWorker(payment.WorkerConfig{
				AbandonedAfter: time.Minute, Batch: 7, Concurrency: 3,
			}))
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
		counts, verifies := gw.verifyCounts()
		if verifies != n || len(counts) != n {
			t.Errorf("%d verifies of %d authorities, want %d of %d", verifies, len(counts), n, n)
		}
		for a, c := range counts {
			if c != 1 {
				t.Errorf("authority %s verified %d times", a, c)
			}
		}
		if got := apptest.Count(t, db, `SELECT COUNT(*) FROM payments WHERE status = 'credited'`); got != n {
			t.Errorf("%d credited, want %d", got, n)
		}
		if got := apptest.Count(t, db, `SELECT balance_rials FROM wallets WHERE id = ?`, in.WalletID); got != total {
			t.Errorf("balance %d, want %d", got, total)
		}
		// Nothing is left to claim.
		for i, w := range workers {
			if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 0 {
				t.Errorf("worker %d after the work: %+v %v", i, rr, err)
			}
		}
		if _, v := gw.verifyCounts(); v != n {
			t.Errorf("%d verifies after an idle round, want %d", v, n)
		}
		apptest.CheckInvariants(t, db)
	})
}

// While the outcome stays unknown, the delay before the next check doubles
// from BaseBackoff up to MaxBackoff, with jitter in [50%, 100%] of it.
func TestWorkerBackoffGrowsWithinBounds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		gw := newWKGateway(0)
		gw.unknown.Store(true)
		clock := newWKClock()
		svc := wkService(db, gw, clock.Now)
		const base, maxB = time.Second, 10 * time.Second
		jitters := []float64{0, 0.999, 0.5, 0, 0.999, 0.25, 0.75, 0.999, 0}
		var round atomic.Int64
		w := svc.NewWorker(payment.WorkerConfig{
			BaseBackoff: base, MaxBackoff: maxB, AbandonedAfter: time.Second,
			AuthorityLifetime: 48 * time.Hour, MaxUnknown: 24 * time.Hour,
			Jitter: func() float64 { return jitters[round.Load()] },
		})
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
			if row.Status != payment.StatusPendingVerification || row.Attempts != k || row.NextCheckAt == nil || row.LeaseUntil != nil {
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
		if _, v := gw.verifyCounts(); v != len(jitters) {
			t.Errorf("%d verifies, want %d (one per due check)", v, len(jitters))
		}
		if got := apptest.Count(t, db, `SELECT COUNT(*) FROM ledger_entries`); got != 0 {
			t.Errorf("%d ledger entries for an unknown outcome", got)
		}
		apptest.CheckInvariants(t, db)
	})
}

// With the gateway's breaker open the worker claims nothing and spends no
// check; once it closes, the due payment is checked.
func TestWorkerPostponesWhileBreakerOpen(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		gw := newWKGateway(0)
		clock := newWKClock()
		svc := wkService(db, gw, clock.Now)
		w := svc.NewWorker(payment.WorkerConfig{AbandonedAfter: time.Second})
		p := wkStart(t, svc, wkPayer(t, db), 20_000)
		clock.Advance(time.Minute)
		ctx := context.Background()

		gw.open.Store(true)
		if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 0 {
			t.Fatalf("round with the breaker open: %+v %v", rr, err)
		}
		if row := wkRow(t, db, p.ID); row.Status != payment.StatusAwaitingPayment || row.Attempts != 0 || row.NextCheckAt != nil {
			t.Fatalf("after a postponed round: status %s attempts %d next %v", row.Status, row.Attempts, row.NextCheckAt)
		}
		if _, v := gw.verifyCounts(); v != 0 {
			t.Fatalf("%d verifies with the breaker open", v)
		}

		gw.open.Store(false)
		if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 1 || rr.Resolved != 1 {
			t.Fatalf("round with the breaker closed: %+v %v", rr, err)
		}
		if row := wkRow(t, db, p.ID); row.Status != payment.StatusCredited || row.Attempts != 1 {
			t.Fatalf("after the check: status %s attempts %d", row.Status, row.Attempts)
		}
		apptest.CheckInvariants(t, db)
	})
}
