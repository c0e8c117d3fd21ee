package account_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// newToken is the secret a page shows once, after a token is made, or "".
func newToken(body string) string {
	if s := apptest.Parse(body).TestID("new-token").Text(); strings.HasPrefix(s, "kp_") {
		return s
	}
	return ""
}

// tokenRows lists the states and scopes of the token list's rows
// ("active topup").
func tokenRows(body string) []string {
	var out []string
	for _, row := range apptest.Parse(body).TestIDs("token-row") {
		out = append(out, row.Attr("data-state")+" "+row.Attr("data-scope"))
	}
	return out
}

func TestTokenPages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		ctx := context.Background()
		if _, err := app.Server.Auth.SignUp(ctx, "boss@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		user := app.NewClient(t)
		user.SignUp("owner@example.com")

		// Signed out: the page asks to sign in.
		if r := app.NewClient(t).Get(routes.Tokens); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.SignIn) {
			t.Fatalf("signed-out tokens page: %d %q", r.Status, r.Location)
		}
		page := user.Get(routes.Tokens)
		if page.Status != http.StatusOK || apptest.Parse(page.Body).TestID("tokens-none") == nil {
			t.Fatalf("empty tokens page: %d", page.Status)
		}
		csrf := apptest.Input(page.Body, "_csrf")

		// Bad forms: 422, nothing written.
		for _, f := range []url.Values{
			{"name": {""}, "scope": {"read"}},
			{"name": {"x"}, "scope": {"admin"}},
			{"name": {"x"}, "scope": {"read"}, "expires_days": {"400"}},
		} {
			f.Set("_csrf", csrf)
			f.Set("password", "correct horse battery")
			if r := user.Post(routes.Tokens, f); r.Status != http.StatusUnprocessableEntity || apptest.Parse(r.Body).TestID("token-error") == nil {
				t.Fatalf("bad form %v: %d", f, r.Status)
			}
		}
		if n := int64(len(app.Tokens(t))); n != 0 {
			t.Fatalf("%d tokens after refused forms", n)
		}
		// Without the CSRF token nothing is created.
		if r := user.Post(routes.Tokens, url.Values{"name": {"x"}, "scope": {"read"}}); r.Status != http.StatusForbidden {
			t.Fatalf("create without csrf: %d", r.Status)
		}

		r := user.Post(routes.Tokens, url.Values{"_csrf": {csrf}, "name": {"phone"}, "scope": {"topup"}, "expires_days": {"۳۰"}, "password": {"correct horse battery"}})
		secret := newToken(r.Body)
		if r.Status != http.StatusOK || secret == "" {
			t.Fatalf("create: %d, token shown: %v", r.Status, secret != "")
		}
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("the page with the secret may be cached: %q", r.Header.Get("Cache-Control"))
		}
		stored := 0
		for _, tk := range app.Tokens(t) {
			if tk.TokenHash == sha256hex(secret) && tk.Scope == apitoken.ScopeTopUp && tk.ExpiresAt != nil {
				stored++
			}
		}
		if n := stored; n != 1 {
			t.Fatalf("token not stored by its hash")
		}
		// Shown once: the list afterwards has the token, never its secret.
		list := user.Get(routes.Tokens)
		if strings.Contains(list.Body, secret) || apptest.Parse(list.Body).TestID("new-token") != nil || !slices.Equal(tokenRows(list.Body), []string{"active topup"}) {
			t.Fatalf("token list shows the secret or misses the token")
		}
		id := app.Tokens(t)[0].ID

		// Someone else cannot revoke it.
		other := app.NewClient(t)
		other.SignUp("other@example.com")
		otherCSRF := apptest.Input(other.Get(routes.Tokens).Body, "_csrf")
		if r := other.Post(routes.TokenRevoke(id), url.Values{"_csrf": {otherCSRF}}); r.Status != http.StatusNotFound {
			t.Fatalf("foreign revoke: %d", r.Status)
		}
		// Nor see the admin list.
		if r := other.Get(routes.AdminTokens); r.Status != http.StatusNotFound {
			t.Fatalf("admin tokens page for a user: %d", r.Status)
		}

		// The admin lists and revokes it; the audit log has it.
		admin := app.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		al := admin.Get(routes.AdminTokens + "?email=owner")
		if al.Status != http.StatusOK || !strings.Contains(al.Body, "owner@example.com") || strings.Contains(al.Body, secret) {
			t.Fatalf("admin list: %d", al.Status)
		}
		if r := admin.Post(routes.AdminTokenRevoke(id), url.Values{"_csrf": {apptest.Input(al.Body, "_csrf")}}); r.Status != http.StatusSeeOther || r.Location != routes.AdminTokens+"?done=revoked" {
			t.Fatalf("admin revoke: %d %q", r.Status, r.Location)
		}
		owner := authtest.UserID(t, db, "owner@example.com")
		revokes := 0
		for _, e := range app.AuditLog(t) {
			if e.Action == audit.ActionTokenRevoke && e.TargetUserID != nil && *e.TargetUserID == owner && e.TopUpID == nil {
				revokes++
			}
		}
		if n := revokes; n != 1 {
			t.Fatalf("%d audit entries", n)
		}
		if l := user.Get(routes.Tokens); !slices.Equal(tokenRows(l.Body), []string{"revoked topup"}) || apptest.Parse(l.Body).TestID("token-revoke") != nil {
			t.Fatalf("revoked token still offered for revocation")
		}

		// The owner revokes a token of their own.
		r = user.Post(routes.Tokens, url.Values{"_csrf": {csrf}, "name": {"ci"}, "scope": {"read"}, "password": {"correct horse battery"}})
		if newToken(r.Body) == "" {
			t.Fatalf("second token not shown")
		}
		id = app.Tokens(t)[0].ID // the newest
		if r := user.Post(routes.TokenRevoke(id), url.Values{"_csrf": {csrf}}); r.Location != routes.Tokens+"?done=revoked" {
			t.Fatalf("owner revoke: %d %q", r.Status, r.Location)
		}
		revoked := 0
		for _, tk := range app.Tokens(t) {
			if tk.RevokedAt != nil {
				revoked++
			}
		}
		if n := revoked; n != 2 {
			t.Fatalf("%d revoked tokens, want 2", n)
		}
	})
}

// A token needs the account's password; it expires after
// API_TOKEN_DEFAULT_DAYS unless told otherwise (typed in any digits); a
// user holds at most API_TOKENS_PER_USER live ones; and every token dies
// with "sign out everywhere".
func TestTokenRules(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"API_TOKEN_DEFAULT_DAYS": "7", "API_TOKENS_PER_USER": "2"}})
		user := app.NewClient(t)
		user.SignUp("rules@example.com")
		csrf := apptest.Input(user.GetIn("en", routes.Tokens).Body, "_csrf")
		create := func(name, days, password string) apptest.Response {
			return user.Post(routes.Tokens, url.Values{"_csrf": {csrf}, "name": {name}, "scope": {"topup"}, "expires_days": {days}, "password": {password}})
		}
		// Wrong or missing password: refused, nothing written.
		for _, pw := range []string{"", "wrong password!"} {
			r := create("app", "", pw)
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "The password is wrong") {
				t.Fatalf("password %q: %d", pw, r.Status)
			}
		}
		if n := int64(len(app.Tokens(t))); n != 0 {
			t.Fatalf("%d tokens created without the password", n)
		}
		page := user.Get(routes.Tokens)
		if !strings.Contains(page.Body, "Empty: 7 days") || !slices.Contains(apptest.Parse(page.Body).Form(routes.Tokens).Attrs("name"), "password") {
			t.Fatal("the form does not say the default validity or ask for the password")
		}
		r := create("default", "", "correct horse battery")
		secret := newToken(r.Body)
		if r.Status != http.StatusOK || secret == "" {
			t.Fatalf("create: %d", r.Status)
		}
		var days float64
		for _, tk := range app.Tokens(t) {
			if tk.Name == "default" && tk.ExpiresAt != nil {
				days = tk.ExpiresAt.Sub(tk.CreatedAt).Hours() / 24
			}
		}
		if days < 6.99 || days > 7.01 {
			t.Fatalf("default validity %.2f days, want 7", days)
		}
		if r := create("persian", "۱۲", "correct horse battery"); r.Status != http.StatusOK {
			t.Fatalf("Persian digits: %d", r.Status)
		}
		// The third live token is refused; revoking one frees a place.
		if r := create("third", "", "correct horse battery"); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "at most 2 live tokens") {
			t.Fatalf("third token: %d", r.Status)
		}
		if n := int64(len(app.Tokens(t))); n != 2 {
			t.Fatalf("%d tokens, want 2", n)
		}
		bearer := func(tok string) int {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, app.URL+routes.APIWallet, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			return app.NewClient(t).Do(req).Status
		}
		if st := bearer(secret); st != http.StatusOK {
			t.Fatalf("token before sign-out-everywhere: %d", st)
		}
		acc := user.Get(routes.Account)
		if r := user.Post(routes.AccountSignOutEverywhere, url.Values{"_csrf": {apptest.Input(acc.Body, "_csrf")}}); r.Status != http.StatusSeeOther {
			t.Fatalf("sign out everywhere: %d", r.Status)
		}
		if st := bearer(secret); st != http.StatusUnauthorized {
			t.Fatalf("token after sign-out-everywhere: %d", st)
		}
		live := 0
		for _, tk := range app.Tokens(t) {
			if tk.RevokedAt == nil {
				live++
			}
		}
		if n := live; n != 0 {
			t.Fatalf("%d live tokens after sign-out-everywhere", n)
		}
	})
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
