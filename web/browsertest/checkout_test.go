package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
)

// chargeFixture is a merchant, its shop's return page and a way to make
// charges and people.
type chargeFixture struct {
	t        *testing.T
	app      *apptest.App
	merchant int64
	shopURL  string
}

func newChargeFixture(t *testing.T) *chargeFixture {
	t.Helper()
	app, _ := startApp(t, apptest.Options{})
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Shop</title><main><h1 data-testid="shop-back" data-status="%s" data-charge="%s">Back at the shop</h1></main></html>`,
			url.QueryEscape(r.URL.Query().Get("status")), url.QueryEscape(r.URL.Query().Get("charge_id")))
	}))
	t.Cleanup(shop.Close)
	f := &chargeFixture{t: t, app: app, shopURL: shop.URL}
	f.merchant, _ = f.person("shop@example.com", 0)
	if _, _, err := app.Server.Charges.MakeMerchant(context.Background(), f.merchant, "Book Shop", nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// person signs someone up with rials in their wallet: their id and
// wallet id.
func (f *chargeFixture) person(email string, rials int64) (int64, int64) {
	f.t.Helper()
	ctx := context.Background()
	u, err := f.app.Server.Auth.SignUp(ctx, email, password, auth.RoleUser, "fa")
	if err != nil {
		f.t.Fatal(err)
	}
	w, err := f.app.Server.Wallets.ForUser(ctx, u.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	if rials > 0 {
		ledgertest.Fund(f.t, f.app.DB, w.AccountID, rials, email)
	}
	return u.ID, w.ID
}

// charge makes a charge as the API would, returning to the shop.
func (f *chargeFixture) charge(order string, rials int64, capture charge.CaptureMethod) charge.Charge {
	f.t.Helper()
	res, err := f.app.Server.Charges.Create(context.Background(), charge.CreateRequest{MerchantUserID: f.merchant, FormToken: formtoken.New(),
		AmountRials: rials, Description: "Order " + order, OrderID: order, ReturnURL: f.shopURL + "/back?order=" + order, Capture: capture})
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Charge
}

// A checkout in the browser, in both languages: signed out, the payer
// signs in and comes back (axe), pays (automatic capture) and lands on
// the shop's return page with charge_id and status; a payer short of
// money tops up the difference at the bank, comes back to the same
// checkout (axe) and pays; two tabs of one payer pay once.
func TestCheckoutInTheBrowser(t *testing.T) {
	axeSource(t)
	f := newChargeFixture(t)
	for _, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			// Pay with enough money, signing in first.
			_, wallet := f.person("rich-"+lang+"@example.com", 1_000_000)
			ch := f.charge("A-"+lang, 250_000, charge.CaptureAutomatic)
			b := NewTab(t, f.app.URL)
			b.Go(routes.SignIn + "?lang=" + lang)
			b.Go(routes.Checkout(ch.PublicID))
			b.Wait("auth-form")
			b.Type("#email", "rich-"+lang+"@example.com")
			b.Type("#password", password)
			b.Click("auth-submit")
			b.Wait("checkout-pay")
			b.Audit("checkout")
			if got := b.Text(tid("checkout-merchant")); got != "Book Shop" {
				t.Errorf("merchant %q", got)
			}
			b.Click("checkout-pay")
			b.Wait("shop-back")
			if s, c := b.Attr(tid("shop-back"), "data-status"), b.Attr(tid("shop-back"), "data-charge"); s != "succeeded" || c != ch.PublicID {
				t.Errorf("back at the shop with status %q charge %q", s, c)
			}
			if got := ledgertest.Balance(t, f.app.DB, wallet); got != 750_000 {
				t.Errorf("payer's balance %d", got)
			}

			// Canceled by the merchant while the page is open: the
			// refusal, with no field at fault, takes the focus (axe).
			ch = f.charge("C-"+lang, 10_000, charge.CaptureAutomatic)
			b.Go(routes.Checkout(ch.PublicID))
			b.Wait("checkout-pay")
			if _, err := f.app.Server.Charges.Cancel(context.Background(), f.merchant, ch.PublicID); err != nil {
				t.Fatal(err)
			}
			b.Click("checkout-pay")
			b.Wait("checkout-error")
			b.Audit("checkout, refused")
			if id := b.focused(); id != "checkout-error" {
				t.Errorf("a refused checkout: focus on %q, want the refusal", id)
			}

			// Short of money: top up the difference, come back, pay.
			_, poor := f.person("poor-"+lang+"@example.com", 20_000)
			ch = f.charge("S-"+lang, 120_000, charge.CaptureAutomatic)
			p := NewTab(t, f.app.URL)
			p.Go(routes.SignIn + "?lang=" + lang)
			p.SignIn("poor-"+lang+"@example.com", password)
			p.Go(routes.Checkout(ch.PublicID))
			p.Wait("checkout-short")
			p.Audit("checkout, balance short")
			p.Click("checkout-topup")
			p.Wait("topup-submit")
			p.Click("topup-submit")
			p.Wait("bank-pay")
			p.Click("bank-pay")
			p.Wait("continue-checkout")
			p.Audit("credited top-up leading back to the checkout")
			p.Click("continue-checkout")
			p.Wait("checkout-pay")
			p.Click("checkout-pay")
			p.Wait("shop-back")
			if got := ledgertest.Balance(t, f.app.DB, poor); got != 0 {
				t.Errorf("balance after topping up the difference and paying: %d", got)
			}

			// Two tabs (two sessions) of one payer: both pay, the charge is paid once.
			_, two := f.person("two-"+lang+"@example.com", 500_000)
			ch = f.charge("T-"+lang, 100_000, charge.CaptureAutomatic)
			t1 := NewTab(t, f.app.URL)
			t1.Go(routes.SignIn + "?lang=" + lang)
			t1.SignIn("two-"+lang+"@example.com", password)
			t2 := NewTab(t, f.app.URL)
			t2.Go(routes.SignIn + "?lang=" + lang)
			t2.SignIn("two-"+lang+"@example.com", password)
			t1.Go(routes.Checkout(ch.PublicID))
			t2.Go(routes.Checkout(ch.PublicID))
			t1.Wait("checkout-pay")
			t2.Wait("checkout-pay")
			t1.Click("checkout-pay")
			t1.Wait("shop-back")
			t2.Click("checkout-pay")
			t2.Wait("shop-back")
			if got := ledgertest.Balance(t, f.app.DB, two); got != 400_000 {
				t.Errorf("two tabs: balance %d, want 400000 (paid once)", got)
			}
			if !strings.Contains(t2.location(), "status=succeeded") {
				t.Errorf("the second tab landed at %q", t2.location())
			}
			apptest.CheckInvariants(t, f.app.DB)
		})
	}
}

// The merchant's page in the browser, in both languages (axe): an
// authorized charge captured in part, then a double-clicked refund that
// refunds once.
func TestMerchantPageInTheBrowser(t *testing.T) {
	axeSource(t)
	f := newChargeFixture(t)
	payer, wallet := f.person("payer@example.com", 2_000_000)
	for _, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			ch := f.charge("M-"+lang, 300_000, charge.CaptureManual)
			if _, err := f.app.Server.Charges.Confirm(context.Background(), payer, ch.PublicID); err != nil {
				t.Fatal(err)
			}
			before := ledgertest.Balance(t, f.app.DB, wallet)
			b := NewTab(t, f.app.URL)
			b.Go(routes.SignIn + "?lang=" + lang)
			b.SignIn("shop@example.com", password)
			b.Go(routes.Merchant)
			b.Wait("merchant-charges")
			b.Audit("merchant page")
			b.Go(routes.MerchantCharge(ch.PublicID))
			b.Wait("merchant-capture")
			b.Audit("merchant charge, authorized")
			// More than the charge: refused, the amount as typed (not the
			// whole charge), its field focused (axe).
			b.Type(tid("merchant-capture-amount"), "300000")
			b.Click("merchant-capture")
			b.Wait("merchant-error")
			b.Audit("merchant charge, capture refused")
			var typed string
			b.Eval(`document.getElementById("capture-amount").value`, &typed)
			if id := b.focused(); id != "capture-amount" || typed != "300000" {
				t.Errorf("a refused capture: focus on %q, the field holds %q, want the field holding 300000", id, typed)
			}
			b.Type(tid("merchant-capture-amount"), "20000")
			b.Click("merchant-capture")
			b.Wait("merchant-notice")
			b.Wait("merchant-refund")
			b.Audit("merchant charge, captured")
			b.Type(tid("merchant-refund-amount"), "5000")
			posts := countPosts(b, routes.MerchantChargeRefund(ch.PublicID))
			b.Run(DoubleClick(tid("merchant-refund")))
			b.Wait("merchant-notice")
			b.Wait("merchant-refund-row")
			if n := posts(); n > 2 {
				t.Errorf("%d refund posts", n)
			}
			if got := b.Attr(tid("merchant-charge-refunded"), "data-rials"); got != "50000" {
				t.Errorf("refunded %s, want 50000 (once)", got)
			}
			if got := ledgertest.Balance(t, f.app.DB, wallet); got != before-200_000+50_000 {
				t.Errorf("payer's balance %d, want %d", got, before-200_000+50_000)
			}
			apptest.CheckInvariants(t, f.app.DB)
		})
	}
}
