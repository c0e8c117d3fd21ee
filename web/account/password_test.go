package account_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Changing the password at /account/password checks the current one, ends
// every other session (on every instance) and revokes every API token,
// keeps this browser signed in, and says so, in both languages.
func TestPasswordChange(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		other := apptest.Start(t, db, apptest.Options{})
		laptop := app.NewClient(t)
		laptop.SignUp("change@example.com")
		phone := other.NewClient(t)
		phone.SignIn("change@example.com", "correct horse battery")
		bystander := app.NewClient(t)
		bystander.SignUp("bystander@example.com")
		uid := authtest.UserID(t, db, "change@example.com")
		secret, _, err := app.Server.Tokens.Create(context.Background(), apitoken.CreateInput{UserID: uid, Name: "app", Scope: "read"})
		if err != nil {
			t.Fatal(err)
		}

		if r := app.NewClient(t).Get(routes.AccountPassword); r.Status != http.StatusSeeOther {
			t.Fatalf("signed out: %d", r.Status)
		}
		for _, l := range []struct{ lang, title, wrong string }{
			{"fa", "تغییر رمز عبور", "رمز عبور فعلی درست نیست."},
			{"en", "Change password", "The current password is wrong."},
		} {
			page := laptop.GetIn(l.lang, routes.AccountPassword)
			if page.Status != http.StatusOK || !strings.Contains(page.Body, l.title) ||
				!strings.Contains(page.Body, `name="current_password"`) || !strings.Contains(page.Body, `name="new_password"`) {
				t.Fatalf("%s form: %d", l.lang, page.Status)
			}
			r := laptop.Post(routes.AccountPassword, url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")},
				"current_password": {"not my password"}, "new_password": {"a brand new password"}})
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, l.wrong) {
				t.Fatalf("%s wrong current password: %d", l.lang, r.Status)
			}
		}
		page := laptop.GetIn("en", routes.AccountPassword)
		csrf := apptest.Input(page.Body, "_csrf")
		for _, tc := range []struct{ next, want string }{
			{"short", "at least 10 characters"},
			{"correct horse battery", "The new password is the current one"},
			{"password1234", "common passwords"},
		} {
			r := laptop.Post(routes.AccountPassword, url.Values{"_csrf": {csrf}, "current_password": {"correct horse battery"}, "new_password": {tc.next}})
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, tc.want) {
				t.Fatalf("new password %q: %d", tc.next, r.Status)
			}
		}
		// Without the CSRF token nothing changes.
		if r := laptop.Post(routes.AccountPassword, url.Values{"current_password": {"correct horse battery"}, "new_password": {"a brand new password"}}); r.Status != http.StatusForbidden {
			t.Fatalf("without csrf: %d", r.Status)
		}
		if n := authtest.CountSessions(t, db); n != 3 {
			t.Fatalf("%d sessions after refused changes, want 3", n)
		}

		r := laptop.Post(routes.AccountPassword, url.Values{"_csrf": {csrf}, "current_password": {"correct horse battery"}, "new_password": {"a brand new password"}})
		if r.Status != http.StatusSeeOther || r.Location != routes.Account+"?done=password" {
			t.Fatalf("change: %d %q", r.Status, r.Location)
		}
		acc := laptop.Get(r.Location)
		if acc.Status != http.StatusOK || !strings.Contains(acc.Body, "every API token of yours was revoked") {
			t.Fatalf("this browser: %d, or the change is not explained", acc.Status)
		}
		if r := phone.Get(routes.Wallet); r.Status != http.StatusSeeOther {
			t.Fatalf("the other browser is still signed in: %d", r.Status)
		}
		if r := bystander.Get(routes.Wallet); r.Status != http.StatusOK {
			t.Fatalf("another account was signed out: %d", r.Status)
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, app.URL+routes.APIWallet, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		if st := app.NewClient(t).Do(req).Status; st != http.StatusUnauthorized {
			t.Fatalf("API token after the change: %d", st)
		}
		fresh := app.NewClient(t)
		if r := fresh.Submit(routes.SignIn, routes.SignIn, url.Values{"email": {"change@example.com"}, "password": {"correct horse battery"}}); r.Status != http.StatusUnauthorized {
			t.Fatalf("old password still signs in: %d", r.Status)
		}
		fresh.SignIn("change@example.com", "a brand new password")
	})
}

// Sign-in and sign-up have limits of their own per client address; each
// page says how long to wait, with Retry-After.
func TestSignInAndSignUpLimitsAreSeparate(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{
		Env:    map[string]string{"RATE_LIMIT_SIGNIN": "3", "RATE_LIMIT_SIGNUP": "2", "RATE_LIMIT_FORGOT": "2"},
		Server: server.Options{RateLimits: true},
	})
	c := app.NewClient(t)
	page := c.GetIn("en", routes.SignIn)
	csrf := apptest.Input(page.Body, "_csrf")
	post := func(path, email string) apptest.Response {
		return c.Post(path, url.Values{"_csrf": {csrf}, "email": {email}, "password": {"wrong password"}})
	}
	for i := range 3 {
		if r := post(routes.SignIn, "who"+string(rune('a'+i))+"@example.com"); r.Status != http.StatusUnauthorized {
			t.Fatalf("sign-in %d: %d", i+1, r.Status)
		}
	}
	r := post(routes.SignIn, "whod@example.com")
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" ||
		!strings.Contains(r.Body, "Too many sign-in attempts from your network. Try again in") || apptest.Parse(r.Body).TestID("auth-form") == nil {
		t.Fatalf("fourth sign-in: %d %q", r.Status, r.Header.Get("Retry-After"))
	}
	// Sign-ups still have their own allowance.
	for i := range 2 {
		if r := c.Post(routes.SignUp, url.Values{"_csrf": {csrf}, "email": {"new" + string(rune('a'+i)) + "@example.com"}, "password": {"short"}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("sign-up %d: %d", i+1, r.Status)
		}
	}
	r = c.Post(routes.SignUp, url.Values{"_csrf": {csrf}, "email": {"newc@example.com"}, "password": {"short"}})
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body, "Too many sign-ups from your network") {
		t.Fatalf("third sign-up: %d", r.Status)
	}
	// "Forgot password" has its own allowance (the sign-ups and sign-ins
	// above used none of it), and its own form says how long to wait.
	for i := range 2 {
		if r := c.Post(routes.PasswordForgot, url.Values{"_csrf": {csrf}, "email": {"lost" + string(rune('a'+i)) + "@example.com"}}); r.Status != http.StatusOK {
			t.Fatalf("reset request %d: %d", i+1, r.Status)
		}
	}
	r = c.Post(routes.PasswordForgot, url.Values{"_csrf": {csrf}, "email": {"lostc@example.com"}})
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body, "Too many requests. Try again in") {
		t.Fatalf("third reset request: %d %q", r.Status, r.Header.Get("Retry-After"))
	}
}
