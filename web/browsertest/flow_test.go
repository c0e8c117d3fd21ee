package browsertest

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	bankpage "github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// startApp runs a fresh app (SQLite, built-in sandbox bank under
// /sandbank) and opens a tab on it.
func startApp(t *testing.T, o apptest.Options) (*apptest.App, *Tab) {
	t.Helper()
	browserContext(t) // skip before doing any work when there is no browser
	app := apptest.Start(t, storetest.New(t, store.SQLite), o)
	return app, NewTab(t, app.URL)
}

// checkOnePayment checks the database and the bank after a single top-up.
func checkOneTopUp(t *testing.T, app *apptest.App, when, status string, rials int64, ledger int64) {
	t.Helper()
	if n := len(app.Server.Bank.Payments()); n != 1 {
		t.Errorf("%s: %d payments at the bank, want 1", when, n)
	}
	if n := topuptest.Count(t, app.DB); n != 1 {
		t.Errorf("%s: %d payments, want 1", when, n)
	}
	if n := len(topuptest.Select(t, app.DB, func(p topup.TopUp) bool { return string(p.Status) == status && p.AmountRials == rials })); n != 1 {
		t.Errorf("%s: no %s payment of %d rials", when, status, rials)
	}
	if n := ledgertest.Credits(t, app.DB); n != ledger {
		t.Errorf("%s: %d ledger entries, want %d", when, n, ledger)
	}
	apptest.CheckInvariants(t, app.DB)
}

// countPosts counts the form posts to path that the browser sends.
func countPosts(b *Tab, path string) func() int {
	var mu sync.Mutex
	n := 0
	chromedp.ListenTarget(b.ctx, func(ev any) {
		if ev, ok := ev.(*network.EventRequestWillBeSent); ok && ev.Request.Method == "POST" && strings.HasSuffix(ev.Request.URL, path) {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// Scenarios a and b: a double-clicked "pay" makes one payment, paid once
// at the bank and credited once; reloading the result page changes
// nothing; Back to the form and submitting it again answers with the same
// payment instead of charging twice.
func TestDoubleClickPayReloadAndBack(t *testing.T) {
	app, b := startApp(t, apptest.Options{})
	posts := countPosts(b, routes.TopUp)

	b.SignUp("double@example.com")
	b.FillTopUp("50,000")
	label := b.Text(tid("topup-submit"))
	b.Run(DoubleClick(tid("topup-submit")))
	b.Wait("bank-pay")
	if p := b.Path(); !strings.HasPrefix(p, routes.Sandbank+"/pg/StartPay/") {
		t.Fatalf("after submit: %s, want the bank's page", p)
	}
	if n := posts(); n != 1 {
		t.Errorf("the double click sent %d form posts, want 1 (app.js guard)", n)
	}
	if got := b.Text(tid("bank-amount")); !strings.Contains(got, "۵۰۰٬۰۰۰") {
		t.Errorf("the bank asks for %q, want 500,000 rials", got)
	}

	b.Click("bank-pay")
	b.Wait("result-received")
	if s := b.Status(); s != "credited" {
		t.Fatalf("result status %q", s)
	}
	resultURL := b.Path()
	checkOneTopUp(t, app, "after pay", "credited", 500_000, 1)

	// Reload the return URL: the same page, nothing credited again.
	b.Run(chromedp.Reload())
	b.Wait("result-received")
	if s := b.Status(); s != "credited" || b.Path() != resultURL {
		t.Fatalf("after reload: status %q at %s", s, b.Path())
	}
	checkOneTopUp(t, app, "after reload", "credited", 500_000, 1)

	// Back to the form (through the bank's page), as it was left.
	b.Back()
	if p := b.Path(); !strings.HasPrefix(p, routes.Sandbank+"/pg/StartPay/") {
		t.Fatalf("first Back led to %s, want the bank's page", p)
	}
	b.Back()
	if p := b.Path(); p != routes.TopUp {
		t.Fatalf("Back led to %s, not the form", p)
	}
	// The browser shows the form as it was left (back/forward cache), with
	// its form token: a form loaded anew would be a new top-up.
	var nav struct {
		Type    string `json:"type"`
		Reasons string `json:"reasons"`
	}
	b.Eval(`(() => { const n = performance.getEntriesByType('navigation')[0];
		return {type: n.type, reasons: n.notRestoredReasons ? JSON.stringify(n.notRestoredReasons) : ''}; })()`, &nav)
	if nav.Type == "back_forward" {
		t.Fatalf("the form was loaded again instead of restored from the back/forward cache; reasons: %s", nav.Reasons)
	}
	var st struct {
		Disabled bool   `json:"disabled"`
		Text     string `json:"text"`
		Amount   string `json:"amount"`
	}
	b.Eval(`(() => { const s = document.querySelector('[data-testid=topup-submit]');
		return {disabled: s.disabled, text: s.textContent.trim(), amount: document.getElementById('amount').value}; })()`, &st)
	if st.Disabled || st.Text != label {
		t.Errorf("after Back the pay button is disabled=%v with label %q, want enabled %q", st.Disabled, st.Text, label)
	}
	// Submit it again (whatever the browser kept in the field).
	if st.Amount == "" {
		b.Type(tid("amount"), "50,000")
	}
	b.Click("topup-submit")
	b.Wait("payment-status")
	if s := b.Status(); s != "credited" {
		t.Fatalf("resubmit: status %q at %s", s, b.Path())
	}
	if n := posts(); n != 2 {
		t.Errorf("%d form posts in all, want 2", n)
	}
	checkOneTopUp(t, app, "after resubmit", "credited", 500_000, 1)
	if got := b.Balance(); got != 500_000 {
		t.Fatalf("balance %d rials, want 500000", got)
	}
	b.CheckNoProblems()
}

// Scenario c: Cancel at the bank shows the failed page; nothing is taken.
func TestCancelAtBank(t *testing.T) {
	app, b := startApp(t, apptest.Options{})
	b.SignUp("cancel@example.com")
	b.StartTopUp("۵۰٬۰۰۰") // Persian digits and separator
	b.Click("bank-cancel")
	b.Wait("result-failed")
	if s := b.Status(); s != "failed" {
		t.Fatalf("status %q", s)
	}
	// One sentence for the cause (cancelled at the bank; the generic one
	// while reasons are free text), and "try again" with the same amount.
	cause := b.Attr(tid("failure-cause"), "data-cause")
	if txt := b.Text(tid("failure-cause")); (cause != "cancelled" && cause != "generic") || txt != i18n.T(i18n.FA, "result.failed."+cause) {
		t.Errorf("failed page says %q (cause %q), want the cancelled-at-the-bank sentence", txt, cause)
	}
	checkOneTopUp(t, app, "after cancel", "failed", 500_000, 0)
	b.Click("try-again")
	b.Wait("topup-form")
	if p, v := b.Path(), b.Attr(tid("amount"), "value"); p != routes.TopUp+"?amount=50000" || v != "۵۰٬۰۰۰" {
		t.Errorf("try again: %s with %q, want the form with ۵۰٬۰۰۰", p, v)
	}
	if got := b.Balance(); got != 0 {
		t.Fatalf("balance %d rials, want 0", got)
	}
	b.Wait("history-empty")
	b.CheckNoProblems()
}

// Scenario d: the payer pays and closes the window at the bank, never
// coming back; the background worker finds the payment and credits it.
func TestPayAndCloseCreditedByWorker(t *testing.T) {
	app, b := startApp(t, apptest.Options{Background: true, Env: map[string]string{
		// Time compressed for the test: the worker also asks the bank about
		// a payment at most once per PENDING_RECHECK_AFTER (a check just
		// before the payer paid would otherwise wait its 20 s default).
		"WORKER_INTERVAL": "100ms", "WORKER_ABANDONED_AFTER": "300ms", "PENDING_RECHECK_AFTER": "300ms",
	}})
	b.SignUp("closer@example.com")
	b.StartTopUp("120000")
	b.Click("bank-pay-close")
	b.Wait("bank-closed")

	var got int64
	if err := testwait.Until(15*time.Second, "the worker to credit 1200000 rials", func() bool {
		got = b.Balance()
		return got == 1_200_000
	}); err != nil {
		t.Fatalf("%v: balance still %d rials", err, got)
	}
	b.Wait("history-row")
	if n := b.Attr(tid("history-row"), "data-rials"); n != "1200000" {
		t.Errorf("history row of %s rials", n)
	}
	checkOneTopUp(t, app, "after the worker", "credited", 1_200_000, 1)
	b.CheckNoProblems()
}

// Scenario e: the language link shows the same page in the other language
// and direction, and the choice sticks across pages.
func TestLanguageSwitch(t *testing.T) {
	_, b := startApp(t, apptest.Options{})
	b.Go(routes.SignIn)
	if l, d := b.LangDir(); l != "fa" || d != "rtl" {
		t.Fatalf("first visit: lang=%q dir=%q, want fa rtl", l, d)
	}
	b.Click("lang-switch")
	b.Run(chromedp.WaitVisible(`html[lang="en"]`, chromedp.ByQuery))
	if l, d := b.LangDir(); l != "en" || d != "ltr" || b.Path() != routes.SignIn {
		t.Fatalf("after switch: lang=%q dir=%q at %s, want en ltr on /signin", l, d, b.Path())
	}
	if got := b.Text(tid("auth-submit")); got != i18n.T(i18n.EN, "signin.submit") {
		t.Errorf("English sign-in button says %q", got)
	}
	// Remembered (cookie) across pages, and kept at sign-up.
	var cookies []*network.Cookie
	b.Run(chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().Do(ctx)
		return err
	}))
	found := false
	for _, c := range cookies {
		if c.Name == "lang" && c.Value == "en" {
			found = true
		}
	}
	if !found {
		t.Errorf("no lang=en cookie")
	}
	b.SignUp("lang@example.com")
	if l, d := b.LangDir(); l != "en" || d != "ltr" {
		t.Fatalf("wallet after sign-up: lang=%q dir=%q, want en ltr", l, d)
	}
	b.Go(routes.TopUp)
	if l, _ := b.LangDir(); l != "en" {
		t.Fatalf("top-up form in %q", l)
	}
	// The sandbox bank's page follows the choice.
	b.StartTopUp("50000")
	if l, d := b.LangDir(); l != "en" || d != "ltr" {
		t.Errorf("bank page: lang=%q dir=%q, want en ltr", l, d)
	}
	if got := b.Text(tid("bank-pay")); got != bankpage.T(i18n.EN, "button.pay") {
		t.Errorf("bank's Pay button says %q", got)
	}
	b.Go(routes.TopUp)
	// And back to Persian, on the same page.
	b.Click("lang-switch")
	b.Run(chromedp.WaitVisible(`html[lang="fa"]`, chromedp.ByQuery))
	if l, d := b.LangDir(); l != "fa" || d != "rtl" || b.Path() != routes.TopUp {
		t.Fatalf("after switching back: lang=%q dir=%q at %s", l, d, b.Path())
	}
	b.Go(routes.Wallet)
	if l, d := b.LangDir(); l != "fa" || d != "rtl" {
		t.Fatalf("wallet: lang=%q dir=%q, want fa rtl", l, d)
	}
	if got := b.Text(tid("topup-link")); got != i18n.T(i18n.FA, "wallet.topup") {
		t.Errorf("Persian wallet link says %q", got)
	}
	b.CheckNoProblems()
}

// Scenario f: the whole top-up on a 360×740 phone, in both languages,
// with no page wider than the screen.
func TestPhoneTopUp(t *testing.T) {
	app, b := startApp(t, apptest.Options{})
	b.Run(chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2)))
	b.Go(routes.SignUp)
	b.noHorizontalScroll("sign-up")
	b.SignUp("phone@example.com")
	b.noHorizontalScroll("empty wallet")
	b.FillTopUp("۵۰۰۰۰")
	b.noHorizontalScroll("top-up form")
	b.Click("topup-submit")
	b.Wait("bank-pay")
	b.noHorizontalScroll("bank page")
	b.Click("bank-pay")
	b.Wait("result-received")
	b.noHorizontalScroll("result page")
	if got := b.Balance(); got != 500_000 {
		t.Fatalf("balance %d rials, want 500000", got)
	}
	b.Wait("history-row")
	b.noHorizontalScroll("wallet with history")
	checkOneTopUp(t, app, "phone", "credited", 500_000, 1)

	// The same pages in English.
	b.Click("lang-switch")
	b.Run(chromedp.WaitVisible(`html[lang="en"]`, chromedp.ByQuery))
	b.noHorizontalScroll("wallet (en)")
	b.Go(routes.TopUp)
	b.noHorizontalScroll("top-up form (en)")
	b.Type(tid("amount"), "abc")
	b.Click("topup-submit")
	b.Wait("amount-error")
	b.noHorizontalScroll("top-up error (en)")
	b.CheckNoProblems()
}

// Scenario g: after the first click the pay button is disabled and says
// it is sending the person to the bank, and further clicks send nothing.
// (Quick picks only fill the field: they send nothing at all.)
//
// How the state is caught: the form's POST is held in the browser
// (DevTools Fetch interception), so the form stays on screen as long as
// the test wants. Chromium defers DevTools commands to a page whose
// navigation is pending, so the test cannot read the page then; instead a
// small script installed before the click reads the buttons 100 ms after
// the submit, clicks again, and leaves what it saw in sessionStorage,
// which the test reads on the bank's page (same origin: the built-in
// sandbox bank). The held requests show whether a second post was sent.
func TestPayButtonBusyWhileSubmitting(t *testing.T) {
	for _, first := range []struct{ name, sel string }{{"pay", tid("topup-submit")}} {
		t.Run(first.name, func(t *testing.T) {
			app, b := startApp(t, apptest.Options{})
			b.SignUp("busy@example.com")
			b.FillTopUp("50000")
			if got := b.Text(tid("topup-submit")); got != i18n.T(i18n.FA, "topup.submit") {
				t.Fatalf("pay button says %q", got)
			}
			b.Eval(`(() => {
				const pay = document.querySelector('[data-testid=topup-submit]');
				document.addEventListener('submit', () => setTimeout(() => {
					const seen = {disabled: pay.disabled, text: pay.textContent.trim()};
					pay.click();
					pay.form.requestSubmit();
					sessionStorage.setItem('kp-busy', JSON.stringify(seen));
				}, 100), {once: true});
				return true;
			})()`, nil)

			type paused struct {
				id     fetch.RequestID
				method string
			}
			held := make(chan paused, 8)
			chromedp.ListenTarget(b.ctx, func(ev any) {
				if ev, ok := ev.(*fetch.EventRequestPaused); ok {
					held <- paused{ev.RequestID, ev.Request.Method}
				}
			})
			b.Run(fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*" + routes.TopUp, RequestStage: fetch.RequestStageRequest}}))
			b.Run(chromedp.Click(first.sel, chromedp.ByQuery))
			var req paused
			select {
			case req = <-held:
			case <-time.After(10 * time.Second):
				t.Fatal("the form was not posted")
			}
			if req.method != "POST" {
				t.Fatalf("held a %s request", req.method)
			}
			select {
			case p := <-held:
				t.Errorf("a second %s was sent while the first was on its way", p.method)
				req = p // the browser dropped the first
			case <-time.After(600 * time.Millisecond): // real time: a second post would follow the click within 100 ms; none may
			}
			b.Run(fetch.ContinueRequest(req.id))
			b.Wait("bank-pay")
			b.Run(fetch.Disable())

			var seen struct {
				Disabled bool   `json:"disabled"`
				Text     string `json:"text"`
			}
			var raw string
			b.Eval(`sessionStorage.getItem('kp-busy') || ''`, &raw)
			if raw == "" {
				t.Fatal("the script saw no submit")
			}
			if err := json.Unmarshal([]byte(raw), &seen); err != nil {
				t.Fatal(err)
			}
			if busy := i18n.T(i18n.FA, "topup.sending"); !seen.Disabled || seen.Text != busy {
				t.Errorf("while sending: pay disabled=%v label %q; want disabled %q", seen.Disabled, seen.Text, busy)
			}
			if n := len(app.Server.Bank.Payments()); n != 1 {
				t.Errorf("%d payments at the bank, want 1", n)
			}
			if n := topuptest.Count(t, app.DB); n != 1 {
				t.Errorf("%d payments, want 1", n)
			}
			b.CheckNoProblems()
		})
	}
}

// Quick picks fill the amount field and its preview and send nothing;
// the person then pays the amount in the field (Enter works too). Digits
// typed in the Persian form show in Persian. Without JavaScript a quick
// pick is a link to the form with its amount filled in.
func TestQuickPickFillsTheField(t *testing.T) {
	app, b := startApp(t, apptest.Options{})
	posts := countPosts(b, routes.TopUp)
	b.SignUp("quick@example.com")
	b.Go(routes.TopUp)
	b.Run(chromedp.Click(`[data-testid="quick-pick"]:nth-of-type(2)`, chromedp.ByQuery))
	var st struct {
		Value   string `json:"value"`
		Preview string `json:"preview"`
		Path    string `json:"path"`
		Focus   string `json:"focus"`
	}
	read := func() {
		b.Eval(`({value: document.getElementById('amount').value, preview: document.getElementById('amount-preview').textContent,
			path: location.pathname + location.search, focus: document.activeElement ? document.activeElement.id : ''})`, &st)
	}
	read()
	if st.Value != "۱۰۰٬۰۰۰" || !strings.Contains(st.Preview, "۱۰۰٬۰۰۰") || st.Path != routes.TopUp || st.Focus != "amount" {
		t.Fatalf("after the quick pick: %+v, want the field and preview at ۱۰۰٬۰۰۰ on the form, focused", st)
	}
	if n := posts(); n != 0 {
		t.Fatalf("the quick pick sent %d posts", n)
	}
	if n := topuptest.Count(t, app.DB); n != 0 {
		t.Fatalf("the quick pick made %d payments", n)
	}
	b.Click("topup-submit")
	b.Wait("bank-pay")
	if n := int64(len(topuptest.Select(t, app.DB, func(p topup.TopUp) bool { return p.AmountRials == 1000000 }))); n != 1 {
		t.Errorf("paying after the quick pick of 100,000 tomans: no payment of 1,000,000 rials")
	}

	// Typed Latin digits show as Persian digits; Enter pays them.
	b.FillTopUp("75000")
	read()
	if st.Value != "۷۵۰۰۰" || !strings.Contains(st.Preview, "۷۵٬۰۰۰") {
		t.Errorf("typed 75000: field %q preview %q, want Persian digits", st.Value, st.Preview)
	}
	b.Run(chromedp.Focus(tid("amount"), chromedp.ByQuery), chromedp.KeyEvent("\r")) // not SendKeys: see Type
	b.Wait("bank-pay")
	if n := int64(len(topuptest.Select(t, app.DB, func(p topup.TopUp) bool { return p.AmountRials == 750000 }))); n != 1 {
		t.Errorf("Enter in the field with 75,000 tomans: no payment of 750,000 rials")
	}

	// Without JavaScript: the link opens the form with the amount in it.
	b.Run(emulation.SetScriptExecutionDisabled(true))
	b.Go(routes.TopUp)
	b.Run(chromedp.Click(`[data-testid="quick-pick"]:nth-of-type(1)`, chromedp.ByQuery))
	b.Run(chromedp.WaitVisible(tid("amount"), chromedp.ByQuery))
	var href string
	b.Eval(`location.pathname + location.search`, &href)
	if href != routes.TopUp+"?amount=50000" || b.Attr(tid("amount"), "value") != "۵۰٬۰۰۰" {
		t.Errorf("without JavaScript the quick pick led to %s with %q", href, b.Attr(tid("amount"), "value"))
	}
	b.Run(emulation.SetScriptExecutionDisabled(false))
	b.CheckNoProblems()
}

// flakyVerify answers every verify with a timeout while failing is set.
type flakyVerify struct {
	gateway.Gateway
	failing atomic.Bool
}

func (g *flakyVerify) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	if g.failing.Load() {
		return gateway.VerifyResult{}, &gateway.TransientError{Op: "verify", Err: context.DeadlineExceeded}
	}
	return g.Gateway.Verify(ctx, in)
}

// A result page waiting for the bank's answer checks in the background
// (no timed reload: the meta refresh is only for browsers without
// JavaScript) and shows the answer by itself once there is one.
func TestPendingPageUpdatesItself(t *testing.T) {
	browserContext(t)
	bank := sandbank.New(sandbank.Options{})
	bankSrv := httptest.NewServer(bank.Handler())
	t.Cleanup(bankSrv.Close)
	const merchant = "11111111-2222-3333-4444-555555555555"
	zp, err := zarinpal.New(zarinpal.Config{MerchantID: merchant, BaseURL: bankSrv.URL})
	if err != nil {
		t.Fatal(err)
	}
	gw := &flakyVerify{Gateway: zp}
	gw.failing.Store(true)
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{
		Env: map[string]string{"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": merchant, "ZARINPAL_BASE_URL": bankSrv.URL,
			"BREAKER_MIN_REQUESTS": "1000", "PENDING_RECHECK_AFTER": "100ms"},
		Server: server.Options{Gateway: gw},
	})
	b := NewTab(t, app.URL)
	b.SignUp("patient@example.com")
	b.StartTopUp("60000")
	b.Click("bank-pay") // the standalone bank sends the browser back to the app
	b.Wait("result-pending")
	if s := b.Status(); s != "pending_verification" {
		t.Fatalf("status %q", s)
	}
	var metas int
	b.Eval(`document.querySelectorAll('meta[http-equiv="refresh"]').length`, &metas)
	if metas != 0 {
		t.Errorf("%d meta refresh elements with JavaScript on", metas)
	}

	// Count the page loads and the background checks from now on.
	var mu sync.Mutex
	var loads, checks int
	chromedp.ListenTarget(b.ctx, func(ev any) {
		if ev, ok := ev.(*network.EventRequestWillBeSent); ok && strings.Contains(ev.Request.URL, "/return?") {
			mu.Lock()
			if ev.Type == network.ResourceTypeDocument {
				loads++
			} else {
				checks++
			}
			mu.Unlock()
		}
	})
	// One background check (after 5 s; 20 s allowed for a loaded
	// machine) finds nothing new: no reload.
	testwait.Eventually(t, 20*time.Second, "a background check (and no reload)", func() bool {
		mu.Lock()
		l, c := loads, checks
		mu.Unlock()
		if l > 0 {
			t.Fatalf("after %d checks, %d reloads", c, l)
		}
		return c >= 1
	})
	// real time: a reload would follow the check at once; none may come
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	if loads != 0 {
		t.Errorf("the page reloaded %d times while nothing changed", loads)
	}
	mu.Unlock()

	// The bank answers again: the next check brings the answer on screen.
	gw.failing.Store(false)
	b.Wait("result-received")
	if s := b.Status(); s != "credited" {
		t.Fatalf("status %q", s)
	}
	if got := b.Balance(); got != 600_000 {
		t.Fatalf("balance %d", got)
	}
	apptest.CheckInvariants(t, app.DB)
	b.CheckNoProblems()
}
