package withdrawal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// A submit that timed out after the provider took it, and then the
// provider is removed from PAYOUTS. The worker cannot ask it, but after
// WITHDRAWAL_UNKNOWN_REVIEW_AFTER the withdrawal goes to a person
// (needs_review), as with a provider that does not answer, its money
// still held; an admin's fail is refused (ErrProviderUnreachable), since
// the provider may still pay it. Once the provider is configured again,
// its word ends it: paid, once. Before, the worker only rescheduled it
// for ever, and an admin's fail released the hold while the provider
// held the payout.
func TestUnknownPayoutOfAProviderNoLongerOffered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		e.faults("jibit", payouts.ProviderFaults{AcceptThenHangRate: 1, HangMS: 10_000})
		w := e.request(1_500_000)
		e.round(time.Second)
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderUnknown || e.bankPayouts("jibit", w.PublicID) != 1 {
			t.Fatalf("after the time-out: %+v", w)
		}
		e.faults("jibit", payouts.ProviderFaults{})
		offered := e.svc
		e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(db, ledger.New(db)), nil, testConfig(), e.clock.Now, nil)
		for range 22 {
			e.round(time.Hour)
		}
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted {
			t.Fatalf("22 hours on: %+v", w)
		}
		e.wantWallet(50_000_000, 1_500_000)
		e.round(3 * time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.StatusReason != string(withdrawal.ReasonUnknownTooLong) ||
			w.ProviderState != withdrawal.ProviderUnknown {
			t.Fatalf("past the review time: %+v", w)
		}
		e.wantWallet(50_000_000, 1_500_000)
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the provider is gone"); !errors.Is(err, withdrawal.ErrProviderUnreachable) {
			t.Fatalf("an admin's fail: %v, want ErrProviderUnreachable", err)
		}
		if r := e.get(w); r.Status != withdrawal.StatusNeedsReview || r.LeaseOwner != "" {
			t.Fatalf("after the refused fail: %+v", r)
		}
		e.wantWallet(50_000_000, 1_500_000)
		if n := withdrawaltest.AuditActions(t, db, "withdrawal_fail"); n != 0 {
			t.Fatalf("%d audit rows of a refused fail", n)
		}
		// Configured again: the provider's word ends it.
		e.svc = offered
		if _, err := e.bank.Payouts().Settle("jibit", w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusPaid || e.bankPayouts("jibit", w.PublicID) != 1 {
			t.Fatalf("the provider back: %+v", w)
		}
		e.wantWallet(48_500_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// A withdrawal under review with its submit's outcome unknown, whose
// provider is no longer offered: an admin's fail is refused, the hold
// kept.
func TestAdminFailOfAnUnknownPayoutOfAProviderNoLongerOffered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		w := e.request(1_500_000)
		e.round(time.Second)
		withdrawaltest.ForceProviderUnknown(t, db, w.PublicID)
		e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(db, ledger.New(db)), nil, testConfig(), e.clock.Now, nil)
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the provider is gone"); !errors.Is(err, withdrawal.ErrProviderUnreachable) {
			t.Fatalf("an admin's fail: %v, want ErrProviderUnreachable", err)
		}
		if r := e.get(w); r.Status != withdrawal.StatusNeedsReview || r.ProviderState != withdrawal.ProviderUnknown {
			t.Fatalf("after the refused fail: %+v", r)
		}
		e.wantWallet(50_000_000, 1_500_000)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// A withdrawal under review that its provider said it transferred for
// another amount, whose provider is no longer offered: no other word will
// come, so an admin's close as paid goes on the word on record (its hold
// captured), and a close as failed stays refused.
func TestAdminPayOfATransferOfAProviderNoLongerOffered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		w := e.request(1_500_000)
		e.round(time.Second)
		withdrawaltest.ForceProviderPaid(t, db, w.PublicID, "PROV-1")
		e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(db, ledger.New(db)), nil, testConfig(), e.clock.Now, nil)
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the provider is gone"); !errors.Is(err, withdrawal.ErrProviderPaid) {
			t.Fatalf("an admin's fail: %v, want ErrProviderPaid", err)
		}
		e.wantWallet(50_000_000, 1_500_000)
		got, err := e.svc.AdminPay(ctx, admin, w.PublicID, "the provider's panel showed it paid")
		if err != nil || got.Status != withdrawal.StatusPaid {
			t.Fatalf("an admin's close as paid: %+v %v", got.Status, err)
		}
		e.wantWallet(50_000_000-1_500_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}
