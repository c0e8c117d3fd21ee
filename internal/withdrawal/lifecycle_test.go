package withdrawal_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/sqlstore"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

const funded = 50_000_000

// The whole life of a Jibit withdrawal: held, submitted under its own id,
// paid when the provider transferred it (the hold captured into payouts in
// flight), settled by reconciliation (in flight → the provider's rail),
// then failed by hand at the provider (MANUALLY_FAILED) and returned: the
// money back in the wallet once, however often the worker and
// reconciliation look again.
func TestLifeOfAJibitWithdrawal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.request(3_000_000)
		if w.Status != withdrawal.StatusRequested || w.ReviewRequired || w.Provider != "jibit" || w.Rail != "paya" {
			t.Fatalf("requested: %+v", w)
		}
		// The history names it for its owner, and for nobody else.
		ctx := context.Background()
		if by, err := e.svc.ByPublicIDs(ctx, w.UserID, []string{w.PublicID, "wd_unknown"}); err != nil || len(by) != 1 || by[w.PublicID].ID != w.ID {
			t.Fatalf("by public ids: %+v %v", by, err)
		}
		if by, err := e.svc.ByPublicIDs(ctx, w.UserID+1000, []string{w.PublicID}); err != nil || len(by) != 0 {
			t.Fatalf("another user's: %+v %v", by, err)
		}
		e.wantWallet(funded, 3_000_000)
		e.round(time.Second)
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderInProgress || w.Submits != 1 {
			t.Fatalf("after a round: %+v", w)
		}
		if p, ok := e.bank.Payouts().Payout(payouts.Jibit, w.PublicID); !ok || p.AmountRials != 3_000_000 || p.Sheba != w.Sheba {
			t.Fatalf("the provider holds %+v", p)
		}
		e.round(time.Minute) // still in progress
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.Checks != 1 {
			t.Fatalf("in progress: %+v", w)
		}
		if _, err := e.bank.Payouts().Settle(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusPaid || w.PaidAt == nil || w.WatchUntil == nil || w.NextCheckAt == nil {
			t.Fatalf("transferred: %+v", w)
		}
		e.wantWallet(funded-3_000_000, 0)
		if got := withdrawaltest.Account(t, db, sqlstore.InFlightCode("jibit")); got != 3_000_000 {
			t.Fatalf("in flight %d", got)
		}
		reps, err := e.svc.Reconcile(context.Background(), e.st)
		if err != nil || len(reps) != 1 || reps[0].Paid != 1 || reps[0].Settled != 1 || reps[0].Differences != 0 {
			t.Fatalf("reconcile: %+v %v", reps, err)
		}
		if in, rail := withdrawaltest.Account(t, db, sqlstore.InFlightCode("jibit")), withdrawaltest.Account(t, db, sqlstore.RailCode("jibit")); in != 0 || rail != 3_000_000 {
			t.Fatalf("settled: in flight %d, rail %d", in, rail)
		}
		if _, err := e.bank.Payouts().Return(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusReturned || w.ReturnedAt == nil || w.NextCheckAt != nil {
			t.Fatalf("returned: %+v", w)
		}
		e.wantWallet(funded, 0)
		for range 3 {
			e.round(time.Hour)
			if _, err := e.svc.Reconcile(context.Background(), e.st); err != nil {
				t.Fatal(err)
			}
		}
		if n := withdrawaltest.Returns(t, db, w.PublicID); n != 1 {
			t.Fatalf("%d returns", n)
		}
		e.wantWallet(funded, 0)
		var path []withdrawal.Status
		for _, ev := range withdrawaltest.Events(t, db, w.ID) {
			path = append(path, ev.ToStatus)
		}
		want := []withdrawal.Status{withdrawal.StatusRequested, withdrawal.StatusSubmitted, withdrawal.StatusPaid, withdrawal.StatusReturned}
		if len(path) != len(want) {
			t.Fatalf("events %v", path)
		}
		if calls := withdrawaltest.Calls(t, db, w.PublicID); calls["payout_submit"] != 1 || calls["payout_status"] < 3 {
			t.Fatalf("calls %v", calls)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// Zibal: paid, settled; no late failure, so a paid withdrawal is asked
// about no more.
func TestLifeOfAZibalWithdrawal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "zibal")
		w := e.request(1_000_000)
		e.round(time.Second)
		if _, err := e.bank.Payouts().Settle(payouts.Zibal, w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusPaid || w.NextCheckAt != nil || w.ProviderRef == "" {
			t.Fatalf("paid: %+v", w)
		}
		e.wantWallet(funded-1_000_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// The provider fails it: released, the money spendable again.
func TestProviderFailsIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.request(2_000_000)
		e.round(time.Second)
		if _, err := e.bank.Payouts().Fail(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusFailed || w.ResolvedAt == nil {
			t.Fatalf("failed: %+v", w)
		}
		e.wantWallet(funded, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// A time-out after the provider took it: the outcome is unknown, never
// failed; the next round asks by our id and finds it; one payout.
func TestTimeOutAfterAccepting(t *testing.T) {
	for _, provider := range []string{"jibit", "zibal"} {
		t.Run(provider, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				e := newEnv(t, db, provider)
				e.faults(provider, payouts.ProviderFaults{AcceptThenHangRate: 1, HangMS: 10_000})
				w := e.request(1_500_000)
				e.round(time.Second)
				if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderUnknown || w.UnknownSince == nil {
					t.Fatalf("after the time-out: %+v", w)
				}
				e.faults(provider, payouts.ProviderFaults{})
				e.round(time.Minute)
				if w = e.get(w); w.ProviderState != withdrawal.ProviderInProgress || w.Submits != 1 || e.bankPayouts(provider, w.PublicID) != 1 {
					t.Fatalf("asked: %+v", w)
				}
				if _, err := e.bank.Payouts().Settle(provider, w.PublicID); err != nil {
					t.Fatal(err)
				}
				e.round(time.Minute)
				if w = e.get(w); w.Status != withdrawal.StatusPaid {
					t.Fatalf("paid: %+v", w)
				}
				if p, _ := e.bank.Payouts().Payout(provider, w.PublicID); p.Submits != 1 {
					t.Fatalf("%d submits reached the provider", p.Submits)
				}
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}

// Maintenance during the submit (503: unknown). Jibit keeps one payout per
// id: when it is back and does not know the payout, the same id is sent
// again. Zibal cannot be trusted with a second submit: the worker asks
// until the provider knows, and after WITHDRAWAL_UNKNOWN_REVIEW_AFTER a
// person looks (and may close it as failed): never two payouts.
func TestMaintenanceDuringSubmit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.unknownInMaintenance("jibit", 1_000_000)
		e.faults("jibit", payouts.ProviderFaults{})
		e.round(time.Minute)
		if w = e.get(w); w.ProviderState != withdrawal.ProviderInProgress || w.Submits != 2 || e.bankPayouts("jibit", w.PublicID) != 1 {
			t.Fatalf("jibit back: %+v", w)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "zibal")
		w := e.unknownInMaintenance("zibal", 1_000_000)
		e.faults("zibal", payouts.ProviderFaults{})
		for range 5 {
			e.round(time.Hour)
		}
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.Submits != 1 || e.bankPayouts("zibal", w.PublicID) != 0 {
			t.Fatalf("zibal back, not knowing it: %+v", w)
		}
		e.round(24 * time.Hour)
		if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.StatusReason != string(withdrawal.ReasonUnknownTooLong) {
			t.Fatalf("zibal after a day: %+v", w)
		}
		e.wantWallet(funded, 1_000_000)
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		if _, err := e.svc.AdminFail(context.Background(), admin, w.PublicID, ""); !errors.Is(err, withdrawal.ErrNoteRequired) {
			t.Fatalf("without a note: %v", err)
		}
		if w, err := e.svc.AdminFail(context.Background(), admin, w.PublicID, "Zibal's panel has no such payout"); err != nil || w.Status != withdrawal.StatusFailed {
			t.Fatalf("closed: %+v %v", w, err)
		}
		e.wantWallet(funded, 0)
		if n := withdrawaltest.AuditActions(t, db, "withdrawal_fail"); n != 1 {
			t.Fatalf("%d audit rows", n)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// The provider's own balance short: refused for now, nothing taken, the
// same order sent again later; a duplicate submit (the request arriving
// twice) is one payout.
func TestBalanceShortAndDuplicate(t *testing.T) {
	for _, provider := range []string{"jibit", "zibal"} {
		t.Run(provider, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				e := newEnv(t, db, provider)
				e.faults(provider, payouts.ProviderFaults{BalanceShort: true})
				w := e.request(1_000_000)
				e.round(time.Second)
				if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderNotTaken || e.bankPayouts(provider, w.PublicID) != 0 {
					t.Fatalf("balance short: %+v", w)
				}
				e.faults(provider, payouts.ProviderFaults{DuplicateRate: 1})
				e.round(time.Minute)
				if w = e.get(w); w.ProviderState != withdrawal.ProviderInProgress || w.Submits != 2 {
					t.Fatalf("sent again: %+v", w)
				}
				if p, _ := e.bank.Payouts().Payout(provider, w.PublicID); p.Submits != 2 || e.bankPayouts(provider, w.PublicID) != 1 {
					t.Fatalf("the provider holds %+v", p)
				}
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}

// A late failure the provider decides itself (Jibit: transferred, then
// MANUALLY_FAILED at the next inquiry).
func TestLateFailure(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		e.faults("jibit", payouts.ProviderFaults{AutoSettle: true, LateFailRate: 1})
		w := e.request(700_000)
		e.round(time.Second) // submitted
		e.round(time.Minute) // transferred
		if w = e.get(w); w.Status != withdrawal.StatusPaid {
			t.Fatalf("paid: %+v", w)
		}
		e.round(time.Hour) // failed by hand
		if w = e.get(w); w.Status != withdrawal.StatusReturned {
			t.Fatalf("returned: %+v", w)
		}
		e.wantWallet(funded, 0)
		if got := withdrawaltest.Account(t, db, sqlstore.InFlightCode("jibit")); got != 0 {
			t.Fatalf("in flight %d", got)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// Found returned before we knew it was paid: paid, then returned, each
// with its money.
func TestFoundReturnedAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.request(900_000)
		e.round(time.Second)
		if _, err := e.bank.Payouts().Settle(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.bank.Payouts().Return(payouts.Jibit, w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusReturned || withdrawaltest.Returns(t, db, w.PublicID) != 1 {
			t.Fatalf("returned: %+v", w)
		}
		e.wantWallet(funded, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// The request's rules: the amount rules, a verified account of the
// user's, the available balance (guarded in the hold's write), the daily
// limit; a form submitted twice, at once, is one withdrawal.
func TestRequestRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		ctx := context.Background()
		req := func(account, rials int64, tok string) error {
			_, err := e.svc.Request(ctx, withdrawal.Request{UserID: e.userID, FormToken: tok, BankAccountID: account, AmountRials: rials})
			return err
		}
		pending := withdrawaltest.PendingAccount(t, db, e.userID, withdrawaltest.Sheba("012", 7))
		other, _ := withdrawaltest.User(t, db, "other@example.com")
		theirs := withdrawaltest.VerifiedAccount(t, db, other, withdrawaltest.Sheba("056", 9))
		var dl *withdrawal.DailyLimitError
		for _, tc := range []struct {
			name    string
			account int64
			rials   int64
			tok     string
			want    func(error) bool
		}{
			{"a bad token", e.account, 1_000_000, "x", func(err error) bool { return errors.Is(err, withdrawal.ErrBadFormToken) }},
			{"below the minimum", e.account, 50_000, formtoken.New(), func(err error) bool { return errors.Is(err, money.ErrTooSmall) }},
			{"not whole tomans", e.account, 1_000_005, formtoken.New(), func(err error) bool { return errors.Is(err, money.ErrNotWholeTomans) }},
			{"an account waiting for review", pending, 1_000_000, formtoken.New(), func(err error) bool { return errors.Is(err, withdrawal.ErrBankAccountUnchecked) }},
			{"another's account", theirs, 1_000_000, formtoken.New(), func(err error) bool { return errors.Is(err, withdrawal.ErrBankAccountMissing) }},
			{"more than the wallet", e.account, funded + 10, formtoken.New(), func(err error) bool { return errors.Is(err, withdrawal.ErrInsufficientFunds) }},
		} {
			if err := req(tc.account, tc.rials, tc.tok); !tc.want(err) {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
		if n := len(withdrawaltest.All(t, db)); n != 0 {
			t.Fatalf("%d withdrawals written by refusals", n)
		}
		e.wantWallet(funded, 0)
		// The same form at once, eight times: one withdrawal.
		tok := formtoken.New()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if err := req(e.account, 1_000_000, tok); err != nil {
					t.Errorf("double submit: %v", err)
				}
			})
		}
		wg.Wait()
		if n := len(withdrawaltest.All(t, db)); n != 1 {
			t.Fatalf("%d withdrawals from one form", n)
		}
		e.wantWallet(funded, 1_000_000)
		// The daily limit (2 bn): with 1 M today, 1,999,000,010 more is
		// refused, leaving what is left.
		withdrawaltest.Fund(t, db, e.wallet, 3_000_000_000)
		if err := req(e.account, 1_999_000_010, formtoken.New()); !errors.As(err, &dl) || dl.Left != 1_999_000_000 {
			t.Fatalf("daily limit: %v", err)
		}
		e.clock.Advance(24 * time.Hour)
		if err := req(e.account, 1_999_000_010, formtoken.New()); err != nil {
			t.Fatalf("the next day: %v", err)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// Two withdrawals racing for the last rials of a wallet: one is held,
// the other refused; never both.
func TestRacingForTheLastRials(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		var wg sync.WaitGroup
		var ok, short int
		var mu sync.Mutex
		for range 6 {
			wg.Go(func() {
				_, err := e.svc.Request(context.Background(), withdrawal.Request{UserID: e.userID, FormToken: formtoken.New(),
					BankAccountID: e.account, AmountRials: 20_000_000})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, withdrawal.ErrInsufficientFunds):
					short++
				default:
					t.Errorf("request: %v", err)
				}
			})
		}
		wg.Wait()
		if ok != 2 || short != 4 {
			t.Fatalf("%d held, %d refused; want 2 and 4", ok, short)
		}
		e.wantWallet(funded, 40_000_000)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// A large one waits for an admin: never sent before the approval; the
// approval sends it, a rejection releases it; the owner may cancel it
// before it is sent, never after.
func TestReviewAndCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		ctx := context.Background()
		withdrawaltest.Fund(t, db, e.wallet, 2_000_000_000)
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		big := e.request(600_000_000)
		if !big.ReviewRequired || big.NextCheckAt != nil {
			t.Fatalf("big: %+v", big)
		}
		e.round(time.Minute)
		if big = e.get(big); big.Status != withdrawal.StatusRequested || e.bankPayouts("jibit", big.PublicID) != 0 {
			t.Fatalf("sent before the approval: %+v", big)
		}
		for _, own := range []func() error{
			func() error { _, err := e.svc.Approve(ctx, e.userID, big.PublicID, "mine"); return err },
			func() error { _, err := e.svc.Reject(ctx, e.userID, big.PublicID, "mine"); return err },
			func() error { _, err := e.svc.AdminFail(ctx, e.userID, big.PublicID, "mine"); return err },
		} {
			if err := own(); !errors.Is(err, withdrawal.ErrOwnWithdrawal) {
				t.Fatalf("an admin's action on their own withdrawal: %v, want ErrOwnWithdrawal", err)
			}
		}
		if _, err := e.svc.Approve(ctx, admin, big.PublicID, " "); !errors.Is(err, withdrawal.ErrNoteRequired) {
			t.Fatalf("approve without a note: %v", err)
		}
		if big, err := e.svc.Approve(ctx, admin, big.PublicID, "called the payee"); err != nil || big.Status != withdrawal.StatusApproved {
			t.Fatalf("approve: %+v %v", big, err)
		}
		if _, err := e.svc.Approve(ctx, admin, big.PublicID, "again"); !errors.Is(err, withdrawal.ErrNotReviewable) {
			t.Fatalf("approve twice: %v", err)
		}
		e.round(time.Second)
		if big = e.get(big); big.Status != withdrawal.StatusSubmitted || e.bankPayouts("jibit", big.PublicID) != 1 {
			t.Fatalf("approved, then sent: %+v", big)
		}
		if _, err := e.svc.Cancel(ctx, e.userID, big.PublicID); !errors.Is(err, withdrawal.ErrNotCancellable) {
			t.Fatalf("cancel after sending: %v", err)
		}
		other := e.request(700_000_000)
		if other, err := e.svc.Reject(ctx, admin, other.PublicID, "the payee did not answer"); err != nil || other.Status != withdrawal.StatusRejected {
			t.Fatalf("reject: %+v %v", other, err)
		}
		small := e.request(1_000_000)
		if small, err := e.svc.Cancel(ctx, e.userID, small.PublicID); err != nil || small.Status != withdrawal.StatusCancelled {
			t.Fatalf("cancel: %+v %v", small, err)
		}
		if _, err := e.svc.Cancel(ctx, admin, small.PublicID); !errors.Is(err, withdrawal.ErrNotFound) {
			t.Fatalf("another's cancel: %v", err)
		}
		e.round(time.Minute)
		if e.bankPayouts("jibit", small.PublicID) != 0 {
			t.Fatal("a cancelled withdrawal was sent")
		}
		e.wantWallet(funded+2_000_000_000, 600_000_000)
		if withdrawaltest.AuditActions(t, db, "withdrawal_approve") != 1 || withdrawaltest.AuditActions(t, db, "withdrawal_reject") != 1 {
			t.Fatal("approvals and rejections are audited")
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// The hold is made for longer than any withdrawal lives: the holds' sweep
// never ends one under a payout in flight.
func TestHoldNeverExpiresUnderAPayout(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.request(1_000_000)
		e.round(time.Second)
		n, err := ledger.New(db).ExpireDue(context.Background(), e.clock.Now().Add(10*365*24*time.Hour), 100)
		if err != nil || n != 0 {
			t.Fatalf("expired %d: %v", n, err)
		}
		if h := withdrawaltest.Hold(t, db, e.get(w).HoldID); h.Status != ledger.HoldOpen {
			t.Fatalf("hold %+v", h)
		}
	})
}

// The daily limit binds a person, not an account: a second account that
// gave the same national code (verified by the provider's inquiry, as any
// account is) shares the first one's day, at once as one after the other;
// another person's is their own.
func TestDailyLimitIsAPersons(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "zibal") // Zibal asks whose a Sheba is
		ctx := context.Background()
		code := withdrawaltest.NationalCodeOf(t, db, e.userID)
		withdrawaltest.Fund(t, db, e.wallet, 5_000_000_000)
		second, secondWallet := withdrawaltest.User(t, db, "second@example.com")
		withdrawaltest.Fund(t, db, secondWallet, 5_000_000_000)
		added, err := e.accts.Add(ctx, second, withdrawaltest.Sheba("017", 42), code)
		if err != nil || !added.Account.Verified() {
			t.Fatalf("the second account's bank account: %+v %v", added, err)
		}
		stranger, strangerWallet := withdrawaltest.User(t, db, "stranger@example.com")
		withdrawaltest.Fund(t, db, strangerWallet, 3_000_000_000)
		strangers := withdrawaltest.VerifiedAccount(t, db, stranger, withdrawaltest.Sheba("056", 9))
		req := func(user, account, rials int64) error {
			_, err := e.svc.Request(ctx, withdrawal.Request{UserID: user, FormToken: formtoken.New(), BankAccountID: account, AmountRials: rials})
			return err
		}
		var dl *withdrawal.DailyLimitError
		if err := req(e.userID, e.account, 1_500_000_000); err != nil {
			t.Fatal(err)
		}
		if err := req(second, added.Account.ID, 600_000_000); !errors.As(err, &dl) || dl.Left != 500_000_000 {
			t.Fatalf("the same person's second account past the day's limit: %v", err)
		}
		if err := req(second, added.Account.ID, 500_000_000); err != nil {
			t.Fatalf("what is left of the day: %v", err)
		}
		for _, u := range []int64{e.userID, second} {
			if used, err := e.svc.UsedToday(ctx, u); err != nil || used != 2_000_000_000 {
				t.Fatalf("used today by user %d: %d %v", u, used, err)
			}
		}
		if err := req(stranger, strangers, 2_000_000_000); err != nil {
			t.Fatalf("another person's day: %v", err)
		}
		// A code typed without the provider's word (its inquiry went
		// unanswered: the account waits for review) joins no one: that
		// account neither reads the person's day nor counts in it.
		e.faults("zibal", payouts.ProviderFaults{ErrorRate: 1})
		claimer, _ := withdrawaltest.User(t, db, "claimer@example.com")
		claimed, err := e.accts.Add(ctx, claimer, withdrawaltest.Sheba("017", 43), code)
		e.faults("zibal", payouts.ProviderFaults{})
		if err != nil || claimed.Account.Verified() || withdrawaltest.NationalCodeOf(t, db, claimer) != code {
			t.Fatalf("the claimer's account: %+v %v", claimed, err)
		}
		if used, err := e.svc.UsedToday(ctx, claimer); err != nil || used != 0 {
			t.Fatalf("the claimer reads %d %v of the person's day", used, err)
		}
		// The next day, both accounts at once, 400 M each try: five fit
		// in the person's 2 bn, never six.
		e.clock.Advance(24 * time.Hour)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for i := range 10 {
			user, account := e.userID, e.account
			if i%2 == 1 {
				user, account = second, added.Account.ID
			}
			wg.Go(func() {
				err := req(user, account, 400_000_000)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.As(err, new(*withdrawal.DailyLimitError)):
					refused++
				default:
					t.Errorf("request: %v", err)
				}
			})
		}
		wg.Wait()
		if ok != 5 || refused != 5 {
			t.Fatalf("%d admitted and %d refused at once; want 5 and 5", ok, refused)
		}
		if used, err := e.svc.UsedToday(ctx, second); err != nil || used != 2_000_000_000 {
			t.Fatalf("used the next day: %d %v", used, err)
		}
		if db.Dialect == store.Postgres {
			// What makes it so: one account's write waits for the other's
			// while it holds the person's national codes (SQLite's writers
			// take turns whatever they write).
			e.clock.Advance(24 * time.Hour)
			release := withdrawaltest.HoldPerson(t, db, e.userID)
			done := make(chan error, 1)
			go func() { done <- req(second, added.Account.ID, 400_000_000) }()
			testwait.Eventually(t, 10*time.Second, "the second account's withdrawal waiting for the person", func() bool {
				return withdrawaltest.WaitingForANationalCode(t, db)
			})
			select {
			case err := <-done:
				t.Fatalf("the withdrawal did not wait for the person's lock: %v", err)
			default:
			}
			release()
			if err := <-done; err != nil {
				t.Fatalf("after the lock: %v", err)
			}
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}
