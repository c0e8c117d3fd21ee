package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
)

// TestLockedEnrolmentRefusesTheRightCode: wrong enrolment codes lock the
// admin's second-factor key; while it is locked the right code is
// refused too (else the lock would cost a guesser nothing), and once the
// lock has passed it is taken.
func TestLockedEnrolmentRefusesTheRightCode(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
		svc := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost})
		u, err := svc.SignUp(ctx, "ops@example.com", "correct horse battery", auth.RoleUser, "en")
		if err != nil {
			t.Fatal(err)
		}
		ch, err := svc.SetRole(ctx, "ops@example.com", auth.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		var throttled *auth.ThrottledError
		for i := 0; i < 50 && throttled == nil; i++ {
			_, err := svc.BeginTOTP(ctx, u.ID, "AAAA-BBBB-CCCC-DDDD")
			if !errors.As(err, &throttled) && !errors.Is(err, auth.ErrEnrolmentCode) {
				t.Fatalf("a wrong code: %v", err)
			}
		}
		if throttled == nil {
			t.Fatal("wrong enrolment codes never locked the key")
		}
		if _, err := svc.BeginTOTP(ctx, u.ID, ch.EnrolmentCode); !errors.As(err, &throttled) {
			t.Fatalf("the right code while locked: %v, want throttled", err)
		}
		clk.Add(throttled.RetryAfter + time.Second)
		if en, err := svc.BeginTOTP(ctx, u.ID, ch.EnrolmentCode); err != nil || en.Secret == "" {
			t.Fatalf("the right code once the lock passed: %v", err)
		}
	})
}

// TestNewPasswordLiftsTheSignInLock: a stranger's guesses lock an
// address's sign-in; a password set anew, by the operator (set-password)
// or by the owner (a change), lifts that lock, as a mailed reset does:
// the new password signs in at once from the client that was locked.
func TestNewPasswordLiftsTheSignInLock(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
		svc := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost})
		u, err := svc.SignUp(ctx, "owner@example.com", "correct horse battery", auth.RoleUser, "en")
		if err != nil {
			t.Fatal(err)
		}
		lock := func() {
			t.Helper()
			var throttled *auth.ThrottledError
			for i := 0; i < 50 && throttled == nil; i++ {
				if _, err := svc.AuthenticateFrom(ctx, "owner@example.com", "a stranger's guess", "203.0.113.7"); !errors.As(err, &throttled) && !errors.Is(err, auth.ErrBadCredentials) {
					t.Fatalf("a guess: %v", err)
				}
			}
			if throttled == nil {
				t.Fatal("guesses never locked the sign-in")
			}
		}
		lock()
		if _, _, err := svc.SetPassword(ctx, "owner@example.com", "a brand new password"); err != nil {
			t.Fatal(err)
		}
		// The operator's way into the account is in the audit log.
		var logged int64
		if err := db.Gorm.Table("admin_actions").Where("action = ? AND target_user_id = ?", "cli_set_password", u.ID).Count(&logged).Error; err != nil || logged != 1 {
			t.Fatalf("set-password audited %d times (%v), want once", logged, err)
		}
		if _, err := svc.AuthenticateFrom(ctx, "owner@example.com", "a brand new password", "203.0.113.7"); err != nil {
			t.Fatalf("sign-in with the operator's new password: %v", err)
		}
		lock()
		if _, err := svc.ChangePassword(ctx, u.ID, "", "a brand new password", "another new password"); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AuthenticateFrom(ctx, "owner@example.com", "another new password", "203.0.113.7"); err != nil {
			t.Fatalf("sign-in with the owner's new password: %v", err)
		}
	})
}

// TestCreateAdminIsOneTransaction: `kifpool user create --admin` makes
// the admin, their wallet, their enrolment code and the audit entry
// together. When the last write fails, nothing is left (the command can
// be run again); when it works, the code printed enrols the admin.
func TestCreateAdminIsOneTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost})
		// The audit log unwritable: the whole creation is refused.
		if err := db.Gorm.Exec(`ALTER TABLE admin_actions RENAME TO admin_actions_away`).Error; err != nil {
			t.Fatal(err)
		}
		_, _, err := svc.CreateAdmin(ctx, "boss@example.com", "correct horse battery", "en")
		if rerr := db.Gorm.Exec(`ALTER TABLE admin_actions_away RENAME TO admin_actions`).Error; rerr != nil {
			t.Fatal(rerr)
		}
		if err == nil {
			t.Fatal("created an admin without its audit entry")
		}
		if _, err := svc.Authenticate(ctx, "boss@example.com", "correct horse battery"); !errors.Is(err, auth.ErrBadCredentials) {
			t.Fatalf("after the refused creation the address signs in: %v", err)
		}
		u, code, err := svc.CreateAdmin(ctx, "boss@example.com", "correct horse battery", "en")
		if err != nil || !u.IsAdmin() || code == "" {
			t.Fatalf("run again: %+v %q %v", u, code, err)
		}
		if en, err := svc.BeginTOTP(ctx, u.ID, code); err != nil || en.Secret == "" {
			t.Fatalf("the printed code does not enrol: %v", err)
		}
		if _, _, err := svc.CreateAdmin(ctx, "boss@example.com", "correct horse battery", "en"); !errors.Is(err, auth.ErrEmailTaken) {
			t.Fatalf("a third run: %v, want ErrEmailTaken", err)
		}
	})
}
