package account_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The display name: saved from the account page (normalized), shown
// there again; a refused one is answered 422 with the name as typed and
// changes nothing; another site cannot set it; an empty one removes it.
func TestDisplayName(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("named@example.com")
		stored := func() string {
			t.Helper()
			ctx := context.Background()
			u, err := app.Server.Auth.Authenticate(ctx, "named@example.com", "correct horse battery")
			if err != nil {
				t.Fatal(err)
			}
			name, err := app.Server.Auth.DisplayName(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			return name
		}

		r := c.Submit(routes.Account, routes.AccountName, url.Values{"name": {"  علي   مهدی\u200Cپور "}})
		if r.Status != http.StatusSeeOther || r.Location != routes.Account+"?done=name" {
			t.Fatalf("save: %d %q", r.Status, r.Location)
		}
		if got := stored(); got != "علی مهدی\u200Cپور" {
			t.Fatalf("stored %q", got)
		}
		page := apptest.Parse(c.Get(r.Location).Body)
		if page.TestID("account-notice") == nil || page.TestID("name-input").Attr("value") != "علی مهدی\u200Cپور" {
			t.Fatalf("the page does not show the saved name")
		}

		for _, bad := range []string{"\u202Eevil", strings.Repeat("x", 61)} {
			r := c.Submit(routes.Account, routes.AccountName, url.Values{"name": {bad}})
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("%q: status %d", bad, r.Status)
			}
			doc := apptest.Parse(r.Body)
			if doc.TestID("name-error") == nil || doc.TestID("name-input").Attr("value") != bad || doc.TestID("name-input").Attr("aria-invalid") != "true" {
				t.Fatalf("%q: no error shown with the name as typed", bad)
			}
			if got := stored(); got != "علی مهدی\u200Cپور" {
				t.Fatalf("%q changed the name to %q", bad, got)
			}
		}
		// No CSRF token: refused, nothing changed.
		if r := c.Post(routes.AccountName, url.Values{"name": {"forged"}}); r.Status != http.StatusForbidden {
			t.Fatalf("without a CSRF token: %d", r.Status)
		}
		// Signed out: to the sign-in page.
		if r := app.NewClient(t).Post(routes.AccountName, url.Values{"name": {"x"}}); r.Status < 300 || r.Status == http.StatusOK {
			t.Fatalf("signed out: %d", r.Status)
		}
		if r := c.Submit(routes.Account, routes.AccountName, url.Values{"name": {"   "}}); r.Status != http.StatusSeeOther {
			t.Fatalf("clear: %d", r.Status)
		}
		if got := stored(); got != "" {
			t.Fatalf("cleared name is %q", got)
		}
	})
}
