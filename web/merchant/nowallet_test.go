package merchant_test

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

// written counts what a move writes: the charges' events, ledger
// transactions and holds.
func written(t *testing.T, app *apptest.App, charges ...charge.Charge) int64 {
	t.Helper()
	n := ledgertest.Transactions(t, app.DB) + ledgertest.Holds(t, app.DB)
	for _, ch := range charges {
		evs, err := app.Server.Charges.Events(context.Background(), ch.ID)
		if err != nil {
			t.Fatal(err)
		}
		n += int64(len(evs))
	}
	return n
}

// A payer without a wallet yet is short like any other: the checkout
// shows the balance as 0 and offers the top-up of the difference; a pay
// is refused with the one sentence (409, not a 500) and writes nothing;
// the offered top-up starts (its wallet made then).
func TestCheckoutPayerWithoutWallet(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		payer, _ := signUpFunded(t, app, "payer@example.com", 0)
		ledgertest.DropWallet(t, db, payer)
		ch := newCharge(t, app, m, 100_000, "W-1", charge.CaptureAutomatic)
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)

		page := c.Get(routes.Checkout(ch.PublicID))
		d := apptest.Parse(page.Body)
		if page.Status != http.StatusOK || d.TestID("checkout").Attr("data-state") != "short" ||
			d.TestID("checkout-short").Attr("data-rials") != "100000" || d.TestID("checkout-available").Attr("data-rials") != "0" {
			t.Fatalf("checkout without a wallet: %d %.300s", page.Status, page.Body)
		}
		var tried []charge.Charge
		for _, capture := range []charge.CaptureMethod{charge.CaptureAutomatic, charge.CaptureManual} {
			tried = append(tried, newCharge(t, app, m, 100_000, "W-2-"+string(capture), capture))
		}
		before := written(t, app, tried...)
		for _, ch := range tried {
			capture := ch.Capture
			r := c.Forge(routes.Checkout(ch.PublicID), routes.Checkout(ch.PublicID), url.Values{"token": {formtoken.New()}})
			doc := apptest.Parse(r.Body)
			if r.Status != http.StatusConflict || doc.TestID("checkout-error") == nil || doc.TestID("checkout").Attr("data-state") != "short" ||
				doc.TestID("checkout-topup") == nil {
				t.Fatalf("%s pay without a wallet: %d %.300s", capture, r.Status, r.Body)
			}
			got, err := app.Server.Charges.Checkout(context.Background(), ch.PublicID)
			if err != nil || got.Status != charge.StatusRequiresConfirmation || got.PayerUserID != 0 {
				t.Fatalf("%s charge after the refusal: %+v %v", capture, got, err)
			}
		}
		if n := ledgertest.Wallets(t, db, payer); n != 0 {
			t.Errorf("a refused pay wrote a wallet (%d)", n)
		}
		if n := written(t, app, tried...) - before; n != 0 {
			t.Errorf("a refused pay wrote %d events, transactions or holds", n)
		}
		// The offered top-up starts; its wallet is made then.
		r := c.Get(d.TestID("checkout-topup").Attr("href"))
		form := apptest.Parse(c.Get(r.Location).Body).Form(routes.TopUp).Hidden()
		if r := c.PostTopUp(form.Get("_csrf"), form.Get("token"), "10000"); r.Status != http.StatusSeeOther {
			t.Fatalf("top-up without a wallet: %d %.300s", r.Status, r.Body)
		}
		if n := ledgertest.Wallets(t, db, payer); n != 1 {
			t.Errorf("the top-up made %d wallets", n)
		}
		apptest.CheckInvariants(t, db)
	})
}
