package withdrawal_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// scripted is a provider whose status may not know a payout it took (its
// records lag) and whose submits may be refused, whatever the provider
// behind it holds.
type scripted struct {
	payout.Provider
	notFound int  // the next so many Status calls answer "not found"
	refuse   bool // every Submit is refused for good
}

func (s *scripted) Status(ctx context.Context, id string) (payout.Status, error) {
	if s.notFound > 0 {
		s.notFound--
		return payout.Status{State: payout.StateNotFound}, nil
	}
	return s.Provider.Status(ctx, id)
}

func (s *scripted) Submit(ctx context.Context, o payout.Order) (payout.Submitted, error) {
	if s.refuse {
		return payout.Submitted{}, payout.Refused(payout.OpSubmit, false, 400, "transfers.0.something_new")
	}
	return s.Provider.Submit(ctx, o)
}

// A submit that timed out after the provider took it, a status that does
// not know it yet, and the same id sent again (Jibit keeps one payout per
// id) refused for good: that refusal is of the second submit, not of the
// payout the provider holds. The withdrawal stays submitted with its
// outcome unknown and its money held; once the provider knows the payout
// it is paid, once. Failing it there would have given the money back
// while the provider paid it.
func TestRefusedResendAfterAnUnknownSubmit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		s := &scripted{Provider: e.offers[0].Provider}
		e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(db, ledger.New(db)),
			[]withdrawal.Offer{{Name: "jibit", Provider: s, Caps: e.offers[0].Caps}}, testConfig(), e.clock.Now, nil)
		e.faults("jibit", payouts.ProviderFaults{AcceptThenHangRate: 1, HangMS: 10_000})
		w := e.request(1_500_000)
		e.round(time.Second)
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderUnknown || e.bankPayouts("jibit", w.PublicID) != 1 {
			t.Fatalf("after the time-out: %+v", w)
		}
		since := *w.UnknownSince
		e.faults("jibit", payouts.ProviderFaults{})
		s.notFound, s.refuse = 1, true
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderUnknown || w.Submits != 2 ||
			w.UnknownSince == nil || !w.UnknownSince.Equal(since) {
			t.Fatalf("after the refused resend: %+v (unknown since %s)", w, since)
		}
		e.wantWallet(50_000_000, 1_500_000)
		s.refuse = false
		e.round(time.Minute)
		if w = e.get(w); w.ProviderState != withdrawal.ProviderInProgress {
			t.Fatalf("the provider knows it: %+v", w)
		}
		if _, err := e.bank.Payouts().Settle("jibit", w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusPaid || e.bankPayouts("jibit", w.PublicID) != 1 {
			t.Fatalf("paid: %+v", w)
		}
		e.wantWallet(48_500_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// A provider whose status cannot be read (every call 503) after a submit
// whose outcome was unknown: asked about with back-off, and after
// WITHDRAWAL_UNKNOWN_REVIEW_AFTER a person looks (needs_review), its money
// still held. Before, it stayed submitted for ever, and no one (neither
// its owner nor an admin) could act on it.
func TestStatusUnreadableGoesToAPerson(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.unknownInMaintenance("jibit", 1_000_000)
		for range 22 {
			e.round(time.Hour)
		}
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted {
			t.Fatalf("22 hours on: %+v", w)
		}
		e.round(3 * time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.StatusReason != string(withdrawal.ReasonUnknownTooLong) {
			t.Fatalf("past the review time: %+v", w)
		}
		e.wantWallet(50_000_000, 1_000_000)
		// In review nothing is sent, even with the provider back.
		e.faults("jibit", payouts.ProviderFaults{})
		e.round(2 * time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || e.bankPayouts("jibit", w.PublicID) != 0 {
			t.Fatalf("in review, the provider back: %+v, %d payouts", w, e.bankPayouts("jibit", w.PublicID))
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}
