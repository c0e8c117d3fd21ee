package withdrawal_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/sqlstore"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// paidJibit requests a withdrawal of rials and has the sandbox Jibit
// transfer it: paid, watched.
func (e *env) paidJibit(rials int64) withdrawal.Withdrawal {
	e.t.Helper()
	w := e.paid(rials)
	if w.PaidAt == nil || w.WatchUntil == nil {
		e.t.Fatalf("paid, not watched: %+v", w)
	}
	return w
}

// until runs the worker every 6 hours, and reconciliation once a day,
// until the clock reaches at.
func (e *env) until(at time.Time) {
	e.t.Helper()
	for i := 0; e.clock.Now().Before(at); i++ {
		e.round(6 * time.Hour)
		if i%4 == 3 {
			if _, err := e.svc.Reconcile(context.Background(), e.st); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// A payout failed by hand (MANUALLY_FAILED) ten days after it was paid:
// after the dense watch (WITHDRAWAL_WATCH_PAID) and past reconciliation's
// lookback, the sparse tail still asks, and the wallet gets the money
// back, once.
func TestLateReturnAfterTheWatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.paidJibit(2_000_000)
		paid := *w.PaidAt
		e.until(paid.Add(10 * 24 * time.Hour))
		if w = e.get(w); w.Status != withdrawal.StatusPaid {
			t.Fatalf("ten days after paid: %+v", w)
		}
		if _, err := e.bank.Payouts().Return(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.until(e.clock.Now().Add(withdrawal.LateWatchEvery * 3 / 2))
		if w = e.get(w); w.Status != withdrawal.StatusReturned || w.ReturnedAt == nil || w.NextCheckAt != nil {
			t.Fatalf("failed by hand ten days after paid: %+v", w)
		}
		e.wantWallet(funded, 0)
		if got := withdrawaltest.Account(t, db, sqlstore.InFlightCode("jibit")); got != 0 {
			t.Fatalf("in flight %d", got)
		}
		// Asked and reconciled again: still one return.
		e.until(e.clock.Now().Add(3 * 24 * time.Hour))
		if n := withdrawaltest.Returns(t, db, w.PublicID); n != 1 {
			t.Fatalf("%d returns", n)
		}
		e.wantWallet(funded, 0)
		evs := withdrawaltest.Events(t, db, w.ID)
		last := evs[len(evs)-1]
		if last.FromStatus != withdrawal.StatusPaid || last.ToStatus != withdrawal.StatusReturned || last.Reason != withdrawal.ReasonReturned {
			t.Fatalf("events %+v", evs)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// After the dense watch a paid withdrawal is asked about once a day, and
// not at all after LateWatchHorizon: a failure by hand after that is
// left to an admin and the provider's statement, never asked about
// forever.
func TestLateWatchIsSparseAndBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.paidJibit(1_500_000)
		paid := *w.PaidAt
		e.until(paid.Add(5 * 24 * time.Hour))
		before := withdrawaltest.Calls(t, db, w.PublicID)["payout_status"]
		e.until(paid.Add(25 * 24 * time.Hour))
		// Twenty days of the tail, the worker running every six hours:
		// about twenty inquiries, not eighty.
		if n := withdrawaltest.Calls(t, db, w.PublicID)["payout_status"] - before; n < 18 || n > 22 {
			t.Fatalf("%d inquiries in twenty days of the tail", n)
		}
		if w = e.get(w); w.NextCheckAt == nil || w.NextCheckAt.Sub(e.clock.Now()) < 12*time.Hour {
			t.Fatalf("in the tail: %+v", w)
		}
		e.until(paid.Add(withdrawal.LateWatchHorizon + 24*time.Hour))
		if w = e.get(w); w.Status != withdrawal.StatusPaid || w.NextCheckAt != nil {
			t.Fatalf("after the horizon: %+v", w)
		}
		if _, err := e.bank.Payouts().Return(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		asked := withdrawaltest.Calls(t, db, w.PublicID)["payout_status"]
		e.until(e.clock.Now().Add(10 * 24 * time.Hour))
		if got := withdrawaltest.Calls(t, db, w.PublicID)["payout_status"]; got != asked {
			t.Fatalf("asked %d times after the horizon", got-asked)
		}
		if w = e.get(w); w.Status != withdrawal.StatusPaid || w.NextCheckAt != nil {
			t.Fatalf("failed by hand after the horizon: %+v", w)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}
