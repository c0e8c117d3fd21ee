package browsertest

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// resetLinkRE finds a password reset link (routes.PasswordReset) in a mail.
var resetLinkRE = regexp.MustCompile(`http://[^\s"<]+` + regexp.QuoteMeta(routes.PasswordReset("")) + `[A-Za-z0-9_-]+`)

// A person who forgot their password, end to end in a real browser and
// over a real SMTP exchange: "forgot" from the sign-in page, the mail
// received by the SMTP server, its link opened, a new password chosen,
// signed in with it; the session another browser had and an API token are
// refused afterwards, and the spent link says so. Every page passes axe.
func TestPasswordResetEndToEnd(t *testing.T) {
	axeSource(t)
	browserContext(t)
	for _, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			smtpSrv := mailtest.Start(t, mailtest.Options{TLS: mailtest.StartTLS, User: "kifpool", Pass: "mail pass"})
			db := storetest.New(t, store.SQLite)
			app := apptest.Start(t, db, apptest.Options{
				Env:        map[string]string{"SMTP_URL": smtpSrv.URL, "WORKER_INTERVAL": "0", "MAIL_INTERVAL": "1h"},
				Server:     server.Options{MailRootCAs: smtpSrv.RootCAs},
				Background: true,
			})
			email := "reset-" + lang + "@example.com"
			// Another browser signed in before the reset, and an API token.
			old := app.NewClient(t)
			old.GetIn(lang, routes.SignUp)
			old.SignUp(email)
			uid := authtest.UserID(t, db, email)
			secret, _, err := app.Server.Tokens.Create(context.Background(), apitoken.CreateInput{UserID: uid, Name: "app", Scope: "read"})
			if err != nil {
				t.Fatal(err)
			}

			b := NewTab(t, app.URL)
			b.Go(routes.SignIn + "?lang=" + lang)
			b.Wait("forgot-link")
			b.Click("forgot-link")
			b.Wait("forgot-form")
			b.Audit("forgot password")
			b.Type("#email", email)
			b.Click("forgot-submit")
			b.Wait("forgot-sent")
			b.Audit("forgot password (sent)")

			// The outbox is kicked by the request: no tick to wait for.
			// (The sign-up's confirmation mail may have gone to the
			// same address first.)
			m := smtpSrv.Wait(t, 20*time.Second, func(m mailtest.Received) bool { return m.To == email && resetLinkRE.MatchString(m.Text) })
			link := resetLinkRE.FindString(m.Text)
			if link == "" || !m.TLS {
				t.Fatalf("reset mail (tls %v) without a link:\n%s", m.TLS, m.Text)
			}
			u, _ := url.Parse(link)
			b.Go(u.Path)
			b.Wait("reset-form")
			b.Audit("choose a new password")
			b.Type("#password", "short")
			b.Click("reset-submit")
			b.Wait("form-error")
			b.Audit("choose a new password (error)")
			b.Type("#password", "a fresh long password")
			b.Click("reset-submit")
			b.Wait("signin-notice")
			b.Audit("sign-in after the reset")
			b.SignIn(email, "a fresh long password")
			b.Wait("balance")

			if r := old.Get(routes.Wallet); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.SignIn) {
				t.Fatalf("the other browser's session survived the reset: %d %q", r.Status, r.Location)
			}
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, app.URL+routes.APIWallet, nil)
			req.Header.Set("Authorization", "Bearer "+secret)
			if st := app.NewClient(t).Do(req).Status; st != http.StatusUnauthorized {
				t.Fatalf("the API token survived the reset: %d", st)
			}
			b.Go(u.Path)
			b.Wait("reset-invalid")
			b.Audit("spent reset link")
			b.CheckNoProblems()
		})
	}
}
