package auth_test

import (
	"context"
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
