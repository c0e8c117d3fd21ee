package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
)

// An admin finds a transfer by its id and by either person's e-mail, and
// sees its ledger transaction: two postings, the sender's wallet down
// and the recipient's up.
func TestAdminFindsTransfers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		ctx := context.Background()
		ids := map[string]int64{}
		for _, addr := range []string{"alice@example.com", "bob@example.com"} {
			u, err := app.Server.Auth.SignUp(ctx, addr, "correct horse battery", "", "fa")
			if err != nil {
				t.Fatal(err)
			}
			ids[addr] = u.ID
		}
		w, _ := app.Server.Wallets.ForUser(ctx, ids["alice@example.com"])
		ledgertest.Fund(t, db, w.AccountID, 500_000, "alice")
		res, err := app.Server.Transfers.Send(ctx, transfer.Request{SenderUserID: ids["alice@example.com"], FormToken: formtoken.New(),
			ToEmail: "bob@example.com", AmountRials: 200_000, Note: "کتاب"})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Transfer.PublicID
		admin := app.NewAdmin(t, "root@example.com")
		for _, q := range []string{id, " " + strings.ToUpper(id) + " ", "bob@example.com", "ALICE@example.com"} {
			doc := apptest.Parse(admin.Get(routes.AdminTransfers + "?" + url.Values{"q": {q}}.Encode()).Body)
			rows := doc.TestIDs("admin-transfer-row")
			if len(rows) != 1 || rows[0].Attr("data-id") != id {
				t.Errorf("search %q: %d rows", q, len(rows))
			}
		}
		if doc := apptest.Parse(admin.Get(routes.AdminTransfers + "?q=nobody@example.com").Body); doc.TestID("admin-transfers-none") == nil {
			t.Error("a search that finds nothing says nothing")
		}
		r := admin.Get(routes.AdminTransfer(id))
		doc := apptest.Parse(r.Body)
		if r.Status != http.StatusOK || doc.TestID("admin-transfer") == nil {
			t.Fatalf("detail: %d", r.Status)
		}
		txs := doc.TestIDs("admin-ledger-transaction")
		ps := doc.TestIDs("admin-posting")
		if len(txs) != 1 || txs[0].Attr("data-kind") != "transfer" || len(ps) != 2 || ps[0].Attr("data-rials") == ps[1].Attr("data-rials") {
			t.Fatalf("ledger: %d transactions, %d postings", len(txs), len(ps))
		}
		if r := admin.Get(routes.AdminTransfer("tr_nope")); r.Status != http.StatusNotFound {
			t.Errorf("unknown transfer: %d", r.Status)
		}
		// Not an admin: the page does not exist.
		c := app.NewClient(t)
		c.SignIn("alice@example.com", "correct horse battery")
		if r := c.Get(routes.AdminTransfer(id)); r.Status != http.StatusNotFound {
			t.Errorf("a payer sees the admin page: %d", r.Status)
		}
	})
}
