package apptest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/routes"
)

// The steps many tests take on their way to what they check, written once
// here: the web app's tests live by feature (web/account, web/wallet,
// web/pay, web/admin, web/scenario) and share them.

// StartTopUp signs a new user up and submits a top-up at the built-in
// bank, returning the client and the bank URL the app sent the browser to.
func (a *App) StartTopUp(t testing.TB, email, tomans string) (*Client, string) {
	t.Helper()
	c := a.NewClient(t)
	c.SignUp(email)
	csrf, token := c.TopUpForm()
	r := c.PostTopUp(csrf, token, tomans)
	if r.Status != http.StatusSeeOther || !strings.Contains(r.Location, routes.Sandbank+"/pg/StartPay/S") {
		t.Fatalf("top-up: status %d location %q body %.300s", r.Status, r.Location, r.Body)
	}
	return c, r.Location
}

// PayAtBank presses a button on the bank's page like a person would and
// returns where the bank sends the browser.
func (c *Client) PayAtBank(payURL, button string) string {
	c.t.Helper()
	page := c.Get(payURL)
	if page.Status != http.StatusOK || Parse(page.Body).TestID("bank-pay") == nil {
		c.t.Fatalf("bank page: %d %.300s", page.Status, page.Body)
	}
	r := c.Post(payURL+"/"+button, url.Values{})
	if r.Status != http.StatusSeeOther {
		c.t.Fatalf("bank %s: status %d", button, r.Status)
	}
	return r.Location
}

// NewAdmin creates an admin and returns a client signed in as them that
// has passed the second factor.
func (a *App) NewAdmin(t testing.TB, email string) *Client {
	t.Helper()
	if _, err := a.Server.Auth.SignUp(context.Background(), email, "correct horse battery", "admin", "en"); err != nil {
		t.Fatal(err)
	}
	c := a.NewClient(t)
	c.SignInAdmin(email, "correct horse battery")
	return c
}

// SessionCookie is the client's session token ("" when it has none).
func (c *Client) SessionCookie() string {
	u, _ := url.Parse(c.app.URL)
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		if ck.Name == "kp_session" {
			return ck.Value
		}
	}
	return ""
}

// Serve serves h on a loopback socket until the test ends and returns its
// URL (a partner's endpoint, a bank of the test's own).
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
