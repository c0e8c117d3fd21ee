package account_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// Issue 31, item 9: for an admin, a new password and a new API token each
// need a fresh second factor typed in the same form. A session that has
// only the admin's password (it never passed the second factor) can do
// neither: no password change (which would sign the real admin out
// everywhere), no token; its forms are refused before any handler and
// sent to /admin/2fa. The admin, whose session passed the second factor,
// still types a fresh code in the form: a wrong one is refused. With a
// fresh code the admin can; the code is spent (the same code twice is
// refused). And an admin's API token never opens /admin.
func TestAdminCredentialsNeedAFreshSecondFactor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := topuptest.NewFrozenClock()
		app := apptest.Start(t, db, apptest.Options{Server: server.Options{Now: clock.Now}})
		const email, pw = "boss@example.com", "correct horse battery"
		if _, err := app.Server.Auth.SignUp(context.Background(), email, pw, "admin", "en"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignIn(email, pw)
		admin.PassAdminChecks(email)
		code := func() string {
			clock.Advance(30 * time.Second)
			return apptest.AdminTOTPCodeAt(t, db, email, app.Server.Clock.Now)
		}
		tokens := func() int64 { return int64(len(app.Tokens(t))) }
		adminWorks := func(what string) {
			t.Helper()
			if r := admin.Get(routes.Admin); r.Status != http.StatusOK {
				t.Fatalf("%s: the admin's own session gets %d on /admin", what, r.Status)
			}
		}

		intruder := app.NewClient(t) // knows the password only
		intruder.SignIn(email, pw)
		// refused: a form of the password-only session is sent to the
		// second factor, nothing done.
		refused := func(what string, r apptest.Response) {
			t.Helper()
			if r.Status != http.StatusSeeOther || r.Location != routes.AdminTwoFactor {
				t.Fatalf("%s with the password only: %d %q, want 303 to %s", what, r.Status, r.Location, routes.AdminTwoFactor)
			}
		}
		// wrongCode: the admin's own form with a wrong fresh code.
		wrongCode := func(what string, r apptest.Response) {
			t.Helper()
			if r.Status != http.StatusUnprocessableEntity || apptest.Parse(r.Body).TestID("form-error") == nil {
				t.Fatalf("%s: %d", what, r.Status)
			}
		}
		page := intruder.Get(routes.AccountPassword)
		if apptest.Parse(page.Body).TestID("password-code") == nil {
			t.Fatalf("an admin's password form asks for no code:\n%s", page.Body)
		}
		for _, guess := range []string{"", "000000", "AAAA-BBBB-CCCC-DDDD"} {
			form := url.Values{"current_password": {pw}, "new_password": {"a brand new password"}, "code": {guess}}
			refused("password change with code "+guess, intruder.Submit(routes.AccountPassword, routes.AccountPassword, form))
			wrongCode("the admin's password change with code "+guess, admin.Submit(routes.AccountPassword, routes.AccountPassword, form))
		}
		adminWorks("after the intruder's password changes")
		if apptest.Parse(intruder.Get(routes.Tokens).Body).TestID("token-code") == nil {
			t.Fatal("an admin's token form asks for no code")
		}
		for _, guess := range []string{"", "123456"} {
			form := url.Values{"name": {"mine"}, "scope": {"read"}, "password": {pw}, "code": {guess}}
			refused("token with code "+guess, intruder.Submit(routes.Tokens, routes.Tokens, form))
			if r := admin.Submit(routes.Tokens, routes.Tokens, form); r.Status != http.StatusUnprocessableEntity || apptest.Parse(r.Body).TestID("new-token") != nil {
				t.Fatalf("the admin's token with code %q: %d", guess, r.Status)
			}
		}
		if n := tokens(); n != 0 {
			t.Fatalf("%d tokens made without a fresh code", n)
		}

		// The admin, with a fresh code: a token (once per code).
		c := code()
		r := admin.Submit(routes.Tokens, routes.Tokens, url.Values{"name": {"ops"}, "scope": {"read"}, "password": {pw}, "code": {c}})
		tok := apptest.Parse(r.Body).TestID("new-token")
		if r.Status != http.StatusOK || tok == nil {
			t.Fatalf("the admin's token with a fresh code: %d", r.Status)
		}
		if r := admin.Submit(routes.Tokens, routes.Tokens, url.Values{"name": {"again"}, "scope": {"read"}, "password": {pw}, "code": {c}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("the same code again: %d", r.Status)
		}
		if n := tokens(); n != 1 {
			t.Fatalf("%d tokens, want 1", n)
		}

		// The admin's API token never reaches /admin, as a bearer token or
		// in place of a session cookie.
		for _, path := range []string{routes.Admin, routes.AdminTopUps} {
			req, _ := http.NewRequest(http.MethodGet, app.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+tok.Text())
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("%s with the admin's API token: %d", path, resp.StatusCode)
			}
			req, _ = http.NewRequest(http.MethodGet, app.URL+path, nil)
			req.AddCookie(&http.Cookie{Name: "kp_session", Value: tok.Text()})
			if r := app.NewClient(t).Do(req); r.Status == http.StatusOK {
				t.Fatalf("%s with the admin's API token as a cookie: %d", path, r.Status)
			}
		}

		// Nor add a webhook endpoint.
		if apptest.Parse(intruder.Get(routes.Webhooks).Body).TestID("webhook-code") == nil {
			t.Fatal("an admin's webhook form asks for no code")
		}
		hook := url.Values{"url": {"https://hooks.example/x"}, "events": {"topup.credited"}, "password": {pw}, "code": {"000000"}}
		refused("webhook", intruder.Submit(routes.Webhooks, routes.Webhooks, hook))
		if r := admin.Submit(routes.Webhooks, routes.Webhooks, hook); r.Status != http.StatusUnprocessableEntity || hookSecret(r.Body) != "" {
			t.Fatalf("the admin's webhook with a wrong code: %d", r.Status)
		}
		// Nor can the password alone sign the admin out everywhere (and
		// revoke the token just made), again and again.
		if apptest.Parse(intruder.Get(routes.Account).Body).TestID("signout-everywhere-code") == nil {
			t.Fatal("an admin's sign-out-everywhere form asks for no code")
		}
		for _, guess := range []string{"", "000000"} {
			refused("sign out everywhere with code "+guess, intruder.Submit(routes.Account, routes.AccountSignOutEverywhere, url.Values{"code": {guess}}))
			wrongCode("the admin's sign out everywhere with code "+guess,
				admin.Submit(routes.Account, routes.AccountSignOutEverywhere, url.Values{"code": {guess}}))
		}
		adminWorks("after the intruder's sign-out-everywhere")
		if n := tokens(); n != 1 {
			t.Fatalf("%d tokens after the intruder's sign-out-everywhere, want 1", n)
		}
		if r := intruder.Get(routes.Account); r.Status != http.StatusOK {
			t.Fatalf("the intruder's session: %d", r.Status)
		}

		// The admin, with a fresh code: a new password.
		r = admin.Submit(routes.AccountPassword, routes.AccountPassword, url.Values{
			"current_password": {pw}, "new_password": {"a brand new password"}, "code": {code()}})
		if r.Status != http.StatusSeeOther {
			t.Fatalf("the admin's password change with a fresh code: %d\n%s", r.Status, r.Body)
		}
		if r := intruder.Get(routes.Account); r.Status != http.StatusSeeOther {
			t.Fatalf("the intruder's session outlived the new password: %d", r.Status)
		}
		// The new session this browser was given has not passed the second
		// factor (the admin types a code at /admin/2fa again), then, with a
		// fresh code, the admin signs out everywhere.
		refused("sign out everywhere on the new session", admin.Submit(routes.Account, routes.AccountSignOutEverywhere, url.Values{"code": {code()}}))
		if r := admin.Submit(routes.AdminTwoFactor, routes.AdminTwoFactor, url.Values{"code": {code()}}); r.Status != http.StatusSeeOther {
			t.Fatalf("the second factor on the new session: %d", r.Status)
		}
		if r := admin.Submit(routes.Account, routes.AccountSignOutEverywhere, url.Values{"code": {code()}}); r.Status != http.StatusSeeOther || r.Location != routes.SignIn {
			t.Fatalf("the admin's sign-out-everywhere with a fresh code: %d %q", r.Status, r.Location)
		}
		if r := admin.Get(routes.Account); r.Status != http.StatusSeeOther {
			t.Fatalf("signed out everywhere, the admin's session still answers %d", r.Status)
		}
	})
}
