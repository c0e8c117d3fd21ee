package account_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/notify"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
)

var verifyLinkRE = regexp.MustCompile(`https?://[^\s"]+/email/verify/([A-Za-z0-9_-]+)`)

// verifyLinks are the tokens of the confirmation links mailed to addr, in
// order.
func verifyLinks(t *testing.T, db *store.DB, addr string) []string {
	t.Helper()
	var toks []string
	for _, m := range mailtest.Rows(t, db) {
		if m.Kind != notify.KindVerify || m.ToAddr != addr {
			continue
		}
		l := verifyLinkRE.FindStringSubmatch(m.TextBody)
		if l == nil {
			t.Fatalf("a confirmation mail without its link:\n%s", m.TextBody)
		}
		toks = append(toks, l[1])
	}
	return toks
}

// A person who signs up on the site gets a link that confirms the
// address; until it is used, no one can send them money (a stranger who
// signed up with someone else's address takes nothing meant for its
// owner). Opening the link confirms nothing (a mail scanner opens every
// link); its button does, once, in a browser signed in to that account
// (the address's owner cannot confirm a stranger's account); no log line
// holds the token.
func TestSignUpConfirmsTheAddressByMail(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var logs apptest.LogBuffer
		app := apptest.Start(t, db, apptest.Options{Server: server.Options{Log: logging.New(&logs, slog.LevelDebug, "json")}})
		ctx := context.Background()
		app.NewClient(t).SignUp("alice@example.com")
		alice := authtest.UserID(t, db, "alice@example.com")
		// Funded: a short sender is refused before the recipient is
		// looked at (the refusal tells nothing of the address).
		app.Fund(t, "alice@example.com", 100_000)
		quote := func() error {
			_, err := app.Server.Transfers.Quote(ctx, transfer.Request{SenderUserID: alice, FormToken: formtoken.New(),
				ToEmail: "new@example.com", AmountRials: 10_000})
			return err
		}

		c := app.NewClient(t)
		c.GetIn("en", routes.SignUp)
		c.SignUpUnconfirmed("new@example.com")
		if err := quote(); !errors.Is(err, transfer.ErrRecipientNotFound) {
			t.Fatalf("a transfer to an unconfirmed address: %v", err)
		}
		w := c.Get(routes.Wallet)
		if n := apptest.Parse(w.Body).TestID("verify-notice"); n == nil || !strings.Contains(w.Body, "\u2068new@example.com\u2069 is not confirmed yet") {
			t.Fatalf("the wallet does not say the address is unconfirmed:\n%s", w.Body)
		}
		if a := c.Get(routes.Account); !strings.Contains(a.Body, `data-testid="account-email-status" data-verified="false"`) {
			t.Fatal("the account page does not say the address is unconfirmed")
		}
		admin := app.NewAdmin(t, "admin@example.com")
		newID := authtest.UserID(t, db, "new@example.com")
		adminSays := func() string {
			t.Helper()
			r := admin.Get(routes.AdminUser(newID))
			if n := apptest.Parse(r.Body).TestID("user-email-confirmed"); n != nil {
				return n.Attr("data-verified")
			}
			t.Fatalf("the admin's user page (%d) does not say whether the address is confirmed", r.Status)
			return ""
		}
		if got := adminSays(); got != "false" {
			t.Fatalf("admin's page: confirmed %q before the link", got)
		}
		toks := verifyLinks(t, db, "new@example.com")
		if len(toks) != 1 {
			t.Fatalf("%d confirmation mails, want 1", len(toks))
		}
		link := routes.EmailVerify(toks[0])

		// Another device, not signed in: the page asks to sign in to
		// the account first (the link proves the inbox, not the
		// account: the address's owner must not confirm a stranger's
		// account), and opening it confirms nothing.
		phone := app.NewClient(t)
		page := phone.Get(link)
		if page.Status != http.StatusOK || apptest.Parse(page.Body).TestID("verify-form") != nil || apptest.Parse(page.Body).TestID("verify-signin") == nil {
			t.Fatalf("the link's page signed out: %d", page.Status)
		}
		if r := phone.Forge(routes.SignIn, link, nil); r.Status != http.StatusForbidden || apptest.Parse(r.Body).TestID("verify-signin") == nil {
			t.Fatalf("confirmed signed out: %d", r.Status)
		}
		// Signed in to another account: refused, and the link is not spent.
		other := app.NewClient(t)
		other.SignIn("alice@example.com", "correct horse battery")
		if r := other.Get(link); apptest.Parse(r.Body).TestID("verify-other-account") == nil {
			t.Fatalf("the link's page in another account: %d", r.Status)
		}
		if r := other.Forge(routes.Wallet, link, nil); r.Status != http.StatusForbidden || apptest.Parse(r.Body).TestID("verify-other-account") == nil {
			t.Fatalf("confirmed from another account: %d", r.Status)
		}
		if err := quote(); !errors.Is(err, transfer.ErrRecipientNotFound) {
			t.Fatalf("the address is confirmed before its owner signed in: %v", err)
		}
		// Signing in with the account's password comes back to the link.
		signin := apptest.Parse(page.Body).TestID("verify-signin").Attr("href")
		r := phone.Submit(signin, signin, url.Values{"email": {"new@example.com"}, "password": {"correct horse battery"}})
		if r.Status != http.StatusSeeOther || r.Location != link {
			t.Fatalf("sign-in from the link: %d %q", r.Status, r.Location)
		}
		page = phone.Get(link)
		if page.Status != http.StatusOK || apptest.Parse(page.Body).TestID("verify-form") == nil {
			t.Fatalf("the link's page signed in: %d", page.Status)
		}
		csrf := apptest.Input(page.Body, "_csrf")
		if r := phone.Post(link, url.Values{}); r.Status != http.StatusForbidden {
			t.Fatalf("without its CSRF token: %d", r.Status)
		}
		done := phone.Post(link, url.Values{"_csrf": {csrf}})
		if done.Status != http.StatusOK || apptest.Parse(done.Body).TestID("verify-done") == nil {
			t.Fatalf("confirm: %d", done.Status)
		}
		if err := quote(); errors.Is(err, transfer.ErrRecipientNotFound) {
			t.Fatal("a confirmed address is still refused")
		}
		if r := phone.Post(link, url.Values{"_csrf": {csrf}}); r.Status != http.StatusGone {
			t.Fatalf("the link used twice: %d", r.Status)
		}
		if r := phone.Get(link); r.Status != http.StatusGone || apptest.Parse(r.Body).TestID("verify-invalid") == nil {
			t.Fatalf("the spent link opened: %d", r.Status)
		}
		// In capitals (a mail gateway's rewrite): routed, and logged, the same.
		if r := phone.Get(strings.ToUpper(strings.TrimSuffix(link, toks[0])) + toks[0]); r.Status != http.StatusGone {
			t.Fatalf("the spent link in capitals: %d", r.Status)
		}
		if w := c.Get(routes.Wallet); apptest.Parse(w.Body).TestID("verify-notice") != nil {
			t.Fatal("the wallet still asks to confirm")
		}
		if a := c.Get(routes.Account); !strings.Contains(a.Body, `data-testid="account-email-status" data-verified="true"`) {
			t.Fatal("the account page does not say the address is confirmed")
		}
		if got := adminSays(); got != "true" {
			t.Fatalf("admin's page: confirmed %q after the link", got)
		}
		if strings.Contains(logs.String(), toks[0]) {
			t.Fatal("a log line holds the confirmation link's token")
		}
	})
}

// "Send the link again" on the wallet page mails a new link and says
// where it went; a confirmed address gets none.
func TestConfirmationLinkSentAgain(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c := app.NewClient(t)
		c.GetIn("en", routes.SignUp)
		c.SignUpUnconfirmed("again@example.com")
		r := c.Submit(routes.Wallet, routes.AccountEmailVerify, nil)
		if r.Status != http.StatusSeeOther || r.Location != routes.Account+"?done=verify" {
			t.Fatalf("send again: %d %q", r.Status, r.Location)
		}
		if a := c.Get(r.Location); !strings.Contains(a.Body, "We sent a new link to \u2068again@example.com\u2069") {
			t.Fatalf("the account page does not say where the link went:\n%s", a.Body)
		}
		toks := verifyLinks(t, db, "again@example.com")
		if len(toks) != 2 {
			t.Fatalf("%d confirmation mails, want 2", len(toks))
		}
		// Past five live links nothing more is sent, and the page says
		// the earlier ones still work.
		for range 3 {
			c.Submit(routes.Wallet, routes.AccountEmailVerify, nil)
		}
		r = c.Submit(routes.Wallet, routes.AccountEmailVerify, nil)
		if r.Location != routes.Account+"?done=verify_pending" {
			t.Fatalf("send again past the limit: %d %q", r.Status, r.Location)
		}
		if a := c.Get(r.Location); !strings.Contains(a.Body, "The links we sent to \u2068again@example.com\u2069 earlier still work") {
			t.Fatalf("the account page does not say the earlier links still work:\n%s", a.Body)
		}
		if n := len(verifyLinks(t, db, "again@example.com")); n != 5 {
			t.Fatalf("%d confirmation mails, want 5", n)
		}
		// Either link works; the other dies with it.
		page := c.Get(routes.EmailVerify(toks[1]))
		if r := c.Post(routes.EmailVerify(toks[1]), url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}}); r.Status != http.StatusOK {
			t.Fatalf("the second link: %d", r.Status)
		}
		if r := c.Get(routes.EmailVerify(toks[0])); r.Status != http.StatusGone {
			t.Fatalf("the first link after the second: %d", r.Status)
		}
		if r := c.Forge(routes.Account, routes.AccountEmailVerify, nil); r.Status != http.StatusSeeOther || r.Location != routes.Account {
			t.Fatalf("send again when confirmed: %d %q", r.Status, r.Location)
		}
		if n := len(verifyLinks(t, db, "again@example.com")); n != 5 {
			t.Fatalf("%d confirmation mails after confirming, want 5", n)
		}
	})
}

// An account whose address is not confirmed gets nothing that lasts past
// its owner's taking it back by a password reset: no API token, webhook
// endpoint, return origin or bank account (nor is it made a merchant:
// TestAdminMakesMerchant). Each refusal writes nothing; confirmed, the
// same forms work.
func TestUnconfirmedAccountGetsNothingLasting(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
		c := app.NewClient(t)
		c.GetIn("en", routes.SignUp)
		c.SignUpUnconfirmed("squat@example.com")
		tables := []string{"api_tokens", "webhook_endpoints", "webhook_return_origins", "bank_accounts", "national_codes"}
		before := storetest.Rows(t, db, tables...)
		acts := []struct {
			name, page, action string
			form               url.Values
			want               string
		}{
			{"token", routes.Tokens, routes.Tokens, url.Values{"name": {"app"}, "scope": {"read"}, "password": {"correct horse battery"}}, "Confirm your e-mail address first"},
			{"webhook", routes.Webhooks, routes.Webhooks, url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {"topup.credited"}, "password": {"correct horse battery"}}, "Confirm your e-mail address first"},
			{"return origin", routes.Webhooks, routes.WebhookOrigins, url.Values{"return_origin": {"https://shop.example.com"}, "password": {"correct horse battery"}}, "Confirm your e-mail address first"},
			{"bank account", routes.BankAccounts, routes.BankAccounts, url.Values{"iban": {"IR820540102680020817909002"}, "national_code": {"0499370899"}}, "Confirm your e-mail address first"},
		}
		for _, a := range acts {
			r := c.Submit(a.page, a.action, a.form)
			if r.Status != http.StatusForbidden && r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, a.want) {
				t.Fatalf("%s while unconfirmed: %d, want a refusal saying %q:\n%s", a.name, r.Status, a.want, r.Body)
			}
		}
		if after := storetest.Rows(t, db, tables...); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("a refusal wrote: %v → %v", before, after)
		}
		authtest.ConfirmEmail(t, db, "squat@example.com")
		for _, a := range acts {
			if r := c.Submit(a.page, a.action, a.form); r.Status >= 400 || strings.Contains(r.Body, a.want) {
				t.Fatalf("%s once confirmed: %d", a.name, r.Status)
			}
		}
	})
}
