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
)

// Issue 31, item 10: a stranger flooding someone's address with reset
// requests is throttled, and delays only their own requests: the owner,
// from their own address, is never told to wait. A flood from many
// clients sends at most five live links to the owner's inbox.
func TestResetThrottlesTheRequesterNotTheOwner(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		var mu sync.Mutex
		mails := 0
		s := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost,
			ResetMailer: func(*gorm.DB, auth.User, string, time.Time) error {
				mu.Lock()
				defer mu.Unlock()
				mails++
				return nil
			}})
		if _, err := s.SignUp(ctx, "victim@example.com", "correct horse battery", "", "fa"); err != nil {
			t.Fatal(err)
		}
		throttled := 0
		for i := 0; i < 8; i++ {
			if err := s.RequestReset(ctx, "victim@example.com", "203.0.113.9"); err != nil {
				throttled++
			}
		}
		if throttled == 0 {
			t.Fatal("the flooding client was never throttled")
		}
		if err := s.RequestReset(ctx, "victim@example.com", "198.51.100.7"); err != nil {
			t.Fatalf("the owner, from their own address, after a stranger's flood: %v", err)
		}
		for _, ip := range []string{"203.0.113.10", "203.0.113.11", "203.0.113.12"} {
			for i := 0; i < 5; i++ {
				_ = s.RequestReset(ctx, "victim@example.com", ip)
			}
		}
		if mails != 5 {
			t.Fatalf("%d reset mails after floods from four clients, want at most 5 live links", mails)
		}
		// The links expire: the owner gets a new one.
		clk.Add(31 * time.Minute)
		if err := s.RequestReset(ctx, "victim@example.com", "198.51.100.7"); err != nil || mails != 6 {
			t.Fatalf("after the links expired: %v, %d mails", err, mails)
		}
	})
}

// A stranger guessing an owner's password from one client locks only
// that client out: the owner, from another, signs in with the right
// password. Guesses spread over many clients still slow down past
// AccountFreeAttempts. A reset lets the owner sign in and ask for links
// again at once, from the client that guessed wrong before it too.
func TestSignInThrottlesTheGuesserNotTheOwner(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		var tok string
		s := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost,
			ResetMailer: func(_ *gorm.DB, _ auth.User, t string, _ time.Time) error { tok = t; return nil }})
		const addr, pw = "owner_1%@example.com", "correct horse battery"
		if _, err := s.SignUp(ctx, addr, pw, "", "fa"); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			_, err := s.AuthenticateFrom(ctx, addr, "wrong guess", "203.0.113.9")
			if want := i == 5; errors.Is(err, auth.ErrThrottled) != want {
				t.Fatalf("stranger's guess %d: %v, throttled want %v", i+1, err, want)
			}
		}
		if _, err := s.AuthenticateFrom(ctx, addr, pw, "203.0.113.9"); !errors.Is(err, auth.ErrThrottled) {
			t.Fatalf("the right password from the guessing client, while it waits: %v", err)
		}
		if _, err := s.AuthenticateFrom(ctx, addr, pw, "198.51.100.7"); err != nil {
			t.Fatalf("the owner from their own address, after a stranger's guesses: %v", err)
		}
		// Guesses from many clients: past the account's allowance each
		// further attempt waits, from every client, the owner's too.
		for i := range auth.AccountFreeAttempts {
			if _, err := s.AuthenticateFrom(ctx, addr, "wrong guess", fmt.Sprintf("10.0.%d.%d", i/200, i%200)); !errors.Is(err, auth.ErrBadCredentials) {
				t.Fatalf("spread guess %d: %v", i+1, err)
			}
		}
		if _, err := s.AuthenticateFrom(ctx, addr, pw, "198.51.100.7"); !errors.Is(err, auth.ErrThrottled) {
			t.Fatalf("past the account's allowance: %v, want a wait", err)
		}
		// The owner guesses wrong from home, then resets the password by
		// mail: signed in at once from home, and asks for a link again.
		clk.Add(2 * time.Second)
		for range 6 {
			_, _ = s.AuthenticateFrom(ctx, addr, "my old password?", "198.51.100.7")
		}
		for range 6 {
			_ = s.RequestReset(ctx, addr, "198.51.100.7")
		}
		if tok == "" {
			t.Fatal("no reset link")
		}
		if _, _, err := s.ResetPassword(ctx, tok, "a brand new password"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AuthenticateFrom(ctx, addr, "a brand new password", "198.51.100.7"); err != nil {
			t.Fatalf("signing in from home right after the reset: %v", err)
		}
		if err := s.RequestReset(ctx, addr, "198.51.100.7"); err != nil {
			t.Fatalf("asking for a link again right after the reset: %v", err)
		}
	})
}
