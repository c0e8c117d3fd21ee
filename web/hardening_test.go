package web_test

// The red team's findings on the site (issue 20), each tried as the
// attacker would, on SQLite and PostgreSQL.

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apitoken/apitokentest"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Finding 4: NUL bytes in a token name (any user) and in the admin
// console's search filters were 500s on PostgreSQL. They are 400s, and
// nothing is written.
func TestNULBytesAreBadRequests(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("nul@example.com")
		csrf := apptest.Input(user.Get(routes.Tokens).Body, "_csrf")
		before := dbState(t, db)
		for _, name := range []string{"a\x00b", "\x00", "bad \xff utf8"} {
			r := user.Post(routes.Tokens, url.Values{"_csrf": {csrf}, "name": {name}, "scope": {"read"}, "password": {"correct horse battery"}})
			if r.Status != http.StatusBadRequest {
				t.Errorf("token name %q: %d, want 400", name, r.Status)
			}
		}
		if after := dbState(t, db); after["api_tokens"] != before["api_tokens"] {
			t.Errorf("refused token names wrote: %v → %v", before, after)
		}
		admin := app.NewAdmin(t, "root@example.com")
		before = dbState(t, db)
		for _, path := range []string{
			routes.AdminTopUps + "?q=a%00b", routes.AdminTopUps + "?gateway=%00", routes.AdminTopUps + "?from=%00", routes.AdminTopUps + "?min=%00",
			routes.AdminTopUpsCSV + "?q=%00", routes.AdminUsers + "?q=x%00", routes.AdminAudit + "?admin=%00", routes.AdminAudit + "?payment=%00",
			routes.AdminTokens + "?email=%00", routes.AdminTopUps + "?q=%ff", routes.AdminTopUps + "?%00=1",
		} {
			if r := admin.Get(path); r.Status != http.StatusBadRequest {
				t.Errorf("GET %s: %d, want 400", path, r.Status)
			}
		}
		if after := dbState(t, db); after["api_tokens"] != 0 || after["users"] != before["users"] {
			t.Errorf("refused requests wrote: %v → %v", before, after)
		}
		// The same filters without the NUL are served.
		for _, path := range []string{routes.AdminTopUps + "?q=abc", routes.AdminUsers + "?q=xyz", routes.AdminAudit + "?admin=root@example.com", routes.AdminTokens + "?email=x"} {
			if r := admin.Get(path); r.Status != http.StatusOK {
				t.Errorf("GET %s: %d, want 200", path, r.Status)
			}
		}
	})
}

// The same check holds for a multipart body, which Fiber's FormValue
// reads too: a NUL or invalid UTF-8 in a field's name or value, or in a
// file's name, is a 400 that writes nothing, and the same form without
// it is served (a token is made).
func TestNULBytesInMultipartFormsAreBadRequests(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("multipart@example.com")
		csrf := apptest.Input(user.Get(routes.Tokens).Body, "_csrf")
		post := func(fields [][2]string, fileName string) apptest.Response {
			t.Helper()
			var body bytes.Buffer
			w := multipart.NewWriter(&body)
			for _, f := range fields {
				if err := w.WriteField(f[0], f[1]); err != nil {
					t.Fatal(err)
				}
			}
			if fileName != "" {
				fw, err := w.CreateFormFile("attachment", fileName)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = fw.Write([]byte("x"))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, app.URL+routes.Tokens, &body)
			req.Header.Set("Content-Type", w.FormDataContentType())
			req.Header.Set("Origin", app.URL)
			return user.Do(req)
		}
		fields := func(name string) [][2]string {
			return [][2]string{{"_csrf", csrf}, {"name", name}, {"scope", "read"}, {"password", "correct horse battery"}}
		}
		before := dbState(t, db)
		for _, c := range []struct {
			what   string
			fields [][2]string
			file   string
		}{
			{"NUL in a value", fields("a\x00b"), ""},
			{"invalid UTF-8 in a value", fields("bad \xff utf8"), ""},
			{"NUL in a field's name", append(fields("ok"), [2]string{"x\x00", "1"}), ""},
			{"NUL in a file's name", fields("ok"), "a\x00.txt"},
		} {
			if r := post(c.fields, c.file); r.Status != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", c.what, r.Status)
			}
		}
		if after := dbState(t, db); after["api_tokens"] != before["api_tokens"] {
			t.Fatalf("refused multipart forms wrote: %v → %v", before, after)
		}
		if r := post(fields("multipart token"), ""); r.Status >= 400 {
			t.Fatalf("the same form without NUL: %d", r.Status)
		}
		if after := dbState(t, db); after["api_tokens"] != before["api_tokens"]+1 {
			t.Fatalf("the multipart form without NUL made %d tokens, want 1", after["api_tokens"]-before["api_tokens"])
		}
	})
}

// Finding 8: a token name with bidi overrides or isolates, or control
// characters, is refused (422 with a sentence saying why); names (and
// every other text a person typed) are rendered inside <bdi>, so a name
// stored before this rule cannot reorder the text around it.
func TestNamesWithInvisibleCharacters(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("bidi@example.com")
		csrf := apptest.Input(user.Get(routes.Tokens).Body, "_csrf")
		for _, name := range []string{"\u202Egnp.exe", "a\u2066b\u2069", "a\u2067b", "a\u2068b", "zero\u200Bwidth", "tab\tname", "esc\x1b[31m", "line\nbreak"} {
			r := user.Post(routes.Tokens, url.Values{"_csrf": {csrf}, "name": {name}, "scope": {"read"}, "password": {"correct horse battery"}})
			if r.Status != http.StatusUnprocessableEntity || apptest.Parse(r.Body).TestID("token-error") == nil ||
				!strings.Contains(r.Body, "کاراکترهای نامرئی یا کنترلی") {
				t.Errorf("token name %q: %d, want 422 with the reason", name, r.Status)
			}
		}
		if n := int64(len(app.Tokens(t))); n != 0 {
			t.Fatalf("%d tokens with refused names", n)
		}
		// A name stored before the rule (written directly) is isolated.
		userID := authtest.UserID(t, db, "bidi@example.com")
		if _, _, err := app.Server.Tokens.Create(context.Background(), apitoken.CreateInput{UserID: userID, Name: "legacy", Scope: "read"}); err != nil {
			t.Fatal(err)
		}
		apitokentest.SetName(t, db, userID, "\u202Egnp.exe")
		page := user.Get(routes.Tokens).Body
		if !strings.Contains(page, "<bdi data-testid=\"token-name-text\">\u202Egnp.exe</bdi>") {
			t.Errorf("the stored name is not rendered inside <bdi>")
		}
		admin := app.NewAdmin(t, "boss@example.com")
		if body := admin.Get(routes.AdminTokens).Body; !strings.Contains(body, "<bdi data-testid=\"token-name-text\">\u202Egnp.exe</bdi>") ||
			!strings.Contains(body, "<bdi>bidi@example.com</bdi>") {
			t.Errorf("the admin's token list does not isolate names and owners")
		}
	})
}

// Finding 11: the CSRF token is taken from the form body (or the
// X-CSRF-Token header), never from the query string, where it would leak
// through logs, Referer and history.
func TestCSRFTokenIsNotTakenFromTheQuery(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("query@example.com")
		csrf := apptest.Input(user.Get(routes.Account).Body, "_csrf")
		sessions := authtest.CountSessions(t, db)
		r := user.Post(routes.AccountSignOutEverywhere+"?_csrf="+url.QueryEscape(csrf), url.Values{})
		if r.Status != http.StatusForbidden {
			t.Fatalf("token in the query string: %d, want 403", r.Status)
		}
		if n := authtest.CountSessions(t, db); n != sessions {
			t.Fatalf("sessions %d → %d after a refused request", sessions, n)
		}
		if r := user.Post(routes.AccountSignOutEverywhere, url.Values{"_csrf": {csrf}}); r.Status != http.StatusSeeOther {
			t.Fatalf("token in the form: %d, want 303", r.Status)
		}
		if n := authtest.CountSessions(t, db); n != 0 {
			t.Fatalf("%d sessions after signing out everywhere", n)
		}
	})
}

// Finding 3: passing the second factor starts a new session. An attacker
// who knows the admin's password and planted a session cookie (theirs,
// signed in with the password) in the admin's browser is left with a
// dead token once the admin types a code, not with an elevated session.
func TestSecondFactorStartsANewSession(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		if _, err := app.Server.Auth.SignUp(context.Background(), "victim@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignIn("victim@example.com", "correct horse battery")
		planted := admin.SessionCookie() // what the attacker knows
		if r := admin.Get(routes.Admin); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.AdminTwoFactor) {
			t.Fatalf("before the second factor: %d %q", r.Status, r.Location)
		}
		admin.PassAdminChecks("victim@example.com")
		if now := admin.SessionCookie(); now == "" || now == planted {
			t.Fatalf("the session token did not change at the second factor")
		}
		if r := admin.Get(routes.Admin); r.Status != http.StatusOK {
			t.Fatalf("the admin after the second factor: %d", r.Status)
		}
		attacker := app.NewClient(t)
		u, _ := url.Parse(app.URL)
		attacker.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "kp_session", Value: planted, Path: "/"}})
		if r := attacker.Get(routes.Admin); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.SignIn) {
			t.Fatalf("the planted token after the admin's second factor: %d %q, want a redirect to sign in", r.Status, r.Location)
		}
		elevated := 0
		for _, s := range authtest.Sessions(t, db) {
			if s.SecondFactorAt != nil {
				elevated++
			}
		}
		if n := elevated; n != 1 {
			t.Fatalf("%d elevated sessions, want 1", n)
		}
		// A second sign-in passes again, with a new token again.
		again := app.NewClient(t)
		again.SignIn("victim@example.com", "correct horse battery")
		before := again.SessionCookie()
		again.PassAdminChecks("victim@example.com")
		if again.SessionCookie() == before {
			t.Fatalf("the token did not change when a code was typed (not enrolling)")
		}
		if r := again.Get(routes.Admin); r.Status != http.StatusOK {
			t.Fatalf("second admin session: %d", r.Status)
		}
	})
}

// Finding 7: a "%" (or "?", "#") in an admin's address made /admin/2fa
// answer 500 (the authenticator URL did not parse): that admin could
// never enrol.
func TestAdminWithPercentInAddressEnrols(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		for _, email := range []string{"pct%25@example.com", "a%b@example.com", "q?x@example.com", "h#x@example.com"} {
			if _, err := app.Server.Auth.SignUp(context.Background(), email, "correct horse battery", "admin", "en"); err != nil {
				t.Fatalf("%s: %v", email, err)
			}
			c := app.NewClient(t)
			c.SignIn(email, "correct horse battery")
			c.PassAdminChecks(email)
			if r := c.Get(routes.Admin); r.Status != http.StatusOK {
				t.Fatalf("%s after enrolling: %d", email, r.Status)
			}
		}
	})
}

// Finding 13: GET ?lang= sets the language cookie only; the user's saved
// locale follows on their next state-changing request.
func TestLanguageSwitchWritesNothingOnGET(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("lang@example.com")
		locale := func() string {
			return authtest.User(t, db, "lang@example.com").Locale
		}
		before := locale()
		other := "en"
		if before == "en" {
			other = "fa"
		}
		r := user.Get(routes.Wallet + "?lang=" + other)
		if r.Status != http.StatusSeeOther || !strings.Contains(r.Header.Get("Set-Cookie"), "lang="+other) {
			t.Fatalf("GET ?lang=%s: %d %q", other, r.Status, r.Header.Get("Set-Cookie"))
		}
		if got := locale(); got != before {
			t.Fatalf("GET ?lang= wrote users.locale: %q → %q", before, got)
		}
		// The next state-changing request saves the choice.
		if r := user.Submit(routes.Tokens, routes.Tokens, url.Values{"name": {"x"}, "scope": {"read"}, "password": {"correct horse battery"}}); r.Status != http.StatusOK {
			t.Fatalf("create token: %d", r.Status)
		}
		if got := locale(); got != other {
			t.Fatalf("locale %q after a POST with the lang cookie, want %q", got, other)
		}
	})
}

// Finding 16: the built-in sandbox bank's pages carry one
// Content-Security-Policy (the bank's), not the app's and the bank's.
func TestSandboxBankPagesHaveOneCSP(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	_, payURL := app.StartTopUp(t, "csp@example.com", "10000")
	resp, err := http.Get(payURL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if csp := resp.Header.Values("Content-Security-Policy"); resp.StatusCode != http.StatusOK || len(csp) != 1 || !strings.Contains(csp[0], "default-src 'none'") {
		t.Fatalf("bank page: %d, CSP %q, want exactly the bank's one", resp.StatusCode, csp)
	}
	// The app's own pages keep theirs, once.
	resp, err = http.Get(app.URL + routes.SignIn)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if csp := resp.Header.Values("Content-Security-Policy"); len(csp) != 1 || !strings.Contains(csp[0], "nonce-") {
		t.Fatalf("app page CSP %q", csp)
	}
}

// Findings 10 and 13: enrolment is not trust-on-first-use. An admin not
// yet enrolled is asked for the one-time code the operator was given
// before any authenticator secret is made or shown; someone who knows
// only the password sees no secret, and GET /admin/2fa writes nothing.
func TestEnrolmentNeedsTheOperatorsCode(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		ctx := context.Background()
		if _, err := app.Server.Auth.SignUp(ctx, "new-admin@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		pending := func() int64 { return authtest.CountUsers(t, db, func(u auth.User) bool { return u.TOTPSecret != "" }) }
		intruder := app.NewClient(t) // knows the password, not the code
		intruder.SignIn("new-admin@example.com", "correct horse battery")
		page := intruder.Get(routes.AdminTwoFactor)
		if page.Status != http.StatusOK || strings.Contains(page.Body, "totp-secret") || strings.Contains(page.Body, "data:image/png") {
			t.Fatalf("GET /admin/2fa before the enrolment code: %d, shows a secret: %v", page.Status, strings.Contains(page.Body, "totp-secret"))
		}
		if pending() != 0 {
			t.Fatal("GET /admin/2fa wrote a pending secret")
		}
		for _, guess := range []string{"", "AAAA-BBBB-CCCC-DDDD"} {
			r := intruder.Post(routes.AdminTwoFactor, url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}, "enrol_code": {guess}})
			if r.Status != http.StatusUnprocessableEntity || strings.Contains(r.Body, "totp-secret") {
				t.Errorf("enrolment code %q: %d", guess, r.Status)
			}
		}
		if pending() != 0 {
			t.Fatal("a wrong enrolment code made a secret")
		}
		// The admin, with the code the operator was given, enrols.
		admin := app.NewClient(t)
		admin.SignIn("new-admin@example.com", "correct horse battery")
		admin.PassAdminChecks("new-admin@example.com")
		if r := admin.Get(routes.Admin); r.Status != http.StatusOK {
			t.Fatalf("the admin after enrolling: %d", r.Status)
		}
		if n := authtest.CountUsers(t, db, func(u auth.User) bool { return u.TOTPEnrolHash != "" }); n != 0 {
			t.Fatal("the enrolment code outlived the enrolment")
		}
		// The intruder's session: no console, and the check page shows no secret.
		if r := intruder.Get(routes.AdminTwoFactor); strings.Contains(r.Body, "totp-secret") {
			t.Fatal("the secret is shown to a session that only knows the password")
		}
		if r := intruder.Get(routes.Admin); r.Status != http.StatusSeeOther {
			t.Fatalf("the intruder's /admin: %d", r.Status)
		}
	})
}

// A path with raw bytes that are not UTF-8 (fasthttp takes them in the
// request line, and a route's parameter is the path's own bytes) was a
// 500 on PostgreSQL where the parameter reached a query (a transfer's or
// a charge's id). It is a 400 before any handler; the same request with a
// well-formed unknown id is the API's 404.
func TestInvalidUTF8InThePathIsABadRequest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("rawpath@example.com")
		uid := authtest.UserID(t, db, "rawpath@example.com")
		secret, _, err := app.Server.Tokens.Create(context.Background(), apitoken.CreateInput{UserID: uid, Name: "raw", Scope: "read"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			path string
			want int
		}{
			{routes.APITransfers + "/tr_\xff\xfe", http.StatusBadRequest},
			{routes.APICharges + "/ch_\xff", http.StatusBadRequest},
			{routes.APITransfers + "/tr_unknown", http.StatusNotFound},
		} {
			rc, err := dialApp(app)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rc.Write([]byte("GET " + c.path + " HTTP/1.1\r\nHost: kifpool.test\r\nAuthorization: Bearer " + secret + "\r\nConnection: close\r\n\r\n"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := rc.answer(10 * time.Second)
			_ = rc.Close()
			if err != nil || got != c.want {
				t.Fatalf("GET %q: %d %v, want %d", c.path, got, err, c.want)
			}
		}
	})
}
