package account_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// stolenCopy is another browser with a copy of c's cookies (a thief's).
func stolenCopy(t *testing.T, app *apptest.App, c *apptest.Client) *apptest.Client {
	t.Helper()
	base, _ := url.Parse(app.URL)
	stolen := app.NewClient(t)
	stolen.HTTP.Jar.SetCookies(base, c.HTTP.Jar.Cookies(base))
	if r := stolen.Get(routes.Wallet); r.Status != http.StatusOK {
		t.Fatalf("the copied cookie: %d", r.Status)
	}
	return stolen
}

// A password change ends this browser's old session in its own
// transaction, with the other sessions: no later step that could fail
// (ending it separately, say with the database gone for a moment) can
// leave a copy of the old cookie (the thief's) alive while the page says
// every other browser was signed out.
func TestPasswordChangeEndsTheOldSessionWithThePassword(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		laptop := app.NewClient(t)
		laptop.SignUp("rotate-fault@example.com")
		stolen := stolenCopy(t, app, laptop)

		r := laptop.Submit(routes.AccountPassword, routes.AccountPassword, url.Values{"current_password": {"correct horse battery"}, "new_password": {"a brand new password"}})
		if r.Status != http.StatusSeeOther || r.Location != routes.Account+"?done=password" {
			t.Fatalf("change: %d %q", r.Status, r.Location)
		}
		if r := stolen.Get(routes.Wallet); r.Status != http.StatusSeeOther {
			t.Fatalf("the copied cookie after the change: %d", r.Status)
		}
		if acc := laptop.Get(r.Location); acc.Status != http.StatusOK || apptest.Parse(acc.Body).TestID("account-sessions").Attr("data-count") != "1" {
			t.Fatalf("this browser after the change: %d", acc.Status)
		}
		if n := authtest.CountSessions(t, db); n != 1 {
			t.Fatalf("%d sessions, want this browser's new one", n)
		}
	})
}

// A reset link opened in a browser signed in as someone else (a shared
// computer) ends that browser's session too, not only its cookie: a copy
// of the cookie taken before is dead, and the other user's own sessions
// elsewhere are not touched. The link's user's sessions end as always.
func TestPasswordResetInAnotherUsersBrowserEndsItsSession(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		smtpSrv := mailtest.Start(t, mailtest.Options{})
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"SMTP_URL": smtpSrv.URL}})
		owner := app.NewClient(t)
		owner.SignUp("reset-owner@example.com")
		shared := app.NewClient(t)
		shared.SignUp("shared-desk@example.com")
		stolen := stolenCopy(t, app, shared)
		phone := app.NewClient(t)
		phone.SignIn("shared-desk@example.com", "correct horse battery")
		if r := phone.Get(routes.Wallet); r.Status != http.StatusOK {
			t.Fatalf("the other user's phone: %d", r.Status)
		}

		if r := shared.Submit(routes.PasswordForgot, routes.PasswordForgot, url.Values{"email": {"reset-owner@example.com"}}); r.Status != http.StatusOK {
			t.Fatalf("forgot: %d", r.Status)
		}
		app.DeliverMail(t)
		m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == "reset-owner@example.com" })
		reset := routes.PasswordReset(apptest.ResetLink(m.Text)[1])
		if r := shared.Submit(reset, reset, url.Values{"password": {"a fresh long password"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("reset: %d", r.Status)
		}
		for name, c := range map[string]*apptest.Client{"this browser": shared, "a copy of its cookie": stolen, "the link's user": owner} {
			if r := c.Get(routes.Wallet); r.Status != http.StatusSeeOther {
				t.Errorf("%s after the reset: %d, want signed out", name, r.Status)
			}
		}
		if r := phone.Get(routes.Wallet); r.Status != http.StatusOK {
			t.Errorf("the other user's phone after the reset: %d, want still signed in", r.Status)
		}
		if n := authtest.CountSessions(t, db); n != 1 {
			t.Errorf("%d sessions, want the phone's alone", n)
		}
	})
}
