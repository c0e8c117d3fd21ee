package web_test

// The red team's findings on the site (issue 20), each tried as the
// attacker would, on SQLite and PostgreSQL.

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// signedInAdmin creates an admin and returns a client that has passed
// the second factor.
func signedInAdmin(t *testing.T, app *apptest.App, email string) *apptest.Client {
	t.Helper()
	if _, err := app.Server.Auth.SignUp(context.Background(), email, "correct horse battery", "admin", "en"); err != nil {
		t.Fatal(err)
	}
	c := app.NewClient(t)
	c.SignInAdmin(email, "correct horse battery")
	return c
}

// Finding 4: NUL bytes in a token name (any user) and in the admin
// console's search filters were 500s on PostgreSQL. They are 400s, and
// nothing is written.
func TestNULBytesAreBadRequests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("nul@example.com")
		csrf := apptest.Field(user.Get("/account/tokens").Body, "_csrf")
		before := dbState(t, db)
		for _, name := range []string{"a\x00b", "\x00", "bad \xff utf8"} {
			r := user.Post("/account/tokens", url.Values{"_csrf": {csrf}, "name": {name}, "scope": {"read"}, "password": {"correct horse battery"}})
			if r.Status != http.StatusBadRequest {
				t.Errorf("token name %q: %d, want 400", name, r.Status)
			}
		}
		admin := signedInAdmin(t, app, "root@example.com")
		before = dbState(t, db)
		for _, path := range []string{
			"/admin/payments?q=a%00b", "/admin/payments?gateway=%00", "/admin/payments?from=%00", "/admin/payments?min=%00",
			"/admin/payments.csv?q=%00", "/admin/users?q=x%00", "/admin/audit?admin=%00", "/admin/audit?payment=%00",
			"/admin/tokens?email=%00", "/admin/payments?q=%ff", "/admin/payments?%00=1",
		} {
			if r := admin.Get(path); r.Status != http.StatusBadRequest {
				t.Errorf("GET %s: %d, want 400", path, r.Status)
			}
		}
		if after := dbState(t, db); after["api_tokens"] != 0 || after["users"] != before["users"] {
			t.Errorf("refused requests wrote: %v → %v", before, after)
		}
		// The same filters without the NUL are served.
		for _, path := range []string{"/admin/payments?q=ab", "/admin/users?q=x", "/admin/audit?admin=root@example.com", "/admin/tokens?email=x"} {
			if r := admin.Get(path); r.Status != http.StatusOK {
				t.Errorf("GET %s: %d, want 200", path, r.Status)
			}
		}
	})
}

// Finding 8: a token name with bidi overrides or isolates, or control
// characters, is refused (422 with a sentence saying why); names (and
// every other text a person typed) are rendered inside <bdi>, so a name
// stored before this rule cannot reorder the text around it.
func TestNamesWithInvisibleCharacters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("bidi@example.com")
		csrf := apptest.Field(user.Get("/account/tokens").Body, "_csrf")
		for _, name := range []string{"\u202Egnp.exe", "a\u2066b\u2069", "a\u2067b", "a\u2068b", "zero\u200Bwidth", "tab\tname", "esc\x1b[31m", "line\nbreak"} {
			r := user.Post("/account/tokens", url.Values{"_csrf": {csrf}, "name": {name}, "scope": {"read"}, "password": {"correct horse battery"}})
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `data-testid="token-error"`) ||
				!strings.Contains(r.Body, "نویسه‌های نامرئی یا کنترلی") {
				t.Errorf("token name %q: %d, want 422 with the reason", name, r.Status)
			}
		}
		if n := apptest.Count(t, db, `SELECT COUNT(*) FROM api_tokens`); n != 0 {
			t.Fatalf("%d tokens with refused names", n)
		}
		// A name stored before the rule (written directly) is isolated.
		var userID int64
		if err := db.Gorm.Raw(`SELECT id FROM users WHERE email = 'bidi@example.com'`).Row().Scan(&userID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := app.Server.Tokens.Create(context.Background(), apitoken.CreateInput{UserID: userID, Name: "legacy", Scope: "read"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Exec(`UPDATE api_tokens SET name = ?`, "\u202Egnp.exe").Error; err != nil {
			t.Fatal(err)
		}
		page := user.Get("/account/tokens").Body
		if !strings.Contains(page, "<bdi data-testid=\"token-name-text\">\u202Egnp.exe</bdi>") {
			t.Errorf("the stored name is not rendered inside <bdi>")
		}
		admin := signedInAdmin(t, app, "boss@example.com")
		if body := admin.Get("/admin/tokens").Body; !strings.Contains(body, "<bdi data-testid=\"token-name-text\">\u202Egnp.exe</bdi>") ||
			!strings.Contains(body, "<bdi>bidi@example.com</bdi>") {
			t.Errorf("the admin's token list does not isolate names and owners")
		}
	})
}

// Finding 11: the CSRF token is taken from the form body (or the
// X-CSRF-Token header), never from the query string, where it would leak
// through logs, Referer and history.
func TestCSRFTokenIsNotTakenFromTheQuery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("query@example.com")
		csrf := apptest.Field(user.Get("/account").Body, "_csrf")
		sessions := apptest.Count(t, db, `SELECT COUNT(*) FROM sessions`)
		r := user.Post("/account/signout-everywhere?_csrf="+url.QueryEscape(csrf), url.Values{})
		if r.Status != http.StatusForbidden {
			t.Fatalf("token in the query string: %d, want 403", r.Status)
		}
		if n := apptest.Count(t, db, `SELECT COUNT(*) FROM sessions`); n != sessions {
			t.Fatalf("sessions %d → %d after a refused request", sessions, n)
		}
		if r := user.Post("/account/signout-everywhere", url.Values{"_csrf": {csrf}}); r.Status != http.StatusSeeOther {
			t.Fatalf("token in the form: %d, want 303", r.Status)
		}
		if n := apptest.Count(t, db, `SELECT COUNT(*) FROM sessions`); n != 0 {
			t.Fatalf("%d sessions after signing out everywhere", n)
		}
	})
}
