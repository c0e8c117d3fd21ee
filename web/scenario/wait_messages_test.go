package scenario_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Each page refused by a client's limit says, in Persian too, how many
// seconds to wait, the same number as Retry-After, and keeps its own
// form: sign-up, sign-in, and a reset link's form (its submits count with
// the sign-ins), which stays the reset form rather than turning into the
// sign-in page (issue 18, item 9).
func TestLimitedPagesSayHowLongToWait(t *testing.T) {
	t.Parallel()
	smtpSrv := mailtest.Start(t, mailtest.Options{})
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{
		Env:    map[string]string{"SMTP_URL": smtpSrv.URL, "RATE_LIMIT_SIGNIN": "2", "RATE_LIMIT_SIGNUP": "2"},
		Server: server.Options{RateLimits: true},
	})
	c := app.NewClient(t)
	c.GetIn("fa", routes.SignUp)
	c.SignUp("waiting@example.com") // the first sign-up
	saysWait := func(r apptest.Response, key string) {
		t.Helper()
		secs, err := strconv.ParseInt(r.Header.Get("Retry-After"), 10, 64)
		if r.Status != http.StatusTooManyRequests || err != nil || secs < 1 {
			t.Fatalf("%s: %d, Retry-After %q", key, r.Status, r.Header.Get("Retry-After"))
		}
		want := i18n.T(i18n.FA, key, "seconds", secs)
		if e := apptest.Parse(r.Body).TestID("form-error"); e == nil || strings.TrimSpace(e.Text()) != want {
			t.Fatalf("%s: the page does not say %q:\n%s", key, want, r.Body)
		}
	}

	// Sign-up: the second is allowed, the third waits.
	c = app.NewClient(t)
	csrf := apptest.Input(c.GetIn("fa", routes.SignUp).Body, "_csrf")
	if r := c.Post(routes.SignUp, url.Values{"_csrf": {csrf}, "email": {"second@example.com"}, "password": {"short"}}); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("second sign-up: %d", r.Status)
	}
	r := c.Post(routes.SignUp, url.Values{"_csrf": {csrf}, "email": {"third@example.com"}, "password": {"correct horse battery"}})
	saysWait(r, "signup.too_many")
	if apptest.Parse(r.Body).Form(routes.SignUp) == nil {
		t.Fatal("the limited sign-up page has no sign-up form")
	}

	// A reset link, then its form and sign-ins share the client's limit.
	anon := app.NewClient(t)
	anon.GetIn("fa", routes.PasswordForgot)
	if r := anon.Submit(routes.PasswordForgot, routes.PasswordForgot, url.Values{"email": {"waiting@example.com"}}); r.Status != http.StatusOK {
		t.Fatalf("forgot: %d", r.Status)
	}
	app.DeliverMail(t)
	m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == "waiting@example.com" })
	link := apptest.ResetLink(m.Text)
	if link == nil {
		t.Fatalf("no reset link:\n%s", m.Text)
	}
	reset := routes.PasswordReset(link[1])
	csrf = apptest.Input(anon.Get(reset).Body, "_csrf")
	if r := anon.Post(reset, url.Values{"_csrf": {csrf}, "password": {"short"}}); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("weak password: %d", r.Status)
	}
	if r := anon.Post(routes.SignIn, url.Values{"_csrf": {csrf}, "email": {"waiting@example.com"}, "password": {"wrong password"}}); r.Status != http.StatusUnauthorized {
		t.Fatalf("sign-in: %d", r.Status)
	}
	r = anon.Post(reset, url.Values{"_csrf": {csrf}, "password": {"a fresh long password"}})
	saysWait(r, "forgot.throttled")
	if apptest.Parse(r.Body).TestID("reset-form") == nil {
		t.Fatal("the limited reset link's page is not its form")
	}
	r = anon.Post(routes.SignIn, url.Values{"_csrf": {csrf}, "email": {"waiting@example.com"}, "password": {"correct horse battery"}})
	saysWait(r, "signin.too_many")
	if apptest.Parse(r.Body).TestID("auth-form") == nil {
		t.Fatal("the limited sign-in page has no sign-in form")
	}
	// The refused reset changed nothing: the link is still live.
	live := 0
	for _, r := range authtest.Resets(t, db) {
		if r.UsedAt == nil {
			live++
		}
	}
	if n := live; n != 1 {
		t.Fatalf("%d live reset links, want the one refused", n)
	}
}
