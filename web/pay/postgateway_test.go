package pay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/gateway/mellat"
	"github.com/kifpool/kifpool/internal/gateway/sep"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// postGateway is a gateway whose payer goes to the bank and comes back by
// POST, as the tests drive it.
type postGateway struct {
	name       string
	startPath  string // the bank's page, reached by POST
	tokenField string // the form field carrying the token
	receipt    string // the callback field verify needs
}

var postGateways = []postGateway{
	{"sep", sep.PathPay, "Token", "RefNum"},
	{"mellat", mellat.PathStartPay, "RefId", "SaleReferenceId"},
}

// postGatewayApp runs the app with gw against a standalone sandbox bank.
func postGatewayApp(t *testing.T, db *store.DB, gw postGateway, env map[string]string) (*apptest.App, *sandbank.Bank, string) {
	t.Helper()
	bank := sandbank.New(sandbank.Options{})
	srv := apptest.Serve(t, bank.Handler())
	d, ok := drivers.Lookup(gw.name)
	if !ok {
		t.Fatalf("driver %s not registered", gw.name)
	}
	all := map[string]string{"GATEWAY": gw.name}
	for k, v := range d.Sandbox.Settings(srv) {
		all[k] = v
	}
	for k, v := range env {
		all[k] = v
	}
	return apptest.Start(t, db, apptest.Options{Env: all}), bank, srv
}

// startPOST submits the top-up form and returns the bank token from the
// page that posts the payer to the bank.
func startPOST(t *testing.T, c *apptest.Client, gw postGateway, bankURL, amount string) string {
	t.Helper()
	csrf, token := c.TopUpForm()
	r := c.PostTopUp(csrf, token, amount)
	doc := apptest.Parse(r.Body)
	form := doc.TestID("to-bank-form")
	if r.Status != http.StatusOK || form == nil || form.Attr("action") != bankURL+gw.startPath || form.Attr("method") != "post" || !form.Has("data-autosubmit") {
		t.Fatalf("top-up: %d, want the page posting to %s:\n%s", r.Status, bankURL+gw.startPath, r.Body)
	}
	if doc.TestID("to-bank") == nil || !slices.Contains(doc.Attrs("src"), routes.Asset("app.js")) {
		t.Fatalf("the page has no script or no button for a browser without it:\n%s", r.Body)
	}
	// The page's script may run, and its form may post to the bank's origin.
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self' 'nonce-") ||
		!strings.Contains(csp, "form-action 'self' "+bankURL) {
		t.Fatalf("CSP %q", csp)
	}
	tok := doc.Input(gw.tokenField)
	if tok == "" {
		t.Fatalf("no %s field on the page", gw.tokenField)
	}
	// The bank's page takes it the same way, with its two buttons.
	page := c.Post(bankURL+gw.startPath, url.Values{gw.tokenField: {tok}})
	bankDoc := apptest.Parse(page.Body)
	if page.Status != http.StatusOK || bankDoc.TestID("bank-pay") == nil || bankDoc.TestID("bank-cancel") == nil {
		t.Fatalf("bank page %d", page.Status)
	}
	return tok
}

// finish presses pay or cancel through the bank's control API and returns
// the callback the browser then posts.
func finish(t *testing.T, bankURL, gw, tok, action string) sandbank.CallbackRequest {
	t.Helper()
	resp, err := http.Post(bankURL+fmt.Sprintf("/_sandbank/%s/payments/%s/%s", gw, tok, action), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cb sandbank.CallbackRequest
	if err := json.NewDecoder(resp.Body).Decode(&cb); err != nil || resp.StatusCode != 200 || cb.Method != http.MethodPost {
		t.Fatalf("control %s: %d %+v %v", action, resp.StatusCode, cb, err)
	}
	return cb
}

// postBack is the bank's cross-site POST of the callback, from a browser
// that sends no cookie (SameSite=Lax), no session and no CSRF token.
func postBack(t *testing.T, app *apptest.App, cb sandbank.CallbackRequest, change map[string]string) apptest.Response {
	t.Helper()
	form := url.Values{}
	for k, v := range cb.Form {
		form.Set(k, v)
	}
	for k, v := range change {
		form.Set(k, v)
	}
	return app.NewClient(t).Post(cb.URL, form)
}

// The POST gateways end to end, on SQLite and PostgreSQL: the form, the
// page that posts to the bank, pay, the bank's cross-site POST callback
// (303 to a GET page), verify (and settle for Mellat), credited exactly
// once; repeats show "payment received"; a cancel leaves the balance;
// forged callbacks (another token, another payment's receipt) are
// refused (400) and change nothing: the balance, the payment's status
// and its kept receipt (none) stay.
func TestPOSTGatewayFlow(t *testing.T) {
	t.Parallel()
	for _, gw := range postGateways {
		t.Run(gw.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				app, bank, srv := postGatewayApp(t, db, gw, nil)
				c := app.NewClient(t)
				c.SignUp(gw.name + "-flow@example.com")
				tok := startPOST(t, c, gw, srv, "25000")
				cb := finish(t, srv, gw.name, tok, "pay")
				r := postBack(t, app, cb, nil)
				if r.Status != http.StatusSeeOther || !strings.HasSuffix(r.Location, "/return?Authority="+url.QueryEscape(tok)) {
					t.Fatalf("callback: %d %q\n%s", r.Status, r.Location, r.Body)
				}
				res := c.Get(r.Location)
				if !received(res) || c.Balance() != 250_000 {
					t.Fatalf("status %q balance %d", apptest.TopUpStatus(res.Body), c.Balance())
				}
				p, _ := bank.Payment(tok)
				if p.State != sandbank.StateVerified || (gw.name == "mellat" && p.SettledAt.IsZero()) {
					t.Fatalf("bank: %+v", p)
				}
				if receipt := topuptest.ByAuthority(t, db, tok).ReceiptString(); receipt != cb.Form[gw.receipt] {
					t.Fatalf("kept receipt %q, want %q", receipt, cb.Form[gw.receipt])
				}
				// A repeat of the callback: the same "payment received" page, no second credit.
				for range 2 {
					again := postBack(t, app, cb, nil)
					if again.Status != http.StatusSeeOther || !received(c.Get(again.Location)) {
						t.Fatalf("repeat: %d", again.Status)
					}
				}
				if c.Balance() != 250_000 || ledgertest.Credits(t, db) != 1 {
					t.Fatalf("balance %d after repeats", c.Balance())
				}

				// Forged: another token, or another payment's receipt.
				tok2 := startPOST(t, c, gw, srv, "30000")
				cb2 := finish(t, srv, gw.name, tok2, "pay")
				if r := postBack(t, app, cb2, map[string]string{gw.tokenField: tok}); r.Status != http.StatusBadRequest {
					t.Fatalf("callback with another payment's token: %d", r.Status)
				}
				if r := postBack(t, app, cb2, map[string]string{gw.receipt: cb.Form[gw.receipt]}); r.Status != http.StatusBadRequest {
					t.Fatalf("callback with another payment's receipt: %d", r.Status)
				}
				forged := topuptest.ByAuthority(t, db, tok2)
				if c.Balance() != 250_000 || forged.Status != topup.StatusAwaitingPayment || forged.Receipt != nil {
					t.Fatalf("after forged callbacks: balance %d, the payment %s with receipt %v", c.Balance(), forged.Status, forged.Receipt)
				}
				// The real one still credits it.
				if r := postBack(t, app, cb2, nil); r.Status != http.StatusSeeOther || apptest.TopUpStatus(c.Get(r.Location).Body) != "credited" {
					t.Fatalf("real callback after forged ones: %d", r.Status)
				}

				// Cancel: the balance stays, the payment fails on the bank's word.
				tok3 := startPOST(t, c, gw, srv, "40000")
				cb3 := finish(t, srv, gw.name, tok3, "cancel")
				r = postBack(t, app, cb3, nil)
				if r.Status != http.StatusSeeOther {
					t.Fatalf("cancel callback: %d", r.Status)
				}
				if st := apptest.TopUpStatus(c.Get(r.Location).Body); st != "failed" || c.Balance() != 550_000 {
					t.Fatalf("after cancel: status %q balance %d", st, c.Balance())
				}
				apptest.CheckInvariants(t, db)
				apptest.CheckBankAgrees(t, db, bank)
			})
		})
	}
}

// received reports whether a page is the payer's "payment received" page
// of a credited payment.
func received(r apptest.Response) bool {
	doc := apptest.Parse(r.Body)
	return r.Status == http.StatusOK && apptest.TopUpStatus(r.Body) == "credited" && doc.TestID("result-received") != nil
}

// "Already verified" (Mellat 43) and "already settled" (Mellat 45)
// credit, never fail: the bank verified (and settled) the payment before
// our callback came (a crash, another instance). At SEP a verify names no
// token, and once verified SEP forgets the token's receipt: a RefNum only
// the callback names was never tied to this payment by the bank, so it is
// not verified on its own (issue 31) — the payment goes to review
// (receipt_unconfirmed), never failed, never credited on the callback's
// word. (Kifpool's own verify keeps the RefNum the token's receipt names
// before it verifies, so its crashes do not end here.)
func TestPOSTGatewayAlreadyVerified(t *testing.T) {
	t.Parallel()
	for _, gw := range postGateways {
		t.Run(gw.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				app, _, srv := postGatewayApp(t, db, gw, nil)
				c := app.NewClient(t)
				c.SignUp(gw.name + "-again@example.com")
				tok := startPOST(t, c, gw, srv, "12000")
				cb := finish(t, srv, gw.name, tok, "pay")
				publicID := topuptest.ByAuthority(t, db, tok).PublicID
				d, _ := drivers.Lookup(gw.name)
				g, err := d.New(d.Sandbox.Settings(srv), gateway.Deps{HTTPClient: &http.Client{Timeout: 5 * time.Second}})
				if err != nil {
					t.Fatal(err)
				}
				in := gateway.VerifyInput{Authority: tok, AmountRials: 120_000, OrderID: publicID, Receipt: cb.Form[gw.receipt]}
				if vr, err := g.Verify(t.Context(), in); err != nil || vr.Outcome != gateway.VerifyPaid {
					t.Fatalf("verify beforehand: %+v %v", vr, err)
				}
				if settle := g.Ops().Settle; settle != nil {
					if sr, err := settle(t.Context(), in); err != nil || sr.Outcome != gateway.SettleDone {
						t.Fatalf("settle beforehand: %+v %v", sr, err)
					}
				}
				r := postBack(t, app, cb, nil)
				want, balance := "credited", int64(120_000)
				if gw.name == "sep" {
					want, balance = "needs_review", 0
				}
				if st := apptest.TopUpStatus(c.Get(r.Location).Body); st != want || c.Balance() != balance {
					t.Fatalf("status %q balance %d, want %q %d", st, c.Balance(), want, balance)
				}
				apptest.CheckInvariants(t, db)
			})
		})
	}
}

// A verify (SEP) or a settle (Mellat) whose outcome is unknown leaves the
// payment open, the balance untouched; asked again once the bank answers,
// it is credited once. A Mellat payment whose settle timed out is settling
// (the payer's page says pending): the next check settles it (0 or 45)
// and credits; one whose verify timed out is verified again (43) first.
func TestPOSTGatewayTimeoutsLeaveItOpen(t *testing.T) {
	for _, tc := range []struct {
		gw postGateway
		op string
	}{{postGateways[0], "sep-verify"}, {postGateways[1], "mellat-settle"}, {postGateways[1], "mellat-verify"}} {
		t.Run(tc.op, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				app, bank, srv := postGatewayApp(t, db, tc.gw, map[string]string{
					"GATEWAY_BUDGET": "600ms", "GATEWAY_ATTEMPT_TIMEOUT": "200ms", "PENDING_RECHECK_AFTER": "100ms",
				})
				c := app.NewClient(t)
				c.SignUp(tc.gw.name + "-slow@example.com")
				tok := startPOST(t, c, tc.gw, srv, "15000")
				cb := finish(t, srv, tc.gw.name, tok, "pay")
				if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{tc.op: {LatencyMS: 3000}}}); err != nil {
					t.Fatal(err)
				}
				r := postBack(t, app, cb, nil)
				if st := apptest.TopUpStatus(c.Get(r.Location).Body); st != "pending_verification" || c.Balance() != 0 {
					t.Fatalf("after a time-out: status %q balance %d", st, c.Balance())
				}
				p := topuptest.ByAuthority(t, db, tok)
				status, reason, ref := string(p.Status), p.StatusReason, p.RefID
				// Mellat verified it and the settle is unknown: settling,
				// with the bank's reference (the page says pending).
				want := "pending_verification"
				if tc.op == "mellat-settle" {
					want = "settling"
				}
				if status != want || (want == "settling") != (ref != nil) {
					t.Fatalf("row %s %s (ref %v), want %s", status, reason, ref, want)
				}
				bank.ClearFaults()
				testwait.Eventually(t, 5*time.Second, "credited once the bank answers", func() bool {
					return apptest.TopUpStatus(c.Get(r.Location).Body) == "credited"
				})
				if c.Balance() != 150_000 {
					t.Fatalf("balance %d", c.Balance())
				}
				apptest.CheckInvariants(t, db)
				apptest.CheckBankAgrees(t, db, bank)
			})
		})
	}
}

// A SEP payer who paid and never came back (no callback, no RefNum kept):
// the worker asks SEP's receipt of the token, verifies the RefNum it names
// and credits the payment, without the browser.
func TestSEPPaidWithoutCallbackCreditedByWorker(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, bank, srv := postGatewayApp(t, db, postGateways[0], map[string]string{
			"WORKER_INTERVAL": "100ms", "WORKER_ABANDONED_AFTER": "1s", "PENDING_RECHECK_AFTER": "100ms",
		})
		c := app.NewClient(t)
		c.SignUp("sep-gone@example.com")
		tok := startPOST(t, c, postGateways[0], srv, "18000")
		finish(t, srv, "sep", tok, "pay") // the browser never posts it back
		ctx, cancel := context.WithCancel(context.Background())
		wait := app.Server.RunBackground(ctx, nil)
		defer func() { cancel(); wait() }()
		testwait.Eventually(t, 15*time.Second, "the worker credits the paid payment", func() bool {
			return topuptest.Count(t, db, topup.StatusCredited) == 1
		})
		if c.Balance() != 180_000 {
			t.Fatalf("balance %d", c.Balance())
		}
		apptest.CheckInvariants(t, db)
		apptest.CheckBankAgrees(t, db, bank)
	})
}
