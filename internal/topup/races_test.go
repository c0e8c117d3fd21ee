package topup_test

// The money races of issue 16, each reproduced deterministically (a stale
// read or a failing write through the store's hooks, a slow bank) and
// checked closed, on SQLite and PostgreSQL.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// N4: reconciliation's check of a payment is bounded by one gateway
// budget, not by the run's (minutes): a bank that hangs cannot keep the
// check going past its lease, where a second check could start.
func TestReconcileCheckIsBoundedByOneBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnvWith(t, db, func(c *topup.Config) { c.VerifyTimeout = 300 * time.Millisecond })
		p := e.start(30_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyDelay = 4 * time.Second // the answer (paid) comes after the budget
			f.Unverified = []gateway.Unverified{{Authority: p.AuthorityString(), AmountRials: 30_000, CallbackURL: e.svc.CallbackURL(p.PublicID)}}
		})
		began := time.Now()
		rep, err := e.svc.ReconcileWith(ctx, topup.ReconcileConfig{Budget: time.Minute})
		took := time.Since(began)
		if err != nil {
			t.Fatal(err)
		}
		if took > 3*time.Second {
			t.Errorf("the check ran %s: longer than one budget (300ms)", took)
		}
		r := e.row(p.ID)
		if r.Status != topup.StatusPendingVerification || r.StatusReason != string(topup.ReasonVerifyUnknown) || r.LeaseOwner != "" {
			t.Errorf("after a check cut at the budget: %s", dump(r))
		}
		if items := rep.Items(); len(items) != 1 || items[0].Kind != "open" {
			t.Errorf("report items %+v", items)
		}
		e.assertUncredited(p)
		checkInvariants(t, db)
	})
}

// N5: an admin's "ask the bank now" that reached the bank and then failed
// (the outcome could not be recorded) is in the audit log, with its
// result.
func TestAdminRecheckThatFailsAfterTheBankIsAudited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(40_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51)
			f.InquireFn = topuptest.Inquiry(gateway.InquiryFailed)
		})
		if got, _ := e.back(ctx, p.PublicID, p.AuthorityString()); got.Status != topup.StatusFailed {
			t.Fatalf("setup: %s", dump(got))
		}
		e.clock.Advance(time.Minute)
		broken := errors.New("the database went away")
		e.store.set(func(h *hookStore) {
			h.move = func(m topup.Move) error {
				if m.From == topup.StatusPendingVerification {
					return broken // recording the bank's answer fails
				}
				return nil
			}
		})
		_, ver0, _ := e.gw.Counts()
		if _, err := e.svc.AdminRecheck(ctx, p.PublicID, e.user.ID); !errors.Is(err, broken) {
			t.Fatalf("recheck = %v, want the store's error", err)
		}
		if _, ver, _ := e.gw.Counts(); ver != ver0+1 {
			t.Fatalf("the bank was asked %d times, want once", ver-ver0)
		}
		if n := e.count(`SELECT COUNT(*) FROM admin_actions WHERE topup_id = ? AND action = 'recheck' AND result = 'error'`, p.ID); n != 1 {
			t.Errorf("%d failed rechecks in the audit log, want 1", n)
		}
		e.store.set(func(h *hookStore) { h.move = nil })
		checkInvariants(t, db)
	})
}

// N2: pacing lives in the claim that reopens an ended payment. A callback
// that read a failed payment before another callback's check (so it
// thinks the bank is due) does not ask the bank again within the window:
// it reopens the payment and the worker asks when the window ends.
func TestStaleCallbackOnAFailedTopUpIsPaced(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(30_000)
		e.failByLifetime(p)
		e.clock.Advance(time.Minute)
		stale := e.row(p.ID) // read by callback B, before callback A's check
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51)
			f.InquireFn = topuptest.Inquiry(gateway.InquiryInBank)
		})
		_, ver0, _ := e.gw.Counts()
		// Callback A: reopened and asked (the payer is still at the bank).
		if got, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || got.Status != topup.StatusPendingVerification {
			t.Fatalf("callback A: %s %v", dump(got), err)
		}
		// The worker (or an admin) ends it again, as the bank still says.
		e.store.set(func(h *hookStore) {
			h.read = func(cur topup.TopUp) topup.TopUp {
				if cur.ID == p.ID {
					return stale
				}
				return cur
			}
		})
		topuptest.ForceStatus(t, db, p.ID, "failed", "not_paid_after_lifetime")
		// Callback B, on its stale read, within the window of A's check.
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		e.store.set(func(h *hookStore) { h.read = nil })
		if err != nil {
			t.Fatal(err)
		}
		if _, ver, _ := e.gw.Counts(); ver != ver0+1 {
			t.Errorf("%d verifies within one pacing window, want 1", ver-ver0)
		}
		r := e.row(p.ID)
		if r.Status != topup.StatusPendingVerification || r.NextCheckAt == nil || r.LastCheckedAt == nil ||
			!r.NextCheckAt.Equal(r.LastCheckedAt.Add(20*time.Second)) || got.Status == topup.StatusFailed {
			t.Errorf("callback B: answered %s; row %s: want reopened, checked by the worker when the window ends", got.Status, dump(r))
		}
		checkInvariants(t, db)
	})
}

// N3: the worker's claim is paced. A worker that claimed and read a
// payment before a callback checked it does not ask the bank again within
// the window.
func TestStaleWorkerIsPaced(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(30_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.Unknown.Store(true) })
		if got, _ := e.back(ctx, p.PublicID, p.AuthorityString()); got.Status != topup.StatusPendingVerification {
			t.Fatalf("setup: %s", dump(got))
		}
		e.clock.Advance(time.Minute)
		stale := e.row(p.ID) // the worker's claim and read, due
		// A callback checks it now (still unknown).
		if got, _ := e.back(ctx, p.PublicID, p.AuthorityString()); got.LastCheckedAt == nil || !got.LastCheckedAt.After(*stale.LastCheckedAt) {
			t.Fatalf("the callback did not check: %s", dump(got))
		}
		_, ver0, _ := e.gw.Counts()
		e.store.set(func(h *hookStore) {
			h.read = func(cur topup.TopUp) topup.TopUp {
				if cur.ID == p.ID {
					return stale
				}
				return cur
			}
			h.claimDue = func([]int64) []int64 { return []int64{p.ID} }
		})
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		e.store.set(func(h *hookStore) { h.read, h.claimDue = nil, nil })
		if _, ver, _ := e.gw.Counts(); ver != ver0 {
			t.Errorf("the worker asked the bank %d times within the callback's window, want 0", ver-ver0)
		}
		if r := e.row(p.ID); r.Status != topup.StatusPendingVerification || r.LeaseOwner != "" {
			t.Errorf("row %s", dump(r))
		}
		checkInvariants(t, db)
	})
}

// N1: a payer who comes back while the worker's last lifetime check is in
// flight is not answered "failed" on the worker's stale "not paid", and
// the payment is not left to reconciliation: it is reopened, and asked
// again (paced) — by the callback, or by the worker, which asks again
// about failed payments whose payer came back within the verify window.
func TestPayerBackDuringTheLastLifetimeCheck(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(30_000)
		e.clock.Advance(21 * time.Minute)
		inCheck, callbackIn := make(chan struct{}), make(chan struct{})
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				if n == 1 { // the worker's last check: the payer is still at the bank
					close(inCheck)
					<-callbackIn
					time.Sleep(50 * time.Millisecond) // real time: the callback is waiting for the lease (nothing to poll for)
					return gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51}, nil
				}
				return topuptest.Paid(5151)(n, in) // meanwhile the payer paid
			}
			f.InquireFn = topuptest.Inquiry(gateway.InquiryInBank)
		})
		wc := topuptest.WorkerConfig()
		wc.AbandonedAfter, wc.Jitter = time.Minute, func() float64 { return 0 }
		w := e.svc.NewWorker(wc)
		done := make(chan error, 1)
		go func() { _, err := w.RunOnce(ctx); done <- err }()
		<-inCheck
		close(callbackIn)
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got.Status == topup.StatusFailed {
			t.Errorf("the returning payer was answered failed on the worker's stale check: %s", dump(got))
		}
		// The worker goes on: past the pacing window it asks the bank,
		// which verifies the payment.
		for range 3 {
			e.clock.Advance(time.Minute)
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		e.assertCredited(p, 5151)
		checkInvariants(t, db)
	})
}

// creditObserver counts failed credits (the metrics' view).
type creditObserver struct {
	mu                 sync.Mutex
	retried, escalated int
}

func (o *creditObserver) Transitioned(string, topup.Status, topup.Status, topup.Actor) {}
func (o *creditObserver) Credited(string, int64)                                       {}
func (o *creditObserver) CreditFailed(_ string, escalated bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if escalated {
		o.escalated++
	} else {
		o.retried++
	}
}

// N6: a bank-verified payment whose credit keeps failing is not retried
// (and the bank asked) forever: after MaxCreditFailures it goes to
// needs_review with its own reason, and the observer (metrics) counts it.
func TestCreditThatKeepsFailingGoesToReview(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		obs := &creditObserver{}
		e := newEnvWith(t, db, func(c *topup.Config) { c.Observer = obs })
		p := e.start(30_000)
		broken := errors.New("the ledger refused the entry")
		e.store.set(func(h *hookStore) { h.credit = func(topup.Move) error { return broken } })
		if _, err := e.back(ctx, p.PublicID, p.AuthorityString()); !errors.Is(err, broken) {
			t.Fatalf("first credit = %v", err)
		}
		if r := e.row(p.ID); r.Status != topup.StatusAwaitingPayment || r.CreditFailures != 1 || r.NextCheckAt == nil || r.LeaseOwner != "" {
			t.Fatalf("after one failed credit: %s (failures %d)", dump(r), r.CreditFailures)
		}
		wc := topuptest.WorkerConfig()
		wc.Jitter = func() float64 { return 0 }
		w := e.svc.NewWorker(wc)
		for range 4 {
			e.clock.Advance(3 * time.Minute)
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r := e.row(p.ID)
		if r.Status != topup.StatusNeedsReview || r.StatusReason != string(topup.ReasonCreditFailed) || r.CreditFailures != 3 {
			t.Fatalf("after repeated failed credits: %s (failures %d)", dump(r), r.CreditFailures)
		}
		if _, ver, _ := e.gw.Counts(); ver != 3 {
			t.Errorf("the bank was asked %d times, want 3 (no more once under review)", ver)
		}
		obs.mu.Lock()
		if obs.retried != 2 || obs.escalated != 1 {
			t.Errorf("observed %d retried and %d escalated failed credits, want 2 and 1", obs.retried, obs.escalated)
		}
		obs.mu.Unlock()
		e.assertUncredited(p)
		// Under review, an admin's recheck credits it once the ledger works.
		e.store.set(func(h *hookStore) { h.credit = nil })
		if got, err := e.svc.AdminRecheck(ctx, p.PublicID, e.user.ID); err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("recheck after the repair: %s %v", dump(got), err)
		}
		checkInvariants(t, db)
	})
}
