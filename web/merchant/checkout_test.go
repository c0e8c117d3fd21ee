package merchant_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/notify"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// The checkout asks the payer to sign in and comes back; it shows the
// merchant, the amount, the description and the available balance; Pay
// (automatic capture) pays the merchant once, from two tabs at once and
// again; the browser is sent on to return_url with charge_id and status.
func TestCheckoutPayAutomatic(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		_, wallet := signUpFunded(t, app, "payer@example.com", 500_000)
		ch := newCharge(t, app, m, 120_000, "A-1", charge.CaptureAutomatic)
		c := app.NewClient(t)

		// Signed out: sign in first, then back to the checkout.
		r := c.Get(routes.Checkout(ch.PublicID))
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.SignIn+"?next=") {
			t.Fatalf("signed out: %d %q", r.Status, r.Location)
		}
		signin := c.Get(r.Location)
		action := apptest.Parse(signin.Body).TestID("auth-form").Attr("action")
		r = c.Submit(r.Location, action, url.Values{"email": {"payer@example.com"}, "password": {pw}})
		if r.Status != http.StatusSeeOther || r.Location != routes.Checkout(ch.PublicID) {
			t.Fatalf("after sign-in: %d %q", r.Status, r.Location)
		}

		page := c.Get(routes.Checkout(ch.PublicID))
		doc := apptest.Parse(page.Body)
		if page.Status != http.StatusOK || doc.TestID("checkout").Attr("data-state") != "open" {
			t.Fatalf("checkout: %d %.400s", page.Status, page.Body)
		}
		for id, want := range map[string]string{"checkout-merchant": "Book Shop", "checkout-description": "Order A-1"} {
			if got := doc.TestID(id).Text(); got != want {
				t.Errorf("%s: %q, want %q", id, got, want)
			}
		}
		if doc.TestID("checkout-amount").Attr("data-rials") != "120000" || doc.TestID("checkout-available").Attr("data-rials") != "500000" {
			t.Errorf("amount or balance wrong")
		}
		if doc.TestID("checkout-pay") == nil || doc.TestID("checkout-cancel") == nil {
			t.Fatal("no pay or cancel button")
		}
		// Two tabs: two forms, each with its own token, submitted at once,
		// then the first again.
		tab1 := apptest.Parse(c.Get(routes.Checkout(ch.PublicID)).Body).Form(routes.Checkout(ch.PublicID)).Hidden()
		tab2 := doc.Form(routes.Checkout(ch.PublicID)).Hidden()
		if tab1.Get("token") == "" || tab1.Get("token") == tab2.Get("token") {
			t.Fatalf("the pay forms' tokens: %q %q", tab1.Get("token"), tab2.Get("token"))
		}
		var wg sync.WaitGroup
		locs := make([]string, 3)
		for i, form := range []url.Values{tab1, tab2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				locs[i] = c.Post(routes.Checkout(ch.PublicID), form).Location
			}()
		}
		wg.Wait()
		locs[2] = c.Post(routes.Checkout(ch.PublicID), tab1).Location
		want := routes.Checkout(ch.PublicID) + "?done=1"
		for i, l := range locs {
			if l != want {
				t.Errorf("submit %d went to %q, want %q", i, l, want)
			}
		}
		if b := ledgertest.Balance(t, db, wallet); b != 380_000 {
			t.Fatalf("payer's balance %d, want 380000", b)
		}
		mm, err := app.Server.Charges.Merchant(t.Context(), m)
		if err != nil || mm.PostedRials != 120_000 {
			t.Fatalf("merchant's balance %d (%v)", mm.PostedRials, err)
		}
		// The outcome: paid, on to return_url with charge_id and status.
		done := apptest.Parse(c.Get(want).Body)
		if s := done.TestID("checkout-status"); s == nil || s.Attr("data-status") != "paid" {
			t.Fatalf("outcome: %v", s)
		}
		ret := done.TestID("checkout-return")
		if ret == nil || !ret.Has("data-autofollow") {
			t.Fatalf("no return link that follows itself")
		}
		u, err := url.Parse(ret.Attr("href"))
		if err != nil || u.Host != "shop.example" || u.Query().Get("charge_id") != ch.PublicID || u.Query().Get("status") != "succeeded" ||
			u.Query().Get("order") != "A-1" {
			t.Errorf("return link %q", ret.Attr("href"))
		}
		// A later visit shows the outcome, and does not leave by itself:
		// neither the page, nor its ?done=1 link opened again, nor that link
		// in the payer's other browser.
		later := apptest.Parse(c.GetIn("en", routes.Checkout(ch.PublicID)).Body)
		if s := later.TestID("checkout-status"); s == nil || !strings.Contains(s.Text(), "paid to \u2068Book Shop\u2069") || later.TestID("checkout-return").Has("data-autofollow") {
			t.Errorf("later visit: %v", s)
		}
		if again := apptest.Parse(c.Get(want).Body); again.TestID("checkout-return") == nil || again.TestID("checkout-return").Has("data-autofollow") {
			t.Errorf("the outcome's link opened again follows itself (or shows no return link)")
		}
		elsewhere := app.NewClient(t)
		elsewhere.SignIn("payer@example.com", pw)
		if other := apptest.Parse(elsewhere.Get(want).Body); other.TestID("checkout-return") == nil || other.TestID("checkout-return").Has("data-autofollow") {
			t.Errorf("the outcome's link, in the payer's other browser, follows itself (or shows no return link)")
		}
		// The payer's receipt: the order, when, the payment's id; all of
		// it taken, nothing refunded yet.
		for id, want := range map[string]string{"checkout-order": "A-1", "checkout-reference": ch.PublicID} {
			if got := later.TestID(id).Text(); got != want {
				t.Errorf("%s: %q, want %q", id, got, want)
			}
		}
		if later.TestID("checkout-when").Text() == "" || later.TestID("checkout-captured") != nil || later.TestID("checkout-refunded") != nil ||
			later.TestID("checkout-hold-until") != nil {
			t.Errorf("receipt rows wrong: %.2000s", later.TestID("checkout").Text())
		}
		// A partial refund shows on it.
		if _, err := app.Server.Charges.Refund(t.Context(), charge.RefundRequest{MerchantUserID: m, ChargeID: ch.PublicID,
			FormToken: formtoken.New(), AmountRials: 20_000}); err != nil {
			t.Fatal(err)
		}
		if d := apptest.Parse(c.Get(routes.Checkout(ch.PublicID)).Body); d.TestID("checkout-refunded").Attr("data-rials") != "20000" {
			t.Errorf("refunded row: %v", d.TestID("checkout-refunded"))
		}
		// Another signed-in person: paid by someone else, no return link.
		o := app.NewClient(t)
		signUpFunded(t, app, "other@example.com", 0)
		o.SignIn("other@example.com", pw)
		if d := apptest.Parse(o.Get(routes.Checkout(ch.PublicID)).Body); d.TestID("checkout").Attr("data-state") != "taken" || d.TestID("checkout-return") != nil ||
			d.TestID("checkout-order") != nil || d.TestID("checkout-reference") != nil || d.TestID("checkout-when") != nil {
			t.Errorf("another person's view: %q, or it shows the payer's receipt", d.TestID("checkout").Attr("data-state"))
		}
		// An id of the wrong shape, or unknown: 404.
		for _, p := range []string{routes.Checkout("nope"), routes.Checkout(charge.NewPublicID())} {
			if r := c.Get(p); r.Status != http.StatusNotFound {
				t.Errorf("GET %s: %d", p, r.Status)
			}
		}
		apptest.CheckInvariants(t, db)
	})
}

// Manual capture: the confirmation holds the amount (authorized), and
// the browser goes back with status=authorized.
func TestCheckoutAuthorizeManual(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		_, wallet := signUpFunded(t, app, "payer@example.com", 500_000)
		ch := newCharge(t, app, m, 200_000, "M-1", charge.CaptureManual)
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		r := c.Submit(routes.Checkout(ch.PublicID), routes.Checkout(ch.PublicID), nil)
		if r.Status != http.StatusSeeOther {
			t.Fatalf("pay: %d %.300s", r.Status, r.Body)
		}
		done := apptest.Parse(c.Get(r.Location).Body)
		if s := done.TestID("checkout-status"); s == nil || s.Attr("data-status") != "authorized" {
			t.Fatalf("outcome %v", s)
		}
		if !strings.Contains(done.TestID("checkout-return").Attr("href"), "status=authorized") {
			t.Errorf("return link %q", done.TestID("checkout-return").Attr("href"))
		}
		if b, h := ledgertest.Balance(t, db, wallet), ledgertest.Held(t, db, wallet); b != 500_000 || h != 200_000 {
			t.Errorf("balance %d held %d", b, h)
		}
		if done.TestID("checkout-hold-until").Text() == "" || done.TestID("checkout-order").Text() != "M-1" {
			t.Errorf("an authorization's receipt says until when, and the order")
		}
		// The merchant takes part of it: the page says what was paid, not
		// what was asked, and no longer says until when.
		if _, err := app.Server.Charges.Capture(t.Context(), m, ch.PublicID, 150_000); err != nil {
			t.Fatal(err)
		}
		after := apptest.Parse(c.GetIn("en", routes.Checkout(ch.PublicID)).Body)
		if s := after.TestID("checkout-status"); s == nil || s.Attr("data-status") != "paid" || !strings.Contains(s.Text(), "15,000 tomans") ||
			strings.Contains(s.Text(), "20,000") {
			t.Errorf("after a partial capture: %q", s.Text())
		}
		if after.TestID("checkout-captured").Attr("data-rials") != "150000" || after.TestID("checkout-hold-until") != nil {
			t.Errorf("captured row or hold row wrong")
		}
		if b := ledgertest.Balance(t, db, wallet); b != 350_000 {
			t.Errorf("balance after capture %d", b)
		}
		apptest.CheckInvariants(t, db)
	})
}

// Cancel: nothing moves, the browser goes back with status=canceled, and
// the checkout says so; pay after it is refused with one sentence.
func TestCheckoutCancel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		_, wallet := signUpFunded(t, app, "payer@example.com", 500_000)
		ch := newCharge(t, app, m, 100_000, "C-1", charge.CaptureAutomatic)
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		payForm := apptest.Parse(c.Get(routes.Checkout(ch.PublicID)).Body).Form(routes.Checkout(ch.PublicID)).Hidden()
		r := c.Submit(routes.Checkout(ch.PublicID), routes.CheckoutCancel(ch.PublicID), nil)
		if r.Status != http.StatusSeeOther {
			t.Fatalf("cancel: %d", r.Status)
		}
		// The cookie that lets the outcome go on to the merchant once
		// counts its two minutes from the browser's own clock (Max-Age),
		// so that a device whose clock runs ahead does not drop it.
		var doneCookie string
		for _, sc := range r.Header.Values("Set-Cookie") {
			if strings.HasPrefix(sc, "checkout_done="+ch.PublicID) {
				doneCookie = sc
			}
		}
		if !strings.Contains(doneCookie, "max-age=120") && !strings.Contains(doneCookie, "Max-Age=120") {
			t.Errorf("the outcome's cookie %q, want Max-Age=120", doneCookie)
		}
		done := apptest.Parse(c.Get(r.Location).Body)
		if ret := done.TestID("checkout-return"); ret == nil || !ret.Has("data-autofollow") {
			t.Errorf("the outcome right after the cancel does not go on to the merchant")
		}
		if s := done.TestID("checkout-status"); s == nil || s.Attr("data-status") != "canceled" ||
			!strings.Contains(done.TestID("checkout-return").Attr("href"), "status=canceled") {
			t.Fatalf("outcome %v", s)
		}
		r = c.Post(routes.Checkout(ch.PublicID), payForm)
		if d := apptest.Parse(r.Body); r.Status != http.StatusConflict || d.TestID("checkout-error") == nil || d.TestID("checkout-pay") != nil {
			t.Errorf("pay after cancel: %d", r.Status)
		}
		// No field is at fault: the refusal itself takes the focus (app.js).
		if e := apptest.Parse(r.Body).TestID("checkout-error"); e.Attr("role") != "alert" || e.Attr("tabindex") != "-1" {
			t.Errorf("the refusal is not focusable: role %q, tabindex %q", e.Attr("role"), e.Attr("tabindex"))
		}
		if b := ledgertest.Balance(t, db, wallet); b != 500_000 {
			t.Errorf("balance %d", b)
		}
	})
}

// A payer who paid or authorized and then sends the cancel form of the
// earlier page (another tab, Back) is told what stands and who can undo
// it, not merely that the payment is over; nothing moves.
func TestCheckoutCancelAfterPaying(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		_, wallet := signUpFunded(t, app, "payer@example.com", 500_000)
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		for _, tc := range []struct {
			capture charge.CaptureMethod
			want    string
			balance int64
		}{
			// The ledger's balance: a hold keeps it, a payment takes it.
			{charge.CaptureManual, "the merchant takes or releases it", 500_000},
			{charge.CaptureAutomatic, "ask the merchant for a refund", 400_000},
		} {
			ch := newCharge(t, app, m, 100_000, "A-"+string(tc.capture), tc.capture)
			page := apptest.Parse(c.GetIn("en", routes.Checkout(ch.PublicID)).Body)
			cancel := page.Form(routes.CheckoutCancel(ch.PublicID)).Hidden()
			if r := c.Submit(routes.Checkout(ch.PublicID), routes.Checkout(ch.PublicID), nil); r.Status != http.StatusSeeOther {
				t.Fatalf("%s: pay %d", tc.capture, r.Status)
			}
			r := c.Post(routes.CheckoutCancel(ch.PublicID), cancel)
			d := apptest.Parse(r.Body)
			if e := d.TestID("checkout-error"); r.Status != http.StatusConflict || e == nil || !strings.Contains(e.Text(), tc.want) {
				t.Errorf("%s: cancel after paying: %d %v", tc.capture, r.Status, e)
			}
			if b := ledgertest.Balance(t, db, wallet); b != tc.balance {
				t.Errorf("%s: balance %d, want %d", tc.capture, b, tc.balance)
			}
		}
	})
}

// A payer whose address is not confirmed pays nothing: the checkout says
// so, with "send the link again" and Cancel but no Pay; a form posted all
// the same is refused with 403 and writes nothing; once the address is
// confirmed, the same session pays.
func TestCheckoutWaitsForThePayersAddress(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		ch := newCharge(t, app, m, 100_000, "U-1", charge.CaptureAutomatic)
		c := app.NewClient(t)
		c.GetIn("en", routes.SignUp)
		c.SignUpUnconfirmed("payer@example.com")
		wallet := app.Fund(t, "payer@example.com", 500_000)
		r := c.Get(routes.Checkout(ch.PublicID))
		doc := apptest.Parse(r.Body)
		if s := doc.TestID("checkout-status"); r.Status != http.StatusOK || s == nil || s.Attr("data-status") != "unconfirmed" ||
			doc.TestID("checkout-pay") != nil || doc.TestID("checkout-cancel") == nil || doc.Form(routes.AccountEmailVerify) == nil {
			t.Fatalf("checkout while unconfirmed: %d\n%s", r.Status, r.Body)
		}
		token := formtoken.New()
		r = c.Forge(routes.Checkout(ch.PublicID), routes.Checkout(ch.PublicID), url.Values{"token": {token}})
		if d := apptest.Parse(r.Body); r.Status != http.StatusForbidden || d.TestID("checkout-pay") != nil ||
			d.TestID("checkout-status") == nil || d.TestID("checkout-status").Attr("data-status") != "unconfirmed" {
			t.Fatalf("pay while unconfirmed: %d\n%s", r.Status, r.Body)
		}
		if got, err := app.Server.Charges.Get(context.Background(), m, ch.PublicID); err != nil || got.Status != charge.StatusRequiresConfirmation || got.PayerUserID != 0 {
			t.Fatalf("the charge after the refusal: %+v %v", got, err)
		}
		if b := ledgertest.Balance(t, db, wallet); b != 500_000 {
			t.Fatalf("balance %d", b)
		}
		// The payer opens the link mailed at sign-up in this browser:
		// the page that confirms the address leads back to the checkout.
		var link string
		for _, mail := range mailtest.Rows(t, db) {
			if mail.Kind == notify.KindVerify && mail.ToAddr == "payer@example.com" {
				if l := regexp.MustCompile(regexp.QuoteMeta(routes.EmailVerify("")) + `[A-Za-z0-9_-]+`).FindString(mail.TextBody); l != "" {
					link = l
				}
			}
		}
		if link == "" {
			t.Fatal("no confirmation link mailed")
		}
		done := apptest.Parse(c.Submit(link, link, nil).Body)
		if back := done.TestID("verify-to-checkout"); done.TestID("verify-done") == nil || back == nil || back.Attr("href") != routes.Checkout(ch.PublicID) {
			t.Fatalf("the confirmation does not lead back to the checkout: %v", back)
		}
		if d := apptest.Parse(c.Get(routes.Checkout(ch.PublicID)).Body); d.TestID("checkout").Attr("data-state") != "open" || d.TestID("checkout-pay") == nil {
			t.Fatalf("once confirmed the checkout is not open: %q", d.TestID("checkout").Attr("data-state"))
		}
		// The checkout is remembered for this browser's person only: the
		// next one to sign in here has none to come back to.
		base, _ := url.Parse(app.URL)
		remembered := func() bool {
			for _, k := range c.HTTP.Jar.Cookies(base) {
				if k.Name == "checkout" && k.Value == ch.PublicID {
					return true
				}
			}
			return false
		}
		if !remembered() {
			t.Fatal("the checkout is not remembered")
		}
		c.Post(routes.SignOut, url.Values{"_csrf": {apptest.Input(c.Get(routes.Wallet).Body, "_csrf")}})
		if remembered() {
			t.Fatal("the checkout outlived the sign-out")
		}
		// One left behind (a browser that was not signed out): a sign-in
		// forgets it.
		c.HTTP.Jar.SetCookies(base, []*http.Cookie{{Name: "checkout", Value: ch.PublicID, Path: "/"}})
		if !remembered() {
			t.Fatal("the planted cookie is not there")
		}
		c.SignIn("payer@example.com", pw)
		if remembered() {
			t.Fatal("a checkout remembered across a sign-in")
		}
		if r := c.Forge(routes.Checkout(ch.PublicID), routes.Checkout(ch.PublicID), url.Values{"token": {token}}); r.Status != http.StatusSeeOther {
			t.Fatalf("pay once confirmed: %d\n%s", r.Status, r.Body)
		}
		if b := ledgertest.Balance(t, db, wallet); b != 400_000 {
			t.Fatalf("balance once paid %d", b)
		}
		apptest.CheckInvariants(t, db)
	})
}

// States: an expired checkout, the merchant's own, a stale form, a
// balance spent between opening the checkout and Pay.
func TestCheckoutStates(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := topuptest.NewFrozenClock()
		app := apptest.Start(t, db, apptest.Options{Server: server.Options{Now: clock.Now}})
		m := shop(t, app, "shop@example.com", "Book Shop")
		_, wallet := signUpFunded(t, app, "payer@example.com", 500_000)
		ch := newCharge(t, app, m, 100_000, "E-1", charge.CaptureAutomatic)
		own := app.NewClient(t)
		own.SignIn("shop@example.com", pw)
		if d := apptest.Parse(own.Get(routes.Checkout(ch.PublicID)).Body); d.TestID("checkout").Attr("data-state") != "own" || d.TestID("checkout-pay") != nil {
			t.Errorf("the merchant's own checkout: %q", d.TestID("checkout").Attr("data-state"))
		}
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		form := apptest.Parse(c.Get(routes.Checkout(ch.PublicID)).Body).Form(routes.Checkout(ch.PublicID)).Hidden()
		stale := url.Values{"_csrf": {form.Get("_csrf")}, "token": {"nope"}}
		if r := c.Post(routes.Checkout(ch.PublicID), stale); r.Status != http.StatusBadRequest {
			t.Errorf("a stale form: %d", r.Status)
		}
		// Enough when the checkout opened, short at Pay: another checkout
		// paid in between (another tab) spent the balance. Pay is refused
		// with its one sentence; nothing is written.
		big, other := newCharge(t, app, m, 400_000, "F-1", charge.CaptureAutomatic), newCharge(t, app, m, 200_000, "F-2", charge.CaptureAutomatic)
		page := apptest.Parse(c.GetIn("en", routes.Checkout(big.PublicID)).Body)
		if page.TestID("checkout").Attr("data-state") != "open" {
			t.Fatalf("a checkout the balance covers: %q", page.TestID("checkout").Attr("data-state"))
		}
		bigForm := page.Form(routes.Checkout(big.PublicID)).Hidden()
		if r := c.Submit(routes.Checkout(other.PublicID), routes.Checkout(other.PublicID), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("pay the other checkout: %d", r.Status)
		}
		r := c.Post(routes.Checkout(big.PublicID), bigForm)
		d := apptest.Parse(r.Body)
		if e := d.TestID("checkout-error").Text(); r.Status != http.StatusConflict || e != "Your available balance is too low for this payment." {
			t.Errorf("pay with the balance spent: %d, error %q", r.Status, e)
		}
		if d.TestID("checkout").Attr("data-state") != "short" || d.TestID("checkout-pay") != nil {
			t.Errorf("after the refusal the checkout is %q", d.TestID("checkout").Attr("data-state"))
		}
		if got, err := app.Server.Charges.Checkout(ctx, big.PublicID); err != nil || got.Status != charge.StatusRequiresConfirmation || got.PayerUserID != 0 {
			t.Errorf("the refused charge: %s payer %d (%v)", got.Status, got.PayerUserID, err)
		}
		if b, h := ledgertest.Balance(t, db, wallet), ledgertest.Held(t, db, wallet); b != 300_000 || h != 0 {
			t.Errorf("payer's balance %d held %d, want 300000 and 0 (the other checkout only)", b, h)
		}
		if mm, err := app.Server.Charges.Merchant(ctx, m); err != nil || mm.PostedRials != 200_000 {
			t.Errorf("merchant's balance %d (%v), want 200000", mm.PostedRials, err)
		}
		clock.Advance(charge.DefaultCheckoutTTL + time.Second)
		d = apptest.Parse(c.Get(routes.Checkout(ch.PublicID)).Body)
		if d.TestID("checkout").Attr("data-state") != "expired" || d.TestID("checkout-pay") != nil {
			t.Errorf("expired checkout: %q", d.TestID("checkout").Attr("data-state"))
		}
		// Before the worker writes it, the way back to the shop already
		// says expired (a shop reading the status from the link must not
		// keep the order waiting), and the unpaid order's reference is
		// no longer shown.
		if a := d.TestID("checkout-return"); a == nil || !strings.Contains(a.Attr("href"), "status=expired") {
			t.Errorf("the way back from a checkout past its time: %v", a)
		}
		if d.TestID("checkout-order") != nil {
			t.Error("the order id of a charge that ended unpaid is shown")
		}
		r = c.Post(routes.Checkout(ch.PublicID), form)
		d = apptest.Parse(r.Body)
		if r.Status != http.StatusConflict || d.TestID("checkout-status").Attr("data-status") != "expired" {
			t.Errorf("pay after expiry: %d", r.Status)
		}
		// Nobody confirmed it: the payer is led back to the shop, told it
		// expired, not stranded here.
		if a := d.TestID("checkout-return"); a == nil || !strings.Contains(a.Attr("href"), "status=expired") {
			t.Errorf("no way back to the shop from an expired checkout: %v", a)
		}
		apptest.CheckInvariants(t, db)
	})
}

// A short balance: the checkout offers to top up the difference (the
// form filled in), and once that top-up is credited its page leads back
// to the same checkout, which then pays.
func TestCheckoutShortBalanceTopUpAndBack(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		_, wallet := signUpFunded(t, app, "payer@example.com", 30_000)
		ch := newCharge(t, app, m, 100_000, "S-1", charge.CaptureAutomatic)
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		d := apptest.Parse(c.Get(routes.Checkout(ch.PublicID)).Body)
		if d.TestID("checkout").Attr("data-state") != "short" || d.TestID("checkout-short").Attr("data-rials") != "70000" || d.TestID("checkout-pay") != nil {
			t.Fatalf("short checkout: %q", d.TestID("checkout").Attr("data-state"))
		}
		link := d.TestID("checkout-topup").Attr("href")
		// The same link followed from another site remembers nothing: it
		// leads to the checkout's own page.
		req, _ := http.NewRequest(http.MethodGet, app.URL+link, nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if r := c.Do(req); r.Status != http.StatusSeeOther || r.Location != routes.Checkout(ch.PublicID) {
			t.Fatalf("top up the difference from another site: %d %q", r.Status, r.Location)
		}
		r := c.Get(link)
		if r.Status != http.StatusSeeOther || r.Location != routes.TopUp+"?amount=7000" {
			t.Fatalf("top up the difference: %d %q", r.Status, r.Location)
		}
		form := apptest.Parse(c.Get(r.Location).Body)
		if form.ByID("amount").Attr("value") != "۷٬۰۰۰" {
			t.Errorf("the top-up form's amount %q", form.ByID("amount").Attr("value"))
		}
		h := form.Form(routes.TopUp).Hidden()
		r = c.PostTopUp(h.Get("_csrf"), h.Get("token"), "7000")
		if r.Status != http.StatusSeeOther {
			t.Fatalf("top-up: %d", r.Status)
		}
		back := c.PayAtBank(r.Location, "pay")
		res := c.Get(back)
		for res.Status == http.StatusSeeOther {
			res = c.Get(res.Location)
		}
		cont := apptest.Parse(res.Body).TestID("continue-checkout")
		if cont == nil || cont.Attr("href") != routes.Checkout(ch.PublicID) {
			t.Fatalf("the credited top-up's page does not lead back: %v %.500s", cont, res.Body)
		}
		if r := c.Submit(cont.Attr("href"), routes.Checkout(ch.PublicID), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("pay: %d", r.Status)
		}
		if b := ledgertest.Balance(t, db, wallet); b != 0 {
			t.Errorf("balance after %d, want 0", b)
		}
		// Paid: the top-up's receipt no longer leads back.
		if c := apptest.Parse(c.Get(back).Body).TestID("continue-checkout"); c != nil {
			t.Errorf("still leads back to a paid checkout")
		}
		apptest.CheckInvariants(t, db)
	})
}

// The cookie that leads back holds only a charge's id: anything else
// (a path, another site) leads nowhere.
func TestCheckoutReturnCookieIsNoOpenRedirect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c, bankURL := app.StartTopUp(t, "p@example.com", "10000")
		u, _ := url.Parse(app.URL)
		for _, v := range []string{"//evil.example/", "https:%2F%2Fevil.example", "ch_../../admin"} {
			c.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "checkout", Value: v, Path: "/"}})
			back := c.PayAtBank(bankURL, "pay")
			res := c.Get(back)
			for res.Status == http.StatusSeeOther {
				res = c.Get(res.Location)
			}
			if apptest.Parse(res.Body).TestID("continue-checkout") != nil {
				t.Errorf("cookie %q: a link back", v)
			}
			_, bankURL = startAnother(t, c)
		}
	})
}

func startAnother(t *testing.T, c *apptest.Client) (string, string) {
	t.Helper()
	csrf, token := c.TopUpForm()
	r := c.PostTopUp(csrf, token, "10000")
	if r.Status != http.StatusSeeOther {
		t.Fatalf("top-up: %d", r.Status)
	}
	return "", r.Location
}

// A charge authorized by one payer and then canceled by the merchant is
// canceled for everyone who opens it: another person is told it was
// canceled, not that someone else paid it (no money of anyone's moved).
func TestCheckoutCanceledByMerchantIsNotTaken(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		signUpFunded(t, app, "payer@example.com", 500_000)
		_, otherWallet := signUpFunded(t, app, "other@example.com", 500_000)
		ch := newCharge(t, app, m, 100_000, "X-1", charge.CaptureManual)
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		if r := c.Submit(routes.Checkout(ch.PublicID), routes.Checkout(ch.PublicID), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("authorize: %d", r.Status)
		}
		o := app.NewClient(t)
		o.SignIn("other@example.com", pw)
		if st := apptest.Parse(o.Get(routes.Checkout(ch.PublicID)).Body).TestID("checkout").Attr("data-state"); st != "taken" {
			t.Fatalf("authorized by another: %q", st)
		}
		if _, err := app.Server.Charges.Cancel(context.Background(), m, ch.PublicID); err != nil {
			t.Fatal(err)
		}
		for _, who := range []*apptest.Client{c, o} {
			d := apptest.Parse(who.GetIn("en", routes.Checkout(ch.PublicID)).Body)
			if st := d.TestID("checkout").Attr("data-state"); st != "canceled" {
				t.Errorf("a canceled charge shows %q", st)
			}
			if s := d.TestID("checkout-status"); s == nil || !strings.Contains(s.Text(), "canceled") {
				t.Errorf("status sentence: %v", s)
			}
			if who == o && (d.TestID("checkout-return") != nil || d.TestID("checkout-order") != nil || d.TestID("checkout-reference") != nil) {
				t.Errorf("another person is sent to the merchant's return_url, or sees the payer's order")
			}
			if who == c && d.TestID("checkout-order").Text() != "X-1" {
				t.Errorf("the payer does not see the order")
			}
		}
		if b := ledgertest.Balance(t, db, otherWallet); b != 500_000 {
			t.Errorf("balance %d", b)
		}
		apptest.CheckInvariants(t, db)
	})
}

// A shortfall below the top-up minimum: the button names the amount the
// form opens with (the minimum), not the shortfall the form would refuse.
func TestCheckoutOffersATopUpTheFormTakes(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	m := shop(t, app, "shop@example.com", "Book Shop")
	signUpFunded(t, app, "payer@example.com", 95_000)
	ch := newCharge(t, app, m, 100_000, "S-2", charge.CaptureAutomatic)
	c := app.NewClient(t)
	c.SignIn("payer@example.com", pw)
	minRials, _ := app.Server.TopUps.Limits()
	if minRials <= 5_000 {
		t.Fatalf("the test wants a top-up minimum above the 5,000-rial shortfall, got %d", minRials)
	}
	d := apptest.Parse(c.Get(routes.Checkout(ch.PublicID)).Body)
	top := d.TestID("checkout-topup")
	if d.TestID("checkout-short").Attr("data-rials") != "5000" || top == nil || top.Attr("data-rials") != strconv.FormatInt(minRials, 10) {
		t.Fatalf("short by 5,000 rials: offers %v", top)
	}
	r := c.Get(top.Attr("href"))
	if r.Status != http.StatusSeeOther || r.Location != routes.TopUp+"?amount="+strconv.FormatInt(minRials/10, 10) {
		t.Fatalf("the form opens at %q, the button offered %s rials", r.Location, top.Attr("data-rials"))
	}
}
