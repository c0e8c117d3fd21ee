package admin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// Latin words a Persian admin page may show: names that are not words of a
// language (the product, the gateways, standard acronyms). IDs, e-mail
// addresses, references and codes are recognised by their shape
// (untranslatedWords), and text marked as data (<code>, <kbd>, <samp>,
// translate="no", an e-mail or URL link) is not read at all.
var adminLatinAllowed = map[string]bool{
	"Kifpool": true, "API": true, "CSV": true, "QR": true, "TOTP": true, "URL": true,
	"IRR": true, "UTC": true, "ISO": true, "HTTP": true,
}

// Names of more than one word (authenticator apps) and command lines the
// operator types (codes): removed before the words are read.
var adminLatinPhrases = regexp.MustCompile(`Google Authenticator|FreeOTP|\bkifpool(?: [a-z0-9-]+)+(?: --[a-z-]+)*`)

var (
	latinWordRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9_'’.-]*`)
	emailRE     = regexp.MustCompile(`[^\s<>"]+@[^\s<>"]+`)
	urlRE       = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"]+`)
	// A short reference (JIWF-NQZH-KKEU), a public id, an authority, a
	// base32 secret, a token prefix: has a digit, or is a run of 12 or
	// more letters and digits without a vowel-like word shape.
	idLikeRE = regexp.MustCompile(`^(?:[A-Z0-9]{4}(?:-[A-Z0-9]{4})+|[A-Za-z0-9_]*[0-9][A-Za-z0-9_.-]*|[a-z2-7]{16,}|[A-Z2-7]{16,}|[a-z]+_[a-z_]+)$`)
)

// untranslatedWords returns the Latin words a reader sees on a page (its
// text and the attributes people read: title, aria-label, placeholder,
// alt, a button's value) that are not allowed above.
func untranslatedWords(t *testing.T, body string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse page: %v", err)
	}
	allowed := map[string]bool{}
	for w := range adminLatinAllowed {
		allowed[w] = true
	}
	// Gateways are named in Persian on Persian pages ("زرین‌پال (آزمایشی)",
	// issue 29 item 8): neither their Latin labels nor "sandbox" are
	// allowed; their stored names only where data shows them.
	for _, d := range drivers.All() {
		allowed[d.Name] = true
	}
	found := map[string]bool{}
	scan := func(s string) {
		s = adminLatinPhrases.ReplaceAllString(urlRE.ReplaceAllString(emailRE.ReplaceAllString(s, " "), " "), " ")
		for _, w := range latinWordRE.FindAllString(s, -1) {
			w = strings.TrimRight(w, ".-'’")
			if len(w) < 2 || allowed[w] || idLikeRE.MatchString(w) {
				continue
			}
			found[w] = true
		}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "code", "kbd", "samp", "head":
				return
			}
			for _, a := range n.Attr {
				switch {
				case a.Key == "translate" && a.Val == "no":
					return
				case a.Key == "lang" && !strings.HasPrefix(a.Val, "fa") && n.Data != "html":
					// Marked as another language on purpose (the
					// language switch names English in English).
					return
				case a.Key == "href" && (strings.HasPrefix(a.Val, "mailto:") || strings.HasPrefix(a.Val, "http")):
					// A link to an address or a site reads as its target.
					return
				}
			}
			for _, a := range n.Attr {
				switch a.Key {
				case "title", "aria-label", "placeholder", "alt":
					scan(a.Val)
				case "value":
					if typ := attr(n, "type"); n.Data == "button" || typ == "submit" || typ == "button" {
						scan(a.Val)
					}
				}
			}
		}
		if n.Type == html.TextNode {
			scan(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	// The page's title is read too (the tab's name).
	walk(doc)
	var titles func(n *html.Node)
	titles = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
			scan(n.FirstChild.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			titles(c)
		}
	}
	titles(doc)
	out := make([]string, 0, len(found))
	for w := range found {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// Every label of the admin console is translated: every admin page,
// rendered for an admin who reads Persian, holds no Latin word outside
// names, IDs, e-mail addresses, references and codes. The pages are the
// app's own GET routes under routes.Admin (a new admin page is walked
// without being listed here; one whose path parameter this test cannot
// fill fails it), with payments in every state, a token, a failing and a
// disabled webhook endpoint with a delivery log, an audit trail and a
// reconciliation report behind them, each page's notices and refusals,
// plus the second factor's pages.
func TestAdminInPersianHasNoEnglishLabels(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"BALANCE_MAX_RIALS": "100000000", "WEBHOOK_ALLOW_LOOPBACK": "1"}})
	ctx := context.Background()
	if _, err := app.Server.Auth.SignUp(ctx, "negar@example.com", "correct horse battery", "admin", "fa"); err != nil {
		t.Fatal(err)
	}

	// What the admin pages show: a payer with a credited, a failed, an
	// open, a pending and a reviewed payment, an API token and webhook
	// endpoints: one whose delivery of the credit failed, one disabled.
	payer, paidURL := app.StartTopUp(t, "payer@example.com", "20000")
	uid := authtest.UserID(t, db, "payer@example.com")
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer partner.Close()
	hook, _, err := app.Server.Webhooks.Create(ctx, uid, partner.URL+"/kifpool/hooks", webhook.Types(), nil)
	if err != nil {
		t.Fatal(err)
	}
	off, _, err := app.Server.Webhooks.Create(ctx, uid, partner.URL+"/old", webhook.Types(), nil)
	if err != nil {
		t.Fatal(err)
	}
	payer.PayAtBank(paidURL, "pay")
	if r := payer.Get(strings.Replace(payAtBankBack(t, app, paidURL), app.URL, "", 1)); r.Status != http.StatusOK {
		t.Fatalf("return: %d", r.Status)
	}
	sender := webhook.NewSender(app.Server.Webhooks, webhook.SenderOptions{RetryFor: time.Millisecond})
	if n, err := sender.DeliverDue(ctx); n != 2 || err != nil {
		t.Fatalf("deliver: %d %v", n, err)
	}
	for _, amount := range []string{"30000", "40000", "50000", "60000"} {
		csrf, tok := payer.TopUpForm()
		payer.PostTopUp(csrf, tok, amount)
	}
	var ids []int64
	for _, p := range topuptest.Select(t, db, func(p topup.TopUp) bool { return p.Status == topup.StatusAwaitingPayment }) {
		ids = append(ids, p.ID)
	}
	topuptest.ForceStatus(t, db, ids[0], "failed", "bank_expired")
	topuptest.ForceStatus(t, db, ids[1], "needs_review", "amount_mismatch")
	topuptest.ForceStatus(t, db, ids[2], "pending_verification", "verify_unknown")
	if _, _, err := app.Server.Tokens.Create(ctx, apitoken.CreateInput{UserID: uid, Name: "phone", Scope: string(apitoken.ScopeTopUp)}); err != nil {
		t.Fatal(err)
	}

	// The second factor's pages, as an admin meets them.
	admin := app.NewClient(t)
	admin.SignIn("negar@example.com", "correct horse battery")
	read := func(name string, r apptest.Response) {
		t.Helper()
		if !strings.Contains(r.Body, `lang="fa"`) {
			t.Errorf("%s: not rendered in Persian", name)
		}
		if words := untranslatedWords(t, r.Body); len(words) > 0 {
			t.Errorf("%s: English shown to a Persian admin: %q", name, words)
		}
	}
	check := func(name string, r apptest.Response) {
		t.Helper()
		if r.Status != http.StatusOK && r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d", name, r.Status)
			return
		}
		read(name, r)
	}
	enrol := admin.GetIn("fa", routes.AdminTwoFactor)
	check("second factor (enrolment code)", enrol)
	check("second factor (wrong enrolment code)", admin.Post(routes.AdminTwoFactor, url.Values{"_csrf": {apptest.Input(enrol.Body, "_csrf")}, "enrol_code": {"AAAA-BBBB-CCCC-DDDD"}}))
	form := url.Values{"_csrf": {apptest.Input(enrol.Body, "_csrf")}, "enrol_code": {apptest.EnrolmentCode(t, db, "negar@example.com")}}
	secret := admin.Post(routes.AdminTwoFactor, form)
	check("second factor (authenticator)", secret)
	form.Set("code", "000000")
	check("second factor (authenticator, wrong code)", admin.Post(routes.AdminTwoFactor, form))
	form.Set("code", apptest.AdminTOTPCode(t, db, "negar@example.com"))
	if r := admin.Post(routes.AdminTwoFactor, form); r.Status == http.StatusOK {
		check("second factor (recovery codes)", r)
	} else if r.Status != http.StatusSeeOther {
		t.Fatalf("second factor: %d", r.Status)
	}
	// Another session of the enrolled admin: the code, a wrong one, and
	// too many wrong ones.
	second := app.NewClient(t)
	second.SignIn("negar@example.com", "correct horse battery")
	codePage := second.GetIn("fa", routes.AdminTwoFactor)
	check("second factor (code)", codePage)
	wrong := url.Values{"_csrf": {apptest.Input(codePage.Body, "_csrf")}, "code": {"000000"}}
	check("second factor (wrong code)", second.Post(routes.AdminTwoFactor, wrong))
	var throttled apptest.Response
	for range 6 {
		throttled = second.Post(routes.AdminTwoFactor, wrong)
	}
	if throttled.Status != http.StatusTooManyRequests {
		t.Errorf("second factor (throttled): %d", throttled.Status)
	}
	read("second factor (throttled)", throttled)

	// Actions leave notices and audit rows; a reconciliation a report.
	list := admin.Get(routes.Admin)
	adminCSRF := apptest.Input(list.Body, "_csrf")
	reviewed := topuptest.ByID(t, db, ids[1]).PublicID
	if r := admin.Post(routes.AdminTopUpRecheck(reviewed), url.Values{"_csrf": {adminCSRF}}); r.Status != http.StatusSeeOther {
		t.Fatalf("recheck: %d", r.Status)
	}
	if r := admin.Post(routes.AdminReconcile, url.Values{"_csrf": {adminCSRF}}); r.Status != http.StatusSeeOther {
		t.Fatalf("reconcile: %d", r.Status)
	}
	if r := admin.Post(routes.AdminWebhookDisable(off.ID), url.Values{"_csrf": {adminCSRF}}); r.Status != http.StatusSeeOther {
		t.Fatalf("disable a webhook: %d", r.Status)
	}
	if r := admin.Post(routes.AdminGatewaySwitch(drivers.All()[0].Name), url.Values{"_csrf": {adminCSRF}, "off": {"1"}, "note": {"تعمیر"}}); r.Status != http.StatusSeeOther {
		t.Fatalf("switch a gateway off: %d", r.Status)
	}
	// A filter the payment list refuses: its page says why.
	for _, q := range []string{"?from=1403/13/40", "?min=abc", "?from=1403/02/01&to=1403/01/01"} {
		r := admin.Get(routes.AdminTopUps + q)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s%s: %d, want 400", routes.AdminTopUps, q, r.Status)
		}
		read(routes.AdminTopUps+q, r)
	}

	// Every admin page, from the app's routes.
	var publicIDs []string
	for _, p := range topuptest.All(t, db) {
		publicIDs = append(publicIDs, p.PublicID)
	}
	// A transfer, for its admin page.
	pw, err := app.Server.Wallets.ForUser(ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Fund(t, db, pw.AccountID, 100_000, "payer-i18n")
	tr, err := app.Server.Transfers.Send(ctx, transfer.Request{SenderUserID: uid, FormToken: formtoken.New(),
		ToEmail: "negar@example.com", AmountRials: 50_000, Note: "سلام"})
	if err != nil {
		t.Fatal(err)
	}
	// A charge paid, for its admin page.
	shopUser, err := app.Server.Auth.SignUp(ctx, "shop-i18n@example.com", "correct horse battery", "", "fa")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := app.Server.Charges.MakeMerchant(ctx, shopUser.ID, "کتابفروشی", nil); err != nil {
		t.Fatal(err)
	}
	chg, err := app.Server.Charges.Create(ctx, charge.CreateRequest{MerchantUserID: shopUser.ID, FormToken: formtoken.New(),
		AmountRials: 20_000, OrderID: "1001", Description: "کتاب", Capture: charge.CaptureAutomatic})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Server.Charges.Confirm(ctx, uid, chg.Charge.PublicID); err != nil {
		t.Fatal(err)
	}
	// A withdrawal waiting for review, for its admin page (its actions
	// shown).
	withdrawaltest.FundUser(t, db, uid, 700_000_000)
	wd, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(),
		BankAccountID: withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 7)), AmountRials: 600_000_000})
	if err != nil {
		t.Fatal(err)
	}
	params := map[string][]string{
		routes.AdminWithdrawalPattern: {wd.Withdrawal.PublicID},
		routes.AdminChargePattern:     {chg.Charge.PublicID},
		routes.AdminTransferPattern:   {tr.Transfer.PublicID},
		routes.AdminTopUpPattern:      publicIDs,
		routes.AdminUserPattern:       {strconv.FormatInt(uid, 10)},
		routes.AdminWebhookPattern:    {strconv.FormatInt(hook.ID, 10), strconv.FormatInt(off.ID, 10)},
	}
	// Each page's notices (?done=) and filters, after the path.
	extra := map[string][]string{
		routes.AdminTopUps: {"?status=failed", "?status=needs_review", "?q=payer%40example.com", "?q=no-such-thing"},
		routes.AdminDashboardPattern: {"?done=done_recheck_credited", "?done=done_closed", "?done=done_reconcile", "?done=error_reconcile", "?done=busy_reconcile",
			"?done=error_note", "?done=error_not_review", "?done=error_busy", "?done=error_nothing_to_ask"},
		routes.AdminTopUpPattern:   {"?done=done_recheck_unchanged", "?done=error_note"},
		routes.AdminUsers:          {"?q=payer", "?q=nobody"},
		routes.AdminAudit:          {"?admin=negar%40example.com", "?payment=" + reviewed, "?admin=nobody%40example.com"},
		routes.AdminGateways:       {"?done=off", "?done=on"},
		routes.AdminTokens:         {"?done=revoked", "?email=payer", "?email=nobody"},
		routes.AdminWebhooks:       {"?done=disabled"},
		routes.AdminWebhookPattern: {"?done=resent", "?done=pending", "?done=endpoint_disabled", "?done=superseded"},
		routes.AdminWithdrawals:    {"?done=reconciled", "?done=reconcile_busy"},
	}
	seen := map[string]bool{}
	moved := map[string]bool{} // old addresses: a 301, no page
	for _, r := range routes.Redirects() {
		moved[r.From] = true
	}
	for _, r := range app.Server.App.GetRoutes(true) {
		if r.Method != http.MethodGet || !routes.Within(routes.Admin, r.Path) || r.Path == routes.AdminTopUpsCSV || r.Path == routes.AdminTwoFactor || seen[r.Path] || moved[r.Path] {
			continue
		}
		seen[r.Path] = true
		paths := []string{r.Path}
		if strings.Contains(r.Path, ":") {
			vals, ok := params[r.Path]
			if !ok {
				t.Errorf("admin page %s: this test has no value for its parameter; add one", r.Path)
				continue
			}
			paths = paths[:0]
			for _, v := range vals {
				paths = append(paths, regexp.MustCompile(`:[a-z]+`).ReplaceAllString(r.Path, v))
			}
		}
		for _, p := range paths {
			check(p, admin.Get(p))
			for _, q := range extra[r.Path] {
				check(p+q, admin.Get(p+q))
			}
		}
	}
	for path := range extra {
		if !seen[path] {
			t.Errorf("%s: no such admin page in the routes", path)
		}
	}
	// What the pages were to show was there.
	if log := admin.Get(routes.AdminWebhook(hook.ID)).Body; !strings.Contains(log, `data-status="failed"`) || !strings.Contains(log, `data-testid="delivery-resend"`) {
		t.Error("the delivery log shows no failed delivery to send again")
	}
	if !strings.Contains(admin.Get(routes.AdminWebhooks).Body, `data-state="disabled"`) {
		t.Error("the webhooks page shows no disabled endpoint")
	}
	if !strings.Contains(admin.Get(routes.AdminAudit).Body, `data-action="gateway_switch"`) {
		t.Error("the audit log shows no gateway switch")
	}
	if len(seen) < 10 {
		t.Fatalf("only %d admin pages found in the routes: %v", len(seen), seen)
	}
}

// payAtBankBack is where the bank sends the payer of payURL back to
// (the payment was paid with payAtBank; the bank remembers).
func payAtBankBack(t *testing.T, app *apptest.App, payURL string) string {
	t.Helper()
	p, ok := app.Server.Bank.Payment(apptest.Authority(payURL))
	if !ok {
		t.Fatal("no such payment at the bank")
	}
	return p.CallbackURL + "?Authority=" + p.Authority + "&Status=OK"
}
