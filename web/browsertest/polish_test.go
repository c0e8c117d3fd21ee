package browsertest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	bankpage "github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/views"
)

// viewports are the two widths every page is checked at.
var viewports = []struct {
	name string
	view chromedp.Action
}{
	{"phone", chromedp.EmulateViewport(360, 800, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))},
	{"desktop", chromedp.EmulateViewport(1280, 800)},
}

// wrongDigits lists the text on the page written in the other language's
// digits: Latin digits on a Persian page, Persian digits on an English
// one. Identifiers that are typed and searched as they are (payment ids,
// bank authorities, e-mail addresses, tokens, keys: marked translate="no"
// or in <code>) are left alone; everything else — amounts, dates, counts,
// bank references, card numbers, bank codes, chart labels — is checked,
// and so is the window's title.
func (b *Tab) wrongDigits(lang string) []string {
	b.t.Helper()
	re := "[0-9]"
	if lang == "en" {
		re = "[۰-۹]"
	}
	var bad []string
	b.Eval(`(() => {
		const re = new RegExp(`+"`"+re+"`"+`);
		const out = [];
		if (re.test(document.title)) out.push('<title>: ' + document.title);
		const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {acceptNode(n) {
			const e = n.parentElement;
			if (!e || e.closest('script, style, noscript, code, [translate=no], [hidden]')) return NodeFilter.FILTER_REJECT;
			return re.test(n.data) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
		}});
		for (let n; (n = walk.nextNode()) && out.length < 8;) out.push(n.parentElement.tagName.toLowerCase() + ': ' + n.data.trim().slice(0, 80));
		return out; })()`, &bad)
	return bad
}

// checkPage runs the checks every page gets: no horizontal scroll (at
// 360 px and at 1280 px) and digits in the page's language.
func (b *Tab) checkPage(lang, vp, name string) {
	b.t.Helper()
	b.noHorizontalScroll(name + " " + lang + " " + vp)
	if bad := b.wrongDigits(lang); len(bad) > 0 {
		b.t.Errorf("%s %s %s: digits of the other script: %q", name, lang, vp, bad)
	}
	if l, _ := b.LangDir(); l != lang {
		b.t.Errorf("%s %s %s: page in %q", name, lang, vp, l)
	}
}

// failedSubresources records the page's requests (other than documents)
// that failed or were answered with an error: each is an error line in
// the payer's browser console.
type failedSubresources struct {
	mu  sync.Mutex
	bad []string
}

func (f *failedSubresources) listen(b *Tab) {
	chromedp.ListenTarget(b.tab, func(ev any) {
		if r, ok := ev.(*network.EventResponseReceived); ok && r.Type != network.ResourceTypeDocument && r.Response.Status >= 400 {
			f.mu.Lock()
			f.bad = append(f.bad, r.Response.URL+" "+r.Response.StatusText)
			f.mu.Unlock()
		}
	})
}

func (f *failedSubresources) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.bad
	f.bad = nil
	return out
}

// TestPolishEveryPage visits every page a payer and an admin see, in both
// languages, on a phone (360 px) and a desktop (1280 px): none scrolls
// sideways, every number is in the page's digits (bank codes, cards and
// chart labels included), and the details of issue 23 hold: a payment
// page's title says its status, the header is one row on a phone, the
// dashboard's hours are Tehran's, the bank's page reads year/month and
// offers a way back when it knows no payment.
func TestPolishEveryPage(t *testing.T) {
	f := newFixture(t)
	for _, lang := range []string{"fa", "en"} {
		for _, vp := range viewports {
			t.Run(lang+"-"+vp.name, func(t *testing.T) {
				l, _ := i18n.Parse(lang)
				userPages(t, f, l, lang, vp.name, vp.view)
				adminPages(t, f, l, lang, vp.name, vp.view)
			})
		}
	}
}

func userPages(t *testing.T, f *fixture, l i18n.Lang, lang, vp string, view chromedp.Action) {
	// Signed out.
	b := f.Tab(t, lang, "", view)
	for _, p := range []struct{ name, path, hook string }{
		{"landing", routes.Home, "landing"},
		{"sign-in", routes.SignIn, "auth-form"},
		{"sign-up", routes.SignUp, "auth-form"},
		{"not found", "/no-such-page", "message"},
	} {
		b.Go(p.path)
		b.Wait(p.hook)
		b.checkPage(lang, vp, p.name)
	}
	b.CheckNoProblems()

	// The payer's pages.
	b = f.Tab(t, lang, f.User, view)
	b.Go(routes.Wallet)
	b.Wait("history")
	b.checkPage(lang, vp, "wallet")
	var head struct {
		Header, Toggle float64
		Expanded       string
	}
	b.Eval(`(() => { const t = document.querySelector('[data-testid=menu-toggle]');
		return {Header: document.querySelector('header.top').getBoundingClientRect().height,
			Toggle: t.getBoundingClientRect().width, Expanded: t.getAttribute('aria-expanded')}; })()`, &head)
	if vp == "phone" {
		// One row: brand, language, menu; the links open under it.
		if head.Header > 64 || head.Toggle == 0 {
			t.Errorf("%s phone: header %.0f px high, menu button %.0f px wide: want one row with a menu", lang, head.Header, head.Toggle)
		}
		b.Click("menu-toggle")
		b.Wait("nav-account")
		if got := b.Attr(tid("menu-toggle"), "aria-expanded"); got != "true" {
			t.Errorf("%s phone: menu open, aria-expanded=%q", lang, got)
		}
		b.Click("nav-account")
		b.Wait("account-email")
	} else {
		if head.Header > 80 || head.Toggle != 0 {
			t.Errorf("%s desktop: header %.0f px high, menu button shown (%.0f px)", lang, head.Header, head.Toggle)
		}
		b.Go(routes.Account)
		b.Wait("account-email")
	}
	b.checkPage(lang, vp, "account")
	if got, want := b.Text(tid("signout-everywhere")), i18n.T(l, "account.signout_everywhere"); got != want {
		t.Errorf("account: %q, want %q", got, want)
	}
	b.Go(routes.AccountPassword)
	b.Wait("password-form")
	b.checkPage(lang, vp, "change password")

	// All payments: on a desktop the filters are one compact row and the
	// first payments are in the first screen (issue 29, item 4).
	b.Go(routes.WalletTopUps)
	b.Wait("payment-row")
	b.checkPage(lang, vp, "all payments")
	if vp == "desktop" {
		var fit struct{ Filters, FirstRow, Screen float64 }
		b.Eval(`(() => ({Filters: document.querySelector('[data-testid=payments-filter]').getBoundingClientRect().height,
			FirstRow: document.querySelector('[data-testid=payment-row]').getBoundingClientRect().bottom + window.scrollY,
			Screen: window.innerHeight}))()`, &fit)
		if fit.Filters > 150 || fit.FirstRow > fit.Screen {
			t.Errorf("all payments %s: filters %.0f px high, first row ends at %.0f px of %.0f", lang, fit.Filters, fit.FirstRow, fit.Screen)
		}
	}

	// The top-up form's errors: a minus sign, and the unit typed along.
	b.Go(routes.TopUp)
	b.Wait("amount")
	b.checkPage(lang, vp, "top-up")
	for _, c := range []struct{ typed, key string }{{"۵۰۰۰۰ تومان", "topup.error_invalid"}, {"-50000", "topup.error_negative"}, {"50000.5", "topup.error_decimal"}} {
		b.Go(routes.TopUp)
		b.Type(tid("amount"), c.typed)
		b.Click("topup-submit")
		b.Wait("amount-error")
		if got := b.Text(tid("amount-error")); got != i18n.T(l, c.key) {
			t.Errorf("%s: amount %q says %q, want %q", lang, c.typed, got, i18n.T(l, c.key))
		}
	}
	b.checkPage(lang, vp, "top-up with an error")
	b.CheckNoProblems()

	// TopUp pages: the window's title and the heading say the status.
	b = f.Tab(t, lang, f.User, view)
	for _, p := range []struct {
		name, path, hook, status string
		receipt                  bool
	}{
		{"receipt (credited)", routes.TopUpPage(f.Credited.PublicID), "result-received", "credited", true},
		{"receipt (failed)", routes.TopUpPage(f.Failed.PublicID), "result-failed", "failed", true},
		{"receipt (pending)", routes.TopUpPage(f.Pending.PublicID), "result-pending", "pending_verification", true},
		{"result (credited)", f.CreditedReturn, "result-received", "credited", false},
		{"result (failed)", f.FailedReturn, "result-failed", "failed", false},
		{"result (pending)", f.PendingReturn, "result-pending", "pending_verification", false},
	} {
		b.Go(p.path)
		b.Wait(p.hook)
		b.checkPage(lang, vp, p.name)
		key := views.ResultTitleKey(p.status)
		if p.receipt {
			key = views.ReceiptTitleKey(p.status)
		}
		want := i18n.T(l, key)
		var title, h1 string
		b.Eval(`document.title`, &title)
		b.Eval(`document.querySelector('h1').textContent.trim()`, &h1)
		if !strings.HasPrefix(title, want+" ·") || h1 != want {
			t.Errorf("%s %s: title %q, heading %q; want %q", p.name, lang, title, h1, want)
		}
		if p.status != "credited" && strings.Contains(title, i18n.T(l, "receipt.title")) {
			t.Errorf("%s %s: a %s payment titled %q", p.name, lang, p.status, title)
		}
		if p.name == "receipt (credited)" {
			card := b.Text(tid("card-pan"))
			if lang == "fa" && (!strings.ContainsAny(card, "۰۱۲۳۴۵۶۷۸۹") || strings.ContainsAny(card, "0123456789")) {
				t.Errorf("card %q on the Persian receipt: want Persian digits", card)
			}
			if got := b.Text(tid("payment-status") + " p"); lang == "en" && !strings.HasPrefix(got, "We added ") {
				t.Errorf("credited: %q", got)
			}
		}
	}
	b.CheckNoProblems()

	// The bank's pages.
	b = f.Tab(t, lang, f.User, view)
	var failed failedSubresources
	failed.listen(b)
	b.Go(f.OpenPayURL)
	b.Wait("bank-pay")
	b.checkPage(lang, vp, "bank page")
	var exp struct {
		YearLeft, MonthLeft float64
		YearLabel           string
		MonthLabel          string
	}
	b.Eval(`(() => { const y = document.getElementById('card-year'), m = document.getElementById('card-month');
		return {YearLeft: y.getBoundingClientRect().left, MonthLeft: m.getBoundingClientRect().left,
			YearLabel: document.querySelector('label[for=card-year]').textContent.trim(),
			MonthLabel: document.querySelector('label[for=card-month]').textContent.trim()}; })()`, &exp)
	if exp.YearLeft >= exp.MonthLeft || exp.YearLabel != bankpage.T(l, "card.year") || exp.MonthLabel != bankpage.T(l, "card.month") {
		t.Errorf("bank %s %s: expiry %+v: want year / month, left to right, each named", lang, vp, exp)
	}
	if id := b.Text(tid("bank-order-id")); len(id) > 14 {
		t.Errorf("bank %s: order id %q: want the short reference the receipt shows", lang, id)
	}
	if d := b.Text(tid("bank-description")); lang == "fa" && strings.Contains(d, "Kifpool") {
		t.Errorf("bank: Persian description %q carries English", d)
	}
	b.Go(f.PaidPayURL)
	b.Wait("bank-paid")
	b.checkPage(lang, vp, "bank (already paid)")
	// An unknown payment, reached from the shop (its Referer).
	unknown := strings.TrimSuffix(f.OpenPayURL, apptest.Authority(f.OpenPayURL)) + "A00000000000000000000000000000000000"
	b.Run(chromedp.ActionFunc(func(ctx context.Context) error {
		_, _, _, _, err := page.Navigate(unknown).WithReferrer(f.App.URL + routes.Wallet).Do(ctx)
		return err
	}))
	b.Wait("bank-not-found")
	b.checkPage(lang, vp, "bank (not found)")
	if href := b.Attr(tid("bank-back"), "href"); !strings.HasPrefix(href, f.App.URL) {
		t.Errorf("bank not-found page: back to %q, want the shop (%s)", href, f.App.URL)
	}
	if bad := failed.take(); len(bad) > 0 {
		t.Errorf("bank pages %s %s: failed requests in the console: %v", lang, vp, bad)
	}
	b.CheckNoProblems()

	// API access: the choices sit beside their labels; a new token has a
	// copy button.
	b = f.Tab(t, lang, f.User, view)
	b.Go(routes.Tokens)
	b.Wait("token-form")
	b.checkPage(lang, vp, "api tokens")
	var radio struct{ Width, Mid, LabelTop, LabelBottom float64 }
	b.Eval(`(() => { const r = document.querySelector('[data-testid=scope-read]'), s = r.nextElementSibling.getBoundingClientRect(), rb = r.getBoundingClientRect();
		return {Width: rb.width, Mid: (rb.top + rb.bottom) / 2, LabelTop: s.top, LabelBottom: s.bottom}; })()`, &radio)
	if radio.Width > 30 || radio.Mid < radio.LabelTop || radio.Mid > radio.LabelBottom {
		t.Errorf("tokens %s %s: radio button %+v: want it small, on its label's line", lang, vp, radio)
	}
	b.Type(tid("token-name"), "phone "+lang+" "+vp)
	b.Type(tid("token-password"), password)
	b.Click("token-submit")
	b.Wait("new-token")
	b.Wait("copy-token")
	b.checkPage(lang, vp, "api tokens (new token)")
	b.CheckNoProblems()
}

func adminPages(t *testing.T, f *fixture, l i18n.Lang, lang, vp string, view chromedp.Action) {
	b := f.Tab(t, lang, f.Admin, view)
	// Admin tokens, none of a user's; then with a filter that finds none.
	b.Go(routes.AdminTokens + "?email=nobody%40example.com")
	b.Wait("tokens-none")
	if got := b.Text(tid("tokens-none")); got != i18n.T(l, "tokens.admin_none_filter") {
		t.Errorf("admin tokens %s: %q", lang, got)
	}
	b.checkPage(lang, vp, "admin tokens")
	// A reconciliation run, for the audit log's note.
	before := time.Now()
	b.Go(routes.Admin)
	b.Wait("admin-reconcile")
	b.Click("admin-reconcile")
	// The page after the run says it is done (an earlier run's report is
	// already on the page before it).
	b.Wait("admin-notice")
	b.Wait("reconcile-report")
	b.checkPage(lang, vp, "admin dashboard")
	// Tehran's hours: every row of the chart's table and every label is
	// a whole hour on Tehran's clock (UTC+03:30: a UTC-aligned bucket
	// would read :30).
	zero := i18n.Digits(l, "00")
	var hours, hourLabels []string
	b.Eval(`Array.from(document.querySelectorAll('[data-testid=topups-hour] td:first-child')).map(e => e.textContent.trim())`, &hours)
	b.Eval(`Array.from(document.querySelectorAll('[data-testid=chart-topups] text')).map(e => e.textContent.trim())`, &hourLabels)
	if len(hours) != 24 || len(hourLabels) != 4 {
		t.Errorf("dashboard: %d hours and %d labels, want 24 and 4", len(hours), len(hourLabels))
	}
	for _, h := range append(hours, hourLabels...) {
		if !strings.HasSuffix(h, ":"+zero) {
			t.Errorf("dashboard %s: hour %q is not a whole hour in Tehran", lang, h)
		}
	}
	// The last hour is the one the page was drawn in (between before and
	// after).
	hourOf := func(at time.Time) string { s := i18n.DateTime(l, at); return s[:len(s)-len(zero)] }
	if len(hours) > 23 {
		last := hours[23][:len(hours[23])-len(zero)]
		if last != hourOf(before) && last != hourOf(time.Now()) {
			t.Errorf("dashboard %s: last hour %q, now is %q in Tehran", lang, hours[23], i18n.DateTime(l, time.Now()))
		}
	}
	// The chart's labels stay inside it, and are readable on a phone.
	var labels []struct{ Left, Right, Height, SvgLeft, SvgRight float64 }
	b.Eval(`Array.from(document.querySelectorAll('[data-testid=chart-topups] text')).map(e => { const r = e.getBoundingClientRect(), s = e.ownerSVGElement.getBoundingClientRect();
		return {Left: r.left, Right: r.right, Height: r.height, SvgLeft: s.left, SvgRight: s.right}; })`, &labels)
	for i, lb := range labels {
		if lb.Left < lb.SvgLeft-0.5 || lb.Right > lb.SvgRight+0.5 || lb.Height < 11 {
			t.Errorf("dashboard %s %s: label %d at %.0f..%.0f (%.0f px high), chart %.0f..%.0f", lang, vp, i, lb.Left, lb.Right, lb.Height, lb.SvgLeft, lb.SvgRight)
		}
	}
	// The latency chart's text is readable wherever the chart is shown.
	var small []string
	b.Eval(`Array.from(document.querySelectorAll('[data-testid=chart-latency] text')).filter(e => e.getClientRects().length && e.getBoundingClientRect().height < 10).map(e => e.textContent)`, &small)
	if len(small) > 0 {
		t.Errorf("dashboard %s %s: latency labels too small to read: %q", lang, vp, small)
	}
	var ops []string
	b.Eval(`Array.from(document.querySelectorAll('[data-testid=latency-row] td:first-child')).map(e => e.textContent.trim())`, &ops)
	for _, op := range ops {
		if lang == "fa" && strings.ContainsAny(op, "abcdefghijklmnopqrstuvwxyz_") {
			t.Errorf("dashboard: operation %q in English", op)
		}
	}
	// The breaker is named as the payments are.
	var gw []string
	b.Eval(`Array.from(document.querySelectorAll('[data-testid=breaker]')).map(e => e.dataset.gateway)`, &gw)
	// Open payments have an action: their page.
	var noAction int
	b.Eval(`Array.from(document.querySelectorAll('[data-testid=admin-payment]')).filter(r => !r.querySelector('td:last-child a, td:last-child button')).length`, &noAction)
	if noAction > 0 {
		t.Errorf("dashboard %s: %d open payments without an action", lang, noAction)
	}
	b.CheckNoProblems()

	b = f.Tab(t, lang, f.Admin, view)
	b.Go(routes.AdminTopUps)
	b.Wait("payment-row")
	b.checkPage(lang, vp, "admin payments")
	var listed []string
	b.Eval(`Array.from(document.querySelectorAll('[data-testid=payment-row] td:nth-child(6)')).map(e => e.textContent.trim())`, &listed)
	for _, g := range gw {
		if len(listed) == 0 || g != listed[0] {
			t.Errorf("dashboard %s: breaker named %q, payments' gateway %q", lang, g, listed)
		}
	}
	// Gateways named in the page's language (issue 29, item 8).
	for _, g := range listed {
		if lang == "fa" && strings.ContainsAny(strings.ToLower(g), "abcdefghijklmnopqrstuvwxyz") {
			t.Errorf("admin payments fa %s: gateway %q in English", vp, g)
		}
	}
	// Each status checkbox sits before its own label, nearer to it than
	// to the label before it on the same line (issue 29, item 8).
	var stray []string
	b.Eval(`(() => { const rtl = document.documentElement.dir === 'rtl', out = [];
		const ls = Array.from(document.querySelectorAll('[data-testid=status-filter]'));
		ls.forEach((lb, i) => {
			const cb = lb.querySelector('input').getBoundingClientRect(), bd = lb.querySelector('.nowrap').getBoundingClientRect();
			const own = rtl ? cb.left - bd.right : bd.left - cb.right;
			if (own < -1) { out.push(lb.dataset.status + ': checkbox after its label'); return; }
			const prev = i > 0 ? ls[i-1].getBoundingClientRect() : null;
			if (prev && Math.abs(prev.top - lb.getBoundingClientRect().top) < 4) {
				const gap = rtl ? prev.left - cb.right : cb.left - prev.right;
				if (gap <= own) out.push(lb.dataset.status + ': checkbox ' + gap.toFixed(0) + ' px from the label before it, ' + own.toFixed(0) + ' px from its own');
			}
		});
		return out; })()`, &stray)
	if len(stray) > 0 {
		t.Errorf("admin payments %s %s: status filter: %q", lang, vp, stray)
	}
	if ph := b.Attr("#f-from", "placeholder"); ph != i18n.JalaliDate(l, time.Now()) {
		t.Errorf("date placeholder %q, want today %q", ph, i18n.JalaliDate(l, time.Now()))
	}
	b.Go(routes.AdminTopUps + "?from=yesterday")
	b.Wait("filter-error")
	b.checkPage(lang, vp, "admin payments (bad filter)")
	for _, p := range adminPageList(t, f) {
		if p.path == routes.Admin || strings.HasPrefix(p.path, routes.AdminTopUps+"?") {
			continue
		}
		b.Go(p.path)
		b.Wait(p.hook)
		b.checkPage(lang, vp, p.name)
		if p.name == "admin payment (failed)" {
			// "ناموفق — بانک…", a space on both sides of the dash.
			var status string
			b.Eval(`document.querySelector('.details dd').textContent.replace(/\s+/g, ' ').trim()`, &status)
			if strings.Contains(status, "—") && !strings.Contains(status, " — ") {
				t.Errorf("%s %s: status %q: a space missing at the dash", p.name, lang, status)
			}
		}
	}
	b.CheckNoProblems()
}

// TestRecoveryCodesPage: a new admin's key is grouped and the code field
// brings up digits; the recovery codes follow the page's direction and
// can be copied, downloaded and printed.
func TestRecoveryCodesPage(t *testing.T) {
	f := newFixture(t)
	for _, lang := range []string{"fa", "en"} {
		for _, vp := range viewports {
			t.Run(lang+"-"+vp.name, func(t *testing.T) {
				email := "admin-" + lang + "-" + vp.name + "@example.com"
				if _, err := f.App.Server.Auth.SignUp(context.Background(), email, password, auth.RoleAdmin, lang); err != nil {
					t.Fatal(err)
				}
				b := f.Tab(t, lang, "", vp.view)
				b.SignIn(email, password)
				b.Go(routes.AdminTwoFactor)
				// The operator's one-time enrolment code first (issue 20).
				b.Wait("enrol-code")
				b.Type("#enrol_code", apptest.EnrolmentCode(t, f.App.DB, email))
				b.Click("two-factor-submit")
				b.Wait("totp-secret")
				b.checkPage(lang, vp.name, "admin enrolment")
				if key := b.Text(tid("totp-secret")); strings.Count(key, " ") < 3 {
					t.Errorf("key %q not in groups", key)
				}
				if im := b.Attr("#code", "inputmode"); im != "numeric" {
					t.Errorf("code field inputmode=%q", im)
				}
				b.Type("#code", apptest.AdminTOTPCode(t, f.App.DB, email))
				b.Click("two-factor-submit")
				b.Wait("recovery-codes")
				b.checkPage(lang, vp.name, "recovery codes")
				var list struct {
					Dir   string
					Style string
					N     int
				}
				b.Eval(`(() => { const o = document.querySelector('[data-testid=recovery-list]');
					return {Dir: getComputedStyle(o).direction, Style: getComputedStyle(o).listStyleType, N: o.querySelectorAll('li').length}; })()`, &list)
				wantDir := "rtl"
				if lang == "en" {
					wantDir = "ltr"
				}
				if list.Dir != wantDir || list.N != 10 || (lang == "fa" && list.Style != "persian") {
					t.Errorf("recovery list %+v: want %s, 10 codes, Persian numbers in Persian", list, wantDir)
				}
				b.Wait("copy-codes")
				b.Wait("print-codes")
				b.Wait("download-codes")
				if href := b.Attr(tid("download-codes"), "href"); !strings.HasPrefix(href, "data:text/plain") {
					t.Errorf("download link %q", href)
				}
				if txt := b.Attr(tid("copy-codes"), "data-copy-text"); strings.Count(txt, "\n") != 9 {
					t.Errorf("copy gives %q: want ten lines", txt)
				}
				b.CheckNoProblems()
			})
		}
	}
}

// TestTopUpFormFirstScreen: the top-up form with the default four
// gateways (GATEWAYS=sandbox) shows its gateways as compact rows, and Pay
// stays within the first screen at 360×800 and at 1280×800, in both
// languages (issue 29, item 1).
func TestTopUpFormFirstScreen(t *testing.T) {
	app, _ := startApp(t, apptest.Options{})
	for _, lang := range []string{"fa", "en"} {
		for _, vp := range viewports {
			t.Run(lang+"-"+vp.name, func(t *testing.T) {
				b := NewTab(t, app.URL)
				b.Run(vp.view)
				b.Go(routes.SignIn + "?lang=" + lang)
				b.SignUp("first-screen-" + lang + "-" + vp.name + "@example.com")
				b.Go(routes.TopUp)
				b.Wait("gateway-choice")
				b.checkPage(lang, vp.name, "top-up")
				b.Audit("top-up, four gateways " + lang + " " + vp.name)
				var m struct {
					Options    int
					Tallest    float64
					PayBottom  float64
					ViewHeight float64
				}
				b.Eval(`(() => {
					const opts = Array.from(document.querySelectorAll('[data-testid=gateway-choice] label'));
					const pay = document.querySelector('[data-testid=topup-submit]').getBoundingClientRect();
					return {Options: opts.length,
						Tallest: Math.max(...opts.map(o => o.getBoundingClientRect().height)),
						PayBottom: pay.bottom + window.scrollY, ViewHeight: window.innerHeight}; })()`, &m)
				if m.Options != 4 {
					t.Fatalf("%d gateways offered, want the default four", m.Options)
				}
				if m.Tallest > 44 {
					t.Errorf("a gateway's row is %.0f px high: want a compact row (≤ 44 px)", m.Tallest)
				}
				if m.PayBottom > m.ViewHeight {
					t.Errorf("Pay ends at %.0f px, below the first screen (%.0f px)", m.PayBottom, m.ViewHeight)
				}
				b.CheckNoProblems()
			})
		}
	}
}

// TestTokenAndWebhookTablesFit: the API-token and webhook tables, the
// user's and the admin's, never scroll sideways at 360 and 1280 px, in
// both languages, and their actions (revoke, disable) are in view
// (issue 29, item 9).
func TestTokenAndWebhookTablesFit(t *testing.T) {
	app, _ := startApp(t, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
	ctx := context.Background()
	u, err := app.Server.Auth.SignUp(ctx, "partner@example.com", password, auth.RoleAdmin, "fa")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, _, err := app.Server.Tokens.Create(ctx, apitoken.CreateInput{UserID: u.ID, Name: "shop integration " + strconv.Itoa(i), Scope: "read"}); err != nil {
			t.Fatal(err)
		}
	}
	hook := "http://127.0.0.1:9/" + strings.Repeat("callbacks/kifpool/", 6) + "top-ups"
	if _, _, err := app.Server.Webhooks.Create(ctx, u.ID, hook, []string{"topup.credited", "topup.failed", "topup.needs_review"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"fa", "en"} {
		for _, vp := range viewports {
			t.Run(lang+"-"+vp.name, func(t *testing.T) {
				b := NewTab(t, app.URL)
				b.Run(vp.view)
				b.Go(routes.SignIn + "?lang=" + lang)
				b.SignIn(u.Email, password)
				b.PassAdminChecks(app.DB, u.Email)
				for _, p := range []struct{ name, path, table, action string }{
					{"API access", routes.Tokens, "tokens", "token-revoke"},
					{"webhooks", routes.Webhooks, "webhooks", "webhook-disable"},
					{"admin tokens", routes.AdminTokens, "tokens", "token-revoke"},
					{"admin webhooks", routes.AdminWebhooks, "webhooks", "webhook-disable"},
				} {
					b.Go(p.path)
					b.Wait(p.table)
					b.checkPage(lang, vp.name, p.name)
					var m struct {
						Scroll, Client float64
						Hidden         []string
					}
					b.Eval(`(() => { const box = document.querySelector('[data-testid=`+p.table+`]').closest('.table-scroll');
						const w = document.documentElement.clientWidth;
						return {Scroll: box.scrollWidth, Client: box.clientWidth,
							Hidden: Array.from(document.querySelectorAll('[data-testid=`+p.action+`]')).filter(e => {
								const r = e.getBoundingClientRect(), bx = box.getBoundingClientRect();
								return r.width === 0 || r.left < Math.max(0, bx.left) - 0.5 || r.right > Math.min(w, bx.right) + 0.5; }).map(e => e.textContent)}; })()`, &m)
					if m.Scroll > m.Client+1 {
						t.Errorf("%s: the table scrolls sideways (%.0f px in %.0f)", p.name, m.Scroll, m.Client)
					}
					if len(m.Hidden) > 0 {
						t.Errorf("%s: actions out of view: %q", p.name, m.Hidden)
					}
				}
				b.Audit("token and webhook tables " + lang + " " + vp.name)
				b.CheckNoProblems()
			})
		}
	}
}
