package ledger_test

import (
	"context"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// PostToWallet (a top-up's credit) finds the wallet's account itself: a
// wallet without one writes nothing; a first post by a fresh ledger moves
// both balances, returns the postings in account order and remembers the
// wallet's account; a second post of the same reference is a replay.
func TestPostToWallet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		var bare, walletID, account int64
		err := db.Tx(ctx, func(tx *gorm.DB) error {
			walletID, account = newUserWallet(t, tx, "towallet@example.com", b.now)
			var uid int64
			if err := tx.Raw(`INSERT INTO users (email, password_hash, created_at) VALUES ('bare@example.com', 'x', ?) RETURNING id`, b.now).Scan(&uid).Error; err != nil {
				return err
			}
			return tx.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, b.now, b.now).Scan(&bare).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		post := func(l *ledger.Ledger, walletID int64, ref string) (ledger.Transaction, error) {
			var out ledger.Transaction
			err := db.Tx(ctx, func(tx *gorm.DB) error {
				var err error
				out, err = l.PostToWallet(tx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: ref, At: b.now}, b.gw, walletID, 700)
				return err
			})
			return out, err
		}
		l := ledger.New(db) // nothing remembered
		if _, err := post(l, bare, "bare"); !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Fatalf("wallet without an account: %v, want ErrAccountNotFound", err)
		}
		var n int64
		if err := db.Gorm.Raw(`SELECT COUNT(*) FROM ledger_transactions WHERE reference = 'bare'`).Scan(&n).Error; err != nil || n != 0 {
			t.Fatalf("wallet without an account: %d transactions (%v), want none", n, err)
		}
		got, err := post(l, walletID, "first")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Postings) != 2 || got.Postings[0].AccountID != min(b.gw, account) || got.Postings[1].AccountID != max(b.gw, account) {
			t.Fatalf("postings %+v, want the gateway's and account %d's in id order", got.Postings, account)
		}
		for _, p := range got.Postings {
			want := int64(700)
			if p.AccountID == b.gw {
				want = -700
			}
			if p.AmountRials != want || p.TransactionID != got.ID {
				t.Fatalf("posting %+v, want %d rials in transaction %d", p, want, got.ID)
			}
		}
		if a, err := l.Account(ctx, account); err != nil || a.PostedRials != 700 {
			t.Fatalf("wallet's account: %+v, %v; want 700 rials posted", a, err)
		}
		if _, wallets := ledger.CacheSizes(l); wallets != 1 {
			t.Fatalf("%d wallets remembered, want 1", wallets)
		}
		if _, err := post(l, walletID, "first"); !errors.Is(err, ledger.ErrDuplicate) {
			t.Fatalf("replay: %v, want ErrDuplicate", err)
		}
		if _, err := post(l, walletID, "second"); err != nil { // the remembered id
			t.Fatal(err)
		}
		if a, err := l.Account(ctx, account); err != nil || a.PostedRials != 1400 {
			t.Fatalf("wallet's account: %+v, %v; want 1,400 rials posted", a, err)
		}
	})
}
