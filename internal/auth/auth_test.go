package auth_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
)

// clock is the tests' adjustable clock.
type clock = testclock.Clock

func newService(db *store.DB, c *clock) *auth.Service {
	o := auth.Options{BcryptCost: bcrypt.MinCost, SessionTTL: time.Hour}
	if c != nil {
		o.Now = c.Now
	}
	return auth.NewService(db, o)
}

func count(t *testing.T, db *store.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(sql, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestSignUp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newService(db, nil)
		u, err := s.SignUp(ctx, "  Alice@Example.com ", "correct horse", "", "en")
		if err != nil {
			t.Fatalf("SignUp: %v", err)
		}
		if u.ID == 0 || u.Email != "alice@example.com" || u.Role != auth.RoleUser || u.Locale != "en" || u.IsAdmin() {
			t.Errorf("user = %+v", u)
		}
		if u.PasswordHash == "" || strings.Contains(u.PasswordHash, "correct horse") ||
			bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte("correct horse")) != nil {
			t.Errorf("password hash %q does not match the password", u.PasswordHash)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM wallets w JOIN ledger_accounts a ON a.wallet_id = w.id WHERE w.user_id = ? AND a.posted_rials = 0 AND a.held_rials = 0`, u.ID); n != 1 {
			t.Errorf("%d zero-balance wallets for the user, want 1", n)
		}

		admin, err := s.SignUp(ctx, "root@example.com", "correct horse", auth.RoleAdmin, "fa")
		if err != nil || !admin.IsAdmin() {
			t.Fatalf("admin SignUp = %+v, %v", admin, err)
		}

		tests := []struct {
			name, email, password, role string
			want                        error
		}{
			{"same email", "alice@example.com", "another password", "", auth.ErrEmailTaken},
			{"same email in other case", "ALICE@example.COM", "another password", "", auth.ErrEmailTaken},
			{"empty email", "", "correct horse", "", auth.ErrEmailInvalid},
			{"no at", "alice.example.com", "correct horse", "", auth.ErrEmailInvalid},
			{"no dot in domain", "alice@localhost", "correct horse", "", auth.ErrEmailInvalid},
			{"display name", "Alice <alice2@example.com>", "correct horse", "", auth.ErrEmailInvalid},
			{"space inside", "al ice@example.com", "correct horse", "", auth.ErrEmailInvalid},
			{"two ats", "a@b@example.com", "correct horse", "", auth.ErrEmailInvalid},
			{"too long", strings.Repeat("a", 250) + "@example.com", "correct horse", "", auth.ErrEmailInvalid},
			{"short password", "bob@example.com", "12345abcd", "", auth.ErrPasswordTooShort},
			{"eight spaces", "bob@example.com", "        ", "", auth.ErrPasswordTooShort},
			{"short once trimmed", "bob@example.com", "   ab12cd34   ", "", auth.ErrPasswordTooShort},
			{"one kind of character", "bob@example.com", "abcdefghijkl", "", auth.ErrPasswordTooSimple},
			{"common password", "bob@example.com", "Password123", "", auth.ErrPasswordCommon},
			{"lookalike of an account", "\u0430lice@example.com", "correct horse", "", auth.ErrEmailInvalid},
			{"same account with an invisible character", "alice\u200b@example.com", "correct horse", "", auth.ErrEmailInvalid},
			{"empty password", "bob@example.com", "", "", auth.ErrPasswordTooShort},
			{"9 persian letters (18 bytes)", "bob@example.com", "رمزعبورمن", "", auth.ErrPasswordTooShort},
			{"73 bytes", "bob@example.com", strings.Repeat("x", 73), "", auth.ErrPasswordTooLong},
			{"37 persian letters (74 bytes)", "bob@example.com", strings.Repeat("ر", 37), "", auth.ErrPasswordTooLong},
		}
		for _, tt := range tests {
			_, err := s.SignUp(ctx, tt.email, tt.password, tt.role, "fa")
			if !errors.Is(err, tt.want) {
				t.Errorf("%s: SignUp(%q) = %v, want %v", tt.name, tt.email, err, tt.want)
			}
		}
		if _, err := s.SignUp(ctx, "carol@example.com", "correct horse", "superuser", "fa"); err == nil {
			t.Error("unknown role accepted")
		}
		// Boundaries that are accepted.
		for _, pw := range []string{"93715zqxkw", strings.Repeat("x", 71) + "1", "رمز عبور م"} {
			email := "ok" + string(rune('a'+len(pw)%26)) + "@example.com"
			if _, err := s.SignUp(ctx, email, pw, "", "fa"); err != nil {
				t.Errorf("password of %d bytes refused: %v", len(pw), err)
			}
		}
		// Nothing was left behind by the refusals: one user and one wallet each.
		users := count(t, db, `SELECT COUNT(*) FROM users`)
		if users != 5 {
			t.Errorf("%d users, want 5", users)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM wallets`); n != users {
			t.Errorf("%d wallets for %d users", n, users)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM users WHERE lower(email) = 'alice@example.com'`); n != 1 {
			t.Errorf("%d users with alice's email", n)
		}
	})
}

func TestSignUpConcurrentSameEmail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newService(db, nil)
		const n = 10
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			email := "race@example.com"
			if i%2 == 1 {
				email = "RACE@example.com"
			}
			wg.Go(func() { _, errs[i] = s.SignUp(context.Background(), email, "correct horse", "", "fa") })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, auth.ErrEmailTaken):
				t.Errorf("unexpected error %v", err)
			}
		}
		if ok != 1 {
			t.Errorf("%d sign-ups succeeded, want 1", ok)
		}
		if u, w := count(t, db, `SELECT COUNT(*) FROM users`), count(t, db, `SELECT COUNT(*) FROM wallets`); u != 1 || w != 1 {
			t.Errorf("%d users, %d wallets; want 1, 1", u, w)
		}
	})
}

func TestAuthenticate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := newService(db, nil)
		u, err := s.SignUp(ctx, "alice@example.com", "correct horse", "", "fa")
		if err != nil {
			t.Fatal(err)
		}
		for _, email := range []string{"alice@example.com", " ALICE@example.com "} {
			got, err := s.Authenticate(ctx, email, "correct horse")
			if err != nil || got.ID != u.ID {
				t.Errorf("Authenticate(%q) = %+v, %v; want user %d", email, got, err, u.ID)
			}
		}
		tests := []struct{ name, email, password string }{
			{"wrong password", "alice@example.com", "wrong horse"},
			{"password in other case", "alice@example.com", "CORRECT HORSE"},
			{"empty password", "alice@example.com", ""},
			{"unknown email", "bob@example.com", "correct horse"},
			{"invalid email", "alice", "correct horse"},
			{"too long password", "alice@example.com", "correct horse" + strings.Repeat("x", 100)},
		}
		for _, tt := range tests {
			got, err := s.Authenticate(ctx, tt.email, tt.password)
			if !errors.Is(err, auth.ErrBadCredentials) || got.ID != 0 {
				t.Errorf("%s: Authenticate = %+v, %v; want ErrBadCredentials", tt.name, got, err)
			}
		}
	})
}

func TestSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		c := testclock.New(time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC))
		s := newService(db, c)
		u, err := s.SignUp(ctx, "alice@example.com", "correct horse", "", "fa")
		if err != nil {
			t.Fatal(err)
		}
		tok, exp, err := s.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatalf("NewSession: %v", err)
		}
		if len(tok) < 40 || !exp.Equal(c.Now().Add(time.Hour)) {
			t.Errorf("token %q (len %d), expiry %v", tok, len(tok), exp)
		}
		// Only a hash of the token is stored.
		if n := count(t, db, `SELECT COUNT(*) FROM sessions WHERE token_hash = ?`, tok); n != 0 {
			t.Error("the session token is stored in clear")
		}
		if n := count(t, db, `SELECT COUNT(*) FROM sessions WHERE user_id = ?`, u.ID); n != 1 {
			t.Errorf("%d sessions, want 1", n)
		}
		tok2, _, err := s.NewSession(ctx, u.ID)
		if err != nil || tok2 == tok {
			t.Fatalf("second session: %q, %v", tok2, err)
		}

		got, err := s.UserBySession(ctx, tok)
		if err != nil || got.ID != u.ID || got.Email != "alice@example.com" {
			t.Fatalf("UserBySession = %+v, %v", got, err)
		}
		for _, bad := range []string{"", "garbage", tok + "x", tok[1:], strings.Repeat("A", 101), "' OR 1=1 --"} {
			if _, err := s.UserBySession(ctx, bad); !errors.Is(err, auth.ErrNoSession) {
				t.Errorf("UserBySession(%q) = %v, want ErrNoSession", bad, err)
			}
		}

		// Still valid just before expiry, gone at expiry.
		c.Add(time.Hour - time.Second)
		if _, err := s.UserBySession(ctx, tok); err != nil {
			t.Errorf("a second before expiry: %v", err)
		}
		c.Add(time.Second)
		if _, err := s.UserBySession(ctx, tok); !errors.Is(err, auth.ErrNoSession) {
			t.Errorf("at expiry: %v, want ErrNoSession", err)
		}
		c.Add(-time.Hour + time.Minute) // back in time: valid again (expiry is checked, not deleted)

		if err := s.EndSession(ctx, tok); err != nil {
			t.Fatalf("EndSession: %v", err)
		}
		if _, err := s.UserBySession(ctx, tok); !errors.Is(err, auth.ErrNoSession) {
			t.Errorf("after EndSession: %v, want ErrNoSession", err)
		}
		// The other session of the user is untouched.
		if got, err := s.UserBySession(ctx, tok2); err != nil || got.ID != u.ID {
			t.Errorf("other session after EndSession: %+v, %v", got, err)
		}
		if err := s.EndSession(ctx, tok); err != nil {
			t.Errorf("EndSession twice: %v", err)
		}
		if err := s.EndSession(ctx, ""); err != nil {
			t.Errorf("EndSession(\"\"): %v", err)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM sessions`); n != 1 {
			t.Errorf("%d sessions left, want 1", n)
		}

		if err := s.SetLocale(ctx, u.ID, "en"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.UserBySession(ctx, tok2); err != nil || got.Locale != "en" {
			t.Errorf("locale after SetLocale: %+v, %v", got, err)
		}
	})
}

func TestPurgeExpiredSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		svc := auth.NewService(db, auth.Options{Now: clock, BcryptCost: bcrypt.MinCost, SessionTTL: time.Hour})
		u, err := svc.SignUp(context.Background(), "purge@example.com", "long enough password", "", "fa")
		if err != nil {
			t.Fatal(err)
		}
		old, _, _ := svc.NewSession(context.Background(), u.ID)
		now = now.Add(30 * time.Minute)
		fresh, _, _ := svc.NewSession(context.Background(), u.ID)
		now = now.Add(45 * time.Minute) // the first expired, the second lives
		n, err := svc.PurgeExpiredSessions(context.Background())
		if err != nil || n != 1 {
			t.Fatalf("purged %d, %v; want 1", n, err)
		}
		if _, err := svc.UserBySession(context.Background(), old); err != auth.ErrNoSession {
			t.Fatalf("old session: %v", err)
		}
		if _, err := svc.UserBySession(context.Background(), fresh); err != nil {
			t.Fatalf("fresh session: %v", err)
		}
	})
}

// Lookup reads the session and its user in one query: every field comes
// back as stored (the second factor's time, the TOTP state, the role).
func TestLookupReturnsTheWholeSessionAndUser(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		c := testclock.New(time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC))
		s := newService(db, c)
		u, err := s.SignUp(ctx, "whole@example.com", "correct horse", auth.RoleAdmin, "en")
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := s.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		passed := c.Now().Add(-time.Minute)
		if err := db.Gorm.Exec(`UPDATE sessions SET second_factor_at = ? WHERE user_id = ?`, passed, u.ID).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Exec(`UPDATE users SET totp_secret = 'JBSWY3DPEHPK3PXP', totp_confirmed_at = ?, totp_last_step = 42 WHERE id = ?`, passed, u.ID).Error; err != nil {
			t.Fatal(err)
		}
		var wantU auth.User
		var wantS auth.Session
		if err := db.Gorm.Take(&wantU, u.ID).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Where("user_id = ?", u.ID).Take(&wantS).Error; err != nil {
			t.Fatal(err)
		}
		gotU, gotS, err := s.Lookup(ctx, tok)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		// Every field, so that a column added to User or Session and not to
		// Lookup's list cannot go unnoticed.
		if !reflect.DeepEqual(gotU, wantU) || gotU.TOTPLastStep != 42 || gotU.Role != auth.RoleAdmin {
			t.Errorf("user = %+v, want %+v", gotU, wantU)
		}
		if !reflect.DeepEqual(gotS, wantS) || gotS.SecondFactorAt == nil || !gotS.SecondFactorAt.Equal(passed) {
			t.Errorf("session = %+v, want %+v", gotS, wantS)
		}
		if _, _, err := s.Lookup(ctx, tok+"x"); !errors.Is(err, auth.ErrNoSession) {
			t.Errorf("unknown token: %v", err)
		}
	})
}
