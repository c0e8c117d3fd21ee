package account_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// startWithMail runs the app with SMTP_URL pointing at a real SMTP server
// of the test's (STARTTLS and AUTH), on a clock the test moves.
func startWithMail(t *testing.T, db *store.DB) (*apptest.App, *mailtest.Server, *topuptest.Clock) {
	t.Helper()
	smtpSrv := mailtest.Start(t, mailtest.Options{TLS: mailtest.StartTLS, User: "kifpool", Pass: "mail pass"})
	clk := topuptest.NewFrozenClock()
	app := apptest.Start(t, db, apptest.Options{
		Env:    map[string]string{"SMTP_URL": smtpSrv.URL, "MAIL_FROM": "Kifpool <wallet@example.com>"},
		Server: server.Options{MailRootCAs: smtpSrv.RootCAs, Now: clk.Now},
	})
	return app, smtpSrv, clk
}

// The whole password reset over HTTP and SMTP: the same answer for any
// address, a link by mail in the person's language, valid once and for 30
// minutes, and a reset that signs out every browser and revokes every API
// token.
func TestPasswordResetByMail(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, smtpSrv, clk := startWithMail(t, db)
		ctx := context.Background()
		laptop := app.NewClient(t)
		laptop.SignUp("forgetful@example.com") // Persian, the default
		uid := authtest.UserID(t, db, "forgetful@example.com")
		secret, _, err := app.Server.Tokens.Create(ctx, apitoken.CreateInput{UserID: uid, Name: "app", Scope: "read"})
		if err != nil {
			t.Fatal(err)
		}

		anon := app.NewClient(t)
		signin := anon.Get(routes.SignIn)
		if !slices.Contains(apptest.Parse(signin.Body).Attrs("href"), routes.PasswordForgot) {
			t.Fatal("the sign-in page does not offer a password reset")
		}
		forgot := func(c *apptest.Client, email string) apptest.Response {
			t.Helper()
			return c.Submit(routes.PasswordForgot, routes.PasswordForgot, url.Values{"email": {email}})
		}
		unknown := forgot(anon, "nobody@example.com")
		known := forgot(anon, "Forgetful@Example.com")
		for _, r := range []apptest.Response{unknown, known} {
			if r.Status != http.StatusOK || apptest.Parse(r.Body).TestID("forgot-sent") == nil {
				t.Fatalf("forgot: %d", r.Status)
			}
		}
		// The pages differ only in their per-request secrets.
		perRequest := regexp.MustCompile(`(nonce|value)="[^"]*"`)
		if perRequest.ReplaceAllString(unknown.Body, "") != perRequest.ReplaceAllString(known.Body, "") {
			t.Fatal("the answer differs for a known address")
		}
		if n := int64(len(mailtest.Rows(t, db))); n != 1 {
			t.Fatalf("%d mails queued, want 1 (none for the unknown address)", n)
		}
		resets := 0
		for _, r := range authtest.Resets(t, db) {
			if r.TokenHash != "" && r.UserID == uid {
				resets++
			}
		}
		if n := resets; n != 1 {
			t.Fatalf("%d reset rows", n)
		}
		if app.DeliverMail(t) != 1 {
			t.Fatal("the reset mail was not delivered")
		}
		m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == "forgetful@example.com" })
		if m.Subject != "بازنشانی رمز عبور کیف\u200cپول" || !m.TLS || m.From != "wallet@example.com" ||
			!strings.Contains(m.Text, "۳۰ دقیقه") || !strings.Contains(m.HTML, `dir="rtl"`) {
			t.Fatalf("reset mail: %q tls=%v from %q\n%s", m.Subject, m.TLS, m.From, m.Text)
		}
		link := apptest.ResetLink(m.Text)
		if link == nil || !strings.Contains(m.HTML, link[0]) {
			t.Fatalf("no reset link in both parts:\n%s", m.Text)
		}
		// Only the token's hash is stored, and the sent mail keeps no link.
		for _, r := range authtest.Resets(t, db) {
			if r.TokenHash == link[1] {
				t.Fatal("the reset token is stored in clear")
			}
		}
		for _, m := range mailtest.Rows(t, db) {
			if strings.Contains(m.TextBody, link[1]) {
				t.Fatal("the sent mail still holds the link")
			}
		}

		page := anon.Get(link[0])
		if page.Status != http.StatusOK || apptest.Parse(page.Body).TestID("reset-form") == nil || page.Header.Get("Referrer-Policy") != "same-origin" {
			t.Fatalf("reset page: %d %q", page.Status, page.Header.Get("Referrer-Policy"))
		}
		csrf := apptest.Input(page.Body, "_csrf")
		if r := anon.Post(link[0], url.Values{"_csrf": {csrf}, "password": {"short"}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("weak password: %d", r.Status)
		}
		r := anon.Post(link[0], url.Values{"_csrf": {csrf}, "password": {"my new long password"}})
		if r.Status != http.StatusSeeOther || r.Location != routes.SignIn+"?done=reset" {
			t.Fatalf("reset: %d %q", r.Status, r.Location)
		}
		if done := anon.Get(r.Location); apptest.Parse(done.Body).TestID("signin-notice") == nil {
			t.Fatal("the sign-in page does not say the password was reset")
		}
		// Old session, old token and old password are refused; the new one works.
		if r := laptop.Get(routes.Wallet); r.Status != http.StatusSeeOther {
			t.Fatalf("the old session still works: %d", r.Status)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, app.URL+routes.APIWallet, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		if st := app.NewClient(t).Do(req).Status; st != http.StatusUnauthorized {
			t.Fatalf("the old API token still works: %d", st)
		}
		fresh := app.NewClient(t)
		if r := fresh.Submit(routes.SignIn, routes.SignIn, url.Values{"email": {"forgetful@example.com"}, "password": {"correct horse battery"}}); r.Status != http.StatusUnauthorized {
			t.Fatalf("the old password still works: %d", r.Status)
		}
		fresh.SignIn("forgetful@example.com", "my new long password")
		// The link is spent.
		if r := anon.Get(link[0]); r.Status != http.StatusGone || apptest.Parse(r.Body).TestID("reset-invalid") == nil {
			t.Fatalf("used link: %d", r.Status)
		}
		if r := anon.Post(link[0], url.Values{"_csrf": {apptest.Input(anon.Get(routes.PasswordForgot).Body, "_csrf")}, "password": {"yet another password"}}); r.Status != http.StatusGone {
			t.Fatalf("used link posted: %d", r.Status)
		}

		// An English account gets English mail; its link dies after 30 minutes.
		en := app.NewClient(t)
		en.GetIn("en", routes.SignUp)
		en.SignUp("english@example.com")
		if r := forgot(app.NewClient(t), "english@example.com"); r.Status != http.StatusOK {
			t.Fatalf("forgot (en): %d", r.Status)
		}
		app.DeliverMail(t)
		m = smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == "english@example.com" })
		if m.Subject != "Reset your Kifpool password" || !strings.Contains(m.Text, "30 minutes") || !strings.Contains(m.HTML, `lang="en"`) {
			t.Fatalf("English reset mail: %q\n%s", m.Subject, m.Text)
		}
		enLink := apptest.ResetLink(m.Text)
		clk.Advance(31 * time.Minute)
		if r := app.NewClient(t).Get(enLink[0]); r.Status != http.StatusGone {
			t.Fatalf("a 31-minute-old link: %d", r.Status)
		}
	})
}

// Reset requests are throttled per address (known or not, the same way)
// and per client, and the page says how long to wait.
func TestPasswordResetIsThrottled(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app, _, clk := startWithMail(t, db)
	app.NewClient(t).SignUp("target@example.com")
	c := app.NewClient(t)
	c.GetIn("en", routes.PasswordForgot)
	for _, email := range []string{"target@example.com", "nobody@example.com"} {
		var last apptest.Response
		for i := 0; i < 6; i++ {
			last = c.Submit(routes.PasswordForgot, routes.PasswordForgot, url.Values{"email": {email}})
		}
		if last.Status != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" || !strings.Contains(last.Body, "Try again in") {
			t.Fatalf("%s: sixth request %d", email, last.Status)
		}
		clk.Advance(20 * time.Minute)
	}
	if n := int64(len(mailtest.Rows(t, db))); n != 5 {
		t.Fatalf("%d mails queued for the flooded address, want 5", n)
	}
}

// A credited top-up sends a receipt (unless turned off at /account); a
// payment that failed after the bank may have charged the card sends the
// "returns within 72 hours" notice. Neither is written by the credit: the
// notifier reads the payment's events afterwards.
func TestReceiptsAndNotices(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, smtpSrv, clk := startWithMail(t, db)
		ctx := context.Background()
		c, payURL := app.StartTopUp(t, "payer@example.com", "50000")
		back := c.PayAtBank(payURL, "pay")
		if r := c.Get(back); apptest.TopUpStatus(r.Body) != "credited" {
			t.Fatalf("not credited: %q", apptest.TopUpStatus(r.Body))
		}
		if n := int64(len(mailtest.Rows(t, db))); n != 0 {
			t.Fatalf("%d mails written with the credit", n)
		}
		// Events are read once they settled.
		if n, err := app.Server.Notifier.Scan(ctx); err != nil || n != 0 {
			t.Fatalf("scan of unsettled events: %d %v", n, err)
		}
		clk.Advance(time.Minute)
		if n, err := app.Server.Notifier.Scan(ctx); err != nil || n != 1 {
			t.Fatalf("scan: %d %v", n, err)
		}
		if n, _ := app.Server.Notifier.Scan(ctx); n != 0 {
			t.Fatalf("a second scan queued %d more", n)
		}
		app.DeliverMail(t)
		publicID := topuptest.First(t, db).PublicID
		m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == "payer@example.com" })
		if !strings.Contains(m.Subject, "۵۰٬۰۰۰") || !strings.Contains(m.Text, strings.ToUpper(publicID[:4])) ||
			!strings.Contains(m.Text, routes.TopUpPage(publicID)) || !strings.Contains(m.HTML, routes.TopUpPage(publicID)) {
			t.Fatalf("receipt: %q\n%s", m.Subject, m.Text)
		}

		// Receipts off: the next credit sends none.
		acc := c.Get(routes.Account)
		if apptest.Parse(acc.Body).TestID("receipts-state").Attr("data-on") != "true" {
			t.Fatal("receipts are not shown as on")
		}
		if r := c.Post(routes.AccountReceipts, url.Values{"_csrf": {apptest.Input(acc.Body, "_csrf")}, "receipts": {"off"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("turn receipts off: %d", r.Status)
		}
		if acc := c.Get(routes.Account); apptest.Parse(acc.Body).TestID("receipts-state").Attr("data-on") != "false" {
			t.Fatal("receipts still on")
		}
		csrf, tok := c.TopUpForm()
		r := c.PostTopUp(csrf, tok, "20000")
		back = c.PayAtBank(r.Location, "pay")
		c.Get(back)

		// Another payment fails after the bank may have taken the money.
		csrf, tok = c.TopUpForm()
		c.PostTopUp(csrf, tok, "30000")
		failedID := topuptest.Last(t, db).ID
		topuptest.ForceStatus(t, db, failedID, "failed", "bank_reversed")
		clk.Advance(time.Minute)
		if n, err := app.Server.Notifier.Scan(ctx); err != nil || n != 1 {
			t.Fatalf("scan: %d %v, want the notice only", n, err)
		}
		app.DeliverMail(t)
		m = smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return strings.Contains(m.Text, "۷۲ ساعت") })
		if !strings.Contains(m.Subject, "پرداخت ناموفق") {
			t.Fatalf("notice: %q\n%s", m.Subject, m.Text)
		}
		if n := len(smtpSrv.Messages()); n != 2 {
			t.Fatalf("%d mails delivered, want the first receipt and the notice", n)
		}
	})
}
