package wallet_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A user without a wallet reads as an empty one (Figures, nothing
// written); Ensure makes it and its account once, eight at once too.
func TestEnsureMakesOneWallet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		var uid int64
		if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, role, locale, created_at) VALUES ('old@example.com', 'x', 'user', 'fa', ?) RETURNING id`,
			time.Now().UTC()).Scan(&uid).Error; err != nil {
			t.Fatal(err)
		}
		w, err := f.ws.Figures(ctx, uid)
		if err != nil || w.ID != 0 || w.UserID != uid || w.AvailableRials() != 0 {
			t.Fatalf("figures without a wallet: %+v %v", w, err)
		}
		count := func(q string) int64 {
			var n int64
			if err := db.Gorm.Raw(q, uid).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count(`SELECT COUNT(*) FROM wallets WHERE user_id = ?`); n != 0 {
			t.Fatalf("Figures wrote %d wallets", n)
		}
		now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		ids := make([]int64, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := f.ws.Ensure(ctx, uid, now)
				if err != nil {
					t.Errorf("ensure: %v", err)
				}
				ids[i] = w.AccountID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id == 0 || id != ids[0] {
				t.Fatalf("accounts %v", ids)
			}
		}
		if n := count(`SELECT COUNT(*) FROM ledger_accounts WHERE user_id = ? AND kind = 'wallet'`); n != 1 {
			t.Fatalf("%d wallet accounts", n)
		}
		if w, err := f.ws.ForUser(ctx, uid); err != nil || w.AccountID != ids[0] || !w.CreatedAt.Equal(now) {
			t.Fatalf("the wallet made: %+v %v", w, err)
		}
	})
}
