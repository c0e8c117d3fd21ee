package topup_test

// Issue-12 scenarios: no paid payment left behind, bounded cost and
// bounded waiting. Each ran red against the code before the state machine.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// failByLifetime drives a started payment to failed the way production
// does: the bank keeps saying the payer is at its page, and the worker
// gives up after the authority's lifetime.
func (e *env) failByLifetime(p topup.TopUp) {
	e.t.Helper()
	e.gw.Set(func(f *topuptest.Gateway) {
		f.VerifyFn = topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51)
		f.InquireFn = topuptest.Inquiry(gateway.InquiryInBank)
	})
	e.clock.Advance(21 * time.Minute)
	wc := topuptest.WorkerConfig()
	wc.AbandonedAfter, wc.AuthorityLifetime = time.Minute, 20*time.Minute
	w := e.svc.NewWorker(wc)
	if _, err := w.RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	if r := e.row(p.ID); r.Status != topup.StatusFailed || r.StatusReason != string(topup.ReasonNotPaidAfterLife) {
		e.t.Fatalf("after the lifetime: %s", dump(r))
	}
}

func (e *env) events(p topup.TopUp) []string {
	e.t.Helper()
	evs, err := topuptest.Events(context.Background(), e.db, p.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.FromStatus)+">"+string(ev.ToStatus)+":"+string(ev.Actor)+":"+string(ev.Reason))
	}
	return out
}

// §2.1 A failed payment that the payer paid anyway is asked about again;
// the bank verifies it (and stops listing it as unverified); the process
// dies before the credit commits. The payment was reopened before the bank
// was asked, so after the crash the worker (another instance) finishes it:
// credited, once.
func TestRescueSurvivesACrash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(40_000)
		e.failByLifetime(p)

		// The payer paid after all. Our first actor (an admin's "ask the
		// bank now") reaches the bank; the bank verifies; the process hangs
		// there forever (as good as dead).
		dead := make(chan struct{})
		defer close(dead)
		atBank := make(chan struct{})
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				close(atBank)
				<-dead
				return topuptest.Paid(5151)(n, in)
			}
		})
		e.clock.Advance(time.Minute)
		go func() { _, _ = e.svc.AdminRecheck(context.WithoutCancel(ctx), p.PublicID, e.user.ID) }()
		<-atBank
		if r := e.row(p.ID); r.Status != topup.StatusPendingVerification || r.StatusReason != string(topup.ReasonReopened) {
			t.Fatalf("while the bank is asked: %s; want reopened (pending_verification)", dump(r))
		}

		// Another instance: the bank now answers "already verified".
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.AlreadyVerified(5151) })
		other := topup.NewService(sqlstore.New(db), gateway.Set{e.gw}, e.clock.Now, nil, topuptest.Config())
		e.clock.Advance(time.Minute) // the dead holder's lease runs out
		rr, err := other.NewWorker(topuptest.WorkerConfig()).RunOnce(ctx)
		if err != nil || rr.Claimed != 1 || rr.Resolved != 1 {
			t.Fatalf("worker after the crash: %+v %v", rr, err)
		}
		e.assertCredited(p, 5151)
		if b := e.balance(); b != 40_000 {
			t.Errorf("balance %d, want 40000", b)
		}
		want := []string{
			"created>awaiting_payment:submit:request_ok",
			"awaiting_payment>failed:worker:not_paid_after_lifetime",
			"failed>pending_verification:admin:reopened",
			"pending_verification>credited:worker:already_verified",
		}
		if got := e.events(p); len(got) != len(want) || got[2] != want[2] || got[3] != want[3] {
			t.Errorf("events %v, want %v", got, want)
		}
		checkInvariants(t, db)
	})
}

// §2.2 A rescued payment that the bank confirms without a reference goes
// to a person (needs_review), it does not stay failed.
func TestRescuePaidWithoutReference(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(40_000)
		e.failByLifetime(p)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.AlreadyVerified(0) })
		e.clock.Advance(time.Minute)
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != topup.StatusNeedsReview || got.StatusReason != string(topup.ReasonNoRefID) {
			t.Fatalf("Return = %s, %v; want needs_review no_ref_id", dump(got), err)
		}
		e.assertUncredited(p)
		checkInvariants(t, db)
	})
}

// §2.3 A payer who pays after the worker gave up comes back to our
// callback: the payment is reopened and verified — at once, or, when the
// bank was asked within the pacing window, by the worker when it ends —
// and credited. Meanwhile the page says we are confirming.
func TestCallbackForAFailedTopUpAsksTheBank(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wait      time.Duration // since the worker's last check
		atOnce    bool
		wantFirst topup.Status
	}{
		{"after the pacing window: verified at once", time.Minute, true, topup.StatusCredited},
		// (the payer's browser had come back once before, early: this is
		// not the first callback, which is always checked at once)
		{"within the pacing window: the worker verifies", 5 * time.Second, false, topup.StatusPendingVerification},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db)
				p := e.start(40_000)
				if !tc.atOnce {
					e.gw.Set(func(f *topuptest.Gateway) {
						f.VerifyFn = topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51)
						f.InquireFn = topuptest.Inquiry(gateway.InquiryInBank)
					})
					if got, _ := e.back(ctx, p.PublicID, p.AuthorityString()); got.Status != topup.StatusAwaitingPayment {
						t.Fatalf("early callback: %s", dump(got))
					}
				}
				e.failByLifetime(p)
				e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(7070) })
				_, before, _ := e.gw.Counts()
				e.clock.Advance(tc.wait)
				got, err := e.back(ctx, p.PublicID, p.AuthorityString())
				if err != nil || got.Status != tc.wantFirst {
					t.Fatalf("Return = %s, %v; want %s", dump(got), err, tc.wantFirst)
				}
				if _, ver, _ := e.gw.Counts(); (ver > before) != tc.atOnce {
					t.Errorf("verifies %d → %d; asked at once: %v", before, ver, tc.atOnce)
				}
				if !tc.atOnce {
					// A reload within the window changes nothing and asks nothing.
					if again, _ := e.back(ctx, p.PublicID, p.AuthorityString()); again.Status != topup.StatusPendingVerification {
						t.Errorf("reload: %s", dump(again))
					}
					w := e.svc.NewWorker(topuptest.WorkerConfig())
					if rr, _ := w.RunOnce(ctx); rr.Resolved != 0 {
						t.Errorf("worker within the window resolved %d", rr.Resolved)
					}
					e.clock.Advance(20 * time.Second)
					if rr, err := w.RunOnce(ctx); err != nil || rr.Resolved != 1 {
						t.Fatalf("worker after the window: %+v %v", rr, err)
					}
				}
				e.assertCredited(p, 7070)
				if b := e.balance(); b != 40_000 {
					t.Errorf("balance %d", b)
				}
				checkInvariants(t, db)
			})
		})
	}
}

// §2.4 An inquiry state we do not know is not the bank's definite word:
// the payment stays open with back-off and goes to a person at the
// deadline, never to failed.
func TestUnknownInquiryStateNeverFails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(40_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51)
			f.InquireFn = topuptest.Inquiry(gateway.InquiryStatus("SETTLING"))
		})
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != topup.StatusPendingVerification {
			t.Fatalf("Return = %s, %v", dump(got), err)
		}
		wc := topuptest.WorkerConfig()
		wc.MaxUnknown = time.Hour
		w := e.svc.NewWorker(wc)
		for range 3 {
			e.clock.Advance(3 * time.Minute)
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if r := e.row(p.ID); r.Status != topup.StatusPendingVerification {
				t.Fatalf("within the deadline: %s", dump(r))
			}
		}
		e.clock.Advance(time.Hour)
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if r := e.row(p.ID); r.Status != topup.StatusNeedsReview || r.StatusReason != string(topup.ReasonUnknownTooLong) {
			t.Fatalf("past the deadline: %s", dump(r))
		}
		if n := e.count(`SELECT COUNT(*) FROM topup_events WHERE topup_id = ? AND to_status = 'failed'`, p.ID); n != 0 {
			t.Errorf("%d moves to failed", n)
		}
		topuptest.CheckNoneOpenPast(t, db, e.clock.Now(), time.Hour)
		checkInvariants(t, db)
	})
}

// §2.5 Reconciliation matches the gateway's unverified items by authority
// and, failing that, by the public id in the callback URL (an authority we
// never stored); only an item matching neither is foreign. It works with
// bounded concurrency and reports what its budget did not reach.
func TestReconcileMatchesByCallbackURL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		// Our request reached the bank, the answer was lost: failed here,
		// no authority; the payer never saw the bank page — but the bank
		// holds a paid transaction for it (say, paid through a retry of
		// the bank's own page).
		e.gw.Set(func(f *topuptest.Gateway) { f.AnswerLost = true })
		r, err := e.svc.StartTopUp(ctx, e.input(topup.NewFormToken(), 60_000))
		if !errors.Is(err, topup.ErrGatewayFailed) || r.TopUp.Authority != nil {
			t.Fatalf("answer lost: %+v %v", r, err)
		}
		lost := r.TopUp
		lostAuthority := e.gw.LastAuthority()
		e.gw.Set(func(f *topuptest.Gateway) { f.AnswerLost = false })
		ours := e.start(30_000) // an ordinary one, matched by authority
		other := e.start(20_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				return topuptest.Paid(int64(80_000+n))(n, in)
			}
			f.Unverified = []gateway.Unverified{
				{Authority: lostAuthority, AmountRials: 60_000, CallbackURL: e.svc.CallbackURL(lost.PublicID)},
				{Authority: ours.AuthorityString(), AmountRials: 30_000, CallbackURL: e.svc.CallbackURL(ours.PublicID)},
				{Authority: topuptest.NewAuthority(), AmountRials: 99_000, CallbackURL: "https://elsewhere.test/cb?id=1"},
				// Names our payment, but it holds another authority: never verified against it.
				{Authority: topuptest.NewAuthority(), AmountRials: 20_000, CallbackURL: e.svc.CallbackURL(other.PublicID)},
			}
		})
		rep, err := e.svc.Reconcile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Listed != 4 || rep.Credited != 2 || rep.CreditedRials != 90_000 || rep.ForeignCount != 1 || rep.ForeignRials != 99_000 || rep.Mismatches != 1 {
			t.Errorf("report %+v", rep)
		}
		kinds := map[string]string{}
		for _, it := range rep.Items() {
			kinds[it.Authority] = it.Kind
		}
		if kinds[lostAuthority] != "credited" || kinds[ours.AuthorityString()] != "credited" {
			t.Errorf("items %+v", rep.Items())
		}
		if got := e.row(lost.ID); got.Status != topup.StatusCredited || got.AuthorityString() != lostAuthority {
			t.Errorf("lost payment: %s", dump(got))
		}
		e.assertUncredited(other)
		if b := e.balance(); b != 90_000 {
			t.Errorf("balance %d, want 90000", b)
		}
		if evs := e.events(lost); len(evs) != 3 || evs[1] != "failed>pending_verification:reconcile:authority_recovered" {
			t.Errorf("events of the recovered payment %v", evs)
		}
		checkInvariants(t, db)
	})
}

func TestReconcileBoundedConcurrencyAndBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		var items []gateway.Unverified
		for range 12 {
			p := e.start(10_000)
			items = append(items, gateway.Unverified{Authority: p.AuthorityString(), AmountRials: 10_000})
		}
		var inFlight, peak atomic.Int64
		e.gw.Set(func(f *topuptest.Gateway) {
			f.Unverified = items
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				cur := inFlight.Add(1)
				defer inFlight.Add(-1)
				for {
					old := peak.Load()
					if cur <= old || peak.CompareAndSwap(old, cur) {
						break
					}
				}
				if n > 2 {
					// The first two answer at once, so something is
					// credited however slow the machine.
					time.Sleep(time.Second) // real time: a slow bank against reconciliation's real-time budget
				}
				return topuptest.Paid(int64(60_000+n))(n, in)
			}
		})
		rep, err := e.svc.ReconcileWith(ctx, topup.ReconcileConfig{Concurrency: 2, Budget: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if peak.Load() > 2 {
			t.Errorf("%d verifies at once, want at most 2", peak.Load())
		}
		// 13 items: the 12 listed, and our ended payments, never asked.
		if rep.Unreached == 0 || rep.Credited == 0 || rep.Credited+rep.Unreached > 13 {
			t.Errorf("report %+v: want some credited, some not reached", rep)
		}
		n, cut := 0, 0
		for _, it := range rep.Items() {
			switch it.Kind {
			case "not_reached":
				n++
			case "error":
				// Begun before the budget ran out, cut by it on a slow
				// machine: still left to do, and named so.
				if !strings.HasPrefix(it.Detail, "cut by the reconciliation budget: ") {
					t.Errorf("item %+v: an error the budget did not cause", it)
				}
				cut++
			case "credited":
			default:
				t.Errorf("item %+v: want credited, not reached, or cut by the budget", it)
			}
		}
		if n != rep.Unreached {
			t.Errorf("%d items not reached, report says %d", n, rep.Unreached)
		}
		// What kifpool reconcile counts as left to do (and exits 1 for).
		if rep.Left() != n+cut || rep.Credited+rep.Left() != 13 {
			t.Errorf("Left %d, want the %d not reached and the %d cut; credited %d of 12 (and the ended payments)", rep.Left(), n, cut, rep.Credited)
		}
		checkInvariants(t, db)
	})
}

// §2.6 "Ask the bank now" records what happened: skipped while another
// actor holds the payment (the bank is not asked), run otherwise.
func TestAdminRecheckRecordsWhatHappened(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(40_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.VerifyAnswer(gateway.VerifyAmountMismatch, -50) })
		if got, _ := e.back(ctx, p.PublicID, p.AuthorityString()); got.Status != topup.StatusNeedsReview {
			t.Fatalf("setup: %s", dump(got))
		}
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(3030) })
		if err := db.Gorm.Exec(`UPDATE topups SET lease_until = ?, lease_owner = 'someone' WHERE id = ?`,
			e.clock.Now().Add(time.Minute).UTC(), p.ID).Error; err != nil {
			t.Fatal(err)
		}
		_, ver0, _ := e.gw.Counts()
		if _, err := e.svc.AdminRecheck(ctx, p.PublicID, e.user.ID); !errors.Is(err, topup.ErrTopUpBusy) {
			t.Fatalf("recheck under another's lease: %v, want ErrPaymentBusy", err)
		}
		if _, ver, _ := e.gw.Counts(); ver != ver0 {
			t.Errorf("the bank was asked under another actor's lease")
		}
		if n := e.count(`SELECT COUNT(*) FROM admin_actions WHERE topup_id = ? AND action = 'recheck_skipped' AND result = 'skipped'`, p.ID); n != 1 {
			t.Errorf("%d skipped rechecks recorded, want 1", n)
		}
		e.clock.Advance(2 * time.Minute)
		got, err := e.svc.AdminRecheck(ctx, p.PublicID, e.user.ID)
		if err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("recheck: %s %v", dump(got), err)
		}
		if n := e.count(`SELECT COUNT(*) FROM admin_actions WHERE topup_id = ? AND action = 'recheck' AND result = 'done' AND to_status = 'credited'`, p.ID); n != 1 {
			t.Errorf("%d rechecks recorded, want 1", n)
		}
		// Pressed twice at once on a paid payment: credited once.
		q := e.start(50_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				time.Sleep(30 * time.Millisecond) // real time: a slow verify, so that the two presses overlap
				return topuptest.Paid(int64(4000+n))(n, in)
			}
		})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { _, _ = e.svc.AdminRecheck(ctx, q.PublicID, e.user.ID) })
		}
		wg.Wait()
		if r := e.row(q.ID); r.Status != topup.StatusCredited || len(e.ledgerOf(q.ID)) != 1 {
			t.Errorf("pressed twice: %s", dump(r))
		}
		if b := e.balance(); b != 90_000 {
			t.Errorf("balance %d, want 90000", b)
		}
		checkInvariants(t, db)
	})
}

// §3 A flood of callbacks for one payment, whatever they claim, costs the
// bank one check per pacing window, even when they all read the row
// before the first check was recorded.
func TestCallbackFloodOneCheckPerWindow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(40_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = func(int, gateway.VerifyInput) (gateway.VerifyResult, error) {
				time.Sleep(40 * time.Millisecond) // real time: a slow verify, so that the flood overlaps it
				return gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51}, nil
			}
			f.InquireFn = topuptest.Inquiry(gateway.InquiryInBank)
		})
		flood := func() {
			var wg sync.WaitGroup
			for range 30 {
				wg.Go(func() {
					if got, err := e.backWith(ctx, p.PublicID, p.AuthorityString(), "", true); err != nil || got.Status != topup.StatusAwaitingPayment {
						t.Errorf("callback: %s %v", dump(got), err)
					}
				})
			}
			wg.Wait()
		}
		flood()
		if _, ver, inq := e.gw.Counts(); ver != 1 || inq != 1 {
			t.Errorf("first flood: %d verifies, %d inquiries; want 1, 1", ver, inq)
		}
		e.clock.Advance(21 * time.Second)
		flood()
		if _, ver, _ := e.gw.Counts(); ver != 2 {
			t.Errorf("second flood after the window: %d verifies in all, want 2", ver)
		}
		checkInvariants(t, db)
	})
}

// §3 Nobody waits longer than the budget, even when the lease holder died
// mid-check (SIGKILL): the callback shows the pending page at the budget;
// once the dead lease runs out (about one budget), the next callback
// finishes the payment.
func TestWaitersGiveUpAtTheBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const budget = 400 * time.Millisecond
		e := newEnvWith(t, db, func(c *topup.Config) { c.VerifyTimeout = budget })
		p := e.start(40_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(6060) })
		// A holder took the lease for one check and was killed.
		if err := db.Gorm.Exec(`UPDATE topups SET lease_until = ?, lease_owner = 'dead' WHERE id = ?`,
			e.clock.Now().Add(budget+2*time.Second).UTC(), p.ID).Error; err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		took := time.Since(start)
		if err != nil || got.Status != topup.StatusAwaitingPayment {
			t.Fatalf("Return under a dead lease = %s, %v", dump(got), err)
		}
		// Well past the budget on a loaded machine, but far short of the
		// wait for a dead lease that never runs out on the frozen clock.
		if took > budget+3*time.Second {
			t.Errorf("waited %v, budget %v", took, budget)
		}
		if _, ver, _ := e.gw.Counts(); ver != 0 {
			t.Errorf("asked the bank under another's lease")
		}
		e.clock.Advance(budget + 2*time.Second) // the dead lease runs out
		got, err = e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("Return after the dead lease ran out = %s, %v", dump(got), err)
		}
		e.assertCredited(p, 6060)
		checkInvariants(t, db)
	})
}

// C1: an item the bank lists with another amount than ours, which the
// bank's verify (carrying our amount) then confirms, is credited, and the
// report counts it as a credit with its rials, not as a mismatch.
func TestReconcileCountsACreditedItemAsCredited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(30_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = topuptest.Paid(81_001)
			f.Unverified = []gateway.Unverified{{Authority: p.AuthorityString(), AmountRials: 40_000, CallbackURL: e.svc.CallbackURL(p.PublicID)}}
		})
		rep, err := e.svc.Reconcile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Credited != 1 || rep.CreditedRials != 30_000 || rep.Mismatches != 0 || rep.Ours != 1 {
			t.Errorf("report %+v", rep)
		}
		items := rep.Items()
		if len(items) != 1 || items[0].Kind != "credited" || !strings.Contains(items[0].Detail, "listed 40000") {
			t.Errorf("items %+v", items)
		}
		e.assertCredited(p, 81_001)
		// Stored as reported.
		if n := e.count(`SELECT COUNT(*) FROM reconcile_reports WHERE id = ? AND credited = 1 AND mismatches = 0 AND credited_rials = 30000`, rep.ID); n != 1 {
			t.Errorf("the stored report differs from %+v", rep)
		}
		checkInvariants(t, db)
	})
}

// A panic on one item (a driver's bug on an odd answer) is that item's
// error, left to do: the run goes on to the others and the process lives
// (the goroutine an item runs in is no loop's, whose recovery it lacks).
func TestReconcileSurvivesAPanicOnOneItem(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		odd, fine := e.start(10_000), e.start(20_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				if in.Authority == odd.AuthorityString() {
					panic("index out of range in the driver")
				}
				return topuptest.Paid(77_001)(n, in)
			}
			f.Unverified = []gateway.Unverified{
				{Authority: odd.AuthorityString(), AmountRials: 10_000, CallbackURL: e.svc.CallbackURL(odd.PublicID)},
				{Authority: fine.AuthorityString(), AmountRials: 20_000, CallbackURL: e.svc.CallbackURL(fine.PublicID)},
			}
		})
		rep, err := e.svc.ReconcileWith(ctx, topup.ReconcileConfig{Concurrency: 1, Budget: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]string{}
		for _, it := range rep.Items() {
			kinds[it.Authority] = it.Kind + " " + it.Detail
		}
		if !strings.HasPrefix(kinds[odd.AuthorityString()], "error panic: index out of range") || rep.Credited != 1 || rep.Left() != 1 {
			t.Fatalf("report %+v, items %v: want the panic as one item's error, the other credited", rep, kinds)
		}
		e.assertCredited(fine, 77_001)
		if got := e.row(odd.ID); got.Status.Terminal() {
			t.Errorf("the payment whose check panicked ended: %s", dump(got))
		}
		checkInvariants(t, db)
	})
}

// An item whose verify the run's budget cut short is left to do: not
// "open" (which kifpool reconcile would take as done), but an error that
// says the budget cut it; the payment still waits for the bank's word.
func TestReconcileBudgetCutsAVerify(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(10_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.Unverified = []gateway.Unverified{{Authority: p.AuthorityString(), AmountRials: 10_000}}
			f.VerifyDelay = time.Minute // the context cuts it
		})
		rep, err := e.svc.ReconcileWith(ctx, topup.ReconcileConfig{Concurrency: 1, Budget: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		// Left: the verify cut, and our ended payments, never asked.
		items := rep.Items()
		if len(items) != 2 || items[0].Kind != "error" || !strings.HasPrefix(items[0].Detail, "cut by the reconciliation budget: ") ||
			items[1].Kind != "not_reached" || !strings.Contains(items[1].Detail, "ended payments") ||
			rep.Left() != 2 || rep.Credited != 0 {
			t.Fatalf("report %+v, items %+v: want the item cut by the budget and the ended payments left", rep, items)
		}
		if got := e.row(p.ID); got.Status.Terminal() {
			t.Errorf("the payment ended without the bank's word: %s", dump(got))
		}
		checkInvariants(t, db)
	})
}

// deadlineGateway is the fake gateway that keeps the deadline of each
// verify's context.
type deadlineGateway struct {
	*topuptest.Gateway
	mu        sync.Mutex
	deadlines []time.Time
}

func (g *deadlineGateway) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	if d, ok := ctx.Deadline(); ok {
		g.mu.Lock()
		g.deadlines = append(g.deadlines, d)
		g.mu.Unlock()
	}
	return g.Gateway.Verify(ctx, in)
}

// Reconciliation's recovery of a lost authority bounds its verify by one
// budget from the moment it took the lease (sized to that budget), not
// from after the move to pending_verification that comes between: a slow
// move does not let the verify outlive the lease.
func TestRecoveredAuthorityVerifiesWithinTheLeasesBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		gw := &deadlineGateway{Gateway: e.gw}
		cfg := topuptest.Config()
		e.svc = topup.NewService(e.store, gateway.Set{gw}, e.clock.Now, nil, cfg)
		// Our request reached the bank, its answer was lost: failed here,
		// no authority; the bank lists the payment as paid.
		e.gw.Set(func(f *topuptest.Gateway) { f.AnswerLost = true })
		r, err := e.svc.StartTopUp(ctx, e.input(topup.NewFormToken(), 60_000))
		if !errors.Is(err, topup.ErrGatewayFailed) || r.TopUp.Authority != nil {
			t.Fatalf("answer lost: %+v %v", r, err)
		}
		lost := r.TopUp
		lostAuthority := e.gw.LastAuthority()
		e.gw.Set(func(f *topuptest.Gateway) {
			f.AnswerLost = false
			f.Unverified = []gateway.Unverified{{Authority: lostAuthority, AmountRials: 60_000, CallbackURL: e.svc.CallbackURL(lost.PublicID)}}
		})
		// The recovery's move, under the lease taken before it: every
		// instant of it lies after the claim.
		var moveStarted time.Time
		e.store.set(func(h *hookStore) {
			h.move = func(m topup.Move) error {
				if m.Reason == topup.ReasonAuthorityRecovered && moveStarted.IsZero() {
					moveStarted = time.Now()
				}
				return nil
			}
		})
		if _, err := e.svc.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		e.store.set(func(h *hookStore) { h.move = nil })
		if got := e.row(lost.ID); got.Status != topup.StatusCredited || got.AuthorityString() != lostAuthority {
			t.Fatalf("the recovered payment: %s", dump(got))
		}
		gw.mu.Lock()
		defer gw.mu.Unlock()
		if moveStarted.IsZero() || len(gw.deadlines) != 1 {
			t.Fatalf("move at %v, %d verifies with a deadline; want the recovery's move and one verify", moveStarted, len(gw.deadlines))
		}
		if limit := moveStarted.Add(cfg.VerifyTimeout); gw.deadlines[0].After(limit) {
			t.Errorf("the verify's deadline is %v later than one budget from before the move: it was counted from after it", gw.deadlines[0].Sub(limit))
		}
	})
}
