package withdrawal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/sqlstore"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// worded is a provider whose status may answer "transferred" for another
// amount, and whose submits may be refused for now, whatever the provider
// behind it holds.
type worded struct {
	payout.Provider
	paidRials     int64        // >0: every Status answers transferred, for this amount
	returnedRials int64        // >0: every Status answers returned, for this amount
	refuseForNow  bool         // every Submit is refused for now
	statusErr     error        // non-nil: every Status answers it
	state         payout.State // set: every Status answers this state (no amount)
}

func (s *worded) Status(ctx context.Context, id string) (payout.Status, error) {
	switch {
	case s.statusErr != nil:
		return payout.Status{}, s.statusErr
	case s.state != "":
		return payout.Status{State: s.state}, nil
	case s.paidRials > 0:
		return payout.Status{State: payout.StateTransferred, AmountRials: s.paidRials, Ref: "PROV-77"}, nil
	case s.returnedRials > 0:
		return payout.Status{State: payout.StateReturned, AmountRials: s.returnedRials, Ref: "PROV-77"}, nil
	}
	return s.Provider.Status(ctx, id)
}

// Ops has no list: reconciliation asks Status payout by payout.
func (s *worded) Ops() payout.Ops {
	o := s.Provider.Ops()
	o.List = nil
	return o
}

func (s *worded) Submit(ctx context.Context, o payout.Order) (payout.Submitted, error) {
	if s.refuseForNow {
		return payout.Submitted{}, payout.Refused(payout.OpSubmit, true, 403, "ip.not_allowed")
	}
	return s.Provider.Submit(ctx, o)
}

func (e *env) withWorded(name string) *worded {
	s := &worded{Provider: e.offers[0].Provider}
	e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(e.db, ledger.New(e.db)),
		[]withdrawal.Offer{{Name: name, Provider: s, Caps: e.offers[0].Caps}}, testConfig(), e.clock.Now, nil)
	return s
}

// The provider says it transferred a withdrawal, for another amount than
// ours: a person looks, with the provider's word recorded, and may close
// it only as paid (its hold captured, once). Closing it as failed, the
// only action there was, released the amount the provider had paid out:
// paid twice.
func TestAmountDisagreementClosesOnlyAsPaid(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		s := e.withWorded("jibit")
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		w := e.request(1_500_000)
		e.round(time.Second)
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderInProgress {
			t.Fatalf("submitted: %+v", w)
		}
		s.paidRials = 1_500_010
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.StatusReason != string(withdrawal.ReasonAmountDisagrees) ||
			w.ProviderState != withdrawal.ProviderTransferred || w.ProviderRef != "PROV-77" {
			t.Fatalf("another amount transferred: %+v", w)
		}
		e.wantWallet(50_000_000, 1_500_000)
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the panel shows it"); !errors.Is(err, withdrawal.ErrProviderPaid) {
			t.Fatalf("closed as failed: %v", err)
		}
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview {
			t.Fatalf("after the refused close: %+v", w)
		}
		e.wantWallet(50_000_000, 1_500_000)
		// The refusal gave the lease back: the close as paid goes through.
		paid, err := e.svc.AdminPay(ctx, admin, w.PublicID, "paid 1,500,010 rials, the provider's fee; see its panel")
		if err != nil || paid.Status != withdrawal.StatusPaid || paid.StatusReason != string(withdrawal.ReasonPaidByAdmin) {
			t.Fatalf("closed as paid: %+v %v", paid, err)
		}
		e.wantWallet(48_500_000, 0)
		if _, err := e.svc.AdminPay(ctx, admin, w.PublicID, "again"); !errors.Is(err, withdrawal.ErrNotReviewable) {
			t.Fatalf("closed as paid again: %v", err)
		}
		e.wantWallet(48_500_000, 0)
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM admin_actions WHERE action = ? AND admin_id = ?`, "withdrawal_paid", admin); n != 1 {
			t.Fatalf("%d audit rows of the close as paid, want 1", n)
		}
		// Reconciliation settles it like any paid withdrawal (its amount
		// leaves payouts in flight) and reports the provider's amount.
		reps, err := e.svc.ReconcileIfDue(ctx, e.st, nil, 0)
		if err != nil || len(reps) != 1 {
			t.Fatalf("reconcile: %+v %v", reps, err)
		}
		if w = e.get(w); w.Status != withdrawal.StatusPaid || w.SettledAt == nil {
			t.Fatalf("after reconciliation: %+v (report %+v)", w, reps[0])
		}
		if items := reps[0].Items(); len(items) != 1 || items[0].Kind != withdrawal.DiffAmount {
			t.Fatalf("differences %+v, want the amount alone", items)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// A provider that refuses every submit for now (our address not allowed,
// its balance short) keeps a withdrawal submitted, sent again and again;
// a day after its first submit a person looks, its money still held, and
// may close it as failed (nothing was taken) but not as paid. Before, it
// was sent again for ever, and neither its owner nor an admin could act.
func TestRefusedForNowGoesToAPerson(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		s := e.withWorded("jibit")
		s.refuseForNow = true
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		w := e.request(1_000_000)
		e.round(time.Second)
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderNotTaken {
			t.Fatalf("refused for now: %+v", w)
		}
		for range 23 {
			e.round(time.Hour)
		}
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.Submits < 20 {
			t.Fatalf("23 hours on: %+v", w)
		}
		e.round(2 * time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.StatusReason != string(withdrawal.ReasonNotTakenTooLong) {
			t.Fatalf("a day on: %+v", w)
		}
		submits := w.Submits
		e.round(3 * time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.Submits != submits {
			t.Fatalf("in review, sent again: %+v (%d submits before)", w, submits)
		}
		e.wantWallet(50_000_000, 1_000_000)
		if _, err := e.svc.AdminPay(ctx, admin, w.PublicID, "looks paid"); !errors.Is(err, withdrawal.ErrProviderNotPaid) {
			t.Fatalf("closed as paid without the provider's word: %v", err)
		}
		if w, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the provider never took it: our IP is not allowed"); err != nil || w.Status != withdrawal.StatusFailed {
			t.Fatalf("closed as failed: %+v %v", w, err)
		}
		e.wantWallet(50_000_000, 0)
		if n := e.bankPayouts("jibit", w.PublicID); n != 0 {
			t.Fatalf("%d payouts at the provider", n)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// A payout returned after the worker's watch, for another amount than
// ours (a fee kept, a unit mixed up): reconciliation still gives the
// money back, once, and reports the amount beside the late return.
// Before, the amount's difference was reported alone and the money
// stayed at the provider.
func TestReconcileReturnsAPayoutOfAnotherAmount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		s := e.withWorded("jibit")
		w := e.request(1_000_000)
		e.round(time.Second)
		if _, err := e.bank.Payouts().Settle(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusPaid {
			t.Fatalf("paid: %+v", w)
		}
		e.wantWallet(49_000_000, 0)
		e.clock.Advance(4 * 24 * time.Hour) // the 72-hour watch is over
		s.returnedRials = 990_000
		reps, err := e.svc.ReconcileIfDue(ctx, e.st, nil, 24*time.Hour)
		if err != nil || len(reps) != 1 {
			t.Fatalf("reconcile: %+v %v", reps, err)
		}
		if w = e.get(w); w.Status != withdrawal.StatusReturned {
			t.Fatalf("after reconciliation: %+v (report %+v)", w, reps[0])
		}
		kinds := map[string]int{}
		for _, d := range reps[0].Items() {
			kinds[d.Kind]++
		}
		if kinds[withdrawal.DiffLateReturn] != 1 || kinds[withdrawal.DiffAmount] != 1 || len(kinds) != 2 {
			t.Fatalf("differences %v, want the late return and the amount", kinds)
		}
		e.wantWallet(50_000_000, 0)
		if _, err := e.svc.ReconcileIfDue(ctx, e.st, nil, 0); err != nil {
			t.Fatal(err)
		}
		e.wantWallet(50_000_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// lapsing is the store with a hook run before an admin's move: the moment
// a stalled database lets the admin's lease lapse and the worker take the
// row.
type lapsing struct {
	*sqlstore.Store
	before func()
}

func (l lapsing) Move(ctx context.Context, m withdrawal.Move) (withdrawal.Withdrawal, error) {
	if m.Actor == withdrawal.ActorAdmin && l.before != nil {
		l.before()
	}
	return l.Store.Move(ctx, m)
}

// inReview is a withdrawal of rials submitted to the provider, which has
// it in progress, then moved to review; and an admin's id.
func (e *env) inReview(rials int64) (withdrawal.Withdrawal, int64) {
	e.t.Helper()
	admin, _ := withdrawaltest.User(e.t, e.db, "admin@example.com")
	w := e.request(rials)
	e.round(time.Second)
	if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderInProgress {
		e.t.Fatalf("submitted: %+v", w)
	}
	withdrawaltest.ForceNeedsReview(e.t, e.db, w.PublicID)
	return e.get(w), admin
}

// An admin's close whose lease lapsed before its move writes nothing and
// says the withdrawal is being worked on (it was a 500); once the worker
// lets go, the close goes through, once.
func TestAdminCloseAfterItsLeaseLapsed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		w, admin := e.inReview(1_500_000)
		// Asked before the fail, the provider says it failed it.
		if _, err := e.bank.Payouts().Fail(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		other := "worker-lease"
		lapse := func() {
			later := e.clock.Now().Add(time.Hour)
			if _, ok, err := e.st.Claim(ctx, withdrawal.Claim{ID: w.ID, Statuses: []withdrawal.Status{withdrawal.StatusNeedsReview},
				Token: other, Now: later, Until: later.Add(time.Minute)}); err != nil || !ok {
				t.Fatalf("the worker's claim after the lapse: %v %v", ok, err)
			}
		}
		svc := withdrawal.New(lapsing{Store: e.st, before: lapse}, e.accts, wallet.NewService(db, ledger.New(db)), e.offers, testConfig(),
			e.clock.Now, nil)
		if _, err := svc.AdminFail(ctx, admin, w.PublicID, "the provider says it never paid"); !errors.Is(err, withdrawal.ErrBusy) {
			t.Fatalf("a close whose lease lapsed: %v, want ErrBusy", err)
		}
		if got := e.get(w); got.Status != withdrawal.StatusNeedsReview {
			t.Fatalf("after the lapsed close: %+v", got)
		}
		e.wantWallet(50_000_000, 1_500_000)
		if n := withdrawaltest.AuditActions(t, db, "withdrawal_fail"); n != 0 {
			t.Fatalf("%d audit rows of a close that wrote nothing", n)
		}
		if _, err := e.st.Update(ctx, w.ID, other, withdrawal.Fields{}, false); err != nil {
			t.Fatal(err)
		}
		closed, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the provider says it never paid")
		if err != nil || closed.Status != withdrawal.StatusFailed {
			t.Fatalf("the close again: %+v %v", closed, err)
		}
		e.wantWallet(50_000_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// An admin's fail asks the provider first: a payout it has in progress
// is not failed under it (Jibit's transfers cannot be called back: the
// amount released here would be paid twice), nor one it had and does
// not know now (TestAdminFailOfAPayoutTheProviderForgot), one it has
// transferred meanwhile ends by its word, and one it failed is the
// admin's to fail (audited, with the provider's word on the row).
func TestAdminFailAsksTheProvider(t *testing.T) {
	for _, tc := range []struct {
		name      string
		provider  func(e *env, id string)
		wantErr   error
		status    withdrawal.Status
		posted    int64
		held      int64
		auditRows int64
	}{
		{"in progress there", func(*env, string) {}, withdrawal.ErrProviderHasIt, withdrawal.StatusNeedsReview, 50_000_000, 1_500_000, 0},
		{"transferred there", func(e *env, id string) {
			if _, err := e.bank.Payouts().Settle(payouts.Jibit, id); err != nil {
				e.t.Fatal(err)
			}
		}, withdrawal.ErrProviderEnded, withdrawal.StatusPaid, 48_500_000, 0, 0},
		// Paid and then failed by hand there (Jibit's MANUALLY_FAILED):
		// both moves are the provider's, applied as the worker applies
		// them, and the amount is back in the wallet.
		{"returned there", func(e *env, id string) {
			if _, err := e.bank.Payouts().Settle(payouts.Jibit, id); err != nil {
				e.t.Fatal(err)
			}
			if _, err := e.bank.Payouts().Return(payouts.Jibit, id); err != nil {
				e.t.Fatal(err)
			}
		}, withdrawal.ErrProviderReturned, withdrawal.StatusReturned, 50_000_000, 0, 0},
		{"failed there", func(e *env, id string) {
			if _, err := e.bank.Payouts().Fail(payouts.Jibit, id); err != nil {
				e.t.Fatal(err)
			}
		}, nil, withdrawal.StatusFailed, 50_000_000, 0, 1},
		{"unknown there", func(e *env, id string) { e.dropFromBook(id) }, withdrawal.ErrProviderForgot, withdrawal.StatusNeedsReview, 50_000_000, 1_500_000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db, "jibit")
				w, admin := e.inReview(1_500_000)
				tc.provider(e, w.PublicID)
				got, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the panel shows nothing")
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("AdminFail: %v, want %v", err, tc.wantErr)
				}
				if r := e.get(w); r.Status != tc.status || got.Status != tc.status || r.LeaseOwner != "" {
					t.Fatalf("after the fail: %+v (returned %s), want %s and no lease", r, got.Status, tc.status)
				}
				e.wantWallet(tc.posted, tc.held)
				if n := withdrawaltest.AuditActions(t, db, "withdrawal_fail"); n != tc.auditRows {
					t.Fatalf("%d audit rows of the admin's fail, want %d", n, tc.auditRows)
				}
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}

// A payout whose submit's answer stayed unknown (the provider never said
// whether it took it) is not failed by an admin while the provider does
// not answer: released, it could be paid twice. Once the provider says
// it does not know it, the admin's close goes on.
func TestAdminFailOfAnUnknownPayoutWaitsForTheProvider(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		admin, _ := withdrawaltest.User(e.t, e.db, "admin@example.com")
		w := e.request(1_500_000)
		e.round(time.Second)
		withdrawaltest.ForceProviderUnknown(t, db, w.PublicID)
		s := e.withWorded("jibit")
		s.statusErr = errors.New("connection reset")
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the panel shows nothing"); !errors.Is(err, withdrawal.ErrProviderUnreachable) {
			t.Fatalf("no answer, the provider's word unknown: %v, want ErrProviderUnreachable", err)
		}
		if r := e.get(w); r.Status != withdrawal.StatusNeedsReview || r.LeaseOwner != "" {
			t.Fatalf("after the refusal: %+v", r)
		}
		e.wantWallet(50_000_000, 1_500_000)
		if n := withdrawaltest.AuditActions(t, db, "withdrawal_fail"); n != 0 {
			t.Fatalf("%d audit rows of a refused fail", n)
		}
		s.statusErr = nil
		e.dropFromBook(w.PublicID)
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the panel shows nothing"); err != nil {
			t.Fatalf("the provider does not know it: %v", err)
		}
		if r := e.get(w); r.Status != withdrawal.StatusFailed {
			t.Fatalf("after the fail: %+v", r)
		}
		e.wantWallet(50_000_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// With no answer from the provider at the admin's fail, the row's word
// stands: a payout last said in progress is not failed.
func TestAdminFailWithoutAnAnswer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		w, admin := e.inReview(1_500_000)
		s := e.withWorded("jibit")
		s.statusErr = errors.New("connection reset")
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the panel shows nothing"); !errors.Is(err, withdrawal.ErrProviderHasIt) {
			t.Fatalf("no answer, last word in progress: %v, want ErrProviderHasIt", err)
		}
		if r := e.get(w); r.Status != withdrawal.StatusNeedsReview || r.LeaseOwner != "" {
			t.Fatalf("after the refusal: %+v", r)
		}
		e.wantWallet(50_000_000, 1_500_000)
		withdrawaltest.CheckInvariants(t, db)
	})
}
