package wallet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The wallet page shows what may be spent, what is held (with one line
// saying why), and a history row per ledger transaction: its kind in the
// page's language, the signed amount and the balance after it.
func TestWalletPageShowsHeldAndEveryKind(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		ctx := context.Background()
		const pw = "correct horse battery"
		u, err := app.Server.Auth.SignUp(ctx, "held@example.com", pw, "", "fa")
		if err != nil {
			t.Fatal(err)
		}
		other, err := app.Server.Auth.SignUp(ctx, "friend@example.com", pw, "", "fa")
		if err != nil {
			t.Fatal(err)
		}
		c := app.NewClient(t)
		c.SignIn("held@example.com", pw)
		if r := c.Get(routes.Wallet); apptest.Parse(r.Body).TestID("held") != nil {
			t.Fatal("a wallet with nothing held shows a held line")
		}

		l := app.Server.Ledger
		mine, _ := app.Server.Wallets.ForUser(ctx, u.ID)
		theirs, _ := app.Server.Wallets.ForUser(ctx, other.ID)
		gw, err := l.EnsureAccount(ctx, ledger.AccountGateway, ledger.GatewayCode("zarinpal"), 0)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for _, e := range []ledger.Entry{
			{Kind: ledger.KindAdjustment, Reference: "adj-1", Postings: ledger.Transfer(gw, mine.AccountID, 500_000), At: now},
			{Kind: ledger.KindTransfer, Reference: "tr-1", Postings: ledger.Transfer(mine.AccountID, theirs.AccountID, 120_000), At: now},
		} {
			if _, err := l.Write(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Hold(ctx, ledger.HoldRequest{AccountID: mine.AccountID, AmountRials: 80_000, Reason: "charge", Reference: "ch-1",
			ExpiresAt: now.Add(time.Hour), Now: now}); err != nil {
			t.Fatal(err)
		}

		doc := apptest.Parse(c.Get(routes.Wallet).Body)
		if b := doc.TestID("balance"); b == nil || b.Attr("data-rials") != "300000" {
			t.Fatalf("the balance shown is not the available 300000: %v", b)
		}
		held := doc.TestID("held")
		if held == nil || held.Attr("data-rials") != "80000" || held.Text() == "" {
			t.Fatalf("held line: %v", held)
		}
		var rows []struct{ kind, rials, after, text string }
		afters := doc.TestIDs("history-balance-after")
		for i, li := range doc.TestIDs("history-row") {
			after := ""
			if i < len(afters) {
				after = afters[i].Attr("data-rials")
			}
			rows = append(rows, struct{ kind, rials, after, text string }{li.Attr("data-kind"), li.Attr("data-rials"), after, li.Text()})
		}
		want := []struct{ kind, rials, after string }{{"transfer", "-120000", "380000"}, {"adjustment", "500000", "500000"}}
		if len(rows) != len(want) {
			t.Fatalf("history rows %+v", rows)
		}
		for i, w := range want {
			if rows[i].kind != w.kind || rows[i].rials != w.rials || rows[i].after != w.after {
				t.Errorf("row %d: %+v, want %+v", i, rows[i], w)
			}
		}
		// Persian labels and the debit's sign.
		if r := rows[0].text; !strings.Contains(r, "انتقال") || !strings.Contains(r, "\u2212") {
			t.Errorf("transfer row reads %q", r)
		}
		if r := rows[1].text; !strings.Contains(r, "اصلاح") {
			t.Errorf("adjustment row reads %q", r)
		}
		apptest.CheckInvariants(t, db)
	})
}
