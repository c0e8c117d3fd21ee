package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// An admin finds charges by id, order id and either party's e-mail, and
// sees each one's ledger transactions: a charge paid at once (kind
// charge) and refunded (kind refund); an authorization captured (kind
// capture); one not yet paid has none.
func TestAdminFindsCharges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		ctx := context.Background()
		ids := map[string]int64{}
		for _, addr := range []string{"shop@example.com", "payer@example.com"} {
			u, err := app.Server.Auth.SignUp(ctx, addr, "correct horse battery", "", "fa")
			if err != nil {
				t.Fatal(err)
			}
			ids[addr] = u.ID
		}
		m, payer := ids["shop@example.com"], ids["payer@example.com"]
		if _, _, err := app.Server.Charges.MakeMerchant(ctx, m, "Book Shop", nil); err != nil {
			t.Fatal(err)
		}
		w, _ := app.Server.Wallets.ForUser(ctx, payer)
		ledgertest.Fund(t, db, w.AccountID, 1_000_000, "payer")
		mk := func(order string, rials int64, capture charge.CaptureMethod) charge.Charge {
			res, err := app.Server.Charges.Create(ctx, charge.CreateRequest{MerchantUserID: m, FormToken: formtoken.New(), AmountRials: rials,
				OrderID: order, Capture: capture})
			if err != nil {
				t.Fatal(err)
			}
			return res.Charge
		}
		paid, held, open := mk("ORD-1", 300_000, charge.CaptureAutomatic), mk("ORD-2", 200_000, charge.CaptureManual), mk("ORD-3", 10_000, charge.CaptureAutomatic)
		for _, ch := range []charge.Charge{paid, held} {
			if _, err := app.Server.Charges.Confirm(ctx, payer, ch.PublicID); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := app.Server.Charges.Capture(ctx, m, held.PublicID, 150_000); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.Charges.Refund(ctx, charge.RefundRequest{MerchantUserID: m, ChargeID: paid.PublicID, FormToken: formtoken.New(),
			AmountRials: 50_000}); err != nil {
			t.Fatal(err)
		}
		admin := app.NewAdmin(t, "root@example.com")
		for q, want := range map[string]int{paid.PublicID: 1, "ORD-2": 1, "payer@example.com": 2, "SHOP@example.com": 3, "": 3, "nobody@example.com": 0} {
			doc := apptest.Parse(admin.Get(routes.AdminCharges + "?" + url.Values{"q": {q}}.Encode()).Body)
			if rows := doc.TestIDs("admin-charge-row"); len(rows) != want {
				t.Errorf("search %q: %d rows, want %d", q, len(rows), want)
			}
			if want == 0 && doc.TestID("admin-charges-none") == nil {
				t.Error("a search that finds nothing says nothing")
			}
		}
		for _, tc := range []struct {
			id    string
			kinds []string
		}{
			{paid.PublicID, []string{"charge", "refund"}},
			{held.PublicID, []string{"capture"}},
			{open.PublicID, nil},
		} {
			r := admin.Get(routes.AdminCharge(tc.id))
			doc := apptest.Parse(r.Body)
			if r.Status != http.StatusOK || doc.TestID("admin-charge") == nil {
				t.Fatalf("detail %s: %d", tc.id, r.Status)
			}
			txs := doc.TestIDs("admin-ledger-transaction")
			if len(txs) != len(tc.kinds) {
				t.Errorf("%s: %d ledger transactions, want %v", tc.id, len(txs), tc.kinds)
				continue
			}
			for i, k := range tc.kinds {
				if txs[i].Attr("data-kind") != k {
					t.Errorf("%s: transaction %d is %q, want %q", tc.id, i, txs[i].Attr("data-kind"), k)
				}
			}
			if len(tc.kinds) == 0 && doc.TestID("admin-ledger-none") == nil {
				t.Errorf("%s: says nothing of its ledger", tc.id)
			}
		}
		if r := admin.Get(routes.AdminCharge(charge.NewPublicID())); r.Status != http.StatusNotFound {
			t.Errorf("an unknown charge: %d", r.Status)
		}
		// Not an admin: no console.
		c := app.NewClient(t)
		c.SignIn("payer@example.com", "correct horse battery")
		if r := c.Get(routes.AdminCharges); r.Status == http.StatusOK {
			t.Errorf("a payer reads the admin's charges")
		}
	})
}
