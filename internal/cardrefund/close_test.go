package cardrefund_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
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

// TestCloseAsNotMadeWaitsForNotDoneAfter: the bank's word that a card
// refund under review was not made (figures short of ours, or nothing
// at all) is believed for an admin's close no sooner than the worker
// believes it, NotDoneAfter after the call: a refund the bank accepted
// may show as pending, not yet in its figures, for a while. Sooner, the
// close is refused (ErrTooEarlyToCloseNotMade, which is ErrBankNoAnswer
// too, saying when it may be closed) and changes nothing: still under
// review, the lease given back, no event, the wallet's money held, the
// ledger untouched, nothing sent to the bank. From then on it closes.
// (Before, a close an hour after the call released the 100,000 to the
// wallet while the bank's pending refund of it still landed on the card:
// the money out twice.)
func TestCloseAsNotMadeWaitsForNotDoneAfter(t *testing.T) {
	day := cardrefund.DefaultConfig().NotDoneAfter
	const (
		short   = "short"    // the bank's figures short of ours (ReasonBankDiffers)
		notDone = "not_done" // the bank's record holds nothing (ReasonBudgetSpent)
	)
	for _, tt := range []struct {
		name  string
		bank  string
		after time.Duration // since the call, when the admin closes
		early bool
	}{
		{"short figures, two minutes after the call", short, 2 * time.Minute, true},
		{"short figures, an hour after", short, time.Hour, true},
		{"short figures, a minute before NotDoneAfter", short, day - time.Minute, true},
		{"short figures, at NotDoneAfter", short, day, false},
		{"short figures, an hour past NotDoneAfter", short, day + time.Hour, false},
		{"nothing at the bank, three hours after", notDone, 3 * time.Hour, true},
		{"nothing at the bank, a minute before NotDoneAfter", notDone, day - time.Minute, true},
		{"nothing at the bank, an hour past NotDoneAfter", notDone, day + time.Hour, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				e := newEnv(t, db)
				var p topup.TopUp
				var c cardrefund.CardRefund
				atBank := int64(50_000)
				switch tt.bank {
				case short:
					p, c = figuresDiffer(t, e)
				case notDone:
					// A check budget shorter than NotDoneAfter: the worker
					// leaves it to an admin while the bank's "nothing" is
					// not yet believed.
					cfg := cardrefund.DefaultConfig()
					cfg.CheckBudget = 2 * time.Hour
					d := e.deps(e.st)
					d.Config = cfg
					e.svc = cardrefund.New(d)
					p, c = nothingInReview(t, e)
					atBank = 0
				}
				c = e.get(c)
				if c.SubmittedAt == nil {
					t.Fatalf("no call time: %+v", c)
				}
				from := c.SubmittedAt.Add(day)
				e.clock.Advance(c.SubmittedAt.Add(tt.after).Sub(e.clock.Now()))
				ctx := context.Background()
				evs, err := e.st.EventsOf(ctx, c.ID)
				if err != nil {
					t.Fatal(err)
				}
				txs, calls := ledgertest.Transactions(t, db), e.bank.Stats()["refund"].Calls
				got, err := e.svc.Close(ctx, c.PublicID, e.admin.ID, false, "the panel shows no refund of ours")
				if tt.early {
					var early *cardrefund.TooEarlyError
					if !errors.Is(err, cardrefund.ErrTooEarlyToCloseNotMade) || !errors.Is(err, cardrefund.ErrBankNoAnswer) ||
						!errors.As(err, &early) || !early.From.Equal(from) {
						t.Fatalf("a close %v after the call: %+v %v, want ErrTooEarlyToCloseNotMade from %v", tt.after, got, err, from)
					}
					now := e.get(c)
					if now.Status != cardrefund.StatusNeedsReview || now.StatusReason != c.StatusReason || now.LeaseOwner != "" ||
						now.ResolvedAt != nil || got.Status != cardrefund.StatusNeedsReview {
						t.Fatalf("after the refused close: %+v (returned %+v)", now, got)
					}
					if after, err := e.st.EventsOf(ctx, c.ID); err != nil || len(after) != len(evs) {
						t.Fatalf("events %d → %d (%v)", len(evs), len(after), err)
					}
					e.wantFigures(300_000, 100_000)
					if n := ledgertest.Transactions(t, db); n != txs {
						t.Fatalf("ledger transactions %d → %d", txs, n)
					}
					if n := e.bank.Stats()["refund"].Calls; n != calls || e.refundedAtBank(p) != atBank {
						t.Fatalf("the bank: %d refund calls (was %d), %d refunded", n, calls, e.refundedAtBank(p))
					}
					e.check()
					// From then on, the bank's word still the same, it closes.
					e.clock.Advance(from.Sub(e.clock.Now()))
					got, err = e.svc.Close(ctx, c.PublicID, e.admin.ID, false, "the panel shows no refund of ours")
				}
				if err != nil || got.Status != cardrefund.StatusFailed || got.StatusReason != cardrefund.ReasonAdminClosed {
					t.Fatalf("a close as not made %v after the call: %+v %v", tt.after, got, err)
				}
				e.wantFigures(300_000, 0)
				if e.refundedAtBank(p) != atBank {
					t.Fatalf("the bank refunded %d", e.refundedAtBank(p))
				}
				e.check()
			})
		})
	}
}

// nothingInReview makes a card refund of 100,000 of a 300,000 Zarinpal
// top-up whose call never reached the bank (its answer lost as well),
// left to an admin when the service's check budget ran out before
// NotDoneAfter: the bank's record holds nothing of it.
func nothingInReview(t *testing.T, e *env) (topup.TopUp, cardrefund.CardRefund) {
	t.Helper()
	p := e.credit("zarinpal", 300_000)
	fault(t, e, "refund", sandbank.OpFaults{DropRate: 1})
	c := e.mustStart(p, 100_000, cardrefund.StatusSubmitted)
	e.bank.SetFaults(sandbank.Faults{})
	e.clock.Advance(e.svc.Config().CheckBudget + time.Minute)
	e.round()
	if got := e.get(c); got.Status != cardrefund.StatusNeedsReview || got.StatusReason != cardrefund.ReasonBudgetSpent {
		t.Fatalf("%+v", got)
	}
	e.wantFigures(300_000, 100_000)
	return p, c
}
