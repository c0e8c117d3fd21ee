package pay_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// A payment the payer never paid says so, offers the bank's page again
// and "I won't pay this one". That asks the bank first: paid after all is
// credited, not paid fails, and while the bank cannot say, the payment
// only leaves the wallet's "in progress" list.
func TestUnpaidPageIsHonest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c, payURL := app.StartTopUp(t, "unpaid@example.com", "50000")
		publicID := topuptest.First(t, db).PublicID
		page := c.GetIn("en", routes.TopUpPage(publicID))
		if apptest.Parse(page.Body).TestID("result-unpaid") == nil || !slices.Contains(apptest.Parse(page.Body).Attrs("href"), payURL) ||
			apptest.Parse(page.Body).TestID("abandon") == nil || strings.Contains(page.Body, "no need to pay again") {
			t.Fatalf("unpaid page: %d", page.Status)
		}
		if r := c.Post(routes.TopUpAbandon(publicID), url.Values{}); r.Status != http.StatusForbidden {
			t.Fatalf("abandon without csrf: %d", r.Status)
		}
		stranger := app.NewClient(t)
		stranger.SignUp("stranger@example.com")
		if r := stranger.Forge(routes.Wallet, routes.TopUpAbandon(publicID), nil); r.Status != http.StatusNotFound {
			t.Fatalf("someone else's abandon: %d", r.Status)
		}
		// Not paid, and the bank still holds its page open: nothing is
		// failed on our word; the payment leaves "in progress".
		if !strings.Contains(c.Get(routes.Wallet).Body, routes.TopUpPage(publicID)) {
			t.Fatal("the open payment is not in progress on the wallet page")
		}
		r := c.Submit(routes.TopUpPage(publicID), routes.TopUpAbandon(publicID), nil)
		if r.Status != http.StatusSeeOther {
			t.Fatalf("abandon: %d", r.Status)
		}
		after := c.Get(routes.TopUpPage(publicID))
		if got := apptest.TopUpStatus(after.Body); got != "awaiting_payment" || apptest.Parse(after.Body).TestID("unpaid-dismissed") == nil ||
			apptest.Parse(after.Body).TestID("abandon") != nil || apptest.Parse(after.Body).TestID("back-to-bank") == nil {
			t.Fatalf("after abandon: %q", got)
		}
		if strings.Contains(c.Get(routes.Wallet).Body, routes.TopUpPage(publicID)) {
			t.Fatal("a dismissed payment is still in progress on the wallet page")
		}

		// Paid at the bank, but the browser never came back: "I won't pay"
		// finds the money and credits it.
		csrf, tok := c.TopUpForm()
		r = c.PostTopUp(csrf, tok, "30000")
		c.PayAtBank(r.Location, "pay") // the redirect back is not followed
		paidID := topuptest.Last(t, db).PublicID
		c.Submit(routes.TopUpPage(paidID), routes.TopUpAbandon(paidID), nil)
		if got := apptest.TopUpStatus(c.Get(routes.TopUpPage(paidID)).Body); got != "credited" || c.Balance() != 300_000 {
			t.Fatalf("a paid payment abandoned: %q, balance %d", got, c.Balance())
		}
	})
}

// While the bank cannot say, "I won't pay this one" fails nothing: the
// payment stays open (the worker keeps asking) and leaves the list of
// payments in progress.
func TestAbandonWhileTheBankCannotSay(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	gw := topuptest.NewGateway()
	app := apptest.Start(t, db, apptest.Options{Server: server.Options{Gateway: gw}})
	c := app.NewClient(t)
	c.SignUp("unsure@example.com")
	csrf, tok := c.TopUpForm()
	if r := c.PostTopUp(csrf, tok, "50000"); r.Status != http.StatusSeeOther {
		t.Fatalf("top-up: %d", r.Status)
	}
	publicID := topuptest.First(t, db).PublicID
	if !strings.Contains(c.Get(routes.Wallet).Body, routes.TopUpPage(publicID)) {
		t.Fatal("the open payment is not in progress on the wallet page")
	}
	gw.Set(func(g *topuptest.Gateway) {
		g.VerifyFn = topuptest.VerifyErr(topuptest.Transient("verify"))
		g.InquireFn = nil
	})
	gw.Unknown.Store(true)
	c.Submit(routes.TopUpPage(publicID), routes.TopUpAbandon(publicID), nil)
	page := c.Get(routes.TopUpPage(publicID))
	if got := apptest.TopUpStatus(page.Body); (got != "awaiting_payment" && got != "pending_verification") || apptest.Parse(page.Body).TestID("unpaid-dismissed") == nil {
		t.Fatalf("after abandon with the bank unsure: %q", got)
	}
	if strings.Contains(c.Get(routes.Wallet).Body, routes.TopUpPage(publicID)) {
		t.Fatal("a dismissed payment is still in progress on the wallet page")
	}
	if n := topuptest.Count(t, db, topup.StatusAwaitingPayment, topup.StatusPendingVerification); n != 1 {
		t.Fatal("the payment was closed without the bank's word")
	}
}

// "I won't pay this one" on a payment the bank still holds open: the page
// says plainly that the payer cancelled it and that it is still credited
// if the bank says it was paid, never "in progress" or "awaiting payment"
// (issue 29, item 5).
func TestCancelledTopUpSaysSo(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c, _ := app.StartTopUp(t, "changed-mind@example.com", "50000")
	publicID := topuptest.First(t, app.DB).PublicID
	c.Submit(routes.TopUpPage(publicID), routes.TopUpAbandon(publicID), nil)
	for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
		page := c.GetIn(string(l), routes.TopUpPage(publicID))
		d := apptest.Parse(page.Body)
		if got := apptest.TopUpStatus(page.Body); got != "awaiting_payment" {
			t.Fatalf("%s: status %q, want still open at the bank", l, got)
		}
		if got, want := d.TestID("page-title").Text(), i18n.T(l, "unpaid.cancelled_title"); got != want {
			t.Errorf("%s: heading %q, want %q", l, got, want)
		}
		if got := d.Elements("title")[0].Text(); !strings.HasPrefix(got, i18n.T(l, "unpaid.cancelled_title")) {
			t.Errorf("%s: window title %q", l, got)
		}
		if got, want := d.TestID("result-unpaid").Text(), i18n.T(l, "unpaid.cancelled_title"); got != want {
			t.Errorf("%s: banner %q, want %q", l, got, want)
		}
		if got, want := d.TestID("unpaid-dismissed").Text(), i18n.T(l, "unpaid.dismissed"); got != want {
			t.Errorf("%s: says %q, want %q", l, got, want)
		}
		if got, want := d.TestID("status-text").Text(), i18n.T(l, "status.dismissed"); got != want {
			t.Errorf("%s: status %q, want %q", l, got, want)
		}
		for _, key := range []string{"receipt.title_pending", "result.pending_title", "status.awaiting_payment", "unpaid.title"} {
			if strings.Contains(page.Body, i18n.T(l, key)) {
				t.Errorf("%s: the page still says %q", l, i18n.T(l, key))
			}
		}
	}
}
