package withdrawal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// inProgressConfig is testConfig with a payout in progress for four days
// after its first submit sent to a person.
func inProgressConfig() withdrawal.Config {
	c := testConfig()
	c.InProgressReviewAfter = 96 * time.Hour
	return c
}

// withInProgressReview rebuilds e's service over offers with
// inProgressConfig.
func (e *env) withInProgressReview(offers []withdrawal.Offer) {
	e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(e.db, ledger.New(e.db)), offers, inProgressConfig(), e.clock.Now, nil)
}

// sentInProgress is a withdrawal of rials the provider has taken and
// keeps in progress, sent one second on.
func (e *env) sentInProgress(rials int64) withdrawal.Withdrawal {
	e.t.Helper()
	w := e.request(rials)
	e.round(time.Second)
	if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderInProgress || w.SubmittedAt == nil {
		e.t.Fatalf("submitted: %+v", w)
	}
	return w
}

// A payout the provider keeps in progress for days (a Paya transfer
// stuck at the bank) goes to a person WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER
// after its first submit, its money held; the admin cannot close it as
// failed (the provider has it, and a transfer sent is not called back)
// nor as paid, and the worker keeps asking: the provider's "transferred"
// makes it paid, its "failed" failed. Before, it stayed submitted for
// ever, the money held, and no admin saw it.
func TestInProgressTooLongGoesToAPerson(t *testing.T) {
	for _, tc := range []struct {
		name           string
		end            func(e *env, id string) error
		status         withdrawal.Status
		posted, wallet int64
	}{
		{"then transferred", func(e *env, id string) error { _, err := e.bank.Payouts().Settle(payouts.Jibit, id); return err },
			withdrawal.StatusPaid, 48_500_000, 0},
		{"then failed", func(e *env, id string) error { _, err := e.bank.Payouts().Fail(payouts.Jibit, id); return err },
			withdrawal.StatusFailed, 50_000_000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db, "jibit")
				e.withInProgressReview(e.offers)
				admin, _ := withdrawaltest.User(t, db, "admin@example.com")
				w := e.sentInProgress(1_500_000)
				for range 3 {
					e.round(24 * time.Hour)
				}
				e.round(23 * time.Hour)
				if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderInProgress {
					t.Fatalf("95 hours on: %+v", w)
				}
				e.round(time.Hour)
				if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.StatusReason != string(withdrawal.ReasonInProgressTooLong) ||
					w.ProviderState != withdrawal.ProviderInProgress || w.NextCheckAt == nil {
					t.Fatalf("four days on: %+v", w)
				}
				e.wantWallet(50_000_000, 1_500_000)
				if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the panel shows it in progress"); !errors.Is(err, withdrawal.ErrProviderHasIt) {
					t.Fatalf("closed as failed: %v, want ErrProviderHasIt", err)
				}
				if _, err := e.svc.AdminPay(ctx, admin, w.PublicID, "looks paid"); !errors.Is(err, withdrawal.ErrProviderNotPaid) {
					t.Fatalf("closed as paid: %v, want ErrProviderNotPaid", err)
				}
				if r := e.get(w); r.Status != withdrawal.StatusNeedsReview || r.LeaseOwner != "" {
					t.Fatalf("after the refused closes: %+v", r)
				}
				e.wantWallet(50_000_000, 1_500_000)
				if n := withdrawaltest.AuditActions(t, db, "withdrawal_fail") + withdrawaltest.AuditActions(t, db, "withdrawal_paid"); n != 0 {
					t.Fatalf("%d audit rows of refused closes", n)
				}
				// In review, still asked about: an answer in progress
				// moves nothing and writes no event.
				events, checks := len(withdrawaltest.Events(t, db, w.ID)), w.Checks
				e.round(3 * time.Minute)
				if r := e.get(w); r.Status != withdrawal.StatusNeedsReview || r.Checks <= checks || len(withdrawaltest.Events(t, db, w.ID)) != events {
					t.Fatalf("in review, asked again: %+v (%d checks before)", r, checks)
				}
				if err := tc.end(e, w.PublicID); err != nil {
					t.Fatal(err)
				}
				e.round(3 * time.Minute)
				if w = e.get(w); w.Status != tc.status {
					t.Fatalf("the provider's word: %+v, want %s", w, tc.status)
				}
				e.wantWallet(tc.posted, tc.wallet)
				if e.bankPayouts("jibit", w.PublicID) != 1 {
					t.Fatal("sent more than once")
				}
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}

// A payout in progress at a provider then removed from PAYOUTS: nobody
// can ask it, and WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER after its first submit
// it goes to a person, its money held; the admin's fail is refused (the
// provider's last word is in progress). Configured again, the provider's
// word ends it. Before, the worker only rescheduled it for ever.
func TestInProgressPayoutOfAProviderNoLongerOffered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		e.withInProgressReview(e.offers)
		offered := e.svc
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		w := e.sentInProgress(1_500_000)
		e.withInProgressReview(nil)
		for range 3 {
			e.round(24 * time.Hour)
		}
		e.round(23 * time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted {
			t.Fatalf("95 hours on: %+v", w)
		}
		e.round(time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.StatusReason != string(withdrawal.ReasonInProgressTooLong) ||
			w.ProviderState != withdrawal.ProviderInProgress {
			t.Fatalf("four days on: %+v", w)
		}
		e.wantWallet(50_000_000, 1_500_000)
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the provider is gone"); !errors.Is(err, withdrawal.ErrProviderHasIt) {
			t.Fatalf("an admin's fail: %v, want ErrProviderHasIt", err)
		}
		e.wantWallet(50_000_000, 1_500_000)
		e.svc = offered
		if _, err := e.bank.Payouts().Settle(payouts.Jibit, w.PublicID); err != nil {
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

// TestEveryReasonHasItsWords: the admin's pages show a withdrawal's
// reason as "admin.wd.reason." and its code, in both languages.
func TestEveryReasonHasItsWords(t *testing.T) {
	for _, r := range withdrawal.Reasons() {
		for _, l := range i18n.Langs {
			if !i18n.Has(l, "admin.wd.reason."+string(r)) {
				t.Errorf("%s: no words for reason %s", l, r)
			}
		}
	}
}
