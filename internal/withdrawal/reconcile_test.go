package withdrawal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// setBook changes one of the sandbox provider's payouts behind Kifpool's
// back (or adds one), as a provider's list may come to disagree.
// dropFromBook makes the sandbox's provider forget the payout id (its
// status: not found).
func (e *env) dropFromBook(id string) {
	e.t.Helper()
	if !e.bank.Payouts().Forget(payouts.Jibit, id) {
		e.t.Fatalf("no payout %s in the book", id)
	}
}

func (e *env) setBook(id string, f func(p *payouts.Payout)) {
	e.t.Helper()
	saved := e.bank.Payouts().Save()
	for i := range saved.Payouts {
		if saved.Payouts[i].Provider == payouts.Jibit && saved.Payouts[i].ID == id {
			f(&saved.Payouts[i])
			e.bank.Payouts().Restore(saved)
			return
		}
	}
	p := payouts.Payout{Provider: payouts.Jibit, ID: id, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
	f(&p)
	e.bank.Payouts().Restore(payouts.Saved{Payouts: []payouts.Payout{p}, Seq: saved.Seq})
}

// paid is a Jibit withdrawal of rials taken to paid by the worker.
func (e *env) paid(rials int64) withdrawal.Withdrawal {
	e.t.Helper()
	w := e.request(rials)
	e.round(time.Second)
	if _, err := e.bank.Payouts().Settle(payouts.Jibit, w.PublicID); err != nil {
		e.t.Fatal(err)
	}
	e.round(time.Minute)
	if w = e.get(w); w.Status != withdrawal.StatusPaid {
		e.t.Fatalf("paid: %+v", w)
	}
	return w
}

// TestReconcileFlagsDifferences: with the sandbox provider's faults and
// its book changed behind our back, each disagreement between our paid,
// returned and in-flight withdrawals and Jibit's list is one difference
// of its kind in the stored report, and nothing is changed for it: the
// withdrawal keeps its status, the wallet its money. A late manual
// failure first seen by reconciliation takes the lifecycle's own edge
// (returned, the money back once) and is flagged for an admin too. The
// next run flags again what still disagrees, and no longer what both
// sides now agree on (the report's differences are the open ones, which
// LatestReports and the metric read).
func TestReconcileFlagsDifferences(t *testing.T) {
	cases := []struct {
		name string
		// make sets the case up and returns its withdrawal's public id
		// (the id the difference names).
		make       func(e *env, adminID int64) string
		kind       string
		status     withdrawal.Status // the withdrawal's status after the run (unchanged unless late_return)
		posted     int64             // the wallet's posted rials after the run
		againKinds int               // differences of this case in the second run
	}{
		{"late manual failure after transferred", func(e *env, _ int64) string {
			// The provider fails it by hand after it was transferred
			// (the sandbox's late manual failure, MANUALLY_FAILED) once
			// the worker's watch of paid ones has ended: only
			// reconciliation asks.
			w := e.paid(700_000)
			if _, err := e.bank.Payouts().Return(payouts.Jibit, w.PublicID); err != nil {
				e.t.Fatal(err)
			}
			return w.PublicID
		}, withdrawal.DiffLateReturn, withdrawal.StatusReturned, funded, 0},
		{"paid here, failed there", func(e *env, _ int64) string {
			w := e.paid(800_000)
			e.setBook(w.PublicID, func(p *payouts.Payout) { p.State = payouts.StateFailed })
			return w.PublicID
		}, withdrawal.DiffPaidNotTheirs, withdrawal.StatusPaid, funded - 800_000, 1},
		{"closed as failed here, transferred there", func(e *env, adminID int64) string {
			w := e.request(900_000)
			e.round(time.Second)
			withdrawaltest.ForceNeedsReview(e.t, e.db, w.PublicID)
			// The provider, asked before the admin's fail, does not know
			// it; later it has transferred it after all.
			held, _ := e.bank.Payouts().Payout(payouts.Jibit, w.PublicID)
			e.dropFromBook(w.PublicID)
			// It had it: the fail waits until it has not known it for a
			// day.
			if _, err := e.svc.AdminFail(context.Background(), adminID, w.PublicID, "never arrived, says the panel"); !errors.Is(err, withdrawal.ErrProviderForgot) {
				e.t.Fatalf("failed at once: %v", err)
			}
			e.clock.Advance(25 * time.Hour)
			if _, err := e.svc.AdminFail(context.Background(), adminID, w.PublicID, "never arrived, says the panel"); err != nil {
				e.t.Fatal(err)
			}
			e.setBook(w.PublicID, func(p *payouts.Payout) { *p = held })
			if _, err := e.bank.Payouts().Settle(payouts.Jibit, w.PublicID); err != nil {
				e.t.Fatal(err)
			}
			return w.PublicID
		}, withdrawal.DiffEndedButTheirs, withdrawal.StatusFailed, funded, 1},
		{"returned here, transferred there", func(e *env, _ int64) string {
			w := e.paid(600_000)
			if _, err := e.bank.Payouts().Return(payouts.Jibit, w.PublicID); err != nil {
				e.t.Fatal(err)
			}
			e.round(time.Hour)
			e.setBook(w.PublicID, func(p *payouts.Payout) { p.State = payouts.StateTransferred })
			return w.PublicID
		}, withdrawal.DiffReturnedNotTheirs, withdrawal.StatusReturned, funded, 1},
		{"another amount there", func(e *env, _ int64) string {
			w := e.paid(500_000)
			e.setBook(w.PublicID, func(p *payouts.Payout) { p.AmountRials = 5_000_000 })
			return w.PublicID
		}, withdrawal.DiffAmount, withdrawal.StatusPaid, funded - 500_000, 1},
		{"a payout of no withdrawal of ours", func(e *env, _ int64) string {
			id := withdrawal.NewPublicID()
			e.setBook(id, func(p *payouts.Payout) {
				p.AmountRials, p.State, p.Sheba, p.Mode, p.Transferred = 400_000, payouts.StateTransferred, withdrawaltest.Sheba("017", 42), "ACH", e.clock.Now()
			})
			return id
		}, withdrawal.DiffUnknownPayout, "", funded, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db, "jibit")
				adminID, _ := withdrawaltest.User(t, db, "admin@example.com")
				id := tc.make(e, adminID)
				before := map[string]withdrawal.Status{}
				for _, w := range withdrawaltest.All(t, db) {
					before[w.PublicID] = w.Status
				}
				reps, err := e.svc.Reconcile(ctx, e.st)
				if err != nil || len(reps) != 1 || reps[0].Error != "" {
					t.Fatalf("reconcile: %+v %v", reps, err)
				}
				items := reps[0].Items()
				if reps[0].Differences != 1 || len(items) != 1 || items[0].Kind != tc.kind || items[0].PublicID != id {
					t.Fatalf("differences %+v, want one %s of %s", items, tc.kind, id)
				}
				for _, w := range withdrawaltest.All(t, db) {
					want := before[w.PublicID]
					if w.PublicID == id {
						want = tc.status
					}
					if w.Status != want {
						t.Errorf("%s is %s after the run, want %s", w.PublicID, w.Status, want)
					}
				}
				e.wantWallet(tc.posted, 0)
				if tc.kind == withdrawal.DiffLateReturn {
					if n := withdrawaltest.Returns(t, db, id); n != 1 {
						t.Errorf("%d returns", n)
					}
					evs := withdrawaltest.Events(t, db, e.get(withdrawal.Withdrawal{PublicID: id}).ID)
					if last := evs[len(evs)-1]; last.Actor != withdrawal.ActorReconcile || last.ToStatus != withdrawal.StatusReturned {
						t.Errorf("the return's event %+v", last)
					}
				}
				e.clock.Advance(24 * time.Hour)
				if _, err := e.svc.Reconcile(ctx, e.st); err != nil {
					t.Fatal(err)
				}
				latest, err := e.svc.LatestReports(ctx)
				if err != nil || len(latest) != 1 || latest[0].Provider != "jibit" || latest[0].Differences != tc.againKinds {
					t.Fatalf("the latest report: %+v %v, want %d differences", latest, err, tc.againKinds)
				}
				if n := withdrawaltest.Returns(t, db, id); tc.kind == withdrawal.DiffLateReturn && n != 1 {
					t.Errorf("%d returns after the second run", n)
				}
				e.wantWallet(tc.posted, 0)
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}

// A withdrawal paid days after it was asked for (an admin's review over a
// long holiday, a provider short of balance, a Paya cycle days away) and
// failed by the provider by hand after the worker's watch: reconciliation
// compares withdrawals by when they were sent or paid, not only by when
// they were asked for, and asks the provider's list from the first submit
// of its oldest one, so the late return still gives the money back, once,
// and neither side's record is taken for a payout the other lacks.
func TestReconcileSeesALatePaymentsLateReturn(t *testing.T) {
	for _, tc := range []struct {
		name                string
		beforeSend, toPayed time.Duration
	}{
		{"sent on day 5", 5 * 24 * time.Hour, time.Minute},
		{"sent on day 0, paid on day 5", 0, 5 * 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db, "jibit")
				w := e.request(1_000_000)
				e.clock.Advance(tc.beforeSend)
				e.round(time.Second)
				e.clock.Advance(tc.toPayed)
				if _, err := e.bank.Payouts().Settle(payouts.Jibit, w.PublicID); err != nil {
					t.Fatal(err)
				}
				e.round(time.Minute)
				if w = e.get(w); w.Status != withdrawal.StatusPaid {
					t.Fatalf("paid on day 5: %+v", w)
				}
				e.clock.Advance(4 * 24 * time.Hour) // day 9: the 72-hour watch is over
				if _, err := e.bank.Payouts().Return(payouts.Jibit, w.PublicID); err != nil {
					t.Fatal(err)
				}
				reps, err := e.svc.ReconcileIfDue(ctx, e.st, nil, 24*time.Hour)
				if err != nil || len(reps) != 1 {
					t.Fatalf("reconcile: %+v %v", reps, err)
				}
				if w = e.get(w); w.Status != withdrawal.StatusReturned {
					t.Fatalf("after reconciliation on day 9: %+v (report %+v)", w, reps[0])
				}
				for _, d := range reps[0].Items() {
					if d.Kind != withdrawal.DiffLateReturn {
						t.Fatalf("a difference other than the late return: %+v", d)
					}
				}
				e.wantWallet(50_000_000, 0)
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}
