package transfer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
)

// dropWallet takes away a fresh user's wallet and its (empty) account: a
// user made before wallets were.
func (f *fixture) dropWallet(p person) {
	f.t.Helper()
	for _, q := range []string{`DELETE FROM ledger_accounts WHERE wallet_id = ?`, `DELETE FROM wallets WHERE id = ?`} {
		if err := f.db.Gorm.Exec(q, p.W.ID).Error; err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) wallets(p person) int64 {
	f.t.Helper()
	var n int64
	if err := f.db.Gorm.Raw(`SELECT COUNT(*) FROM wallets WHERE user_id = ?`, p.ID).Scan(&n).Error; err != nil {
		f.t.Fatal(err)
	}
	return n
}

// A sender without a wallet yet is short (Quote and Send, the page and
// the API alike), and nothing is written; a recipient without one
// receives: its wallet and account are made in the transfer's
// transaction.
func TestTransfersWithoutWallet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		a, b := f.user("alice@example.com", 500_000), f.user("bob@example.com", 0)
		f.dropWallet(b)
		// Bob, without a wallet, sends: short, nothing written.
		if _, err := f.svc.Quote(ctx, req(b, a.Email, 20_000)); !errors.Is(err, transfer.ErrInsufficientFunds) {
			t.Fatalf("quote from no wallet: %v", err)
		}
		if _, err := f.svc.Send(ctx, req(b, a.Email, 20_000)); !errors.Is(err, transfer.ErrInsufficientFunds) {
			t.Fatalf("send from no wallet: %v", err)
		}
		if f.wallets(b) != 0 || f.balance(a) != 500_000 {
			t.Fatalf("a refused send wrote: %d wallets, alice %d", f.wallets(b), f.balance(a))
		}
		if list, _, err := f.svc.List(ctx, a.ID, 0, 10); err != nil || len(list) != 0 {
			t.Fatalf("transfers after a refusal: %v %v", list, err)
		}
		// Alice sends to Bob: he receives.
		q, err := f.svc.Quote(ctx, req(a, b.Email, 120_000))
		if err != nil || q.RecipientUserID != b.ID {
			t.Fatalf("quote to no wallet: %+v %v", q, err)
		}
		r := req(a, b.Email, 120_000)
		res, err := f.svc.Send(ctx, r)
		if err != nil || res.Transfer.RecipientUserID != b.ID {
			t.Fatalf("send to no wallet: %+v %v", res, err)
		}
		if again, err := f.svc.Send(ctx, r); err != nil || !again.Replayed {
			t.Fatalf("replay: %+v %v", again, err)
		}
		w, err := f.ws.ForUser(ctx, b.ID)
		if err != nil || w.BalanceRials != 120_000 || f.balance(a) != 380_000 || f.wallets(b) != 1 {
			t.Fatalf("after: bob %+v %v, alice %d", w, err, f.balance(a))
		}
		// Now he has money, he sends.
		b.W = w
		if _, err := f.svc.Send(ctx, req(b, a.Email, 20_000)); err != nil || f.balance(b) != 100_000 {
			t.Fatalf("bob sends: %v (balance %d)", err, f.balance(b))
		}
		f.checkInvariants()
	})
}
