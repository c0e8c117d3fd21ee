package merchant_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The checkout's per-form token is the top-up's and the transfer's: kept
// with what it made, so one form pays one charge. Its replay answers the
// first result; the same form posted to another charge is refused (409),
// from this session or another of the payer's; a token of no form's shape
// (400) and another person's form (the CSRF check, 403) are refused; none
// of the refusals writes anything.
func TestCheckoutFormTokenSingleUse(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		_, wallet := signUpFunded(t, app, "payer@example.com", 500_000)
		signUpFunded(t, app, "other@example.com", 500_000)
		a := newCharge(t, app, m, 100_000, "T-1", charge.CaptureAutomatic)
		b := newCharge(t, app, m, 50_000, "T-2", charge.CaptureManual)
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		formA := apptest.Parse(c.Get(routes.Checkout(a.PublicID)).Body).Form(routes.Checkout(a.PublicID)).Hidden()
		done := routes.Checkout(a.PublicID) + "?done=1"
		if r := c.Post(routes.Checkout(a.PublicID), formA); r.Status != http.StatusSeeOther || r.Location != done {
			t.Fatalf("pay: %d %q", r.Status, r.Location)
		}
		// Replayed: the first result.
		if r := c.Post(routes.Checkout(a.PublicID), formA); r.Status != http.StatusSeeOther || r.Location != done {
			t.Fatalf("replay: %d %q", r.Status, r.Location)
		}
		before := written(t, app, a, b)
		// The same form's token posted to another charge, from this
		// session and from another of the payer's.
		c2 := app.NewClient(t)
		c2.SignIn("payer@example.com", pw)
		for i, cl := range []*apptest.Client{c, c2} {
			r := cl.Forge(routes.Checkout(b.PublicID), routes.Checkout(b.PublicID), url.Values{"token": {formA.Get("token")}})
			doc := apptest.Parse(r.Body)
			if r.Status != http.StatusConflict || doc.TestID("checkout-error") == nil || doc.TestID("checkout").Attr("data-state") != "open" {
				t.Fatalf("session %d: a used form for another charge: %d %.300s", i, r.Status, r.Body)
			}
		}
		// A token of no form's shape.
		if r := c.Forge(routes.Checkout(b.PublicID), routes.Checkout(b.PublicID), url.Values{"token": {"forged"}}); r.Status != http.StatusBadRequest ||
			apptest.Parse(r.Body).TestID("checkout-error") == nil {
			t.Fatalf("forged token: %d", r.Status)
		}
		// Another person's form (their CSRF token and form token) posted
		// in this session.
		o := app.NewClient(t)
		o.SignIn("other@example.com", pw)
		theirs := apptest.Parse(o.Get(routes.Checkout(b.PublicID)).Body).Form(routes.Checkout(b.PublicID)).Hidden()
		if r := c.Post(routes.Checkout(b.PublicID), theirs); r.Status != http.StatusForbidden {
			t.Fatalf("another session's form: %d", r.Status)
		}
		if n := written(t, app, a, b) - before; n != 0 {
			t.Fatalf("the refusals wrote %d events, transactions or holds", n)
		}
		got, err := app.Server.Charges.Checkout(context.Background(), b.PublicID)
		if err != nil || got.Status != charge.StatusRequiresConfirmation {
			t.Fatalf("charge b after the refusals: %s %v", got.Status, err)
		}
		// B's own form pays it.
		formB := apptest.Parse(c.Get(routes.Checkout(b.PublicID)).Body).Form(routes.Checkout(b.PublicID)).Hidden()
		if r := c.Post(routes.Checkout(b.PublicID), formB); r.Status != http.StatusSeeOther {
			t.Fatalf("pay b: %d", r.Status)
		}
		if bal := ledgertest.Balance(t, db, wallet); bal != 400_000 {
			t.Errorf("payer's balance %d, want 400000", bal)
		}
		apptest.CheckInvariants(t, db)
	})
}
