package bankaccount_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
)

func user(t *testing.T, db *store.DB, email string) int64 {
	t.Helper()
	var id int64
	now := time.Now()
	if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, role, locale, created_at, email_verified_at) VALUES (?, 'x', 'user', 'en', ?, ?) RETURNING id`,
		email, now, now).Scan(&id).Error; err != nil {
		t.Fatal(err)
	}
	return id
}

func count(t *testing.T, db *store.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

var (
	sheba  = string(iban.Make("017", "0000000000000000042"))
	sheba2 = string(iban.Make("056", "0000000000000000043"))
	code   = "0499370899"
)

// The provider's inquiry decides: a match verifies the account; a
// mismatch is refused and nothing (not even the national code) is
// stored; no answer either way leaves it for an admin, never a mismatch.
func TestAddChecksOwnership(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, tc := range []struct {
			name   string
			answer payout.Ownership
			err    error
			want   bankaccount.Status
			refuse error
		}{
			{"match", payout.OwnerMatch, nil, bankaccount.StatusVerified, nil},
			{"mismatch", payout.OwnerMismatch, nil, "", bankaccount.ErrMismatch},
			{"no upstream provider", payout.OwnerUnknown, nil, bankaccount.StatusPendingReview, nil},
			{"a time-out", payout.OwnerUnknown, errors.New("deadline exceeded"), bankaccount.StatusPendingReview, nil},
		} {
			uid := user(t, db, tc.name+"@example.com")
			s := bankaccount.New(db, nil, "zibal", func(context.Context, string, string) (payout.Ownership, error) { return tc.answer, tc.err }, nil)
			added, err := s.Add(ctx, uid, "ir"+sheba[2:], "۰۴۹۹۳۷۰۸۹۹")
			if !errors.Is(err, tc.refuse) {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if tc.refuse != nil {
				if n := count(t, db, `SELECT COUNT(*) FROM bank_accounts WHERE user_id = ?`, uid) + count(t, db, `SELECT COUNT(*) FROM national_codes WHERE user_id = ?`, uid); n != 0 {
					t.Fatalf("%s: %d rows stored", tc.name, n)
				}
				continue
			}
			a := added.Account
			if a.Status != tc.want || a.Sheba != sheba || a.BankCode != "017" || a.Bank().EN != "Bank Melli Iran" || a.Last4() != "0042" {
				t.Fatalf("%s: %+v", tc.name, a)
			}
			if nc, ok, _ := s.NationalCode(ctx, uid); !ok || string(nc) != code {
				t.Fatalf("%s: national code %q", tc.name, nc)
			}
		}
	})
}

// The national code is given once; the same Sheba again is the same
// account, asking nothing; no inquiry at all: every account waits; a
// pending account is reviewed once, with a note, audited.
func TestNationalCodeOnceAndReview(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		uid := user(t, db, "a@example.com")
		asked := 0
		s := bankaccount.New(db, nil, "zibal", func(context.Context, string, string) (payout.Ownership, error) {
			asked++
			return payout.OwnerMatch, nil
		}, nil)
		if _, err := s.Add(ctx, uid, sheba, code); err != nil {
			t.Fatal(err)
		}
		if again, err := s.Add(ctx, uid, sheba, code); err != nil || !again.Existed || asked != 1 {
			t.Fatalf("again: %+v %v, asked %d", again, err, asked)
		}
		if _, err := s.Add(ctx, uid, sheba2, "0013542419"); !errors.Is(err, bankaccount.ErrNationalCodeDiffers) {
			t.Fatalf("another national code: %v", err)
		}
		for _, bad := range []struct{ sheba, code string }{{"IR12", code}, {sheba2, "123"}, {"IR820540102680020817909003", code}} {
			if _, err := s.Add(ctx, uid, bad.sheba, bad.code); err == nil {
				t.Fatalf("accepted %v", bad)
			}
		}
		none := bankaccount.New(db, nil, "", nil, nil)
		pending, err := none.Add(ctx, uid, sheba2, code)
		if err != nil || pending.Account.Status != bankaccount.StatusPendingReview {
			t.Fatalf("without an inquiry: %+v %v", pending, err)
		}
		list, _ := s.List(ctx, uid)
		if len(list) != 2 {
			t.Fatalf("list %+v", list)
		}
		waiting, err := s.Pending(ctx, 10)
		if err != nil || len(waiting) != 1 || waiting[0].Email != "a@example.com" || waiting[0].NationalCode != code {
			t.Fatalf("pending %+v %v", waiting, err)
		}
		admin := user(t, db, "admin@example.com")
		if _, err := s.Review(ctx, uid, pending.Account.ID, true, "it is mine"); !errors.Is(err, bankaccount.ErrOwnAccount) {
			t.Fatalf("an admin's review of their own account: %v, want ErrOwnAccount", err)
		}
		if _, err := s.Review(ctx, admin, pending.Account.ID, true, ""); !errors.Is(err, bankaccount.ErrNoteRequired) {
			t.Fatalf("no note: %v", err)
		}
		if a, err := s.Review(ctx, admin, pending.Account.ID, true, "checked the card in person"); err != nil || a.Status != bankaccount.StatusVerified {
			t.Fatalf("review: %+v %v", a, err)
		}
		if _, err := s.Review(ctx, admin, pending.Account.ID, false, "again"); !errors.Is(err, bankaccount.ErrNotPending) {
			t.Fatalf("twice: %v", err)
		}
		if _, err := s.Get(ctx, admin, pending.Account.ID); !errors.Is(err, bankaccount.ErrNotFound) {
			t.Fatalf("another's account: %v", err)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM admin_actions WHERE action = 'bank_account_approve'`); n != 1 {
			t.Fatalf("%d audit rows", n)
		}
	})
}

// An account whose address is not confirmed adds no bank account,
// whatever the form in front of the service (the page, the API): the
// provider is not asked and nothing is written.
func TestNoBankAccountForAnUnconfirmedAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		uid := user(t, db, "squat@example.com")
		if err := db.Gorm.Exec(`UPDATE users SET email_verified_at = NULL WHERE id = ?`, uid).Error; err != nil {
			t.Fatal(err)
		}
		asked := 0
		s := bankaccount.New(db, nil, "zibal", func(context.Context, string, string) (payout.Ownership, error) {
			asked++
			return payout.OwnerMatch, nil
		}, nil)
		if _, err := s.Add(ctx, uid, sheba, code); !errors.Is(err, owner.ErrUnconfirmed) {
			t.Fatalf("add: %v", err)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM bank_accounts`) + count(t, db, `SELECT COUNT(*) FROM national_codes`); n != 0 || asked != 0 {
			t.Fatalf("%d rows written, provider asked %d times", n, asked)
		}
		if err := db.Gorm.Exec(`UPDATE users SET email_verified_at = created_at WHERE id = ?`, uid).Error; err != nil {
			t.Fatal(err)
		}
		if added, err := s.Add(ctx, uid, sheba, code); err != nil || added.Account.Status != bankaccount.StatusVerified || asked != 1 {
			t.Fatalf("add once confirmed: %+v %v (asked %d)", added, err, asked)
		}
	})
}

// The ownership inquiries one user's new accounts make are counted, on
// every instance alike: InquiriesPerDay in 24 hours, mismatches (which
// store nothing) and unanswered ones too; past them nothing is asked or
// stored until the oldest is a day old. Before, a mismatch stored
// nothing and counted nothing: the provider's paid inquiry could be
// asked without end, whose any Sheba is learned pair by pair.
func TestOwnershipInquiriesAreCountedPerDay(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		uid := user(t, db, "asker@example.com")
		clk := testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
		asked := 0
		s := bankaccount.New(db, clk.Now, "zibal", func(context.Context, string, string) (payout.Ownership, error) {
			asked++
			if asked == 3 {
				return payout.OwnerUnknown, errors.New("provider time-out")
			}
			return payout.OwnerMismatch, nil
		}, nil)
		shebaOf := func(n int) string { return string(iban.Make("017", fmt.Sprintf("%019d", 900+n))) }
		refused := 0
		for n := range bankaccount.InquiriesPerDay {
			if _, err := s.Add(ctx, uid, shebaOf(n), code); errors.Is(err, bankaccount.ErrMismatch) {
				refused++
			} else if err != nil {
				t.Fatalf("inquiry %d: %v", n, err)
			}
		}
		if asked != bankaccount.InquiriesPerDay || refused != bankaccount.InquiriesPerDay-1 {
			t.Fatalf("asked %d times, %d refused", asked, refused)
		}
		clk.Add(23 * time.Hour)
		if _, err := s.Add(ctx, uid, shebaOf(99), code); !errors.Is(err, bankaccount.ErrTooManyInquiries) || asked != bankaccount.InquiriesPerDay {
			t.Fatalf("one more the same day: %v (asked %d)", err, asked)
		}
		// The one the provider did not answer waits for review, stored.
		if n := count(t, db, `SELECT COUNT(*) FROM bank_accounts WHERE user_id = ?`, uid); n != 1 {
			t.Fatalf("%d accounts stored, want the unanswered one", n)
		}
		clk.Add(time.Hour + time.Second)
		if _, err := s.Add(ctx, uid, shebaOf(99), code); !errors.Is(err, bankaccount.ErrMismatch) || asked != bankaccount.InquiriesPerDay+1 {
			t.Fatalf("a day after: %v (asked %d)", err, asked)
		}
	})
}

// Adds at once cannot pass the cap of accounts: each counts in its own
// write, with the user's row locked.
func TestAccountsAtOnceKeepTheCap(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		uid := user(t, db, "many@example.com")
		s := bankaccount.New(db, nil, "", nil, nil) // no inquiry: each waits for review
		const tries = bankaccount.MaxPerUser + 6
		var wg sync.WaitGroup
		errs := make([]error, tries)
		for n := range tries {
			wg.Go(func() {
				_, errs[n] = s.Add(ctx, uid, string(iban.Make("017", fmt.Sprintf("%019d", 500+n))), code)
			})
		}
		wg.Wait()
		for n, err := range errs {
			if err != nil && !errors.Is(err, bankaccount.ErrTooMany) {
				t.Errorf("add %d: %v", n, err)
			}
		}
		if got := count(t, db, `SELECT COUNT(*) FROM bank_accounts WHERE user_id = ?`, uid); got != bankaccount.MaxPerUser {
			t.Fatalf("%d accounts, want the cap of %d: no more, and none refused while there was room", got, bankaccount.MaxPerUser)
		}
	})
}
