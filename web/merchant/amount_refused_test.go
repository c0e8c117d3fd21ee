package merchant_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A refused capture or refund amount comes back as typed, not as the
// whole charge (pressing Capture again would take all of it) nor blank;
// its field is marked at fault, described by the error and focused. A
// refusal with no field at fault leaves the forms as new and makes the
// error itself focusable.
func TestMerchantRefusedAmountComesBackAsTyped(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		payer, _ := signUpFunded(t, app, "payer@example.com", 1_000_000)
		held := newCharge(t, app, m, 200_000, "H-1", charge.CaptureManual)
		paid := newCharge(t, app, m, 300_000, "P-1", charge.CaptureAutomatic)
		for _, ch := range []charge.Charge{held, paid} {
			if _, err := app.Server.Charges.Confirm(ctx, payer, ch.PublicID); err != nil {
				t.Fatal(err)
			}
		}
		c := app.NewClient(t)
		c.SignIn("shop@example.com", pw)

		// marked checks that the field holds typed, is at fault and is
		// described by the error on the page (and by its hint, if any).
		marked := func(what string, d *apptest.Doc, field *apptest.Element, typed, hint string) {
			t.Helper()
			if field == nil {
				t.Fatalf("%s: no field", what)
			}
			if got := field.Attr("value"); got != typed {
				t.Errorf("%s: the field holds %q, want %q as typed", what, got, typed)
			}
			if field.Attr("aria-invalid") != "true" || !field.Has("autofocus") {
				t.Errorf("%s: the field is not marked at fault: aria-invalid %q", what, field.Attr("aria-invalid"))
			}
			e := d.TestID("merchant-error")
			ids := strings.Fields(field.Attr("aria-describedby"))
			if e == nil || e.Attr("id") == "" || !slices.Contains(ids, e.Attr("id")) {
				t.Errorf("%s: the field (aria-describedby %q) is not described by the error (id %q)", what, field.Attr("aria-describedby"), e.Attr("id"))
			}
			if hint != "" && !slices.Contains(ids, hint) {
				t.Errorf("%s: the field (aria-describedby %q) lost its hint %q", what, field.Attr("aria-describedby"), hint)
			}
		}

		page := routes.MerchantCharge(held.PublicID)
		if f := apptest.Parse(c.GetIn("en", page).Body).TestID("merchant-capture-amount"); f.Attr("value") != "20,000" || f.Has("aria-invalid") {
			t.Errorf("the capture field as new: %q, aria-invalid %q", f.Attr("value"), f.Attr("aria-invalid"))
		}
		// Not an amount (422), and more than the charge (409).
		for _, typed := range []string{"250,00", "abc", "30,000"} {
			r := c.Submit(page, routes.MerchantChargeCapture(held.PublicID), url.Values{"amount": {typed}})
			if r.Status != http.StatusUnprocessableEntity && r.Status != http.StatusConflict {
				t.Fatalf("capture %q: %d", typed, r.Status)
			}
			d := apptest.Parse(r.Body)
			marked("capture "+typed, d, d.TestID("merchant-capture-amount"), typed, "")
		}
		if got, err := app.Server.Charges.Get(ctx, m, held.PublicID); err != nil || got.Status != charge.StatusAuthorized || got.CapturedRials != 0 {
			t.Fatalf("after refused captures: %s, captured %d (%v)", got.Status, got.CapturedRials, err)
		}

		page = routes.MerchantCharge(paid.PublicID)
		if f := apptest.Parse(c.Get(page).Body).TestID("merchant-refund-amount"); f.Has("value") || f.Has("aria-invalid") || f.Attr("aria-describedby") != "refund-hint" {
			t.Errorf("the refund field as new: value %q, aria-describedby %q", f.Attr("value"), f.Attr("aria-describedby"))
		}
		// Not an amount (422), and more than the charge (409).
		for _, typed := range []string{"12x", "40000"} {
			r := c.Submit(page, routes.MerchantChargeRefund(paid.PublicID), url.Values{"amount": {typed}})
			if r.Status != http.StatusUnprocessableEntity && r.Status != http.StatusConflict {
				t.Fatalf("refund %q: %d", typed, r.Status)
			}
			d := apptest.Parse(r.Body)
			marked("refund "+typed, d, d.TestID("merchant-refund-amount"), typed, "refund-hint")
		}

		// A form used once, sent again with another amount: the refusal
		// is not the amount's; the field is new (its amount would refund
		// again with the page's new token) and the error takes the focus.
		form := apptest.Parse(c.Get(page).Body).Form(routes.MerchantChargeRefund(paid.PublicID)).Hidden()
		form.Set("amount", "1000")
		if r := c.Post(routes.MerchantChargeRefund(paid.PublicID), form); r.Status != http.StatusSeeOther {
			t.Fatalf("refund: %d", r.Status)
		}
		form.Set("amount", "2000")
		r := c.Post(routes.MerchantChargeRefund(paid.PublicID), form)
		d := apptest.Parse(r.Body)
		if f := d.TestID("merchant-refund-amount"); r.Status != http.StatusConflict || f.Has("value") || f.Has("aria-invalid") {
			t.Errorf("a reused form: %d, the field holds %q, aria-invalid %q", r.Status, f.Attr("value"), f.Attr("aria-invalid"))
		}
		if e := d.TestID("merchant-error"); e.Attr("role") != "alert" || e.Attr("tabindex") != "-1" {
			t.Errorf("a refusal without a field: the error is not focusable (tabindex %q)", e.Attr("tabindex"))
		}
		if got, _ := app.Server.Charges.Get(ctx, m, paid.PublicID); got.RefundedRials != 10_000 {
			t.Errorf("refunded %d, want 10000", got.RefundedRials)
		}
	})
}
