package auth_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
)

// mailedLinks are the tokens of the links mailed, confirmations and resets
// apart.
type mailedLinks struct {
	mu             sync.Mutex
	verify, resets []string
}

func (m *mailedLinks) last(t *testing.T, verify bool) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.resets
	if verify {
		l = m.verify
	}
	if len(l) == 0 {
		t.Fatal("no link mailed")
	}
	return l[len(l)-1]
}

func (m *mailedLinks) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.verify)
}

// verifyService is an auth service at clk whose mailers keep the links'
// tokens.
func verifyService(t *testing.T, db *store.DB, clk *testclock.Clock) (*auth.Service, *mailedLinks) {
	m := &mailedLinks{}
	s := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost,
		VerifyMailer: func(_ *gorm.DB, u auth.User, token string, expires time.Time) error {
			if !expires.Equal(clk.Now().UTC().Truncate(time.Microsecond).Add(auth.VerifyLifetime)) {
				t.Errorf("confirmation link expires %s", expires)
			}
			if u.Verified() {
				t.Error("a link mailed for a confirmed address")
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			m.verify = append(m.verify, token)
			return nil
		},
		ResetMailer: func(_ *gorm.DB, _ auth.User, token string, _ time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.resets = append(m.resets, token)
			return nil
		}})
	return s, m
}

func verifiedAt(t *testing.T, db *store.DB, id int64) *time.Time {
	t.Helper()
	var u auth.User
	if err := db.Gorm.Take(&u, id).Error; err != nil {
		t.Fatal(err)
	}
	return u.EmailVerifiedAt
}

// A person's sign-up leaves the address unconfirmed and mails one link;
// the link confirms it once, even when two uses race, and dies after
// VerifyLifetime; an operator's sign-up is confirmed at once.
func TestAddressConfirmation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		s, links := verifyService(t, db, clk)

		op, err := s.SignUp(ctx, "operator-made@example.com", "correct horse battery", "", "fa")
		if err != nil || !op.Verified() || verifiedAt(t, db, op.ID) == nil || links.count() != 0 {
			t.Fatalf("operator's sign-up: %v, verified %v, %d links", err, op.Verified(), links.count())
		}

		u, err := s.Register(ctx, "Sara@Example.com", "correct horse battery", "fa")
		if err != nil {
			t.Fatal(err)
		}
		if u.Verified() || verifiedAt(t, db, u.ID) != nil || links.count() != 1 {
			t.Fatalf("a person's sign-up: verified %v, %d links", u.Verified(), links.count())
		}
		tok := links.last(t, true)
		if n := count(t, db, `SELECT COUNT(*) FROM email_verifications WHERE token_hash = ?`, tok); n != 0 {
			t.Fatal("the token is stored in clear")
		}
		// A session's view of the user says so too.
		sess, _, err := s.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.UserBySession(ctx, sess); err != nil || got.Verified() {
			t.Fatalf("session's user: verified %v, %v", got.Verified(), err)
		}
		if got, err := s.CheckVerification(ctx, tok); err != nil || got.ID != u.ID {
			t.Fatalf("check: %v", err)
		}
		for _, bad := range []string{"", "nope", tok + "x"} {
			if _, err := s.Verify(ctx, bad, u.ID); !errors.Is(err, auth.ErrVerifyInvalid) {
				t.Fatalf("token %q: %v", bad, err)
			}
		}
		// The link proves the inbox, not the account: for another
		// account it is refused, and left unspent.
		if _, err := s.Verify(ctx, tok, op.ID); !errors.Is(err, auth.ErrVerifyInvalid) {
			t.Fatalf("the link for another account: %v", err)
		}
		if verifiedAt(t, db, u.ID) != nil || verifiedAt(t, db, op.ID) == nil {
			t.Fatal("a wrong token or account confirmed the address")
		}

		// Two uses at once: one confirms, the other is refused.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); _, errs[i] = s.Verify(ctx, tok, u.ID) }()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, auth.ErrVerifyInvalid):
				t.Fatalf("racing use: %v", err)
			}
		}
		at := verifiedAt(t, db, u.ID)
		if ok != 1 || at == nil || !at.Equal(clk.Now()) {
			t.Fatalf("%d uses succeeded, confirmed at %v", ok, at)
		}
		if got, err := s.UserBySession(ctx, sess); err != nil || !got.Verified() {
			t.Fatalf("session's user after the link: verified %v, %v", got.Verified(), err)
		}
		// Confirmed: asking again mails nothing.
		if queued, err := s.RequestVerification(ctx, u.ID); err != nil || queued || links.count() != 1 {
			t.Fatalf("again after confirming: %v, queued %v, %d links", err, queued, links.count())
		}

		// Another person's link expires.
		v, err := s.Register(ctx, "late@example.com", "correct horse battery", "en")
		if err != nil {
			t.Fatal(err)
		}
		late := links.last(t, true)
		clk.Add(auth.VerifyLifetime + time.Second)
		if _, err := s.Verify(ctx, late, v.ID); !errors.Is(err, auth.ErrVerifyInvalid) || verifiedAt(t, db, v.ID) != nil {
			t.Fatalf("expired link: %v", err)
		}
		if _, err := s.CheckVerification(ctx, late); !errors.Is(err, auth.ErrVerifyInvalid) {
			t.Fatalf("expired link checked: %v", err)
		}
		// A new one works.
		if queued, err := s.RequestVerification(ctx, v.ID); err != nil || !queued {
			t.Fatalf("a new link: %v, queued %v", err, queued)
		}
		if _, err := s.Verify(ctx, links.last(t, true), v.ID); err != nil || verifiedAt(t, db, v.ID) == nil {
			t.Fatalf("the new link: %v", err)
		}
		// A day past their expiry the two first links go; the new one,
		// used but not expired, stays.
		clk.Add(24 * time.Hour)
		if n, err := s.PurgeVerifications(ctx); err != nil || n != 2 {
			t.Fatalf("purged %d, %v", n, err)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM email_verifications`); n != 1 {
			t.Fatalf("%d links left, want 1", n)
		}
	})
}

// "Send the link again" mails at most five live links; past them nothing
// more is sent, until one expires.
func TestAddressConfirmationLinksAreBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		s, links := verifyService(t, db, clk)
		u, err := s.Register(ctx, "flood@example.com", "correct horse battery", "fa")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.RequestVerification(ctx, u.ID); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := links.count(); n != 5 {
			t.Fatalf("%d links mailed, want 5", n)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM email_verifications WHERE user_id = ?`, u.ID); n != 5 {
			t.Fatalf("%d links stored, want 5", n)
		}
		clk.Add(auth.VerifyLifetime + time.Minute)
		if queued, err := s.RequestVerification(ctx, u.ID); err != nil || !queued || links.count() != 6 {
			t.Fatalf("after they expired: %v, queued %v", err, queued)
		}
	})
}

// A password reset by its mailed link proves the inbox too: the address
// is confirmed, and the stranger who signed up with it is signed out.
func TestResetLinkConfirmsTheAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		s, links := verifyService(t, db, clk)
		u, err := s.Register(ctx, "owner@example.com", "a stranger's password", "fa")
		if err != nil {
			t.Fatal(err)
		}
		stranger, _, err := s.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetDisplayName(ctx, u.ID, "Not the owner"); err != nil {
			t.Fatal(err)
		}
		if err := s.RequestReset(ctx, "owner@example.com", "10.0.0.9"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.ResetPassword(ctx, links.last(t, false), "the owner's own password"); err != nil {
			t.Fatal(err)
		}
		if verifiedAt(t, db, u.ID) == nil {
			t.Fatal("the reset did not confirm the address")
		}
		if name, err := s.DisplayName(ctx, u.ID); err != nil || name != "" {
			t.Fatalf("the stranger's display name %q survived the reset (%v)", name, err)
		}
		if _, err := s.CheckVerification(ctx, links.last(t, true)); !errors.Is(err, auth.ErrVerifyInvalid) {
			t.Fatalf("the confirmation link after the reset: %v", err)
		}
		if _, err := s.UserBySession(ctx, stranger); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("the stranger's session: %v", err)
		}
	})
}

// Without a mailer a person's sign-up is refused, and writes nothing.
func TestRegisterNeedsAMailer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost})
		if _, err := s.Register(context.Background(), "x@example.com", "correct horse battery", "fa"); err == nil {
			t.Fatal("registered without a mailer")
		}
		if n := count(t, db, `SELECT COUNT(*) FROM users`); n != 0 {
			t.Fatalf("%d users", n)
		}
	})
}

// An account whose address is not confirmed is made no admin (it may be a
// stranger's who signed up with the address); confirmed, it is.
func TestPromoteNeedsAConfirmedAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		s, links := verifyService(t, db, clk)
		u, err := s.Register(ctx, "would-be-admin@example.com", "correct horse battery", "en")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetRole(ctx, u.Email, auth.RoleAdmin); !errors.Is(err, auth.ErrAddressUnconfirmed) {
			t.Fatalf("promote unconfirmed: %v", err)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM users WHERE role = 'admin'`); n != 0 {
			t.Fatalf("%d admins", n)
		}
		if _, err := s.Verify(ctx, links.last(t, true), u.ID); err != nil {
			t.Fatal(err)
		}
		if ch, err := s.SetRole(ctx, u.Email, auth.RoleAdmin); err != nil || ch.User.Role != auth.RoleAdmin {
			t.Fatalf("promote confirmed: %v", err)
		}
	})
}
