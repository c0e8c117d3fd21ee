package withdraw_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// persian writes ASCII digits as Persian ones, as a Persian keyboard
// types them.
func persian(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			r = '۰' + (r - '0')
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	sheba        = withdrawaltest.Sheba("017", 42)
	nationalCode = withdrawaltest.NationalCode(499370)
)

// addAccount submits the bank accounts form.
func addAccount(c *apptest.Client, iban, nc string) apptest.Response {
	return c.Submit(routes.BankAccounts, routes.BankAccounts, url.Values{"iban": {iban}, "national_code": {nc}})
}

// control acts on a payout through the built-in bank's control API (on
// loopback, as a demo's curl).
func control(t *testing.T, app *apptest.App, provider, id, action string) {
	t.Helper()
	resp, err := http.Post(app.URL+routes.Sandbank+payouts.ControlPath(provider, id, action), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d", action, id, resp.StatusCode)
	}
}

// TestBankAccounts: a Sheba typed in Persian digits, with spaces and
// without IR, is checked and verified by the provider's inquiry; the
// national code is asked once; a mismatch is refused and stores nothing;
// "no upstream provider" leaves the account for review, never a
// mismatch; a bad Sheba gets its one sentence.
func TestBankAccounts(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	c := app.NewClient(t)
	c.SignUp("payee@example.com")
	uid := authtest.UserID(t, db, "payee@example.com")

	page := c.Get(routes.BankAccounts)
	doc := apptest.Parse(page.Body)
	if page.Status != http.StatusOK || doc.TestID("bank-accounts-none") == nil || doc.TestID("national-code") == nil {
		t.Fatalf("empty page: %d", page.Status)
	}
	typed := persian(sheba[2:6] + " " + sheba[6:14] + " " + sheba[14:])
	// A wrong national code marks its own field, not the Sheba's, and
	// keeps both as typed.
	marked := func(doc *apptest.Doc, id string) bool {
		e := doc.ByID(id)
		return e != nil && e.Attr("aria-invalid") == "true" && e.Has("autofocus")
	}
	bad := apptest.Parse(addAccount(c, typed, "123").Body)
	if !marked(bad, "national-code") || marked(bad, "iban") || bad.Input("iban") != typed || bad.Input("national_code") != "123" {
		t.Fatal("a wrong national code: its field is not the one marked, or the form lost what was typed")
	}
	bad = apptest.Parse(addAccount(c, "IR12", persian(nationalCode)).Body)
	if !marked(bad, "iban") || marked(bad, "national-code") {
		t.Fatal("a wrong Sheba: its field is not the one marked")
	}
	r := addAccount(c, typed, persian(nationalCode))
	if r.Status != http.StatusSeeOther || r.Location != routes.BankAccounts+"?done=verified" {
		t.Fatalf("add: %d %q %.300s", r.Status, r.Location, r.Body)
	}
	doc = apptest.Parse(c.Get(r.Location).Body)
	if n := doc.TestID("bank-accounts-notice"); n == nil || !strings.Contains(n.Text(), "تأیید") {
		t.Fatal("no notice that the account is verified")
	}
	rows := doc.TestIDs("bank-account")
	if len(rows) != 1 || rows[0].Attr("data-status") != "verified" || !strings.Contains(rows[0].Text(), "بانک ملی ایران") {
		t.Fatalf("rows %d", len(rows))
	}
	if doc.TestID("national-code") != nil || doc.TestID("national-code-on-file") == nil {
		t.Fatal("the national code is asked again")
	}
	if got := withdrawaltest.NationalCodeOf(t, db, uid); got != nationalCode {
		t.Fatalf("national code on file %q", got)
	}
	// The same Sheba again: the same account.
	if r := addAccount(c, sheba, ""); r.Location != routes.BankAccounts+"?done=exists" {
		t.Fatalf("again: %d %q", r.Status, r.Location)
	}

	for _, tc := range []struct {
		name, iban string
		status     int
		errorText  string
	}{
		{"a typo", sheba[:25] + string('0'+(sheba[25]-'0'+1)%10), http.StatusUnprocessableEntity, "کنترلی"},
		{"too short", "IR12", http.StatusUnprocessableEntity, "۲۴ رقم"},
	} {
		r := addAccount(c, tc.iban, "")
		if r.Status != tc.status {
			t.Fatalf("%s: %d", tc.name, r.Status)
		}
		if e := apptest.Parse(r.Body).TestID("bank-account-error"); e == nil || !strings.Contains(e.Text(), tc.errorText) {
			t.Fatalf("%s: no such error", tc.name)
		}
	}
	// A mismatch, by the provider's word: refused, nothing stored.
	other := withdrawaltest.Sheba("056", 7)
	ownerBody := strings.NewReader(`{"iban":"` + other + `","national_code":"` + nationalCode + `","owned":false}`)
	resp, err := http.Post(app.URL+routes.Sandbank+payouts.OwnersPath, "application/json", ownerBody)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r = addAccount(c, other, "")
	if e := apptest.Parse(r.Body).TestID("bank-account-error"); r.Status != http.StatusUnprocessableEntity || e == nil || !strings.Contains(e.Text(), "به نام این کد ملی نیست") {
		t.Fatalf("mismatch: %d", r.Status)
	}
	if n := withdrawaltest.BankAccounts(t, db, uid); n != 1 {
		t.Fatalf("%d accounts after a mismatch", n)
	}
	// No upstream provider: pending review.
	if err := app.Server.Bank.Payouts().SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{payouts.Zibal: {NoUpstream: true}}}); err != nil {
		t.Fatal(err)
	}
	if r := addAccount(c, withdrawaltest.Sheba("012", 9), ""); r.Location != routes.BankAccounts+"?done=pending" {
		t.Fatalf("no upstream: %d %q", r.Status, r.Location)
	}
	// In English.
	en := c.GetIn("en", routes.BankAccounts)
	if !strings.Contains(en.Body, "Bank Melli Iran") || !strings.Contains(en.Body, "Waiting for review") {
		t.Fatal("the English page")
	}
}

// TestWithdrawJourney: the form, its confirmation with the rail and the
// next Paya cycle, the receipt; a second submit of the form is the same
// withdrawal; the worker sends it, the provider settles it, and the
// wallet's history reads "to your account at … …0042".
func TestWithdrawJourney(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	c := app.NewClient(t)
	c.SignUp("payee@example.com")
	uid := authtest.UserID(t, db, "payee@example.com")
	withdrawaltest.FundUser(t, db, uid, 5_000_000)

	if doc := apptest.Parse(c.Get(routes.Withdraw).Body); doc.TestID("withdraw-no-accounts") == nil {
		t.Fatal("the form without an account")
	}
	if r := addAccount(c, sheba, nationalCode); r.Status != http.StatusSeeOther {
		t.Fatalf("add account: %d", r.Status)
	}
	form := c.Get(routes.Withdraw)
	doc := apptest.Parse(form.Body)
	f := doc.Form(routes.Withdraw)
	if f == nil || doc.TestID("withdraw-available").Attr("data-rials") != "5000000" || len(doc.Inputs("bank_account")) != 1 {
		t.Fatalf("form: %.500s", form.Body)
	}
	values := f.Hidden()
	values.Set("bank_account", doc.Inputs("bank_account")[0].Attr("value"))
	values.Set("amount", persian("200,000"))
	confirm := c.Post(routes.Withdraw, values)
	cd := apptest.Parse(confirm.Body)
	if confirm.Status != http.StatusOK || cd.TestID("withdraw-confirm") == nil || cd.TestID("confirm-rail").Attr("data-rail") != "paya" ||
		cd.TestID("confirm-eta").Attr("data-cutoff") == "" {
		t.Fatalf("confirm: %d %.500s", confirm.Status, confirm.Body)
	}
	// As the transfer's confirmation: the amount in words and the
	// balance once it is held.
	if got := cd.TestID("confirm-after").Attr("data-rials"); got != "3000000" {
		t.Errorf("confirm: balance after %q rials, want 3000000", got)
	}
	if got := cd.TestID("confirm-words").Text(); !strings.Contains(got, i18n.Words(i18n.FA, 200_000)) && !strings.Contains(got, i18n.Words(i18n.EN, 200_000)) {
		t.Errorf("confirm: in words %q, want two hundred thousand", got)
	}
	post := cd.Form(routes.Withdraw).Hidden()
	// "Change" brings the form back as it was filled in, under the same
	// token, writing nothing.
	if cd.TestID("withdraw-change").Attr("name") != "edit" {
		t.Fatal("the confirmation's change is not the form's edit")
	}
	edit := cd.Form(routes.Withdraw).Hidden()
	edit.Set("edit", "1")
	e := c.Post(routes.Withdraw, edit)
	ed := apptest.Parse(e.Body)
	if e.Status != http.StatusOK || ed.TestID("withdraw-form") == nil || ed.Input("amount") != persian("200,000") ||
		ed.Form(routes.Withdraw).Hidden().Get("token") != post.Get("token") ||
		!ed.TestID("bank-account-"+values.Get("bank_account")).Has("checked") {
		t.Fatalf("change: %d, amount %q", e.Status, ed.Input("amount"))
	}
	if n := len(withdrawaltest.ByUser(t, db, uid)); n != 0 {
		t.Fatalf("%d withdrawals after a change", n)
	}
	r := c.Post(routes.Withdraw, post)
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.Withdrawals+"/wd_") {
		t.Fatalf("withdraw: %d %q %.300s", r.Status, r.Location, r.Body)
	}
	if again := c.Post(routes.Withdraw, post); again.Location != r.Location {
		t.Fatalf("a second submit went to %q", again.Location)
	}
	ws := withdrawaltest.ByUser(t, db, uid)
	if len(ws) != 1 || ws[0].AmountRials != 2_000_000 {
		t.Fatalf("withdrawals %+v", ws)
	}
	if f := withdrawaltest.WalletOf(t, db, uid); f.Held != 2_000_000 {
		t.Fatalf("held %d", f.Held)
	}
	rec := apptest.Parse(c.Get(r.Location).Body)
	if e := rec.TestID("withdrawal-receipt"); e == nil || e.Attr("data-status") != "requested" || rec.TestID("withdrawal-cancel") == nil {
		t.Fatal("receipt while requested")
	}
	if _, err := app.Server.PayoutWorker.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	control(t, app, ws[0].Provider, ws[0].PublicID, "settle")
	// The worker checks again after its back-off: ask now.
	if _, err := app.Server.Withdrawals.Resolve(context.Background(), ws[0].ID, "worker"); err != nil {
		t.Fatal(err)
	}
	rec = apptest.Parse(c.Get(r.Location).Body)
	if e := rec.TestID("withdrawal-receipt"); e == nil || e.Attr("data-status") != "paid" || rec.TestID("withdrawal-cancel") != nil {
		t.Fatal("receipt once paid")
	}
	if f := withdrawaltest.WalletOf(t, db, uid); f.Posted != 3_000_000 || f.Held != 0 {
		t.Fatalf("wallet %+v", f)
	}
	wallet := apptest.Parse(c.GetIn("en", routes.Wallet).Body)
	line := wallet.TestID("history-withdrawal")
	if line == nil || !strings.Contains(line.Text(), "to your account at Bank Melli Iran …0042") || wallet.TestID("withdraw-link") == nil {
		t.Fatalf("the wallet's history: %v", line)
	}
	if line := apptest.Parse(c.GetIn("fa", routes.Wallet).Body).TestID("history-withdrawal"); line == nil ||
		!strings.Contains(line.Text(), "به حساب شما در بانک ملی ایران …۰۰۴۲") {
		t.Fatalf("the wallet's history in Persian: %v", line)
	}
	if app.Server.Withdrawals == nil || apptest.Parse(c.Get(routes.Withdrawal(ws[0].PublicID)).Body).TestID("withdrawal-ref") == nil {
		t.Fatal("no bank reference on the receipt")
	}
	// Another's receipt is not found.
	stranger := app.NewClient(t)
	stranger.SignUp("stranger@example.com")
	if r := stranger.Get(routes.Withdrawal(ws[0].PublicID)); r.Status != http.StatusNotFound {
		t.Fatalf("another's receipt: %d", r.Status)
	}
	withdrawaltest.CheckInvariants(t, db)
}

// TestWithdrawRefusals: each refusal is one sentence, changes nothing;
// a cancel before the withdrawal is sent releases it, after it is 409.
func TestWithdrawRefusals(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WITHDRAWAL_REVIEW_ABOVE_RIALS": "250000"}})
	c := app.NewClient(t)
	c.SignUp("payee@example.com")
	uid := authtest.UserID(t, db, "payee@example.com")
	withdrawaltest.FundUser(t, db, uid, 1_000_000)
	addAccount(c, sheba, nationalCode)
	pending := withdrawaltest.PendingAccount(t, db, uid, withdrawaltest.Sheba("012", 5))
	doc := apptest.Parse(c.Get(routes.Withdraw).Body)
	account := doc.Inputs("bank_account")[0].Attr("value")
	for _, tc := range []struct {
		name, account, amount, token string
		status                       int
		text                         string
	}{
		{"more than the wallet", account, "200000", "", http.StatusUnprocessableEntity, "کافی نیست"},
		{"below the minimum", account, "5000", "", http.StatusUnprocessableEntity, "کمترین مبلغ"},
		{"not a number", account, "ده", "", http.StatusUnprocessableEntity, ""},
		{"an account waiting for review", itoa(pending), "20000", "", http.StatusUnprocessableEntity, "تأییدشده"},
		{"a forged token", account, "20000", "forged", http.StatusBadRequest, "معتبر نیست"},
	} {
		form := apptest.Parse(c.Get(routes.Withdraw).Body).Form(routes.Withdraw).Hidden()
		form.Set("bank_account", tc.account)
		form.Set("amount", tc.amount)
		if tc.token != "" {
			form.Set("token", tc.token)
		}
		r := c.Post(routes.Withdraw, form)
		doc := apptest.Parse(r.Body)
		e := doc.TestID("withdraw-error")
		if r.Status != tc.status || e == nil || !strings.Contains(e.Text(), tc.text) {
			t.Errorf("%s: %d", tc.name, r.Status)
		}
		// The account refused marks the accounts, not the amount.
		if amountMarked := doc.ByID("amount").Attr("aria-invalid") == "true"; tc.account == itoa(pending) && (amountMarked || doc.TestID("bank-account-"+account).Attr("aria-invalid") != "true") {
			t.Errorf("%s: the amount is marked invalid, or the accounts are not", tc.name)
		}
	}
	if n := len(withdrawaltest.ByUser(t, db, uid)); n != 0 {
		t.Fatalf("%d withdrawals from refusals", n)
	}
	// Cancel, then a cancel of one already sent.
	mkOf := func(tomans string) string {
		form := apptest.Parse(c.Get(routes.Withdraw).Body).Form(routes.Withdraw).Hidden()
		form.Set("bank_account", account)
		form.Set("amount", tomans)
		form.Set("confirm", "1")
		r := c.Post(routes.Withdraw, form)
		if r.Status != http.StatusSeeOther {
			t.Fatalf("withdraw: %d", r.Status)
		}
		return strings.TrimPrefix(r.Location, routes.Withdrawals+"/")
	}
	mk := func() string { return mkOf("20000") }
	first := mk()
	r := c.Submit(routes.Withdrawal(first), routes.WithdrawalCancel(first), nil)
	if r.Status != http.StatusSeeOther {
		t.Fatalf("cancel: %d", r.Status)
	}
	if doc := apptest.Parse(c.Get(r.Location).Body); doc.TestID("withdrawal-receipt").Attr("data-status") != "cancelled" || doc.TestID("withdrawal-notice") == nil {
		t.Fatal("cancelled receipt")
	}
	second := mk()
	page := c.Get(routes.Withdrawal(second))
	if _, err := app.Server.PayoutWorker.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = c.Post(routes.WithdrawalCancel(second), url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}})
	if r.Status != http.StatusConflict || apptest.Parse(r.Body).TestID("withdrawal-error") == nil {
		t.Fatalf("cancel once sent: %d", r.Status)
	}
	// A cancel from a page read before the withdrawal ended (here: an
	// admin rejected it) shows how it ended, not "it was sent".
	third := mkOf("30000")
	page = c.Get(routes.Withdrawal(third))
	boss, err := app.Server.Auth.SignUp(context.Background(), "boss@example.com", "correct horse battery", "admin", "en")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Server.Withdrawals.Reject(context.Background(), boss.ID, third, "not this one"); err != nil {
		t.Fatal(err)
	}
	r = c.Post(routes.WithdrawalCancel(third), url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}})
	if r.Status != http.StatusSeeOther || r.Location != routes.Withdrawal(third) {
		t.Fatalf("cancel of one that ended: %d %q", r.Status, r.Location)
	}
	if doc := apptest.Parse(c.Get(r.Location).Body); doc.TestID("withdrawal-receipt").Attr("data-status") != "rejected" || doc.TestID("withdrawal-error") != nil {
		t.Fatal("the receipt of one that ended, after a cancel")
	}
	if f := withdrawaltest.WalletOf(t, db, uid); f.Held != 200_000 {
		t.Fatalf("held %d", f.Held)
	}
	withdrawaltest.CheckInvariants(t, db)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
