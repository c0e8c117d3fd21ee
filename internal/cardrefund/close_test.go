package cardrefund_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
)

// madeInReview makes a card refund of 120,000 of a 300,000 Zarinpal
// top-up that the bank made but whose answer was lost, and whose status
// could not be read until the budget was spent: under review, its money
// held, the bank holding it refunded.
func madeInReview(t *testing.T, e *env) (topup.TopUp, cardrefund.CardRefund) {
	t.Helper()
	p := e.credit("zarinpal", 300_000)
	fault(t, e, "refund", sandbank.OpFaults{AnswerLostRate: 1, HangMS: 20})
	c := e.mustStart(p, 120_000, cardrefund.StatusSubmitted)
	if e.refundedAtBank(p) != 120_000 {
		t.Fatalf("the bank refunded %d", e.refundedAtBank(p))
	}
	fault(t, e, "sessions", sandbank.OpFaults{ErrorRate: 1})
	e.clock.Advance(e.svc.Config().CheckBudget + time.Hour)
	e.round()
	if got := e.get(c); got.Status != cardrefund.StatusNeedsReview || got.StatusReason != cardrefund.ReasonBudgetSpent {
		t.Fatalf("after the budget: %+v", got)
	}
	e.wantFigures(300_000, 120_000)
	return p, c
}

// TestCloseAsNotMadeAsksTheBank: an admin's close as not made of a card
// refund under review asks the bank first. While the bank does not
// answer it is refused (ErrBankNoAnswer); once the bank's record shows
// the refund made it is refused (ErrBankMadeIt): the money stays held,
// and the close as made records it, once. Before, the close released the
// amount to the wallet while the bank had refunded it to the card: the
// money out twice.
func TestCloseAsNotMadeAsksTheBank(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p, c := madeInReview(t, e)
		ctx := context.Background()
		if _, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, false, "the panel shows nothing"); !errors.Is(err, cardrefund.ErrBankNoAnswer) {
			t.Fatalf("the bank silent: %v, want ErrBankNoAnswer", err)
		}
		if got := e.get(c); got.Status != cardrefund.StatusNeedsReview || got.LeaseOwner != "" {
			t.Fatalf("after the refused close: %+v", got)
		}
		e.wantFigures(300_000, 120_000)
		e.bank.SetFaults(sandbank.Faults{})
		if _, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, false, "the panel shows nothing"); !errors.Is(err, cardrefund.ErrBankMadeIt) {
			t.Fatalf("the bank made it: %v, want ErrBankMadeIt", err)
		}
		if got := e.get(c); got.Status != cardrefund.StatusNeedsReview || got.LeaseOwner != "" {
			t.Fatalf("after the refused close: %+v", got)
		}
		e.wantFigures(300_000, 120_000)
		closed, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, true, "the bank's panel shows our refund")
		if err != nil || closed.Status != cardrefund.StatusRefunded {
			t.Fatalf("close as made: %+v %v", closed, err)
		}
		e.wantFigures(180_000, 0)
		if e.refundedAtBank(p) != 120_000 || e.bank.Stats()["refund"].Calls != 1 {
			t.Fatalf("the bank refunded %d in %d calls", e.refundedAtBank(p), e.bank.Stats()["refund"].Calls)
		}
		e.check()
	})
}

// TestCloseAsNotMadeOfFiguresThatMayHoldIt: the bank made ours, and a
// refund in its panel meanwhile makes its figures differ; they are not
// short of ours, so they may hold it: a close as not made is refused,
// however long after the call. (Figures short of ours are the bank's
// word that ours was not made: TestFiguresThatDifferGoToReview.)
func TestCloseAsNotMadeOfFiguresThatMayHoldIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.credit("zarinpal", 300_000)
		fault(t, e, "refund", sandbank.OpFaults{AnswerLostRate: 1, HangMS: 20})
		c := e.mustStart(p, 100_000, cardrefund.StatusSubmitted)
		e.bank.SetFaults(sandbank.Faults{})
		outOfBand(t, e, p, 50_000)
		e.clock.Advance(time.Minute)
		e.round()
		if got := e.get(c); got.Status != cardrefund.StatusNeedsReview || got.StatusReason != cardrefund.ReasonBankDiffers {
			t.Fatalf("%+v", got)
		}
		e.clock.Advance(e.svc.Config().NotDoneAfter + time.Hour)
		ctx := context.Background()
		if _, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, false, "the panel shows only the 50,000 refund"); !errors.Is(err, cardrefund.ErrBankMadeIt) {
			t.Fatalf("figures that may hold ours: %v, want ErrBankMadeIt", err)
		}
		if got := e.get(c); got.Status != cardrefund.StatusNeedsReview || got.LeaseOwner != "" {
			t.Fatalf("after the refused close: %+v", got)
		}
		e.wantFigures(300_000, 100_000)
		if e.refundedAtBank(p) != 150_000 {
			t.Fatalf("the bank refunded %d", e.refundedAtBank(p))
		}
		e.check()
	})
}
