package web_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

func TestRedirectsStayOnSite(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	c := app.NewClient(t)
	for _, path := range []string{"//evil.example/?lang=en", "/%5Cevil.example/?lang=en", "///evil.example?lang=fa"} {
		r := c.Get(path)
		if r.Status != http.StatusSeeOther || strings.HasPrefix(r.Location, "//") || strings.Contains(r.Location, "\\") {
			t.Errorf("GET %s: %d Location %q", path, r.Status, r.Location)
		}
	}
	// Signing in returns to the page that asked for it, never elsewhere.
	c.SignUp("next@example.com")
	c.Post(routes.SignOut, url.Values{"_csrf": {apptest.Input(c.Get(routes.Wallet).Body, "_csrf")}})
	r := c.Get(routes.TopUp)
	if r.Status != http.StatusSeeOther || r.Location != routes.SignIn+"?next="+url.QueryEscape(routes.TopUp) {
		t.Fatalf("anonymous top-up: %d %q", r.Status, r.Location)
	}
	form := c.Get(r.Location)
	if !strings.Contains(form.Body, `action="`+routes.SignIn+"?next="+url.QueryEscape(routes.TopUp)+`"`) {
		t.Fatalf("sign-in form does not keep next")
	}
	for next, want := range map[string]string{
		routes.TopUp:           routes.TopUp,
		"//evil.example":       routes.Wallet,
		"/\t/evil.example":     routes.Wallet,
		"/\\evil.example":      routes.Wallet,
		"https://evil.example": routes.Wallet,
	} {
		cl := app.NewClient(t)
		page := cl.Get(routes.SignIn)
		r := cl.Post(routes.SignIn+"?next="+url.QueryEscape(next), url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")},
			"email": {"next@example.com"}, "password": {"correct horse battery"}})
		if r.Status != http.StatusSeeOther || r.Location != want {
			t.Errorf("next=%q: %d %q, want %q", next, r.Status, r.Location, want)
		}
	}
}

func TestRateLimitKeysOnTheRealClient(t *testing.T) {
	t.Parallel()
	// Rate limits on, as in serve; the test client connects from
	// 127.0.0.1, which is named as the reverse proxy.
	limited := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{
		Env:    map[string]string{"TRUSTED_PROXIES": "127.0.0.1"},
		Server: server.Options{RateLimits: true},
	})
	c := limited.NewClient(t)
	csrf := apptest.Input(c.Get(routes.SignIn).Body, "_csrf")
	signIn := func(xff string) int {
		// Each attempt on another account: the per-account throttle is
		// not what this test is about.
		req, _ := http.NewRequest(http.MethodPost, limited.URL+routes.SignIn, strings.NewReader(url.Values{
			"_csrf": {csrf}, "email": {"x" + xff + "@example.com"}, "password": {"wrong password"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", xff)
		return c.Do(req).Status
	}
	// 20 attempts a minute per client: one rotating a spoofed left-most
	// X-Forwarded-For entry is still one client (the proxy appended the
	// real address on the right).
	var last int
	for i := range 25 {
		last = signIn("10.0.0." + strconv.FormatInt(int64(i), 10) + ", 203.0.113.7")
	}
	if last != http.StatusTooManyRequests {
		t.Fatalf("after 25 attempts from one client: %d, want 429", last)
	}
	if st := signIn("203.0.113.8"); st != http.StatusUnauthorized {
		t.Fatalf("another client: %d, want 401", st)
	}
	// An IPv6 client is its /64: one rotating through its own /64 (every
	// subscriber has 2^64 addresses) is still one client; the next /64 is
	// another.
	for i := range 25 {
		last = signIn("2001:db8:1:2:" + strconv.FormatInt(int64(i), 16) + "::1")
	}
	if last != http.StatusTooManyRequests {
		t.Fatalf("after 25 attempts from one /64: %d, want 429", last)
	}
	if st := signIn("2001:db8:1:3::1"); st != http.StatusUnauthorized {
		t.Fatalf("another /64: %d, want 401", st)
	}
}

// Callbacks need no session (the bank calls them), so anyone can send
// them: whatever they claim (Status=OK or not), the bank is asked about a
// payment at most once per PENDING_RECHECK_AFTER; the very first callback
// at once. A flood costs the bank one verify.
func TestCallbacksNeverHammerTheBank(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	const recheck = 3 * time.Second
	clk := topuptest.NewClock()
	app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"PENDING_RECHECK_AFTER": recheck.String()},
		Server: server.Options{Now: clk.Now}})
	c, payURL := app.StartTopUp(t, "early@example.com", "10000")
	authority := apptest.Authority(payURL)
	publicID := topuptest.First(t, db).PublicID
	back := routes.TopUpReturn(publicID) + "?Authority=" + authority
	calls := func(op string) int64 {
		return topuptest.CountCalls(t, db, op)
	}
	c.Get(back + "&Status=NOK") // the first: verify -51, inquiry IN_BANK
	if calls("verify") != 1 || calls("inquire") != 1 {
		t.Fatalf("%d verifies, %d inquiries after the first callback", calls("verify"), calls("inquire"))
	}
	attacker := app.NewClient(t)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			st := "OK"
			if i%2 == 0 {
				st = "NOK"
			}
			if r := attacker.Get(back + "&Status=" + st); apptest.TopUpStatus(r.Body) != "pending_verification" {
				t.Errorf("flooding callback: %d %q", r.Status, apptest.TopUpStatus(r.Body))
			}
		})
	}
	wg.Wait()
	if calls("verify") != 1 || calls("inquire") != 1 {
		t.Fatalf("%d verifies, %d inquiries after 40 callbacks within the window, want 1 and 1", calls("verify"), calls("inquire"))
	}
	// The payer pays; the next callback after the window is checked and credits.
	if _, err := app.Server.Bank.Pay(authority); err != nil {
		t.Fatal(err)
	}
	clk.Advance(recheck)
	if r := c.Get(back + "&Status=OK"); apptest.TopUpStatus(r.Body) != "credited" {
		t.Fatalf("after paying: %q", apptest.TopUpStatus(r.Body))
	}
	if c.Balance() != 100_000 || calls("verify") != 2 {
		t.Fatalf("balance %d, %d verifies", c.Balance(), calls("verify"))
	}
	apptest.CheckInvariants(t, db)
}

func TestHealthzReportsTheDatabase(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{Unchecked: "it closes the database"})
	c := app.NewClient(t)
	if r := c.Get(routes.Healthz); r.Status != http.StatusOK || r.Body != "ok" {
		t.Fatalf("healthy: %d %q", r.Status, r.Body)
	}
	db.Close()
	if r := c.Get(routes.Healthz); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("database closed: %d, want 503", r.Status)
	}
}

// Links built from the request path stay on this site: a path starting
// with "//" must not become a protocol-relative link to another host in
// the language switch of the 404 page or in the "reload" button of the
// 403 "form no longer valid" page.
func TestLinksFromTheRequestPathStayOnSite(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	c := app.NewClient(t)
	check := func(what string, r apptest.Response, wantStatus int) {
		t.Helper()
		if r.Status != wantStatus {
			t.Errorf("%s: status %d, want %d", what, r.Status, wantStatus)
		}
		doc := apptest.Parse(r.Body)
		for _, h := range append(doc.Attrs("href"), doc.Attrs("action")...) {
			if h == "#main" {
				continue
			}
			if !strings.HasPrefix(h, "/") || strings.HasPrefix(h, "//") || strings.HasPrefix(h, "/\\") || strings.ContainsAny(h, "\t\n\r") {
				t.Errorf("%s: off-site link %q", what, h)
			}
		}
	}
	for _, path := range []string{"//evil.example/x", "///evil.example/x", "/\\evil.example/x", "/%2F%2Fevil.example/x", "//evil.example/x?a=1&lang="} {
		check("GET "+path, c.Get(path), http.StatusNotFound)
		check("POST "+path, c.Post(path, url.Values{"a": {"1"}}), http.StatusForbidden)
	}
}

// The Origin check believes X-Forwarded-Host/-Proto only from a trusted
// proxy: anyone else sending them to make another site look like us is
// refused. (A trusted proxy forwarding a host other than BASE_URL's is
// redirected there before any check: see TestOtherHostRedirectsToBaseURL.)
func TestOriginCheckIgnoresForwardedHeadersFromStrangers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted string
		host    string // forwarded host and origin's host; "" for the app's own
		want    int
	}{
		{"no proxy configured", "", "evil.example", http.StatusForbidden},
		{"another proxy configured", "10.9.9.9", "evil.example", http.StatusForbidden},
		{"no proxy configured, our host over https", "", "", http.StatusForbidden},
		{"sent by the trusted proxy", "127.0.0.1", "", http.StatusSeeOther},
		{"another host sent by the trusted proxy", "127.0.0.1", "evil.example", http.StatusTemporaryRedirect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			if tc.trusted != "" {
				env["TRUSTED_PROXIES"] = tc.trusted
			}
			app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{Env: env})
			c := app.NewClient(t)
			c.SignUp("origin@example.com")
			csrf := apptest.Input(c.Get(routes.Wallet).Body, "_csrf")
			req, _ := http.NewRequest(http.MethodPost, app.URL+routes.SignOut, strings.NewReader(url.Values{"_csrf": {csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			host := tc.host
			if host == "" {
				host = strings.TrimPrefix(app.URL, "http://")
			}
			req.Header.Set("Origin", "https://"+host)
			req.Header.Set("X-Forwarded-Host", host)
			req.Header.Set("X-Forwarded-Proto", "https")
			if r := c.Do(req); r.Status != tc.want {
				t.Fatalf("cross-site sign-out with forged forwarded headers: %d, want %d", r.Status, tc.want)
			}
			signedIn := c.Get(routes.Wallet).Status == http.StatusOK
			if signedIn != (tc.want != http.StatusSeeOther) {
				t.Fatalf("signed in after the request: %v", signedIn)
			}
		})
	}
}

// RATE_LIMIT_TOPUP counts submits per user; replays of one form (double
// clicks: the same form token) are answered from the first submit and do
// not count. RATE_LIMIT_SIGNIN=0 turns the sign-in limit off.
func TestTopUpRateLimitIgnoresReplaysOfOneForm(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{
		Env:    map[string]string{"RATE_LIMIT_TOPUP": "2", "RATE_LIMIT_SIGNIN": "0"},
		Server: server.Options{RateLimits: true},
	})
	c := app.NewClient(t)
	c.SignUp("limits@example.com")
	csrf, token := c.TopUpForm()
	for i := range 5 {
		if r := c.PostTopUp(csrf, token, "10000"); r.Status != http.StatusSeeOther {
			t.Fatalf("submit %d of one form: status %d, want 303 (a replay)", i+1, r.Status)
		}
	}
	if n := topuptest.Count(t, app.DB); n != 1 {
		t.Fatalf("%d payments after replays of one form, want 1", n)
	}
	_, second := c.TopUpForm()
	if r := c.PostTopUp(csrf, second, "10000"); r.Status != http.StatusSeeOther {
		t.Fatalf("second form: status %d, want 303", r.Status)
	}
	_, third := c.TopUpForm()
	if r := c.PostTopUp(csrf, third, "10000"); r.Status != http.StatusTooManyRequests {
		t.Fatalf("third form within the minute: status %d, want 429", r.Status)
	}
	if n := topuptest.Count(t, app.DB); n != 2 {
		t.Fatalf("%d payments, want 2 (the refused submit writes nothing)", n)
	}
	// Sign-in limit per client address off: 25 wrong passwords (for as
	// many accounts: the per-account throttle is another rule) are all
	// answered as such.
	other := app.NewClient(t)
	csrf = apptest.Input(other.Get(routes.SignIn).Body, "_csrf")
	for i := range 25 {
		r := other.Post(routes.SignIn, url.Values{"_csrf": {csrf}, "email": {"x" + strconv.FormatInt(int64(i), 10) + "@example.com"}, "password": {"wrong password"}})
		if r.Status != http.StatusUnauthorized {
			t.Fatalf("sign-in %d with RATE_LIMIT_SIGNIN=0: status %d, want 401", i+1, r.Status)
		}
	}
}

// The payment service's own log lines carry the request id and the
// payment's public id of the request that caused them.
func TestTopUpLogLinesCarryRequestID(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	var buf apptest.LogBuffer
	app := apptest.Start(t, db, apptest.Options{Server: server.Options{Log: logging.New(&buf, slog.LevelInfo, "json")}})
	c, payURL := app.StartTopUp(t, "logs@example.com", "10000")
	authority := apptest.Authority(payURL)
	publicID := topuptest.First(t, db).PublicID
	r := c.Get(routes.TopUpReturn(publicID) + "?Authority=" + authority + "&Status=NOK")
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		t.Fatal("no X-Request-Id")
	}
	found := false
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, `"msg":"callback"`) {
			found = true
			if !strings.Contains(line, `"request_id":"`+id+`"`) || !strings.Contains(line, `"payment":"`+publicID+`"`) {
				t.Errorf("payment log line without the request's id or the payment: %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no callback log line in:\n%s", buf.String())
	}
}
