package account_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// Weak passwords and lookalike addresses are refused at sign-up with a
// clear message, and nothing is written.
func TestSignUpRefusesWeakPasswordsAndLookalikes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("admin@example.com")
		// Each refusal marks the field at fault, which takes the focus.
		for _, tc := range []struct{ name, email, password, key, field string }{
			{"eight spaces", "new@example.com", "        ", "at least 10 characters", "password"},
			{"short once trimmed", "new@example.com", "  abc12345  ", "at least 10 characters", "password"},
			{"one kind of character", "new@example.com", "abcdefghijklmn", "two kinds of characters", "password"},
			{"common password", "new@example.com", "Password123", "list of common passwords", "password"},
			{"zero-width space", "admin\u200b@example.com", "correct horse battery", "email address is not valid", "email"},
			{"Cyrillic a", "\u0430dmin@example.com", "correct horse battery", "email address is not valid", "email"},
			{"fullwidth copy of an account", "ａｄｍｉｎ@example.com", "correct horse battery", "already exists", "email"},
		} {
			fresh := app.NewClient(t)
			fresh.Get(routes.SignUp + "?lang=en")
			page := fresh.Get(routes.SignUp)
			r := fresh.Post(routes.SignUp, url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}, "email": {tc.email}, "password": {tc.password}})
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, tc.key) {
				t.Errorf("%s: %d, want 422 saying %q", tc.name, r.Status, tc.key)
			}
			doc := apptest.Parse(r.Body)
			for _, f := range []string{"email", "password"} {
				e := doc.ByID(f)
				if marked := e != nil && e.Attr("aria-invalid") == "true" && e.Has("autofocus"); marked != (f == tc.field) {
					t.Errorf("%s: field %s marked invalid: %v, want only %s", tc.name, f, marked, tc.field)
				}
			}
		}
		if n := authtest.CountUsers(t, db, nil); n != 1 {
			t.Fatalf("%d users after the refusals, want 1", n)
		}
	})
}

// An address with characters outside ASCII (an account from before the
// rules, or a legitimate non-Latin one) is shown in the admin console with
// its code points, so that a lookalike stands out.
func TestAdminConsoleExposesLookalikeEmails(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		app.StartTopUp(t, "payer@example.com", "20000")
		// A row written before the rules existed.
		authtest.SetEmail(t, db, "payer@example.com", "\u0430dmin@example.com")
		topuptest.ForceAll(t, db, "needs_review", "verify_rejected")
		if _, err := app.Server.Auth.SignUp(context.Background(), "boss@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		page := admin.Get(routes.Admin)
		if apptest.Parse(page.Body).TestID("email-oddity") == nil || !strings.Contains(page.Body, "U+0430") {
			t.Fatalf("the lookalike address is not exposed on the admin page: %d", page.Status)
		}
	})
}
