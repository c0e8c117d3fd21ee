// Package apptest starts a whole Kifpool on a real socket for integration
// tests: the web app, its database, and the sandbox bank (in-process under
// /sandbank, or any gateway the test gives), plus a cookie-keeping client
// that behaves like a browser without JavaScript.
package apptest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/notify"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testwait"
)

// App is a running Kifpool.
type App struct {
	URL    string
	DB     *store.DB
	Server *server.Server
	Config config.Config
}

// Options adjust the app under test.
type Options struct {
	// Env overrides configuration variables (BASE_URL and LISTEN_ADDR are
	// set by Start).
	Env map[string]string
	// Server options (gateway, clock, payment budgets...).
	Server server.Options
	// Background starts the payment worker and periodic reconciliation
	// as serve does (configured through Env: WORKER_INTERVAL, ...).
	Background bool
	// Unchecked, when set, says why the integrity check Start runs when
	// the test ends is left out: a test whose rows are seeded directly
	// (not through the app, so the rules' chains of events and ledger
	// transactions are not there) or that closes the database itself.
	Unchecked string
}

// Start runs the app on 127.0.0.1 with a random port until the test ends.
// When the test ends, once the app has stopped, the ledger's and the
// money's integrity rules (kifpool check's) must hold on db, whatever the
// test did through the app (unless Options.Unchecked says why not, or the
// test failed already).
func Start(t testing.TB, db *store.DB, o Options) *App {
	t.Helper()
	if o.Unchecked == "" {
		// Registered first, so that it runs last of Start's: after this
		// server and its background work have stopped writing. (A test
		// that starts two instances on one database runs it for each;
		// each rule reads in a snapshot of its own, so the first check
		// sees the other instance's committed work only.)
		t.Cleanup(func() {
			if !t.Failed() {
				CheckInvariants(t, db)
			}
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	env := map[string]string{
		"BASE_URL":       base,
		"LISTEN_ADDR":    ln.Addr().String(),
		"SESSION_SECRET": "test-secret-0123456789-abcdefghijklmnopqrstuvwxyz",
		// The tests' app has a production-like secret and the built-in
		// sandbox bank on loopback: a deliberate demo (config refuses the
		// sandbox with SESSION_SECRET otherwise).
		"ALLOW_SANDBOX": "1",
		// Mail without SMTP_URL is written here, not into the package.
		"DATA_DIR": t.TempDir(),
		// Tests leave many top-ups of one user at the bank's page (lists,
		// paging, races of distinct forms); the cap's own tests turn it
		// on, as the rate limits are (server.Options.RateLimits).
		"TOPUP_WAITING_MAX_COUNT": "0",
	}
	for k, v := range o.Env {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	so := o.Server
	if so.BcryptCost == 0 {
		so.BcryptCost = bcrypt.MinCost
	}
	srv, err := server.New(cfg, db, so)
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	go func() { _ = srv.App.Listener(ln) }()
	t.Cleanup(func() { _ = srv.App.ShutdownWithTimeout(5 * time.Second) })
	if o.Background {
		ctx, cancel := context.WithCancel(context.Background())
		wait := srv.RunBackground(ctx, so.Log)
		t.Cleanup(func() { cancel(); wait() })
	}
	return &App{URL: base, DB: db, Server: srv, Config: cfg}
}

// KeepSessionCache runs the instance's session cache as serve's
// background does (revocations heard, looked-up sessions kept for a
// second) until the test ends, and waits until it serves.
func (a *App) KeepSessionCache(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Server.Auth.KeepSessionCache(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testwait.Eventually(t, 10*time.Second, "the session cache to hear revocations", a.Server.Auth.SessionCacheServing)
}

// KeepTokenCache runs the instance's API token cache as serve's
// background does (revocations heard, looked-up tokens kept for a second)
// until the test ends, and waits until it serves.
func (a *App) KeepTokenCache(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Server.Tokens.KeepCache(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testwait.Eventually(t, 10*time.Second, "the token cache to hear revocations", a.Server.Tokens.CacheServing)
}

// KeepSwitches keeps the operator's gateway switches in memory as serve's
// background does (their changes heard, a read kept for a second) until
// the test ends, and waits until it serves.
func (a *App) KeepSwitches(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Server.KeepSwitches(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testwait.Eventually(t, 10*time.Second, "the gateway switches' changes to be heard", a.Server.SwitchesServing)
}

// Client is a browser without JavaScript: it keeps cookies and does not
// follow redirects unless asked.
type Client struct {
	t    testing.TB
	app  *App
	HTTP *http.Client
	// LastRecoveryCodes are the recovery codes shown when this client
	// enrolled an admin's authenticator.
	LastRecoveryCodes []string
}

// Fund puts rials into the wallet of the user with that e-mail address
// (made if it is not yet) by a ledger adjustment from a gateway's account,
// and returns the wallet's id. Once per address (the adjustment's
// reference is the address).
func (a *App) Fund(t testing.TB, email string, rials int64) int64 {
	t.Helper()
	w, err := a.Server.Wallets.ForUser(context.Background(), authtest.UserID(t, a.DB, email))
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Fund(t, a.DB, w.AccountID, rials, email)
	return w.ID
}

// NewClient returns a fresh client (its own cookies).
func (a *App) NewClient(t testing.TB) *Client {
	jar, _ := cookiejar.New(nil)
	// Its own connections, closed when the test ends, so that idle
	// keep-alive connections never hold up the app's shutdown.
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	return &Client{t: t, app: a, HTTP: &http.Client{
		Transport: tr,
		Jar:       jar,
		Timeout:   60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Response is a read response.
type Response struct {
	Status   int
	Body     string
	Location string
	Header   http.Header
}

func (c *Client) abs(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return c.app.URL + path
}

// Do sends a request and reads the answer.
func (c *Client) Do(req *http.Request) Response {
	c.t.Helper()
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Body: string(b), Location: resp.Header.Get("Location"), Header: resp.Header}
}

// Get fetches a path (or absolute URL).
func (c *Client) Get(path string) Response {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, c.abs(path), nil)
	return c.Do(req)
}

// Post sends a form as is (no CSRF token added).
func (c *Client) Post(path string, form url.Values) Response {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, c.abs(path), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.Do(req)
}

// recoveryCodes lists the recovery codes a page shows.
func recoveryCodes(body string) []string {
	var out []string
	for _, e := range Parse(body).TestIDs("recovery-code") {
		out = append(out, e.Text())
	}
	return out
}

// Submit loads page, finds its form whose action is action, and posts
// the form's hidden fields (the CSRF token among them) with form's values
// over them, as a browser does. A page without that form fails the test.
func (c *Client) Submit(page, action string, form url.Values) Response {
	c.t.Helper()
	r := c.Get(page)
	if r.Status != http.StatusOK {
		c.t.Fatalf("GET %s: status %d", page, r.Status)
	}
	doc := Parse(r.Body)
	f := doc.Form(action)
	if f == nil {
		c.t.Fatalf("GET %s: no form with action %q (the page's forms: %q)", page, action, doc.Actions())
	}
	values := f.Hidden()
	for k, v := range form {
		values[k] = v
	}
	return c.Post(action, values)
}

// Forge posts form to action with the CSRF token of page, a page that
// has no such form: what an attacker's browser sends with its own valid
// session to an action that is not theirs.
func (c *Client) Forge(page, action string, form url.Values) Response {
	c.t.Helper()
	r := c.Get(page)
	if r.Status != http.StatusOK {
		c.t.Fatalf("GET %s: status %d", page, r.Status)
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", Input(r.Body, "_csrf"))
	return c.Post(action, form)
}

// SignUp creates an account through the form, signs this client in and
// confirms the address, as its owner would with the mailed link
// (SignUpUnconfirmed leaves it unconfirmed); the confirmation mail, if
// still queued, is dropped, so that a test's mail is only its own (an app
// whose outbox runs may have sent it already: a test that waits for a
// mail to the address names which one). Against
// an app in another process (no DB handle) the address stays unconfirmed.
func (c *Client) SignUp(email string) {
	c.t.Helper()
	c.SignUpUnconfirmed(email)
	if c.app.DB == nil {
		return
	}
	authtest.ConfirmEmail(c.t, c.app.DB, email)
	mailtest.DropQueued(c.t, c.app.DB, notify.KindVerify, email)
}

// SignUpUnconfirmed creates an account through the form and signs this
// client in; the address is not confirmed.
func (c *Client) SignUpUnconfirmed(email string) {
	c.t.Helper()
	r := c.Submit(routes.SignUp, routes.SignUp, url.Values{"email": {email}, "password": {"correct horse battery"}})
	if r.Status != http.StatusSeeOther || r.Location != routes.Wallet {
		c.t.Fatalf("sign up %s: status %d location %q", email, r.Status, r.Location)
	}
}

// SignIn signs this client in through the form.
func (c *Client) SignIn(email, password string) {
	c.t.Helper()
	r := c.Submit(routes.SignIn, routes.SignIn, url.Values{"email": {email}, "password": {password}})
	if r.Status != http.StatusSeeOther {
		c.t.Fatalf("sign in %s: status %d", email, r.Status)
	}
}

// SignInAdmin signs an admin in and passes whatever the admin console asks
// of an admin besides (see PassAdminChecks), so that the client can use
// every /admin page and action.
func (c *Client) SignInAdmin(email, password string) {
	c.t.Helper()
	c.SignIn(email, password)
	c.PassAdminChecks(email)
}

// TopUpForm opens the top-up form and returns its CSRF and form tokens.
func (c *Client) TopUpForm() (csrf, token string) {
	c.t.Helper()
	r := c.Get(routes.TopUp)
	if r.Status != http.StatusOK {
		c.t.Fatalf("GET /wallet/topup: %d", r.Status)
	}
	f := Parse(r.Body).Form(routes.TopUp)
	if f == nil {
		c.t.Fatalf("GET /wallet/topup: no form posting to /wallet/topup")
	}
	h := f.Hidden()
	return h.Get("_csrf"), h.Get("token")
}

// PostTopUp submits the top-up form.
func (c *Client) PostTopUp(csrf, token, amount string) Response {
	c.t.Helper()
	return c.Post(routes.TopUp, url.Values{"_csrf": {csrf}, "token": {token}, "amount": {amount}})
}

// Balance reads the wallet page's exact balance in rials (the data-rials
// of its balance element).
func (c *Client) Balance() int64 {
	c.t.Helper()
	r := c.Get(routes.Wallet)
	e := Parse(r.Body).TestID("balance")
	if e == nil || !e.Has("data-rials") {
		c.t.Fatalf("no balance on wallet page (status %d)", r.Status)
	}
	n, err := strconv.ParseInt(e.Attr("data-rials"), 10, 64)
	if err != nil {
		c.t.Fatalf("balance %q on wallet page: %v", e.Attr("data-rials"), err)
	}
	return n
}

// Authority extracts the authority from a StartPay URL.
func Authority(payURL string) string {
	i := strings.LastIndex(payURL, "/")
	return payURL[i+1:]
}
