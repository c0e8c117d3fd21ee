package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/web/api"
)

// The wallet's figures and its ledger through the API: a hold shows as
// held and lowers the available balance, and the history lists every kind
// of transaction with its signed amount and the balance after it.
func TestWalletFiguresAndLedgerKinds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		ctx := context.Background()
		c, uid := f.user(t, "held@example.com", apitoken.ScopeRead)
		_, other := f.user(t, "friend@example.com", apitoken.ScopeRead)
		l := f.app.Server.Ledger
		mine, err := f.app.Server.Wallets.ForUser(ctx, uid)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := f.app.Server.Wallets.ForUser(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		gw, err := l.EnsureAccount(ctx, ledger.AccountGateway, ledger.GatewayCode("zarinpal"), 0)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		write := func(kind ledger.Kind, ref string, ps []ledger.Posting) ledger.Transaction {
			t.Helper()
			tx, err := l.Write(ctx, ledger.Entry{Kind: kind, Reference: ref, Postings: ps, At: now})
			if err != nil {
				t.Fatal(err)
			}
			return tx
		}
		write(ledger.KindAdjustment, "adj-1", ledger.Transfer(gw, mine.AccountID, 500_000))
		sent := write(ledger.KindTransfer, "tr-1", ledger.Transfer(mine.AccountID, theirs.AccountID, 120_000))
		if _, err := l.Hold(ctx, ledger.HoldRequest{AccountID: mine.AccountID, AmountRials: 80_000, Reason: "charge", Reference: "ch-1",
			ExpiresAt: now.Add(time.Hour), Now: now}); err != nil {
			t.Fatal(err)
		}

		w := decode[api.Wallet](t, c.get(routes.APIWallet))
		if w.BalanceRials != 380_000 || w.HeldRials != 80_000 || w.AvailableRials != 300_000 {
			t.Fatalf("wallet %+v, want balance 380000, held 80000, available 300000", w)
		}
		page := decode[api.LedgerPage](t, c.get(routes.APIWalletLedger))
		if len(page.Items) != 2 {
			t.Fatalf("ledger: %s", mustJSON(page))
		}
		tr, adj := page.Items[0], page.Items[1]
		if tr.ID != sent.ID || tr.Kind != "transfer" || tr.AmountRials != -120_000 || tr.BalanceAfterRials != 380_000 || tr.TopUpID != nil {
			t.Errorf("transfer row: %s", mustJSON(tr))
		}
		if adj.Kind != "adjustment" || adj.AmountRials != 500_000 || adj.BalanceAfterRials != 500_000 {
			t.Errorf("adjustment row: %s", mustJSON(adj))
		}
		// A reversal of the transfer: a row of its own pointing at it.
		if _, err := l.Reverse(ctx, sent.ID, "sent by mistake", now); err != nil {
			t.Fatal(err)
		}
		page = decode[api.LedgerPage](t, c.get(routes.APIWalletLedger))
		if rev := page.Items[0]; rev.Kind != "reversal" || rev.AmountRials != 120_000 || rev.BalanceAfterRials != 500_000 ||
			rev.ReversesID == nil || *rev.ReversesID != sent.ID || rev.Note != "sent by mistake" {
			t.Errorf("reversal row: %s", mustJSON(rev))
		}
		apptest.CheckInvariants(t, db)
	})
}

// A user without a wallet row yet (made before wallets were) reads an
// empty wallet and an empty ledger through the API, not a 500; nothing
// is written.
func TestWalletWithoutAWalletRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, uid := f.user(t, "legacy@example.com", apitoken.ScopeRead)
		ledgertest.DropWallet(t, db, uid)
		w := decode[api.Wallet](t, c.get(routes.APIWallet))
		if w.BalanceRials != 0 || w.HeldRials != 0 || w.AvailableRials != 0 || !w.UpdatedAt.IsZero() {
			t.Fatalf("wallet %+v, want an empty one", w)
		}
		page := decode[api.LedgerPage](t, c.get(routes.APIWalletLedger))
		if len(page.Items) != 0 || page.NextCursor != nil {
			t.Fatalf("ledger: %s", mustJSON(page))
		}
		if n := ledgertest.Wallets(t, db, uid); n != 0 {
			t.Fatalf("%d wallets made by a read", n)
		}
	})
}
