package account_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// offsetClock is the real clock moved forward by the test.
type offsetClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// "Sign out everywhere" ends every session of the account, on every
// instance, and the page offers it.
func TestSignOutEverywhere(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		other := apptest.Start(t, db, apptest.Options{}) // a second instance
		// Both keep sessions in memory, as serve does: the sign-out must
		// reach the other's cache too.
		app.KeepSessionCache(t)
		other.KeepSessionCache(t)
		laptop := app.NewClient(t)
		laptop.SignUp("everywhere@example.com")
		phone := other.NewClient(t)
		phone.SignIn("everywhere@example.com", "correct horse battery")
		bystander := app.NewClient(t)
		bystander.SignUp("bystander@example.com")

		page := phone.Get(routes.Account)
		if page.Status != http.StatusOK || apptest.Parse(page.Body).TestID("account-sessions").Attr("data-count") != "2" {
			t.Fatalf("account page: %d", page.Status)
		}
		// Another site cannot do it for the user (no token).
		if r := phone.Post(routes.AccountSignOutEverywhere, url.Values{}); r.Status != http.StatusForbidden {
			t.Fatalf("without a CSRF token: %d", r.Status)
		}
		r := phone.Post(routes.AccountSignOutEverywhere, url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}})
		if r.Status != http.StatusSeeOther || r.Location != routes.SignIn {
			t.Fatalf("sign out everywhere: %d %q", r.Status, r.Location)
		}
		for name, c := range map[string]*apptest.Client{"laptop": laptop, "phone": phone} {
			if r := c.Get(routes.Wallet); r.Status != http.StatusSeeOther {
				t.Errorf("%s still signed in: %d", name, r.Status)
			}
		}
		if n := authtest.CountSessions(t, db); n != 1 {
			t.Fatalf("%d sessions left, want the bystander's only", n)
		}
		if r := bystander.Get(routes.Wallet); r.Status != http.StatusOK {
			t.Fatalf("another account was signed out: %d", r.Status)
		}
	})
}

// Once signed in, the CSRF token is bound to the session: a token made
// for another session is refused even with the CSRF cookie it was made
// for (an attacker who planted their own CSRF cookie in the victim's
// browser, say from a sibling subdomain, knows their own token only).
func TestCSRFTokenIsBoundToTheSession(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	u, _ := url.Parse(app.URL)
	attacker := app.NewClient(t)
	attacker.SignUp("attacker@example.com")
	attackerToken := apptest.Input(attacker.Get(routes.Wallet).Body, "_csrf")
	var attackerCookie string
	for _, ck := range attacker.HTTP.Jar.Cookies(u) {
		if ck.Name == "kp_csrf" {
			attackerCookie = ck.Value
		}
	}
	victim := app.NewClient(t)
	victim.SignUp("victim@example.com")
	victim.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: "kp_csrf", Value: attackerCookie, Path: "/"}})
	if r := victim.Post(routes.AccountSignOutEverywhere, url.Values{"_csrf": {attackerToken}}); r.Status != http.StatusForbidden {
		t.Fatalf("the attacker's token in the victim's session: %d, want 403", r.Status)
	}
	if r := victim.Get(routes.Wallet); r.Status != http.StatusOK {
		t.Fatalf("victim signed out: %d", r.Status)
	}
	// The victim's own forms still work with that cookie.
	if r := victim.Submit(routes.Account, routes.AccountSignOutEverywhere, nil); r.Status != http.StatusSeeOther {
		t.Fatalf("the victim's own form: %d", r.Status)
	}
}

// Under https the session and CSRF cookies carry the __Host- prefix (a
// browser then takes them only from this host: Secure, Path=/, no Domain).
func TestHostPrefixedCookiesUnderHTTPS(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"BASE_URL": "https://wallet.example", "ALLOW_SANDBOX": "1"}})
	c := app.NewClient(t)
	send := func(method, path string, form url.Values, cookies []*http.Cookie) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, app.URL+path, strings.NewReader(form.Encode()))
		req.Host = "wallet.example"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if method == http.MethodPost {
			req.Header.Set("Origin", "https://wallet.example")
		}
		for _, ck := range cookies {
			req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	form := send(http.MethodGet, routes.SignUp, nil, nil)
	csrfCookies := form.Cookies()
	if len(csrfCookies) != 1 || csrfCookies[0].Name != "__Host-kp_csrf" || !csrfCookies[0].Secure || csrfCookies[0].Path != "/" || csrfCookies[0].Domain != "" {
		t.Fatalf("CSRF cookie under https: %+v", csrfCookies)
	}
	page := c.Do(func() *http.Request {
		req, _ := http.NewRequest(http.MethodGet, app.URL+routes.SignUp, nil)
		req.Host = "wallet.example"
		req.AddCookie(&http.Cookie{Name: csrfCookies[0].Name, Value: csrfCookies[0].Value})
		return req
	}())
	signup := send(http.MethodPost, routes.SignUp, url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")},
		"email": {"https@example.com"}, "password": {"correct horse battery"}}, csrfCookies)
	if signup.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-up under https: %d", signup.StatusCode)
	}
	names := map[string]bool{}
	for _, ck := range signup.Cookies() {
		names[ck.Name] = true
		if strings.HasPrefix(ck.Name, "kp_") {
			t.Errorf("cookie %s without the __Host- prefix", ck.Name)
		}
		if strings.HasPrefix(ck.Name, "__Host-") && (!ck.Secure || ck.Path != "/" || ck.Domain != "" || !ck.HttpOnly) {
			t.Errorf("cookie %+v breaks the __Host- rules", ck)
		}
	}
	if !names["__Host-kp_session"] || !names["__Host-kp_csrf"] {
		t.Fatalf("cookies set at sign-up: %v", names)
	}
	// An unprefixed session cookie (what a sibling subdomain could set) is
	// not a session.
	var tok string
	for _, ck := range signup.Cookies() {
		if ck.Name == "__Host-kp_session" {
			tok = ck.Value
		}
	}
	if r := send(http.MethodGet, routes.Wallet, nil, []*http.Cookie{{Name: "kp_session", Value: tok}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("unprefixed session cookie accepted: %d", r.StatusCode)
	}
	if r := send(http.MethodGet, routes.Wallet, nil, []*http.Cookie{{Name: "__Host-kp_session", Value: tok}}); r.StatusCode != http.StatusOK {
		t.Fatalf("prefixed session cookie refused: %d", r.StatusCode)
	}
}

// Failed sign-ins are counted per account in the database (every
// instance sees them): after a few, each attempt must wait longer, the
// password is not even looked at meanwhile, other accounts behind the
// same address are not affected, and a success clears the count.
func TestSignInIsThrottledPerAccount(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := &offsetClock{}
		opts := apptest.Options{Server: server.Options{Now: clock.Now}}
		app := apptest.Start(t, db, opts)
		other := apptest.Start(t, db, opts) // a second instance, same database
		app.NewClient(t).SignUp("target@example.com")
		app.NewClient(t).SignUp("colleague@example.com")
		attempt := func(a *apptest.App, email, password string) apptest.Response {
			t.Helper()
			c := a.NewClient(t)
			return c.Submit(routes.SignIn, routes.SignIn, url.Values{"email": {email}, "password": {password}})
		}
		// Five failures, spread over two instances; the fifth starts a
		// 1 s wait.
		for i := range 5 {
			a := app
			if i%2 == 1 {
				a = other
			}
			if r := attempt(a, "target@example.com", "wrong guess "+strconv.Itoa(i)); r.Status != http.StatusUnauthorized {
				t.Fatalf("guess %d: %d, want 401", i+1, r.Status)
			}
		}
		r := attempt(other, "target@example.com", "correct horse battery")
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" || apptest.Parse(r.Body).TestID("form-error") == nil {
			t.Fatalf("attempt while throttled (right password): %d Retry-After %q", r.Status, r.Header.Get("Retry-After"))
		}
		// A colleague behind the same address signs in as usual.
		if r := attempt(app, "colleague@example.com", "correct horse battery"); r.Status != http.StatusSeeOther {
			t.Fatalf("another account: %d", r.Status)
		}
		// The wait doubles with each further failure.
		clock.Advance(2 * time.Second)
		if r := attempt(app, "target@example.com", "wrong again"); r.Status != http.StatusUnauthorized {
			t.Fatalf("guess after the wait: %d", r.Status)
		}
		if r := attempt(app, "target@example.com", "wrong again"); r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "2" {
			t.Fatalf("second wait: %d Retry-After %q, want 429 and 2", r.Status, r.Header.Get("Retry-After"))
		}
		// An unknown address is throttled the same way (the throttle tells
		// nothing about which accounts exist).
		for range 5 {
			attempt(app, "nobody@example.com", "wrong guess")
		}
		if r := attempt(app, "nobody@example.com", "wrong guess"); r.Status != http.StatusTooManyRequests {
			t.Fatalf("unknown address: %d, want 429", r.Status)
		}
		// After the wait, the right password works and clears the count.
		clock.Advance(3 * time.Second)
		if r := attempt(other, "target@example.com", "correct horse battery"); r.Status != http.StatusSeeOther {
			t.Fatalf("right password after the wait: %d", r.Status)
		}
		if n := authtest.Throttles(t, db, "signin:target@example.com"); n != 0 {
			t.Fatalf("count not cleared after a success")
		}
	})
}

// The return page (the bank's callback URL) shows the amount, the masked
// card and the bank reference to the payer only; anyone else with the link
// sees a neutral status.
func TestReturnPageShowsDetailsOnlyToThePayer(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		payer, payURL := app.StartTopUp(t, "payer@example.com", "25000")
		back, err := app.Server.Bank.Pay(apptest.Authority(payURL))
		if err != nil {
			t.Fatal(err)
		}
		own := payer.Get(back)
		if apptest.TopUpStatus(own.Body) != "credited" || apptest.Parse(own.Body).TestID("card-pan") == nil || apptest.Parse(own.Body).TestID("ref-id") == nil {
			t.Fatalf("the payer does not see the details: %d %q", own.Status, apptest.TopUpStatus(own.Body))
		}
		stranger := app.NewClient(t)
		stranger.SignUp("stranger@example.com")
		for name, c := range map[string]*apptest.Client{"another user": stranger, "anonymous": app.NewClient(t)} {
			r := c.Get(back)
			if r.Status != http.StatusOK || apptest.TopUpStatus(r.Body) != "credited" || apptest.Parse(r.Body).TestID("result-neutral") == nil {
				t.Errorf("%s: %d %q, want the neutral status", name, r.Status, apptest.TopUpStatus(r.Body))
			}
			for _, hook := range []string{`data-testid="card-pan"`, `data-testid="ref-id"`, `data-testid="amount-rials"`, "250,000", "۲۵٬۰۰۰"} {
				if strings.Contains(r.Body, hook) {
					t.Errorf("%s sees %s", name, hook)
				}
			}
		}
		if payer.Balance() != 250_000 {
			t.Fatalf("balance %d", payer.Balance())
		}
	})
}
