package merchant_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The merchant's page: its balance, its charges by status, the CSV;
// capture (part of an authorization, the rest released), cancel, and
// refunds whose form token makes a double submit refund once (and one the
// shop's available balance cannot cover refused), all through the charge
// use case; CSRF-protected; others are refused.
func TestMerchantPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		// An address a spreadsheet would read as a formula.
		payer, wallet := signUpFunded(t, app, "=payer@example.com", 1_000_000)
		paid := newCharge(t, app, m, 300_000, "P-1", charge.CaptureAutomatic)
		held := newCharge(t, app, m, 200_000, "P-2", charge.CaptureManual)
		held2 := newCharge(t, app, m, 100_000, "P-3", charge.CaptureManual)
		open := newCharge(t, app, m, 50_000, "=1+1", charge.CaptureAutomatic)
		for _, ch := range []charge.Charge{paid, held, held2} {
			if _, err := app.Server.Charges.Confirm(ctx, payer, ch.PublicID); err != nil {
				t.Fatal(err)
			}
		}
		c := app.NewClient(t)
		c.SignIn("shop@example.com", pw)

		if apptest.Parse(c.Get(routes.Wallet).Body).TestID("merchant-link") == nil {
			t.Error("no link to the shop's page on a merchant's wallet")
		}
		doc := apptest.Parse(c.Get(routes.Merchant).Body)
		if doc.TestID("merchant-balance").Attr("data-rials") != "300000" || len(doc.TestIDs("merchant-charge-row")) != 4 {
			t.Fatalf("page: balance %q, %d rows", doc.TestID("merchant-balance").Attr("data-rials"), len(doc.TestIDs("merchant-charge-row")))
		}
		for status, n := range map[string]int{"authorized": 2, "succeeded": 1, "requires_confirmation": 1, "canceled": 0} {
			rows := apptest.Parse(c.Get(routes.Merchant + "?status=" + status).Body).TestIDs("merchant-charge-row")
			if len(rows) != n {
				t.Errorf("status %s: %d rows, want %d", status, len(rows), n)
			}
		}
		if r := c.Get(routes.Merchant + "?status=bogus"); r.Status != http.StatusBadRequest {
			t.Errorf("a bogus filter: %d", r.Status)
		}
		csv := c.Get(routes.MerchantChargesCSV + "?status=authorized")
		if csv.Status != http.StatusOK || !strings.HasPrefix(csv.Header.Get("Content-Type"), "text/csv") ||
			strings.Count(csv.Body, "\n") != 3 || !strings.Contains(csv.Body, held.PublicID) || strings.Contains(csv.Body, paid.PublicID) {
			t.Errorf("CSV: %d %q", csv.Status, csv.Body)
		}
		if all := c.Get(routes.MerchantChargesCSV).Body; !strings.Contains(all, "'=1+1") || !strings.Contains(all, ",'=payer@example.com") {
			t.Errorf("a formula-like order id or payer's address is not defused: %q", all)
		}

		// Capture 150,000 of 200,000: the rest released.
		page := routes.MerchantCharge(held.PublicID)
		if apptest.Parse(c.Get(page).Body).TestID("merchant-capture") == nil {
			t.Fatal("no capture form")
		}
		r := c.Submit(page, routes.MerchantChargeCapture(held.PublicID), url.Values{"amount": {"۱۵٬۰۰۰"}})
		if r.Status != http.StatusSeeOther {
			t.Fatalf("capture: %d %.300s", r.Status, r.Body)
		}
		d := apptest.Parse(c.Get(r.Location).Body)
		if d.TestID("merchant-charge").Attr("data-status") != "succeeded" || d.TestID("merchant-charge-captured").Attr("data-rials") != "150000" ||
			d.TestID("merchant-notice") == nil {
			t.Errorf("after capture: %q", d.TestID("merchant-charge").Attr("data-status"))
		}
		// Cancel the other authorization: its hold released.
		if r := c.Submit(routes.MerchantCharge(held2.PublicID), routes.MerchantChargeCancel(held2.PublicID), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("cancel: %d", r.Status)
		}
		if h := ledgertest.Held(t, db, wallet); h != 0 {
			t.Errorf("held after capture and cancel: %d", h)
		}
		// Refund 100,000 of the paid charge, the form submitted twice at
		// once and again: one refund.
		rp := apptest.Parse(c.Get(routes.MerchantCharge(paid.PublicID)).Body).Form(routes.MerchantChargeRefund(paid.PublicID))
		if rp == nil {
			t.Fatal("no refund form")
		}
		form := rp.Hidden()
		form.Set("amount", "10000")
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); c.Post(routes.MerchantChargeRefund(paid.PublicID), form) }()
		}
		wg.Wait()
		if r := c.Post(routes.MerchantChargeRefund(paid.PublicID), form); r.Status != http.StatusSeeOther {
			t.Errorf("the same refund again: %d", r.Status)
		}
		d = apptest.Parse(c.Get(routes.MerchantCharge(paid.PublicID)).Body)
		if n := len(d.TestIDs("merchant-refund-row")); n != 1 || d.TestID("merchant-charge-refunded").Attr("data-rials") != "100000" {
			t.Errorf("%d refunds, refunded %q", n, d.TestID("merchant-charge-refunded").Attr("data-rials"))
		}
		// More than what is left: refused, nothing written.
		r = c.Submit(routes.MerchantCharge(paid.PublicID), routes.MerchantChargeRefund(paid.PublicID), url.Values{"amount": {"25000"}})
		if d := apptest.Parse(r.Body); r.Status != http.StatusConflict || d.TestID("merchant-error") == nil {
			t.Errorf("refund above the rest: %d", r.Status)
		}
		// Without the CSRF token: refused.
		if r := c.Post(routes.MerchantChargeRefund(paid.PublicID), url.Values{"token": {form.Get("token") + "x"}, "amount": {"1000"}}); r.Status != http.StatusForbidden {
			t.Errorf("no CSRF token: %d", r.Status)
		}
		// The payer: 1,000,000 − 300,000 − 150,000 + 100,000.
		if b := ledgertest.Balance(t, db, wallet); b != 650_000 {
			t.Errorf("payer's balance %d", b)
		}
		mm, _ := app.Server.Charges.Merchant(ctx, m)
		if mm.PostedRials != 350_000 {
			t.Errorf("merchant's balance %d", mm.PostedRials)
		}
		// The shop's available balance short of a refund the charge still
		// allows (a correction took 300,000 of its 350,000): refused with
		// its one sentence, nothing written.
		drainMerchant(t, app, mm.AccountID, 300_000)
		c.GetIn("en", routes.MerchantCharge(paid.PublicID))
		r = c.Submit(routes.MerchantCharge(paid.PublicID), routes.MerchantChargeRefund(paid.PublicID), url.Values{"amount": {"10000"}})
		if e := apptest.Parse(r.Body).TestID("merchant-error").Text(); r.Status != http.StatusConflict ||
			e != "The shop's available balance is too low for this refund." {
			t.Errorf("a refund above the shop's balance: %d, error %q", r.Status, e)
		}
		d = apptest.Parse(c.Get(routes.MerchantCharge(paid.PublicID)).Body)
		if n := len(d.TestIDs("merchant-refund-row")); n != 1 || d.TestID("merchant-charge-refunded").Attr("data-rials") != "100000" {
			t.Errorf("after a refused refund: %d refunds, refunded %q", n, d.TestID("merchant-charge-refunded").Attr("data-rials"))
		}
		if b := ledgertest.Balance(t, db, wallet); b != 650_000 {
			t.Errorf("payer's balance after a refused refund %d", b)
		}
		if mm, _ := app.Server.Charges.Merchant(ctx, m); mm.PostedRials != 50_000 {
			t.Errorf("merchant's balance after a refused refund %d", mm.PostedRials)
		}
		// Another merchant's charge: 404; a non-merchant: a refusal.
		shop(t, app, "other@example.com", "Other")
		o := app.NewClient(t)
		o.SignIn("other@example.com", pw)
		if r := o.Get(routes.MerchantCharge(paid.PublicID)); r.Status != http.StatusNotFound {
			t.Errorf("another merchant's charge: %d", r.Status)
		}
		p := app.NewClient(t)
		p.SignIn("=payer@example.com", pw)
		if apptest.Parse(p.Get(routes.Wallet).Body).TestID("merchant-link") != nil {
			t.Error("a link to a shop's page on a payer's wallet")
		}
		for _, path := range []string{routes.Merchant, routes.MerchantChargesCSV, routes.MerchantCharge(paid.PublicID)} {
			if r := p.GetIn("en", path); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "not a merchant") && !strings.Contains(r.Body, "not one") {
				t.Errorf("a non-merchant at %s: %d", path, r.Status)
			}
		}
		if r := p.Forge(routes.Wallet, routes.MerchantChargeCancel(open.PublicID), nil); r.Status != http.StatusForbidden {
			t.Errorf("a non-merchant's cancel: %d", r.Status)
		}
		apptest.CheckInvariants(t, db)
	})
}

// TestMerchantCSVEveryBatch: the export streams the merchant's charges a
// keyset page of 1,000 at a time; across the page boundary every charge is
// there once, newest first.
func TestMerchantCSVEveryBatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		const n = 1_005
		var sixth charge.Charge
		for i := range n {
			ch := newCharge(t, app, m, 10_000, fmt.Sprintf("B-%04d", i), charge.CaptureAutomatic)
			if i == 5 {
				sixth = ch
			}
		}
		c := app.NewClient(t)
		c.SignIn("shop@example.com", pw)
		r := c.Get(routes.MerchantChargesCSV)
		if r.Status != http.StatusOK {
			t.Fatalf("CSV: %d", r.Status)
		}
		lines := strings.Split(strings.TrimSuffix(r.Body, "\n"), "\n")
		if len(lines) != n+1 {
			t.Fatalf("CSV: %d lines, want a header and %d charges", len(lines), n)
		}
		for i, line := range lines[1:] {
			if want := fmt.Sprintf(",B-%04d,", n-1-i); !strings.Contains(line, want) {
				t.Fatalf("row %d: %q, want the order %s (newest first, each once)", i+1, line, want)
			}
		}
		// The rest of a cut file: ?before= the id its last row names
		// exports the older ones only.
		r = c.Get(routes.MerchantChargesCSV + "?before=" + strconv.FormatInt(sixth.ID, 10))
		older := strings.Split(strings.TrimSuffix(r.Body, "\n"), "\n")[1:]
		if r.Status != http.StatusOK || len(older) != 5 || !strings.Contains(older[0], ",B-0004,") || !strings.Contains(older[4], ",B-0000,") {
			t.Fatalf("CSV before the sixth: %d, %q", r.Status, older)
		}
		if r := c.Get(routes.MerchantChargesCSV + "?before=x"); r.Status != http.StatusBadRequest {
			t.Errorf("a bad cursor: %d", r.Status)
		}
	})
}

// A charge need not be whole tomans (the API takes rials): its capture
// form's own value captures all of it, and the last rials refund from
// the page as they are written ("0.5" tomans), in both languages.
func TestMerchantPageTakesRials(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		payer, _ := signUpFunded(t, app, "payer@example.com", 1_000_000)
		c := app.NewClient(t)
		c.SignIn("shop@example.com", pw)
		for _, lang := range []string{"fa", "en"} {
			ch := newCharge(t, app, m, 12_345, "R-"+lang, charge.CaptureManual)
			if _, err := app.Server.Charges.Confirm(ctx, payer, ch.PublicID); err != nil {
				t.Fatal(err)
			}
			page := routes.MerchantCharge(ch.PublicID)
			f := apptest.Parse(c.GetIn(lang, page).Body).Form(routes.MerchantChargeCapture(ch.PublicID))
			form := f.Hidden()
			form.Set("amount", f.Input("amount"))
			if want := map[string]string{"fa": "۱٬۲۳۴٫۵", "en": "1,234.5"}[lang]; form.Get("amount") != want {
				t.Fatalf("%s: the capture form holds %q, want %q", lang, form.Get("amount"), want)
			}
			if r := c.Post(routes.MerchantChargeCapture(ch.PublicID), form); r.Status != http.StatusSeeOther {
				t.Fatalf("%s: capture with the form's own amount %q: %d", lang, form.Get("amount"), r.Status)
			}
			got, err := app.Server.Charges.Get(ctx, m, ch.PublicID)
			if err != nil || got.CapturedRials != 12_345 {
				t.Fatalf("%s: captured %d (%v), want 12345", lang, got.CapturedRials, err)
			}
			for _, amount := range []string{"1,234", "0.5"} {
				if lang == "fa" {
					amount = map[string]string{"1,234": "۱٬۲۳۴", "0.5": "۰٫۵"}[amount]
				}
				tok := apptest.Parse(c.GetIn(lang, page).Body).Form(routes.MerchantChargeRefund(ch.PublicID)).Hidden()
				tok.Set("amount", amount)
				if r := c.Post(routes.MerchantChargeRefund(ch.PublicID), tok); r.Status != http.StatusSeeOther {
					t.Fatalf("%s: refund %q: %d", lang, amount, r.Status)
				}
			}
			if got, _ := app.Server.Charges.Get(ctx, m, ch.PublicID); got.RefundedRials != 12_345 {
				t.Fatalf("%s: refunded %d, want all 12345", lang, got.RefundedRials)
			}
		}
		apptest.CheckInvariants(t, db)
	})
}
