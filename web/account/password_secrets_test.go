package account_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A reset link sets the account's password for 30 minutes: its token is
// a secret, and no log line holds it, whatever happens to the request
// that carries it (the page opened, a refused form, a weak password, the
// reset itself, the spent link opened again, in capitals).
func TestResetLinkIsNeverLogged(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var logs apptest.LogBuffer
		smtpSrv := mailtest.Start(t, mailtest.Options{})
		app := apptest.Start(t, db, apptest.Options{
			Env:    map[string]string{"SMTP_URL": smtpSrv.URL},
			Server: server.Options{Log: logging.New(&logs, slog.LevelDebug, "json")},
		})
		app.NewClient(t).SignUp("leaky@example.com")
		c := app.NewClient(t)
		if r := c.Submit(routes.PasswordForgot, routes.PasswordForgot, url.Values{"email": {"leaky@example.com"}}); r.Status != http.StatusOK {
			t.Fatalf("forgot: %d", r.Status)
		}
		app.DeliverMail(t)
		m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == "leaky@example.com" })
		link := apptest.ResetLink(m.Text)
		if link == nil {
			t.Fatalf("no reset link:\n%s", m.Text)
		}
		token := link[1]
		reset := routes.PasswordReset(token)
		page := c.Get(reset)
		if page.Status != http.StatusOK {
			t.Fatalf("reset page: %d", page.Status)
		}
		csrf := apptest.Input(page.Body, "_csrf")
		if r := c.Post(reset, url.Values{"password": {"a fresh long password"}}); r.Status != http.StatusForbidden {
			t.Fatalf("without its CSRF token: %d", r.Status)
		}
		if r := c.Post(reset, url.Values{"_csrf": {csrf}, "password": {"short"}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("weak password: %d", r.Status)
		}
		if r := c.Post(reset, url.Values{"_csrf": {csrf}, "password": {"a fresh long password"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("reset: %d", r.Status)
		}
		if r := c.Get(reset); r.Status != http.StatusGone {
			t.Fatalf("spent link: %d", r.Status)
		}
		// The link with its path's letters in another case (a mail
		// gateway's rewrite) is routed the same, and logged the same.
		if r := c.Get(strings.ToUpper(reset[:len(reset)-len(token)]) + token); r.Status != http.StatusGone {
			t.Fatalf("spent link in capitals: %d", r.Status)
		}
		lines := strings.Split(logs.String(), "\n")
		if !slices.ContainsFunc(lines, func(l string) bool {
			return strings.Contains(l, `"msg":"http"`) && strings.Contains(l, `"path":"`+routes.PasswordResetPattern+`"`)
		}) {
			t.Fatalf("no access log line for the reset link's requests:\n%s", logs.String())
		}
		for _, l := range lines {
			if strings.Contains(l, token) {
				t.Errorf("a log line holds the reset link's token: %s", l)
			}
		}
	})
}

// "Forgot password" takes as long for an address without an account as
// for one with: the same slow step (a password hash at the real cost) is
// on both paths, so the time of the answer does not tell who has an
// account.
func TestForgotTakesAsLongForAnyAddress(t *testing.T) {
	db := storetest.New(t, store.SQLite)
	smtpSrv := mailtest.Start(t, mailtest.Options{})
	// The production cost (bcrypt.DefaultCost), not the tests' lowest one.
	app := apptest.Start(t, db, apptest.Options{
		Env:    map[string]string{"SMTP_URL": smtpSrv.URL},
		Server: server.Options{BcryptCost: 10},
	})
	app.NewClient(t).SignUp("known@example.com")
	c := app.NewClient(t)
	csrf := apptest.Input(c.Get(routes.PasswordForgot).Body, "_csrf")
	took := func(email string) time.Duration {
		t.Helper()
		start := time.Now()
		r := c.Post(routes.PasswordForgot, url.Values{"_csrf": {csrf}, "email": {email}})
		d := time.Since(start)
		if r.Status != http.StatusOK {
			t.Fatalf("forgot %s: %d", email, r.Status)
		}
		return d
	}
	var known, unknown []time.Duration
	// Alternated, so that a busy moment of the machine falls on both.
	for range 4 {
		known = append(known, took("known@example.com"))
		unknown = append(unknown, took("nobody@example.com"))
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	k, u := median(known), median(unknown)
	t.Logf("median answer: known address %v, unknown address %v", k, u)
	if k*2 < u || u*2 < k {
		t.Fatalf("the answer's time tells the addresses apart: known %v, unknown %v", known, unknown)
	}
}

// A password changed at /account/password spends every reset link asked
// for before: a link someone else holds (a mailbox read over a shoulder,
// the request that made the owner change it) cannot set the password
// back.
func TestPasswordChangeSpendsEarlierResetLinks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, smtpSrv, _ := startWithMail(t, db)
		owner := app.NewClient(t)
		owner.SignUp("careful@example.com")
		if r := app.NewClient(t).Submit(routes.PasswordForgot, routes.PasswordForgot, url.Values{"email": {"careful@example.com"}}); r.Status != http.StatusOK {
			t.Fatalf("forgot: %d", r.Status)
		}
		app.DeliverMail(t)
		m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == "careful@example.com" })
		link := apptest.ResetLink(m.Text)
		if link == nil {
			t.Fatalf("no reset link:\n%s", m.Text)
		}
		r := owner.Submit(routes.AccountPassword, routes.AccountPassword, url.Values{"current_password": {"correct horse battery"}, "new_password": {"the owner's new password"}})
		if r.Status != http.StatusSeeOther {
			t.Fatalf("change: %d", r.Status)
		}
		holder := app.NewClient(t)
		if r := holder.Get(routes.PasswordReset(link[1])); r.Status != http.StatusGone || apptest.Parse(r.Body).TestID("reset-invalid") == nil {
			t.Fatalf("a reset link from before the change: %d", r.Status)
		}
		csrf := apptest.Input(holder.Get(routes.PasswordForgot).Body, "_csrf")
		if r := holder.Post(routes.PasswordReset(link[1]), url.Values{"_csrf": {csrf}, "password": {"the holder's password!"}}); r.Status != http.StatusGone {
			t.Fatalf("a reset link from before the change, posted: %d", r.Status)
		}
		holder.SignIn("careful@example.com", "the owner's new password")
	})
}

// A password change keeps this browser signed in on a new session: a copy
// of its old session cookie (taken with the old password, the reason for
// the change) is signed out with every other browser.
func TestPasswordChangeGivesThisBrowserANewSession(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		laptop := app.NewClient(t)
		laptop.SignUp("rotate@example.com")
		base, _ := url.Parse(app.URL)
		stolen := app.NewClient(t)
		stolen.HTTP.Jar.SetCookies(base, laptop.HTTP.Jar.Cookies(base))
		if r := stolen.Get(routes.Wallet); r.Status != http.StatusOK {
			t.Fatalf("the copied cookie before the change: %d", r.Status)
		}
		r := laptop.Submit(routes.AccountPassword, routes.AccountPassword, url.Values{"current_password": {"correct horse battery"}, "new_password": {"a brand new password"}})
		if r.Status != http.StatusSeeOther || r.Location != routes.Account+"?done=password" {
			t.Fatalf("change: %d %q", r.Status, r.Location)
		}
		if acc := laptop.Get(r.Location); acc.Status != http.StatusOK || apptest.Parse(acc.Body).TestID("account-sessions").Attr("data-count") != "1" {
			t.Fatalf("this browser after the change: %d", acc.Status)
		}
		if r := stolen.Get(routes.Wallet); r.Status != http.StatusSeeOther {
			t.Fatalf("the copied cookie after the change: %d", r.Status)
		}
		if n := authtest.CountSessions(t, db); n != 1 {
			t.Fatalf("%d sessions, want this browser's new one", n)
		}
	})
}

// "Forgot password" is throttled per client too (issue 18, item 2): one
// client asking for links to many addresses (none asked twice, so no
// address's own throttle) gets 20 answers, then waits that the page and
// Retry-After state.
func TestForgotIsThrottledPerClient(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app, _, _ := startWithMail(t, db)
	c := app.NewClient(t)
	csrf := apptest.Input(c.GetIn("en", routes.PasswordForgot).Body, "_csrf")
	ask := func(i int) apptest.Response {
		return c.Post(routes.PasswordForgot, url.Values{"_csrf": {csrf}, "email": {"someone" + strconv.Itoa(i) + "@example.com"}})
	}
	for i := range 20 {
		if r := ask(i); r.Status != http.StatusOK {
			t.Fatalf("request %d from one client: %d", i+1, r.Status)
		}
	}
	r := ask(20)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || apptest.Parse(r.Body).TestID("form-error") == nil {
		t.Fatalf("the 21st request from one client: %d %q", r.Status, r.Header.Get("Retry-After"))
	}
	if n := authtest.Throttles(t, db, "reset-client:"); n != 1 {
		t.Fatalf("%d client throttles, want this client's", n)
	}
}

// A password is read from the form's body only: one put in the URL (which
// proxies' access logs keep) signs no one in, while the same password in
// the body does.
func TestPasswordInTheQueryIsNotRead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		app.NewClient(t).SignUp("query@example.com")
		c := app.NewClient(t)
		form := apptest.Parse(c.Get(routes.SignIn).Body).Form(routes.SignIn).Hidden()
		form.Set("email", "query@example.com")
		if r := c.Post(routes.SignIn+"?password="+url.QueryEscape("correct horse battery"), form); r.Status == http.StatusSeeOther {
			t.Fatalf("signed in with the password in the query: %d → %s", r.Status, r.Location)
		}
		form.Set("password", "correct horse battery")
		if r := c.Post(routes.SignIn, form); r.Status != http.StatusSeeOther {
			t.Fatalf("the same password in the body: %d", r.Status)
		}
	})
}
