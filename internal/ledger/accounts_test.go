package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// newUserWallet makes a user and a wallet with its account through tx.
func newUserWallet(t *testing.T, tx *gorm.DB, email string, now time.Time) (walletID, accountID int64) {
	t.Helper()
	var uid int64
	if err := tx.Raw(`INSERT INTO users (email, password_hash, created_at) VALUES (?, 'x', ?) RETURNING id`, email, now).Scan(&uid).Error; err != nil {
		t.Fatal(err)
	}
	if err := tx.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, now, now).Scan(&walletID).Error; err != nil {
		t.Fatal(err)
	}
	accountID, err := ledger.CreateWalletAccount(tx, walletID, uid, now)
	if err != nil {
		t.Fatal(err)
	}
	return walletID, accountID
}

var errRollback = errors.New("roll back")

// The id caches never hand out an id read inside a transaction that then
// rolled back: on PostgreSQL that id names no account any more; on
// SQLite, whose AUTOINCREMENT rolls back with the transaction, the same id
// is handed to the next account made — another user's wallet.
func TestCachesNeverKeepUncommittedIDs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()

		// A clearing slot made by a credit's transaction, read twice in it,
		// rolled back.
		err := db.Tx(ctx, func(tx *gorm.DB) error {
			for range 2 {
				if _, err := b.l.ClearingAccount(tx, "newbank", 3); err != nil {
					return err
				}
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
		// A wallet made and read in a transaction that rolls back.
		var rolledWallet int64
		err = db.Tx(ctx, func(tx *gorm.DB) error {
			wid, _ := newUserWallet(t, tx, "rolled@example.com", b.now)
			if _, err := b.l.WalletAccount(tx, wid); err != nil {
				return err
			}
			rolledWallet = wid
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
		if id, err := b.l.WalletAccount(db.Gorm, rolledWallet); !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Fatalf("the account of rolled-back wallet %d: %d, %v; want ErrAccountNotFound", rolledWallet, id, err)
		}
		// Another user signs up (on SQLite: the same wallet and account
		// ids as the rolled-back ones).
		wid, acc := newUserWallet(t, db.Gorm, "next@example.com", b.now)
		if got, err := b.l.WalletAccount(db.Gorm, wid); err != nil || got != acc {
			t.Fatalf("the account of wallet %d: %d, %v; want %d", wid, got, err, acc)
		}
		// The clearing slot the credit now takes is a clearing slot.
		err = db.Tx(ctx, func(tx *gorm.DB) error {
			id, err := b.l.ClearingAccount(tx, "newbank", 3)
			if err != nil {
				return err
			}
			var code string
			if err := tx.Raw(`SELECT code FROM ledger_accounts WHERE id = ?`, id).Scan(&code).Error; err != nil {
				return err
			}
			if code != ledger.ClearingCode("newbank", 3) {
				return fmt.Errorf("clearing slot of newbank is account %d, %q", id, code)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		b.check()
	})
}

// EnsureAccount never answers with an account of another kind than the
// one asked for.
func TestEnsureAccountKeepsItsKind(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		if id, err := b.l.EnsureAccount(ctx, ledger.AccountMerchant, ledger.CodeSuspense, 0); err == nil {
			t.Fatalf("a merchant account asked for the suspense account's code: got account %d", id)
		}
		// Asked again of the kind it is: the same account.
		id1, err := b.l.EnsureAccount(ctx, ledger.AccountSuspense, ledger.CodeSuspense, 0)
		if err != nil {
			t.Fatal(err)
		}
		id2, err := b.l.EnsureAccount(ctx, ledger.AccountSuspense, ledger.CodeSuspense, 0)
		if err != nil || id1 != id2 {
			t.Fatalf("suspense %d then %d, %v", id1, id2, err)
		}
		if _, err := b.l.EnsureAccount(ctx, ledger.AccountGateway, ledger.CodeSuspense, 0); err == nil {
			t.Fatal("a gateway account asked for the suspense account's code (cached)")
		}
	})
}

// The caches hold at most their cap of ids, however many wallets there
// are, and answer right after they were emptied.
func TestCachesAreBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		l := ledger.New(db)
		ledger.SetCacheCap(l, 4)
		now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		wallets := map[int64]int64{}
		for i := range 10 {
			wid, acc := newUserWallet(t, db.Gorm, fmt.Sprintf("bounded%d@example.com", i), now)
			wallets[wid] = acc
		}
		for round := range 3 {
			for wid, acc := range wallets {
				if got, err := l.WalletAccount(db.Gorm, wid); err != nil || got != acc {
					t.Fatalf("round %d: the account of wallet %d: %d, %v; want %d", round, wid, got, err, acc)
				}
				if _, n := ledger.CacheSizes(l); n > 4 || n == 0 {
					t.Fatalf("the wallet cache holds %d ids, cap 4 (and a wallet read outside a transaction is remembered)", n)
				}
			}
		}
		for i := range 10 {
			code := ledger.MerchantCode(int64(1000 + i))
			id, err := l.EnsureAccount(context.Background(), ledger.AccountMerchant, code, 0)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := l.EnsureAccount(context.Background(), ledger.AccountMerchant, code, 0); err != nil || again != id {
				t.Fatalf("%s: %d then %d, %v", code, id, again, err)
			}
			if n, _ := ledger.CacheSizes(l); n > 4 || n == 0 {
				t.Fatalf("the code cache holds %d ids, cap 4", n)
			}
		}
	})
}

// Inside a transaction, a wallet's account is remembered only when the
// caller vouches for the wallet being older (a top-up's credit).
func TestWalletReadInATransactionIsRememberedOnlyWhenVouched(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		l := ledger.New(db)
		now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		wid, acc := newUserWallet(t, db.Gorm, "vouched@example.com", now)
		err := db.Tx(context.Background(), func(tx *gorm.DB) error {
			if got, err := l.WalletAccount(tx, wid); err != nil || got != acc {
				return fmt.Errorf("WalletAccount: %d, %v", got, err)
			}
			if _, n := ledger.CacheSizes(l); n != 0 {
				return fmt.Errorf("a wallet read in a transaction was remembered")
			}
			if got, err := l.CommittedWalletAccount(tx, wid); err != nil || got != acc {
				return fmt.Errorf("CommittedWalletAccount: %d, %v", got, err)
			}
			if _, n := ledger.CacheSizes(l); n != 1 {
				return fmt.Errorf("a vouched wallet was not remembered")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
