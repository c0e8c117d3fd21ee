package topup_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// sepOtherAmount is SEP whose verify reports another amount than ours
// (as SEP does when the card paid another amount: VerifyTransaction
// succeeded, the money is the merchant's, sep.go classifies it as
// VerifyAmountMismatch). The sandbox bank verified the sale for real;
// only the amount its answer carries differs.
type sepOtherAmount struct{ gateway.Gateway }

func (g sepOtherAmount) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	r, err := g.Gateway.Verify(ctx, in)
	if err == nil && r.Outcome == gateway.VerifyPaid {
		r.Outcome, r.RefID, r.AmountRials = gateway.VerifyAmountMismatch, 0, 0
	}
	return r, err
}

// mellatSettleRefused is Mellat whose settle the bank refuses (a definite
// code other than 45 and 48): the sale stays verified, never settled.
type mellatSettleRefused struct{ gateway.Gateway }

func (g mellatSettleRefused) Ops() gateway.Ops {
	ops := g.Gateway.Ops()
	ops.Settle = func(context.Context, gateway.VerifyInput) (gateway.SettleResult, error) {
		return gateway.SettleResult{Outcome: gateway.SettleRefused, Code: 46, Message: "not settled"}, nil
	}
	return ops
}

// runWorker runs the worker's rounds until p leaves reversing (or n
// rounds), the clock moved on between them.
func runWorker(t *testing.T, e *env, w *topup.Worker, p topup.TopUp, n int) topup.TopUp {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := w.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r := e.row(p.ID); r.Status != topup.StatusReversing && r.Status.Terminal() {
			return r
		}
		e.clock.Advance(2 * time.Minute)
	}
	return e.row(p.ID)
}

func assertReversed(t *testing.T, e *env, bank *sandbank.Bank, p topup.TopUp, db *store.DB, reverseOp string, calls int64) {
	t.Helper()
	r := e.row(p.ID)
	if r.Status != topup.StatusFailed || topup.Reason(r.StatusReason) != topup.ReasonReversedToCard || r.ReverseSentAt == nil {
		t.Fatalf("after the worker: %s, want failed (reversed_to_card) with its reverse's intent", dump(r))
	}
	if e.balance() != 0 {
		t.Errorf("balance %d: a payment reversed to the card is never credited", e.balance())
	}
	bp, _ := bank.Payment(p.AuthorityString())
	if bp.State != sandbank.StateReversed || bp.ReversedAt.IsZero() {
		t.Errorf("bank: %+v, want the sale reversed", bp)
	}
	if n := bank.Stats()[reverseOp].Calls; n != calls {
		t.Errorf("%d reverse calls, want %d", n, calls)
	}
	edges := strings.Join(e.edges(p.ID), ", ")
	if !strings.Contains(edges, "reversing→failed") {
		t.Errorf("edges %s: want …, reversing→failed", edges)
	}
	// Nothing reopens it into a credit: a callback, reconciliation, the
	// worker.
	if got, err := e.backWith(context.Background(), p.PublicID, p.AuthorityString(), r.ReceiptString(), true); err != nil ||
		got.Status != topup.StatusFailed {
		t.Errorf("a late callback: %s, %v; want it left failed", dump(got), err)
	}
	if _, err := e.svc.AdminRecheck(context.Background(), p.PublicID, 1); !errors.Is(err, topup.ErrNothingToAsk) {
		t.Errorf("an admin's recheck: %v, want ErrNothingToAsk", err)
	}
	e.clock.Advance(5 * time.Minute)
	e.reconcile()
	if r := e.row(p.ID); r.Status != topup.StatusFailed || e.balance() != 0 {
		t.Errorf("after reconciliation: %s, balance %d", dump(r), e.balance())
	}
	if n := bank.Stats()[reverseOp].Calls; n != calls {
		t.Errorf("%d reverse calls after the callback and reconciliation, want %d", n, calls)
	}
	checkInvariants(t, db)
}

// TestSEPAmountMismatchIsReversed: SEP verified the payer's sale for
// another amount (the money is the merchant's once verified): never
// credited, the worker reverses it once within SEP's window, the sandbox
// bank's sale is reversed, and the payment fails as returned to the card.
func TestSEPAmountMismatchIsReversed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnvWrapped(t, db, "sep", func(g gateway.Gateway) gateway.Gateway { return sepOtherAmount{g} })
		p := e.start(150_000)
		cb, err := bank.Finish(p.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.backWith(ctx, p.PublicID, p.AuthorityString(), cb.Form["RefNum"], true)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != topup.StatusReversing || topup.Reason(got.StatusReason) != topup.ReasonAmountMismatch || got.ReverseSentAt != nil {
			t.Fatalf("after the callback: %s, want reversing (amount_mismatch), nothing sent yet", dump(got))
		}
		if got.Status.Public() != topup.StatusPendingVerification {
			t.Errorf("public status %s", got.Status.Public())
		}
		if bp, _ := bank.Payment(p.AuthorityString()); bp.State != sandbank.StateVerified {
			t.Fatalf("bank: %+v, want verified", bp)
		}
		runWorker(t, e, e.svc.NewWorker(topuptest.WorkerConfig()), p, 3)
		assertReversed(t, e, bank, p, db, "sep-reverse", 1)
	})
}

// TestMellatSettleRefusedIsReversed: Mellat verified the sale and refused
// its settle: the sale is the bank's to return before settle; the worker
// reverses it (bpReversalRequest) once.
func TestMellatSettleRefusedIsReversed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnvWrapped(t, db, "mellat", func(g gateway.Gateway) gateway.Gateway { return mellatSettleRefused{g} })
		p := e.start(150_000)
		cb, err := bank.Finish(p.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != topup.StatusReversing || topup.Reason(got.StatusReason) != topup.ReasonSettleRefused {
			t.Fatalf("after the callback: %s, want reversing (settle_refused)", dump(got))
		}
		runWorker(t, e, e.svc.NewWorker(topuptest.WorkerConfig()), p, 3)
		assertReversed(t, e, bank, p, db, "mellat-reversal", 1)
		if bp, _ := bank.Payment(p.AuthorityString()); !bp.SettledAt.IsZero() {
			t.Errorf("bank: %+v, want never settled", bp)
		}
	})
}

// TestLostReverseAnswerIsResolvedByTheBanksRecord: the bank reverses the
// sale and the answer is lost (sandbank's answer_lost on sep-reverse):
// the worker never sends the reverse again; its next turn asks the bank's
// record (SEP's verify of the RefNum: 5, reversed) and fails the payment
// as returned to the card.
func TestLostReverseAnswerIsResolvedByTheBanksRecord(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnvWrapped(t, db, "sep", func(g gateway.Gateway) gateway.Gateway { return sepOtherAmount{g} })
		p := e.start(150_000)
		cb, err := bank.Finish(p.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.backWith(ctx, p.PublicID, p.AuthorityString(), cb.Form["RefNum"], true); err != nil || got.Status != topup.StatusReversing {
			t.Fatalf("after the callback: %s, %v", dump(got), err)
		}
		if err := bank.SetFaults(sandbank.Faults{Seed: 1, Ops: map[string]sandbank.OpFaults{"sep-reverse": {AnswerLostRate: 1, HangMS: 1}}}); err != nil {
			t.Fatal(err)
		}
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.row(p.ID)
		if r.Status != topup.StatusReversing || r.ReverseSentAt == nil {
			t.Fatalf("after the lost answer: %s, want reversing with its intent", dump(r))
		}
		if bp, _ := bank.Payment(p.AuthorityString()); bp.State != sandbank.StateReversed {
			t.Fatalf("bank: %+v, want reversed (the answer only was lost)", bp)
		}
		verifies := bank.Stats()["sep-verify"].Calls
		// The next turns ask the record, never the reverse (the fault
		// stays: a second reverse would be counted).
		e.clock.Advance(2 * time.Minute)
		runWorker(t, e, w, p, 3)
		if bank.Stats()["sep-verify"].Calls <= verifies {
			t.Error("the bank's record (verify of the RefNum) was never asked")
		}
		bank.ClearFaults()
		assertReversed(t, e, bank, p, db, "sep-reverse", 1)
	})
}

// TestReverseWindowClosedStaysEndedAfterAdminClose: SEP verified a sale
// we cannot credit and the worker's turn came only after its reverse
// window closed (the breaker open through it, say): under review
// (reverse_window_closed) with no reverse sent. An admin closes it as
// failed (the payer perhaps refunded by hand): it keeps its reason, so
// that it stays ended by its reverse, and nothing reopens or credits it —
// not the admin's recheck, not a callback, not reconciliation while SEP
// still keeps the token's receipt (whose verify would answer "already
// verified" of the receipt alone, and credit it: paid twice).
func TestReverseWindowClosedStaysEndedAfterAdminClose(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnvWrapped(t, db, "sep", func(g gateway.Gateway) gateway.Gateway { return sepOtherAmount{g} })
		p := e.start(150_000)
		cb, err := bank.Finish(p.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.backWith(ctx, p.PublicID, p.AuthorityString(), cb.Form["RefNum"], true); err != nil || got.Status != topup.StatusReversing {
			t.Fatalf("after the callback: %s, %v; want reversing", dump(got), err)
		}
		// SEP reverses within 50 minutes (less ReverseMargin) of the
		// top-up's creation; the worker comes after.
		e.clock.Advance(46 * time.Minute)
		runWorker(t, e, e.svc.NewWorker(topuptest.WorkerConfig()), p, 1)
		r := e.row(p.ID)
		if r.Status != topup.StatusNeedsReview || topup.Reason(r.StatusReason) != topup.ReasonReverseClosed || r.ReverseSentAt != nil {
			t.Fatalf("after the worker: %s, want needs_review (reverse_window_closed), no reverse sent", dump(r))
		}
		if n := bank.Stats()["sep-reverse"].Calls; n != 0 {
			t.Fatalf("%d reverse calls past the window, want 0", n)
		}
		got, err := e.svc.AdminCloseFailed(ctx, p.PublicID, e.user.ID, "refunded to the payer's card by hand")
		if err != nil || got.Status != topup.StatusFailed || topup.Reason(got.StatusReason) != topup.ReasonReverseClosed || !topup.ReverseEnded(got) {
			t.Fatalf("admin close: %s, %v; want failed, still reverse_window_closed", dump(got), err)
		}
		if n := e.count(`SELECT COUNT(*) FROM admin_actions WHERE topup_id = ? AND action = ?`, p.ID, string(audit.ActionCloseFailed)); n != 1 {
			t.Errorf("%d audit entries of the close, want 1", n)
		}
		verifies := bank.Stats()["sep-verify"].Calls
		if _, err := e.svc.AdminRecheck(ctx, p.PublicID, e.user.ID); !errors.Is(err, topup.ErrNothingToAsk) {
			t.Errorf("an admin's recheck after the close: %v, want ErrNothingToAsk", err)
		}
		if got, err := e.backWith(ctx, p.PublicID, p.AuthorityString(), cb.Form["RefNum"], true); err != nil || got.Status != topup.StatusFailed {
			t.Errorf("a late callback: %s, %v; want it left failed", dump(got), err)
		}
		// Within SEP's receipt hour: reconciliation asks the token's
		// receipt, which the bank holds verified.
		e.clock.Advance(5 * time.Minute)
		e.reconcile()
		r = e.row(p.ID)
		if r.Status != topup.StatusFailed || topup.Reason(r.StatusReason) != topup.ReasonReverseClosed || e.balance() != 0 {
			t.Errorf("after reconciliation: %s, balance %d; want failed (reverse_window_closed), never credited", dump(r), e.balance())
		}
		if n := bank.Stats()["sep-verify"].Calls; n != verifies {
			t.Errorf("%d verifies after the close, want none", n-verifies)
		}
		if edges := strings.Join(e.edges(p.ID), ", "); strings.Contains(edges, "failed→pending_verification") {
			t.Errorf("edges %s: reopened after the close", edges)
		}
		checkInvariants(t, db)
	})
}

// mellatSettleRaced is Mellat whose first settle raced its twin: the bank
// settled the sale, and the answer we heard was a refusal (46). Every
// later settle is the bank's own (45: settled before).
type mellatSettleRaced struct {
	gateway.Gateway
	first *atomic.Bool
}

func (g mellatSettleRaced) Ops() gateway.Ops {
	ops := g.Gateway.Ops()
	settle := ops.Settle
	ops.Settle = func(ctx context.Context, in gateway.VerifyInput) (gateway.SettleResult, error) {
		r, err := settle(ctx, in)
		if err == nil && r.Done() && g.first.CompareAndSwap(true, false) {
			return gateway.SettleResult{Outcome: gateway.SettleRefused, Code: 46, Message: "not settled"}, nil
		}
		return r, err
	}
	return ops
}

// mellatReverseRefused is mellatSettleRaced whose reverse the bank
// refuses with another code than 45 (one that says nothing of a settle).
type mellatReverseRefused struct{ mellatSettleRaced }

func (g mellatReverseRefused) Ops() gateway.Ops {
	ops := g.mellatSettleRaced.Ops()
	ops.Reverse = func(context.Context, gateway.VerifyInput) error {
		return &gateway.RejectedError{Op: "reversal", Code: 54, Message: "refused"}
	}
	return ops
}

// TestMellatReverseRefusedAsSettledIsCredited: two settles raced at
// Mellat; the one we heard was refused, so the verified payment became
// reversing (settle_refused). The worker's one reverse is refused with
// 45 (the sandbox bank holds the sale settled): the merchant has the
// money, so the payment goes back to settling, its reverse's intent
// dropped; the next settle answers 45 and credits the verified amount,
// exactly once. A reverse refused with any other code still goes to
// review, never credited.
func TestMellatReverseRefusedAsSettledIsCredited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		first := &atomic.Bool{}
		first.Store(true)
		e, bank := newBankEnvWrapped(t, db, "mellat", func(g gateway.Gateway) gateway.Gateway { return mellatSettleRaced{g, first} })
		p := e.start(150_000)
		cb, err := bank.Finish(p.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != topup.StatusReversing || topup.Reason(got.StatusReason) != topup.ReasonSettleRefused || !topup.Verified(got) {
			t.Fatalf("after the callback: %s, want reversing (settle_refused) with the verified facts", dump(got))
		}
		if bp, _ := bank.Payment(p.AuthorityString()); bp.SettledAt.IsZero() {
			t.Fatalf("bank: %+v, want the sale settled (the racing twin)", bp)
		}
		ref := *got.RefID

		// The worker's turn: the reverse, refused as settled (45).
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.row(p.ID)
		if r.Status != topup.StatusSettling || topup.Reason(r.StatusReason) != topup.ReasonSettled || r.ReverseSentAt != nil ||
			r.LeaseUntil != nil || r.NextCheckAt == nil || !topup.Verified(r) || e.balance() != 0 {
			t.Fatalf("after the refused reverse: %s, balance %d; want settling (settled), the intent dropped, nothing credited yet", dump(r), e.balance())
		}
		if n := bank.Stats()["mellat-reversal"].Calls; n != 1 {
			t.Fatalf("%d reverse calls, want 1", n)
		}

		// The next turn settles: 45, settled before: credited, once.
		for i := 0; i < 5 && e.row(p.ID).Status != topup.StatusCredited; i++ {
			e.clock.Advance(time.Minute)
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r = e.row(p.ID)
		if r.Status != topup.StatusCredited || topup.Reason(r.StatusReason) != topup.ReasonSettled || *r.RefID != ref ||
			*r.VerifiedAmountRials != 150_000 || r.ReverseSentAt != nil {
			t.Fatalf("after the settle: %s, want credited (settled)", dump(r))
		}
		if es := e.ledgerOf(p.ID); len(es) != 1 || es[0].AmountRials != 150_000 || e.balance() != 150_000 {
			t.Fatalf("ledger %+v, balance %d; want one credit of the verified 150000", es, e.balance())
		}
		want := "created→awaiting_payment awaiting_payment→settling settling→reversing reversing→settling settling→credited"
		if got := join(e.edges(p.ID)); got != want {
			t.Errorf("events %s, want %s", got, want)
		}
		evs, err := topuptest.Events(ctx, db, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[3:] {
			if ev.Actor != topup.ActorWorker || ev.Reason != topup.ReasonSettled || ev.GatewayCode == nil || *ev.GatewayCode != 45 {
				t.Errorf("event %s→%s: %s (%s, code %v), want the worker's, settled, 45", ev.FromStatus, ev.ToStatus, ev.Actor, ev.Reason, deref(ev.GatewayCode))
			}
		}
		if n := bank.Stats()["mellat-reversal"].Calls; n != 1 {
			t.Errorf("%d reverse calls, want 1", n)
		}

		// Nothing more: further rounds, a late callback, reconciliation.
		e.clock.Advance(time.Minute)
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true); err != nil || got.Status != topup.StatusCredited {
			t.Errorf("a late callback: %s, %v", dump(got), err)
		}
		e.clock.Advance(5 * time.Minute)
		e.reconcile()
		if e.balance() != 150_000 || len(e.ledgerOf(p.ID)) != 1 {
			t.Errorf("balance %d, %d ledger entries after the repeats; want one credit", e.balance(), len(e.ledgerOf(p.ID)))
		}
		checkInvariants(t, db)
	})
}

// mellatSettleContradicted is Mellat that settles every sale and answers
// each settle with a refusal (46), while its reverse answers 45, the sale
// settled: the bank contradicts itself.
type mellatSettleContradicted struct{ gateway.Gateway }

func (g mellatSettleContradicted) Ops() gateway.Ops {
	ops := g.Gateway.Ops()
	settle := ops.Settle
	ops.Settle = func(ctx context.Context, in gateway.VerifyInput) (gateway.SettleResult, error) {
		r, err := settle(ctx, in)
		if err == nil && r.Done() {
			return gateway.SettleResult{Outcome: gateway.SettleRefused, Code: 46, Message: "not settled"}, nil
		}
		return r, err
	}
	return ops
}

// TestMellatSettleRefusedAfterReverseRefusedAsSettled: the settle is
// refused, the reverse is refused as settled (45), back in settling the
// settle is refused again. The payment goes to review as
// settle_contradicted and stays there: no late callback, reconciliation,
// admin recheck or worker round reopens it, reverses it a second time or
// credits it; an admin's close keeps the reason.
func TestMellatSettleRefusedAfterReverseRefusedAsSettled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnvWrapped(t, db, "mellat", func(g gateway.Gateway) gateway.Gateway { return mellatSettleContradicted{g} })
		p := e.start(90_000)
		cb, err := bank.Finish(p.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true); err != nil || got.Status != topup.StatusReversing {
			t.Fatalf("after the callback: %s, %v; want reversing", dump(got), err)
		}
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		for i := 0; i < 5 && e.row(p.ID).Status != topup.StatusNeedsReview; i++ {
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Minute)
		}
		r := e.row(p.ID)
		if r.Status != topup.StatusNeedsReview || topup.Reason(r.StatusReason) != topup.ReasonSettleContradicted || !topup.ReverseEnded(r) {
			t.Fatalf("after the second settle: %s, want needs_review (settle_contradicted)", dump(r))
		}
		want := "created→awaiting_payment awaiting_payment→settling settling→reversing reversing→settling settling→needs_review"
		if got := join(e.edges(p.ID)); got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		reverses, settles := bank.Stats()["mellat-reversal"].Calls, bank.Stats()["mellat-settle"].Calls

		// Nothing reopens it.
		if got, err := e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true); err != nil || got.Status != topup.StatusNeedsReview {
			t.Errorf("a late callback: %s, %v", dump(got), err)
		}
		e.clock.Advance(5 * time.Minute)
		e.reconcile()
		if _, err := e.svc.AdminRecheck(ctx, p.PublicID, e.user.ID); !errors.Is(err, topup.ErrNothingToAsk) {
			t.Errorf("admin recheck: %v, want ErrNothingToAsk", err)
		}
		for i := 0; i < 3; i++ {
			e.clock.Advance(time.Hour)
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r = e.row(p.ID)
		if r.Status != topup.StatusNeedsReview || topup.Reason(r.StatusReason) != topup.ReasonSettleContradicted || e.balance() != 0 {
			t.Fatalf("after the repeats: %s, balance %d; want still under review, nothing credited", dump(r), e.balance())
		}
		if n, m := bank.Stats()["mellat-reversal"].Calls, bank.Stats()["mellat-settle"].Calls; n != reverses || m != settles || n != 1 {
			t.Errorf("%d reverses and %d settles after the review (of %d, %d); want none more, one reverse in all", n-reverses, m-settles, n, m)
		}
		if got := join(e.edges(p.ID)); got != want {
			t.Errorf("events %s after the repeats, want %s", got, want)
		}

		// An admin's close keeps the reason: still never reopened.
		got, err := e.svc.AdminCloseFailed(ctx, p.PublicID, e.user.ID, "the bank says neither")
		if err != nil || got.Status != topup.StatusFailed || topup.Reason(got.StatusReason) != topup.ReasonSettleContradicted || !topup.ReverseEnded(got) {
			t.Fatalf("admin close: %s, %v; want failed (settle_contradicted)", dump(got), err)
		}
		if got, err := e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true); err != nil || got.Status != topup.StatusFailed {
			t.Errorf("a callback after the close: %s, %v", dump(got), err)
		}
		checkInvariants(t, db)
	})
}

// TestMellatReverseRefusedOtherwiseGoesToReview: as above, but the bank
// refuses the reverse with another code: review (reverse_refused), never
// settled again nor credited.
func TestMellatReverseRefusedOtherwiseGoesToReview(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		first := &atomic.Bool{}
		first.Store(true)
		e, bank := newBankEnvWrapped(t, db, "mellat", func(g gateway.Gateway) gateway.Gateway {
			return mellatReverseRefused{mellatSettleRaced{g, first}}
		})
		p := e.start(150_000)
		cb, err := bank.Finish(p.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true); err != nil ||
			got.Status != topup.StatusReversing || topup.Reason(got.StatusReason) != topup.ReasonSettleRefused {
			t.Fatalf("after the callback: %s, %v; want reversing (settle_refused)", dump(got), err)
		}
		settles := bank.Stats()["mellat-settle"].Calls
		r := runWorker(t, e, e.svc.NewWorker(topuptest.WorkerConfig()), p, 3)
		if r.Status != topup.StatusNeedsReview || topup.Reason(r.StatusReason) != topup.ReasonReverseRefused || r.ReverseSentAt == nil {
			t.Fatalf("after the worker: %s, want needs_review (reverse_refused) with its reverse's intent", dump(r))
		}
		if evs, err := topuptest.Events(ctx, db, p.ID); err != nil || len(evs) == 0 || deref(evs[len(evs)-1].GatewayCode) != 54 {
			t.Errorf("events %+v, %v; want the last with the reverse's code 54", evs, err)
		}
		if e.balance() != 0 || len(e.ledgerOf(p.ID)) != 0 {
			t.Errorf("balance %d: a refused reverse is never credited", e.balance())
		}
		if n := bank.Stats()["mellat-settle"].Calls; n != settles {
			t.Errorf("%d settles after the refused reverse, want none", n-settles)
		}
		want := "created→awaiting_payment awaiting_payment→settling settling→reversing reversing→needs_review"
		if got := join(e.edges(p.ID)); got != want {
			t.Errorf("events %s, want %s", got, want)
		}
		checkInvariants(t, db)
	})
}
