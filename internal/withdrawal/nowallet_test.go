package withdrawal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// A user without a wallet yet asks to cash out: short, as any short
// balance, and nothing is written.
func TestRequestWithoutWallet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		var uid int64
		if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, role, locale, created_at) VALUES ('nowallet@example.com', 'x', 'user', 'en', ?) RETURNING id`,
			time.Now().UTC()).Scan(&uid).Error; err != nil {
			t.Fatal(err)
		}
		acct := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 77))
		_, err := e.svc.Request(context.Background(), withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: 1_000_000})
		if !errors.Is(err, withdrawal.ErrInsufficientFunds) {
			t.Fatalf("request without a wallet: %v", err)
		}
		if n := len(withdrawaltest.All(t, db)); n != 0 {
			t.Fatalf("%d withdrawals written by the refusal", n)
		}
	})
}
