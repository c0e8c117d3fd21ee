package cardrefund_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/webhook"
)

// TestZarinpalRefundsPartThenTheRest: an admin gives part of a Zarinpal
// top-up back to the card, then the rest: each time the wallet's amount
// is held, then captured when the bank accepts, the bank refunds exactly
// that, the payer's partners hear of it, and nothing is left to offer.
func TestZarinpalRefundsPartThenTheRest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("zarinpal", 500_000)
		o := e.offer(p)
		if !o.OK || o.Method != cardrefund.MethodRefund || o.MinRials != 20_000 || o.MaxRials != 500_000 || o.Whole {
			t.Fatalf("offer %+v", o)
		}
		if _, err := e.start(p, 19_999); !errors.Is(err, cardrefund.ErrAmountTooSmall) {
			t.Fatalf("below the bank's minimum: %v", err)
		}
		if _, err := e.start(p, 500_001); !errors.Is(err, cardrefund.ErrAmountTooLarge) {
			t.Fatalf("above the top-up: %v", err)
		}
		if _, err := e.svc.Start(context.Background(), cardrefund.StartRequest{TopUpPublicID: p.PublicID, AmountRials: 100_000, AdminID: e.admin.ID}); !errors.Is(err, cardrefund.ErrNoteRequired) {
			t.Fatalf("without a note: %v", err)
		}
		// The payer, were they an admin, does not refund their own.
		if _, err := e.svc.Start(context.Background(), cardrefund.StartRequest{TopUpPublicID: p.PublicID, AmountRials: 100_000, AdminID: e.user.ID,
			Note: "mine"}); !errors.Is(err, cardrefund.ErrOwnTopUp) {
			t.Fatalf("a refund of one's own top-up: %v, want ErrOwnTopUp", err)
		}
		first := e.mustStart(p, 200_000, cardrefund.StatusRefunded)
		if first.Attempts != 1 || first.StatusReason != cardrefund.ReasonBankAccepted || first.BankReference == "" || first.RefundedBeforeRials != 0 {
			t.Fatalf("first %+v", first)
		}
		e.wantFigures(300_000, 0)
		if got := e.refundedAtBank(p); got != 200_000 {
			t.Fatalf("the bank refunded %d", got)
		}
		if o := e.offer(p); !o.OK || o.MaxRials != 300_000 || o.LeftRials != 300_000 {
			t.Fatalf("offer after the first: %+v", o)
		}
		second := e.mustStart(p, 300_000, cardrefund.StatusRefunded)
		if second.RefundedBeforeRials != 200_000 {
			t.Fatalf("second %+v", second)
		}
		e.wantFigures(0, 0)
		if got := e.refundedAtBank(p); got != 500_000 {
			t.Fatalf("the bank refunded %d", got)
		}
		if o := e.offer(p); o.OK || o.Why != cardrefund.WhyAllRefunded {
			t.Fatalf("offer after all: %+v", o)
		}
		// The events, the webhooks (one per refund, naming it), the
		// ledger: wallet → in flight → the gateway's clearing side.
		_, evs, err := e.svc.Get(context.Background(), first.PublicID)
		if err != nil || len(evs) != 2 || evs[0].ToStatus != cardrefund.StatusSubmitted || evs[1].ToStatus != cardrefund.StatusRefunded {
			t.Fatalf("events %+v %v", evs, err)
		}
		bodies := deliveries(t, db, webhook.TypeRefunded)
		if len(bodies) != 2 || !strings.Contains(bodies[0], first.PublicID) || !strings.Contains(bodies[1], `"topup_refunded_rials":500000`) {
			t.Fatalf("webhooks %v", bodies)
		}
		if in := ledgerBalance(t, db, ledger.CodeCardRefundsInFlight); in != 0 {
			t.Fatalf("card refunds in flight hold %d", in)
		}
		e.check()
	})
}

// TestMoneySpentCannotGoBack: the offer is the smaller of what is left of
// the top-up and what the wallet holds; a hold the wallet cannot cover is
// refused by the ledger's guard, whatever the offer read.
func TestMoneySpentCannotGoBack(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("zarinpal", 500_000)
		spend(t, e, 450_000)
		if o := e.offer(p); !o.OK || o.MaxRials != 50_000 || o.SpentRials != 450_000 {
			t.Fatalf("offer %+v", o)
		}
		if _, err := e.start(p, 50_001); !errors.Is(err, cardrefund.ErrAmountTooLarge) {
			t.Fatalf("more than the wallet holds: %v", err)
		}
		spend(t, e, 40_000)
		if o := e.offer(p); o.OK || o.Why != cardrefund.WhySpent {
			t.Fatalf("offer below the minimum: %+v", o)
		}
		e.check()
	})
}

// spend takes rials out of the wallet (a purchase elsewhere).
func spend(t *testing.T, e *env, rials int64) {
	t.Helper()
	ctx := context.Background()
	to, err := e.led.EnsureAccount(ctx, ledger.AccountSuspense, ledger.CodeSuspense, 0)
	if err != nil {
		t.Fatal(err)
	}
	from, err := e.led.WalletAccount(e.db.Gorm, e.wallet.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.led.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: lifecycle.NewLeaseToken(),
		Postings: ledger.Transfer(from, to, rials), At: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestSEPReversesTheWholeSaleWithinItsWindow: SEP gives back the whole
// top-up by reversing the sale, once, within its window; after it, or
// once the money is spent, the action is not offered, and says why.
func TestSEPReversesTheWholeSaleWithinItsWindow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("sep", 150_000)
		o := e.offer(p)
		if !o.OK || o.Method != cardrefund.MethodReverse || !o.Whole || o.MinRials != 150_000 || o.MaxRials != 150_000 ||
			!o.Until.Equal(p.CreatedAt.Add(45*time.Minute)) {
			t.Fatalf("offer %+v (top-up made %s)", o, p.CreatedAt)
		}
		if _, err := e.start(p, 100_000); !errors.Is(err, cardrefund.ErrAmountTooSmall) {
			t.Fatalf("part of a reverse: %v", err)
		}
		e.mustStart(p, 150_000, cardrefund.StatusRefunded)
		e.wantFigures(0, 0)
		if bp, _ := e.bank.Payment(p.AuthorityString()); bp.State != sandbank.StateReversed {
			t.Fatalf("bank %s", bp.State)
		}
		if o := e.offer(p); o.OK || o.Why != cardrefund.WhyReversed {
			t.Fatalf("offer after the reverse: %+v", o)
		}

		late := e.credit("sep", 80_000)
		e.clock.Advance(45 * time.Minute)
		if o := e.offer(late); o.OK || o.Why != cardrefund.WhyWindowClosed {
			t.Fatalf("offer past the window: %+v", o)
		}
		spent := e.credit("sep", 60_000)
		spend(t, e, 80_001) // the wallet holds 140,000: 59,999 left
		if o := e.offer(spent); o.OK || o.Why != cardrefund.WhySpent {
			t.Fatalf("offer of a reverse with money spent: %+v", o)
		}
		e.check()
	})
}

// TestNoWayBack: Mellat reverses only before settle (a credited top-up is
// settled), Zibal has no way the references confirm; neither is offered,
// each with its reason; a top-up not credited is not either.
func TestNoWayBack(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		if o := e.offer(e.credit("mellat", 100_000)); o.OK || o.Why != cardrefund.WhySettled {
			t.Fatalf("mellat: %+v", o)
		}
		if o := e.offer(e.credit("zibal", 100_000)); o.OK || o.Why != cardrefund.WhyNoWay {
			t.Fatalf("zibal: %+v", o)
		}
		r, err := e.pay.StartTopUp(context.Background(), topup.StartInput{UserID: e.user.ID, WalletID: e.wallet.ID, Email: e.user.Email,
			FormToken: topup.NewFormToken(), AmountRials: 100_000, Gateway: "zarinpal"})
		if err != nil {
			t.Fatal(err)
		}
		if o := e.offer(r.TopUp); o.OK || o.Why != cardrefund.WhyNotCredited {
			t.Fatalf("not credited: %+v", o)
		}
		if _, err := e.start(r.TopUp, 100_000); !errors.Is(err, cardrefund.ErrNotOffered) {
			t.Fatalf("start of a top-up not credited: %v", err)
		}
		e.check()
	})
}

// TestRefundedOnceUnderConcurrentStarts: two admins press at once: one
// card refund, one refund at the bank.
func TestRefundedOnceUnderConcurrentStarts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("zarinpal", 300_000)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { _, errs[i] = e.start(p, 300_000) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, cardrefund.ErrInProgress), errors.Is(err, cardrefund.ErrAmountTooLarge),
				errors.Is(err, cardrefund.ErrOverRefunded), errors.Is(err, cardrefund.ErrSpent), errors.Is(err, cardrefund.ErrNotOffered):
			default:
				t.Errorf("start: %v", err)
			}
		}
		if ok != 1 || e.refundedAtBank(p) != 300_000 {
			t.Fatalf("%d starts went through, the bank refunded %d: %v", ok, e.refundedAtBank(p), errs)
		}
		e.wantFigures(0, 0)
		e.check()
	})
}

// TestLostAnswerIsAskedAbout: the bank refunded but its answer never came
// (commit, then hang): the card refund stays submitted, its money held,
// until the worker asks the bank's record, which says made: refunded,
// once.
func TestLostAnswerIsAskedAbout(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("zarinpal", 300_000)
		fault(t, e, "refund", sandbank.OpFaults{CommitThenHang: true, HangMS: 20})
		c := e.mustStart(p, 120_000, cardrefund.StatusSubmitted)
		e.wantFigures(300_000, 120_000)
		if e.refundedAtBank(p) != 120_000 {
			t.Fatalf("the bank refunded %d", e.refundedAtBank(p))
		}
		// Not due yet: nothing asked.
		e.round()
		if got := e.get(c); got.Status != cardrefund.StatusSubmitted || got.Checks != 0 {
			t.Fatalf("before due: %+v", got)
		}
		e.clock.Advance(time.Minute)
		e.round()
		got := e.get(c)
		if got.Status != cardrefund.StatusRefunded || got.StatusReason != cardrefund.ReasonBankConfirmed || got.Attempts != 1 {
			t.Fatalf("after the worker: %+v", got)
		}
		e.wantFigures(180_000, 0)
		if e.refundedAtBank(p) != 120_000 {
			t.Fatalf("the bank refunded %d", e.refundedAtBank(p))
		}
		e.check()
	})
}

// TestNeverReachedTheBank: the call was dropped before the bank did
// anything: the bank's record holds no refund, which is believed only
// long after the call; then the card refund fails and its money is
// released. The call is never sent again.
func TestNeverReachedTheBank(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("zarinpal", 300_000)
		fault(t, e, "refund", sandbank.OpFaults{DropRate: 1})
		c := e.mustStart(p, 100_000, cardrefund.StatusSubmitted)
		for range 3 {
			e.clock.Advance(2 * time.Minute)
			e.round()
		}
		if got := e.get(c); got.Status != cardrefund.StatusSubmitted || got.Checks == 0 {
			t.Fatalf("within NotDoneAfter: %+v", got)
		}
		e.wantFigures(300_000, 100_000)
		// An hour short of NotDoneAfter (a day): still believed possible.
		e.clock.Advance(e.svc.Config().NotDoneAfter - time.Hour)
		e.round()
		if got := e.get(c); got.Status != cardrefund.StatusSubmitted {
			t.Fatalf("an hour before NotDoneAfter: %+v", got)
		}
		e.wantFigures(300_000, 100_000)
		e.clock.Advance(time.Hour)
		e.round()
		got := e.get(c)
		if got.Status != cardrefund.StatusFailed || got.StatusReason != cardrefund.ReasonNotAtBank {
			t.Fatalf("after NotDoneAfter: %+v", got)
		}
		e.wantFigures(300_000, 0)
		if n := e.bank.Stats()["refund"].Calls; n != 1 || e.refundedAtBank(p) != 0 {
			t.Fatalf("AddRefund called %d times, refunded %d", n, e.refundedAtBank(p))
		}
		// The admin may start another.
		e.bank.SetFaults(sandbank.Faults{})
		e.mustStart(p, 100_000, cardrefund.StatusRefunded)
		e.check()
	})
}

// TestBankRefusesWhatItNoLongerHas: refunded in the bank's own panel
// meanwhile, the top-up has less left at the bank than we know: the bank
// refuses ours, definitely, and its money is released.
func TestBankRefusesWhatItNoLongerHas(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("zarinpal", 300_000)
		outOfBand(t, e, p, 100_000)
		c := e.mustStart(p, 300_000, cardrefund.StatusFailed)
		if c.StatusReason != cardrefund.ReasonBankRefused || c.BankCode == nil {
			t.Fatalf("%+v", c)
		}
		e.wantFigures(300_000, 0)
		e.check()
	})
}

// outOfBand refunds rials of p at the bank, not through us (an operator in
// the bank's panel).
func outOfBand(t *testing.T, e *env, p topup.TopUp, rials int64) {
	t.Helper()
	g, _ := e.gws.Get(p.Gateway)
	if _, err := g.Ops().Refund(context.Background(), gateway.RefundInput{RefID: *p.RefID, AmountRials: rials}); err != nil {
		t.Fatal(err)
	}
}

// TestFiguresThatDifferGoToReview: the answer was lost, and the bank's
// refunded total is neither ours before nor after (a refund in its panel
// meanwhile): an admin decides, the money still held; closing it as not
// made, once that is believed (NotDoneAfter after the call: before, a
// refund the bank accepted may not be in its figures yet,
// TestCloseAsNotMadeWaitsForNotDoneAfter), releases it, audited.
func TestFiguresThatDifferGoToReview(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p, c := figuresDiffer(t, e)
		e.wantFigures(300_000, 100_000)
		if o := e.offer(p); o.OK || o.Why != cardrefund.WhyInProgress {
			t.Fatalf("offer while under review: %+v", o)
		}
		ctx := context.Background()
		if _, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, false, " "); !errors.Is(err, cardrefund.ErrNoteRequired) {
			t.Fatalf("close without a note: %v", err)
		}
		// The payer, were they an admin, does not close their own.
		if _, err := e.svc.Close(ctx, c.PublicID, e.user.ID, false, "it never came"); !errors.Is(err, cardrefund.ErrOwnTopUp) {
			t.Fatalf("a close of one's own card refund: %v, want ErrOwnTopUp", err)
		}
		if cur, _, _ := e.svc.Get(ctx, c.PublicID); cur.Status != cardrefund.StatusNeedsReview || cur.LeaseOwner != "" {
			t.Fatalf("after the refused close: %+v", cur)
		}
		// It waits for an admin (the metrics' kifpool_awaiting_admin) since
		// its move to review, a minute after it was made.
		_, evs, err := e.svc.Get(ctx, c.PublicID)
		if err != nil || len(evs) == 0 || evs[len(evs)-1].ToStatus != cardrefund.StatusNeedsReview {
			t.Fatalf("events %+v %v", evs, err)
		}
		reviewed := evs[len(evs)-1].CreatedAt
		if n, since, err := e.svc.AwaitingAdmin(ctx); err != nil || n != 1 || !since.Equal(reviewed) || !since.After(c.CreatedAt) {
			t.Fatalf("awaiting an admin: %d since %v (%v), want 1 since %v (made %v)", n, since, err, reviewed, c.CreatedAt)
		}
		// Asking again changes nothing: the figures still differ.
		if r, err := e.svc.Recheck(ctx, c.PublicID, e.admin.ID); err != nil || r.Status != cardrefund.StatusNeedsReview {
			t.Fatalf("recheck: %+v %v", r, err)
		}
		// Every event of an admin's act says which admin: the start, the
		// recheck and what the bank's answer to it moved.
		_, evs, err = e.svc.Get(ctx, c.PublicID)
		if err != nil {
			t.Fatal(err)
		}
		admins := 0
		for _, ev := range evs {
			switch {
			case ev.Actor == cardrefund.ActorAdmin && (ev.AdminID == nil || *ev.AdminID != e.admin.ID):
				t.Errorf("an admin's event %s → %s (%s) names no admin", ev.FromStatus, ev.ToStatus, ev.Reason)
			case ev.Actor == cardrefund.ActorAdmin:
				admins++
			case ev.AdminID != nil:
				t.Errorf("the %s's event %s → %s names admin %d", ev.Actor, ev.FromStatus, ev.ToStatus, *ev.AdminID)
			}
		}
		if last := evs[len(evs)-1]; admins < 3 || last.Actor != cardrefund.ActorAdmin || last.ToStatus != cardrefund.StatusNeedsReview {
			t.Errorf("%d admin events, the last %+v", admins, last)
		}
		// A day after the call, asked first, the bank's figures are still
		// short of ours (50,000 refunded, ours 100,000): ours was not made.
		e.clock.Advance(e.svc.Config().NotDoneAfter)
		closed, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, false, "the panel shows only the 50,000 refund")
		if err != nil || closed.Status != cardrefund.StatusFailed || closed.StatusReason != cardrefund.ReasonAdminClosed {
			t.Fatalf("close: %+v %v", closed, err)
		}
		e.wantFigures(300_000, 0)
		if _, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, true, "again"); !errors.Is(err, cardrefund.ErrNotUnderReview) {
			t.Fatalf("second close: %v", err)
		}
		e.check()
	})
}

// figuresDiffer makes a card refund of 100,000 of a 300,000 Zarinpal
// top-up whose answer was lost, while 50,000 was refunded in the bank's
// panel: the worker finds the figures differ and leaves it to an admin.
func figuresDiffer(t *testing.T, e *env) (topup.TopUp, cardrefund.CardRefund) {
	t.Helper()
	p := e.credit("zarinpal", 300_000)
	fault(t, e, "refund", sandbank.OpFaults{DropRate: 1})
	c := e.mustStart(p, 100_000, cardrefund.StatusSubmitted)
	e.bank.SetFaults(sandbank.Faults{})
	outOfBand(t, e, p, 50_000)
	e.clock.Advance(time.Minute)
	e.round()
	got := e.get(c)
	if got.Status != cardrefund.StatusNeedsReview || got.StatusReason != cardrefund.ReasonBankDiffers {
		t.Fatalf("%+v", got)
	}
	return p, c
}

// TestConfirmedLongAfterIsRecorded: a card refund under review that an
// admin confirms as made half a year on (the bank's panel shows it) is
// recorded as refunded, its hold captured: the hold was made to outlive
// any review, and the ledger's sweep, which skips card refunds' holds,
// has not ended it. (A hold made for 180 days refused that capture, and
// closing it as not made was the only move left: the money back in the
// wallet as well as on the card.)
func TestConfirmedLongAfterIsRecorded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		_, c := figuresDiffer(t, e)
		ctx := context.Background()
		e.clock.Advance(200 * 24 * time.Hour)
		if _, err := e.led.ExpireDue(ctx, e.clock.Now(), 100, cardrefund.HoldReason); err != nil {
			t.Fatal(err)
		}
		e.round()
		e.wantFigures(300_000, 100_000)
		closed, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, true, "the bank's panel shows our 100,000 refund")
		if err != nil || closed.Status != cardrefund.StatusRefunded || closed.StatusReason != cardrefund.ReasonAdminConfirmed {
			t.Fatalf("confirm 200 days on: %+v %v", closed, err)
		}
		e.wantFigures(200_000, 0)
		if n := ledgerBalance(t, db, ledger.CodeCardRefundsInFlight); n != 0 {
			t.Fatalf("%d rials left in flight to cards", n)
		}
		e.check()
	})
}

// TestCrashAfterTheHold: the request died with the card refund held and
// nothing sent: the worker sends it (once) and records the answer.
func TestCrashAfterTheHold(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("sep", 150_000)
		c := held(t, e, p, 150_000)
		e.wantFigures(150_000, 150_000)
		e.round() // not due: the request might still send it
		if got := e.get(c); got.Status != cardrefund.StatusHeld {
			t.Fatalf("%+v", got)
		}
		e.clock.Advance(3 * time.Minute)
		e.round()
		if got := e.get(c); got.Status != cardrefund.StatusRefunded || got.Attempts != 1 {
			t.Fatalf("after the worker: %+v", got)
		}
		e.wantFigures(0, 0)
		if bp, _ := e.bank.Payment(p.AuthorityString()); bp.State != sandbank.StateReversed {
			t.Fatalf("bank %s", bp.State)
		}
		e.check()
	})
}

// held writes a card refund as Start does up to its hold, and no further
// (the request's process died there).
func held(t *testing.T, e *env, p topup.TopUp, amount int64) cardrefund.CardRefund {
	t.Helper()
	tp, err := e.st.TopUp(context.Background(), p.PublicID)
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	method := cardrefund.MethodRefund
	if p.Gateway == "sep" {
		method = cardrefund.MethodReverse
	}
	c, err := e.st.Create(context.Background(), cardrefund.Draft{PublicID: cardrefund.NewPublicID(), TopUp: tp, Method: method,
		AmountRials: amount, AdminID: e.admin.ID, Note: "n", HoldUntil: now.Add(24 * time.Hour), NextCheckAt: now.Add(2 * time.Minute),
		Now: now, Audit: auditOf(e)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCrashAfterTheBankAccepted: the bank refunded, and the process died
// before recording it: the card refund is submitted under a lease that
// runs out; the worker asks the bank's record, which says made.
func TestCrashAfterTheBankAccepted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("zarinpal", 300_000)
		// The dying request: its card refund held, leased, moved to
		// submitted, and the bank called; then nothing.
		c := held(t, e, p, 200_000)
		lease := lifecycle.NewLeaseToken()
		now := e.clock.Now()
		if _, ok, err := e.st.TakeLease(context.Background(), c.ID, []cardrefund.Status{cardrefund.StatusHeld}, lease, now.Add(2*time.Minute), now); err != nil || !ok {
			t.Fatalf("lease: %v %v", ok, err)
		}
		died, err := e.st.Move(context.Background(), cardrefund.Move{CardRefund: c, From: cardrefund.StatusHeld, To: cardrefund.StatusSubmitted,
			Actor: cardrefund.ActorAdmin, Reason: cardrefund.ReasonSent, Lease: lease, KeepLease: true, Sent: true, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		g, _ := e.gws.Get("zarinpal")
		if _, err := g.Ops().Refund(context.Background(), gateway.RefundInput{RefID: *p.RefID, AmountRials: 200_000}); err != nil {
			t.Fatal(err)
		}
		// Within the lease: the worker leaves it.
		e.clock.Advance(time.Minute)
		e.round()
		if got := e.get(died); got.Status != cardrefund.StatusSubmitted {
			t.Fatalf("%+v", got)
		}
		e.clock.Advance(2 * time.Minute)
		e.round()
		if got := e.get(died); got.Status != cardrefund.StatusRefunded || got.StatusReason != cardrefund.ReasonBankConfirmed {
			t.Fatalf("after the lease: %+v", got)
		}
		e.wantFigures(100_000, 0)
		if e.refundedAtBank(p) != 200_000 || e.bank.Stats()["refund"].Calls != 1 {
			t.Fatalf("the bank refunded %d in %d calls", e.refundedAtBank(p), e.bank.Stats()["refund"].Calls)
		}
		e.check()
	})
}

// fault sets one operation's faults at the bank.
func fault(t *testing.T, e *env, op string, f sandbank.OpFaults) {
	t.Helper()
	if err := e.bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{op: f}}); err != nil {
		t.Fatal(err)
	}
}

func auditOf(e *env) audit.Entry {
	return audit.Entry{AdminID: e.admin.ID, Action: audit.ActionCardRefund, Result: audit.ResultDone, CreatedAt: e.clock.Now()}
}

// deliveries are the webhook bodies queued of type typ, oldest first.
func deliveries(t *testing.T, db *store.DB, typ string) []string {
	t.Helper()
	var out []string
	if err := db.Gorm.Raw(`SELECT body FROM webhook_deliveries WHERE type = ? ORDER BY id`, typ).Scan(&out).Error; err != nil {
		t.Fatal(err)
	}
	return out
}

// ledgerBalance is the posted balance of the account of code.
func ledgerBalance(t *testing.T, db *store.DB, code string) int64 {
	t.Helper()
	var out []int64
	if err := db.Gorm.Raw(`SELECT posted_rials FROM ledger_accounts WHERE code = ?`, code).Scan(&out).Error; err != nil || len(out) != 1 {
		t.Fatalf("account %s: %v %v", code, out, err)
	}
	return out[0]
}

// lateRefund is a gateway whose card refund runs before first, while the
// admin's call is with the bank.
type lateRefund struct {
	gateway.Gateway
	before func()
}

func (g lateRefund) Ops() gateway.Ops {
	ops := g.Gateway.Ops()
	if refund := ops.Refund; refund != nil {
		ops.Refund = func(ctx context.Context, in gateway.RefundInput) (gateway.RefundResult, error) {
			if g.before != nil {
				g.before()
			}
			return refund(ctx, in)
		}
	}
	return ops
}

// TestBankAcceptedAfterTheRowMovedOn: the admin's call stalls past its
// lease and past NotDoneAfter; the worker, asking the bank's record,
// finds no refund and fails the card refund (the wallet's money
// released). Then the stalled call reaches the bank, which accepts it:
// the money is out twice. The row stays failed; its reason, a note among
// its events and an ERROR line say so, for a person to act on.
func TestBankAcceptedAfterTheRowMovedOn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var e *env
		var stalled sync.Once
		e = newEnvWrapped(t, db, func(g gateway.Gateway) gateway.Gateway {
			return lateRefund{Gateway: g, before: func() {
				stalled.Do(func() {
					e.clock.Advance(e.svc.Config().NotDoneAfter + time.Hour)
					e.round()
				})
			}}
		})
		p := e.credit("zarinpal", 300_000)
		c, err := e.start(p, 120_000)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != cardrefund.StatusFailed || c.StatusReason != cardrefund.ReasonNotAtBank {
			t.Fatalf("the admin's answer: %+v, want what the worker recorded", c)
		}
		// The row stays failed, and says why a person must look: its
		// reason, and a note among its events.
		// With the bank's reference of the refund it made, for the bank's
		// panel.
		if got := e.get(c); got.Status != cardrefund.StatusFailed || got.StatusReason != cardrefund.ReasonBankAcceptedLate || got.BankReference == "" {
			t.Fatalf("row %+v", got)
		}
		evs, err := e.st.EventsOf(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if last := evs[len(evs)-1]; last.FromStatus != cardrefund.StatusFailed || last.ToStatus != cardrefund.StatusFailed ||
			last.Reason != cardrefund.ReasonBankAcceptedLate || last.Actor != cardrefund.ActorAdmin {
			t.Errorf("last event %+v, want the note", last)
		}
		if e.refundedAtBank(p) != 120_000 {
			t.Fatalf("the bank refunded %d", e.refundedAtBank(p))
		}
		e.wantFigures(300_000, 0)
		logs := e.logs.String()
		if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "the money may be out twice") ||
			!strings.Contains(logs, "card_refund="+c.PublicID) || !strings.Contains(logs, "status=failed") {
			t.Fatalf("no ERROR line naming the card refund:\n%s", logs)
		}
		e.check()
	})
}

// lapsing is the store with a hook run before an admin's move: the moment
// a stalled database lets the admin's lease lapse and the worker take the
// card refund.
type lapsing struct {
	cardrefund.Store
	before func()
}

func (l lapsing) Move(ctx context.Context, m cardrefund.Move) (cardrefund.CardRefund, error) {
	if m.Actor == cardrefund.ActorAdmin && l.before != nil {
		l.before()
	}
	return l.Store.Move(ctx, m)
}

// An admin's close or recheck whose lease lapsed before its move writes
// nothing and says the card refund is being worked on (it was a 500);
// once the worker's lease is over, the close goes through.
func TestAdminMoveAfterItsLeaseLapsed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		_, c := figuresDiffer(t, e)
		ctx := context.Background()
		// Past NotDoneAfter: the close as not made would go through.
		e.clock.Advance(e.svc.Config().NotDoneAfter)
		lapse := func() {
			later := e.clock.Now().Add(time.Hour)
			if _, ok, err := e.st.TakeLease(ctx, c.ID, []cardrefund.Status{cardrefund.StatusNeedsReview}, "worker-lease",
				later.Add(time.Minute), later); err != nil || !ok {
				t.Fatalf("the worker's lease after the lapse: %v %v", ok, err)
			}
		}
		svc := cardrefund.New(e.deps(lapsing{Store: e.st, before: lapse}))
		if _, err := svc.Close(ctx, c.PublicID, e.admin.ID, false, "the panel shows only the 50,000 refund"); !errors.Is(err, cardrefund.ErrBusy) {
			t.Fatalf("a close whose lease lapsed: %v, want ErrBusy", err)
		}
		e.clock.Advance(2 * time.Hour)
		if _, err := svc.Recheck(ctx, c.PublicID, e.admin.ID); !errors.Is(err, cardrefund.ErrBusy) {
			t.Fatalf("a recheck whose lease lapsed: %v, want ErrBusy", err)
		}
		if got := e.get(c); got.Status != cardrefund.StatusNeedsReview {
			t.Fatalf("after the lapsed moves: %+v", got)
		}
		e.wantFigures(300_000, 100_000)
		e.clock.Advance(2 * time.Hour)
		closed, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, false, "the panel shows only the 50,000 refund")
		if err != nil || closed.Status != cardrefund.StatusFailed {
			t.Fatalf("the close again: %+v %v", closed, err)
		}
		e.wantFigures(300_000, 0)
		e.check()
	})
}
