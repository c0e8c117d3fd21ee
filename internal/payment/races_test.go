package payment_test

// The money races of issue 16, each reproduced deterministically (a stale
// read or a failing write through the store's hooks, a slow bank) and
// checked closed, on SQLite and PostgreSQL.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/payment/paymenttest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// N4: reconciliation's check of a payment is bounded by one gateway
// budget, not by the run's (minutes): a bank that hangs cannot keep the
// check going past its lease, where a second check could start.
func TestReconcileCheckIsBoundedByOneBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnvWith(t, db, func(c *payment.Config) { c.VerifyTimeout = 300 * time.Millisecond })
		p := e.start(30_000)
		e.gw.Set(func(f *paymenttest.Gateway) {
			f.VerifyDelay = 4 * time.Second // the answer (paid) comes after the budget
			f.Unverified = []gateway.Unverified{{Authority: p.AuthorityString(), AmountRials: 30_000, CallbackURL: e.svc.CallbackURL(p.PublicID)}}
		})
		began := time.Now()
		rep, err := e.svc.ReconcileWith(ctx, payment.ReconcileConfig{Budget: time.Minute})
		took := time.Since(began)
		if err != nil {
			t.Fatal(err)
		}
		if took > 3*time.Second {
			t.Errorf("the check ran %s: longer than one budget (300ms)", took)
		}
		r := e.row(p.ID)
		if r.Status != payment.StatusPendingVerification || r.StatusReason != string(payment.ReasonVerifyUnknown) || r.LeaseOwner != "" {
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
		e.gw.Set(func(f *paymenttest.Gateway) {
			f.VerifyFn = paymenttest.VerifyAnswer(gateway.VerifyNotPaid, -51)
			f.InquireFn = paymenttest.Inquiry(gateway.InquiryFailed)
		})
		if got, _ := e.svc.Return(ctx, p.PublicID, p.AuthorityString()); got.Status != payment.StatusFailed {
			t.Fatalf("setup: %s", dump(got))
		}
		e.clock.Advance(time.Minute)
		broken := errors.New("the database went away")
		e.store.set(func(h *hookStore) {
			h.move = func(m payment.Move) error {
				if m.From == payment.StatusPendingVerification {
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
		if n := e.count(`SELECT COUNT(*) FROM admin_actions WHERE payment_id = ? AND action = 'recheck' AND result = 'error'`, p.ID); n != 1 {
			t.Errorf("%d failed rechecks in the audit log, want 1", n)
		}
		e.store.set(func(h *hookStore) { h.move = nil })
		checkInvariants(t, db)
	})
}
