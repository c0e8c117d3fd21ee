package auth_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/webhook"
)

// A reset link is sent only for a known address, works once even when two
// uses race, dies after 30 minutes, and ends sessions and tokens.
func TestPasswordResetLink(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		var mu sync.Mutex
		var tokens []string
		s := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost,
			ResetMailer: func(_ *gorm.DB, u auth.User, token string, expires time.Time) error {
				mu.Lock()
				defer mu.Unlock()
				if !expires.Equal(clk.Now().Add(30 * time.Minute)) {
					t.Errorf("link expires %s", expires)
				}
				tokens = append(tokens, token)
				return nil
			}})
		u, err := s.SignUp(ctx, "reset@example.com", "correct horse battery", "", "fa")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.NewSession(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.RequestReset(ctx, "nobody@example.com", "10.0.0.1"); err != nil || len(tokens) != 0 {
			t.Fatalf("unknown address: %v, %d links", err, len(tokens))
		}
		if err := s.RequestReset(ctx, "not an address", "10.0.0.1"); err != nil {
			t.Fatalf("invalid address: %v", err)
		}
		if err := s.RequestReset(ctx, "RESET@example.com", "10.0.0.1"); err != nil || len(tokens) != 1 {
			t.Fatalf("known address: %v, %d links", err, len(tokens))
		}
		if n := count(t, db, `SELECT COUNT(*) FROM password_resets WHERE token_hash = ?`, tokens[0]); n != 0 {
			t.Fatal("the token is stored in clear")
		}
		if got, err := s.CheckReset(ctx, tokens[0]); err != nil || got.ID != u.ID {
			t.Fatalf("check: %v", err)
		}
		if _, _, err := s.ResetPassword(ctx, tokens[0], "short"); !errors.Is(err, auth.ErrPasswordTooShort) {
			t.Fatalf("weak password: %v", err)
		}
		// Two uses at once: exactly one wins.
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = s.ResetPassword(ctx, tokens[0], "a new long password")
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, auth.ErrResetInvalid):
				t.Fatalf("race: %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d uses of one link succeeded", won)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM sessions`); n != 0 {
			t.Fatalf("%d sessions after the reset", n)
		}
		if _, err := s.Authenticate(ctx, "reset@example.com", "a new long password"); err != nil {
			t.Fatalf("new password: %v", err)
		}
		// A second link expires unused.
		if err := s.RequestReset(ctx, "reset@example.com", "10.0.0.1"); err != nil || len(tokens) != 2 {
			t.Fatalf("second link: %v", err)
		}
		clk.Add(30*time.Minute + time.Second)
		if _, err := s.CheckReset(ctx, tokens[1]); !errors.Is(err, auth.ErrResetInvalid) {
			t.Fatalf("expired link: %v", err)
		}
		if _, _, err := s.ResetPassword(ctx, tokens[1], "another long password"); !errors.Is(err, auth.ErrResetInvalid) {
			t.Fatalf("expired link used: %v", err)
		}
		if _, _, err := s.ResetPassword(ctx, "made-up", "another long password"); !errors.Is(err, auth.ErrResetInvalid) {
			t.Fatalf("made-up link: %v", err)
		}
	})
}

// RequestReset answers no sooner than ResetAnswerAfter after it began,
// for a known address (whose link and mail are written), an unknown one
// and one that is not an address: the time tells nothing. A throttled
// request answers at once.
func TestResetAnswersInTheSameTime(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		const after = 500 * time.Millisecond
		var waited []time.Duration
		links := 0
		s := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost, ResetAnswerAfter: after,
			Wait: func(_ context.Context, d time.Duration) { waited = append(waited, d); clk.Add(d) },
			ResetMailer: func(*gorm.DB, auth.User, string, time.Time) error {
				clk.Add(70 * time.Millisecond) // the link's write takes its time
				links++
				return nil
			}})
		if _, err := s.SignUp(ctx, "known@example.com", "correct horse battery", "", "fa"); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			email string
			wait  time.Duration
			links int
		}{
			{"known@example.com", after - 70*time.Millisecond, 1},
			{"nobody@example.com", after, 1},
			{"not an address", after, 1},
		} {
			waited = nil
			start := clk.Now()
			if err := s.RequestReset(ctx, tt.email, "10.0.0.1"); err != nil {
				t.Fatalf("%s: %v", tt.email, err)
			}
			if took := clk.Now().Sub(start); took != after || len(waited) != 1 || waited[0] != tt.wait || links != tt.links {
				t.Errorf("%s: took %v (waited %v), %d links; want %v (waited %v), %d links", tt.email, took, waited, links, after, tt.wait, tt.links)
			}
		}
		// Throttled: the answer comes at once, for any address.
		var throttled *auth.ThrottledError
		for i := 0; i < 30 && throttled == nil; i++ {
			waited = nil
			err := s.RequestReset(ctx, "nobody@example.com", "10.0.0.2")
			if errors.As(err, &throttled) && len(waited) != 0 {
				t.Fatalf("a throttled request waited %v", waited)
			}
		}
		if throttled == nil {
			t.Fatal("never throttled")
		}
	})
}

// Everything that ends every session (sign out everywhere, a password
// change, a reset by mail, set-password) turns off the user's webhook
// endpoints too, as their owner would, and says how many: one that
// someone added while signed in hears nothing more of the account.
func TestEndingEverythingTurnsOffWebhooks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		var token string
		s := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost,
			ResetMailer: func(_ *gorm.DB, _ auth.User, tok string, _ time.Time) error { token = tok; return nil }})
		hooks, err := webhook.New(db, clk.Now, webhook.Options{SessionSecret: make([]byte, 32), AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		bystander, err := s.SignUp(ctx, "bystander@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		theirs, _, err := hooks.Create(ctx, bystander.ID, "http://127.0.0.1:9/bystander", webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, tt := range []struct {
			name string
			end  func(u auth.User) (int64, error)
		}{
			{"sign out everywhere", func(u auth.User) (int64, error) {
				_, err := s.EndAllSessions(ctx, u.ID)
				return -1, err
			}},
			{"password change", func(u auth.User) (int64, error) {
				tok, _, err := s.NewSession(ctx, u.ID)
				if err != nil {
					return 0, err
				}
				ended, err := s.ChangePassword(ctx, u.ID, tok, "correct horse battery", "another long password")
				return ended.Endpoints, err
			}},
			{"reset by mail", func(u auth.User) (int64, error) {
				if err := s.RequestReset(ctx, u.Email, "10.0.0.1"); err != nil {
					return 0, err
				}
				_, ended, err := s.ResetPassword(ctx, token, "another long password")
				return ended.Endpoints, err
			}},
			{"set-password", func(u auth.User) (int64, error) {
				_, ended, err := s.SetPassword(ctx, u.Email, "another long password")
				return ended.Endpoints, err
			}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				u, err := s.SignUp(ctx, fmt.Sprintf("owner%d@example.com", i), "correct horse battery", "", "en")
				if err != nil {
					t.Fatal(err)
				}
				var eps []webhook.Endpoint
				for _, path := range []string{"a", "b"} {
					ep, _, err := hooks.Create(ctx, u.ID, "http://127.0.0.1:9/"+path, webhook.Types(), nil)
					if err != nil {
						t.Fatal(err)
					}
					eps = append(eps, ep)
				}
				n, err := tt.end(u)
				if err != nil || (n != -1 && n != 2) {
					t.Fatalf("%d endpoints turned off, %v; want 2", n, err)
				}
				for _, ep := range eps {
					if e, err := hooks.Get(ctx, ep.ID); err != nil || e.DisabledAt == nil || e.DisabledByAdmin() {
						t.Errorf("endpoint %s: %+v %v, want off as by its owner", ep.URL, e, err)
					}
				}
				if e, _ := hooks.Get(ctx, theirs.ID); e.DisabledAt != nil {
					t.Errorf("another user's endpoint: %+v", e)
				}
			})
		}
	})
}

// Requests at once for one account never queue more than five live reset
// links: each counts them under the account's lock.
func TestResetLinksCappedUnderConcurrency(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var mu sync.Mutex
		mails := 0
		s := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost,
			ResetMailer: func(*gorm.DB, auth.User, string, time.Time) error {
				mu.Lock()
				defer mu.Unlock()
				mails++
				return nil
			}})
		if _, err := s.SignUp(ctx, "flood@example.com", "correct horse battery", "", "en"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if err := s.RequestReset(ctx, "flood@example.com", fmt.Sprintf("10.0.1.%d", i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM password_resets`); n != 5 || mails != 5 {
			t.Fatalf("%d live links, %d mails; want 5 of each", n, mails)
		}
	})
}
