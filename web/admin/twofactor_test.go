package admin_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	adminview "github.com/kifpool/kifpool/views/admin"
)

var secretRE = regexp.MustCompile(`data-testid="totp-secret" data-secret="([A-Z2-7]+)">`)

func totpAt(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// Admins enrol an authenticator on their first visit to /admin and pass
// a code once per session before any admin page or action; codes are
// single-use (a replay within its window is refused), recovery codes too,
// guesses are throttled, and `reset-2fa` starts enrolment over.
func TestAdminTwoFactor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		ctx := context.Background()
		if _, err := app.Server.Auth.SignUp(ctx, "boss@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		// A payment under review, for an action to try.
		_, payURL := app.StartTopUp(t, "payer@example.com", "20000")
		if _, err := app.Server.Bank.Pay(apptest.Authority(payURL)); err != nil {
			t.Fatal(err)
		}
		topuptest.ForceAll(t, db, "needs_review", "verify_rejected")
		topUpID := topuptest.First(t, db).PublicID

		admin := app.NewClient(t)
		admin.SignIn("boss@example.com", "correct horse battery")
		// No admin page, no admin action before the second factor.
		if r := admin.Get(routes.Admin); r.Status != http.StatusSeeOther || r.Location != routes.AdminTwoFactor+"?next="+url.QueryEscape(routes.Admin) {
			t.Fatalf("GET /admin before the second factor: %d %q", r.Status, r.Location)
		}
		csrf := apptest.Input(admin.Get(routes.Wallet).Body, "_csrf")
		for _, path := range []string{routes.AdminTopUpRecheck(topUpID), routes.AdminTopUpClose(topUpID), routes.Admin + "/anything-added-later"} {
			if r := admin.Post(path, url.Values{"_csrf": {csrf}, "note": {"x"}}); r.Status != http.StatusSeeOther || r.Location != routes.AdminTwoFactor {
				t.Errorf("POST %s before the second factor: %d %q", path, r.Status, r.Location)
			}
		}
		if n := app.CountAudit(t); n != 0 {
			t.Fatalf("%d admin actions recorded before the second factor", n)
		}
		if topuptest.Count(t, db, topup.StatusNeedsReview) != 1 {
			t.Fatal("the payment moved before the second factor")
		}

		// Enrolment needs the one-time code the operator was given: the
		// page asks for it and writes nothing (no secret exists yet).
		ask := admin.Get(routes.AdminTwoFactor + "?next=" + url.QueryEscape(routes.Admin))
		if ask.Status != http.StatusOK || !strings.Contains(ask.Body, `name="enrol_code"`) || strings.Contains(ask.Body, "totp-secret") {
			t.Fatalf("enrolment code page: %d", ask.Status)
		}
		if n := authtest.CountUsers(t, db, func(u auth.User) bool { return u.TOTPSecret != "" }); n != 0 {
			t.Fatalf("GET /admin/2fa wrote a pending secret")
		}
		enrolCode, err := app.Server.Auth.IssueEnrolmentCode(ctx, "boss@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if r := admin.Post(routes.AdminTwoFactor, url.Values{"_csrf": {apptest.Input(ask.Body, "_csrf")}, "enrol_code": {"AAAA-BBBB-CCCC-DDDD"}}); r.Status != http.StatusUnprocessableEntity || strings.Contains(r.Body, "totp-secret") {
			t.Fatalf("a wrong enrolment code: %d", r.Status)
		}
		// The right one: a QR code and the secret as text.
		enrol := admin.Post(routes.AdminTwoFactor, url.Values{"_csrf": {apptest.Input(ask.Body, "_csrf")}, "enrol_code": {enrolCode}, "next": {routes.Admin}})
		m := secretRE.FindStringSubmatch(enrol.Body)
		if enrol.Status != http.StatusOK || m == nil || !strings.Contains(enrol.Body, `src="data:image/png;base64,`) || !strings.Contains(enrol.Body, `name="code"`) {
			t.Fatalf("enrolment page: %d", enrol.Status)
		}
		secret := m[1]
		// Shown in groups of four (as typed into an app), with the number
		// pad for the six digits.
		if !strings.Contains(enrol.Body, adminview.GroupKey(secret)+"</code>") || !strings.Contains(adminview.GroupKey(secret), " ") ||
			!strings.Contains(enrol.Body, `inputmode="numeric"`) {
			t.Errorf("enrolment page: key not grouped or no number pad")
		}
		if again := secretRE.FindStringSubmatch(admin.Post(routes.AdminTwoFactor, url.Values{"_csrf": {apptest.Input(ask.Body, "_csrf")}, "enrol_code": {enrolCode}}).Body); again == nil || again[1] != secret {
			t.Fatal("a second visit shows another secret")
		}
		post := func(c *apptest.Client, page apptest.Response, code string) apptest.Response {
			t.Helper()
			return c.Post(routes.AdminTwoFactor, url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}, "code": {code}, "next": {routes.Admin},
				"enrol_code": {apptest.Input(page.Body, "enrol_code")}})
		}
		if r := post(admin, enrol, "000000x"); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("wrong code at enrolment: %d", r.Status)
		}
		code := totpAt(t, secret, time.Now())
		done := post(admin, enrol, code)
		recovery := apptest.RecoveryCodes(done.Body)
		if done.Status != http.StatusOK || len(recovery) != 10 {
			t.Fatalf("enrolment: %d, %d recovery codes", done.Status, len(recovery))
		}
		unused := 0
		for _, stored := range authtest.RecoveryCodes(t, db) {
			if stored.UsedAt == nil {
				unused++
			}
			for _, rc := range recovery {
				if strings.Contains(stored.CodeHash, rc) {
					t.Fatal("a recovery code is stored in clear")
				}
			}
		}
		if n := unused; n != 10 {
			t.Fatalf("%d recovery codes stored", n)
		}
		if r := admin.Get(routes.Admin); r.Status != http.StatusOK || !strings.Contains(r.Body, `data-testid="admin-payments"`) {
			t.Fatalf("admin page after enrolment: %d", r.Status)
		}
		if r := admin.Get(routes.AdminTwoFactor); r.Status != http.StatusSeeOther {
			t.Fatalf("the second-factor page after passing: %d", r.Status)
		}

		// Another session must pass again; the code just used is refused
		// (a replay within its window), and the secret is not shown again.
		second := app.NewClient(t)
		second.SignIn("boss@example.com", "correct horse battery")
		check := second.Get(routes.AdminTwoFactor)
		if check.Status != http.StatusOK || strings.Contains(check.Body, "totp-secret") || strings.Contains(check.Body, secret) {
			t.Fatalf("check page: %d (shows the secret: %v)", check.Status, strings.Contains(check.Body, secret))
		}
		if r := post(second, check, code); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("replayed code: %d, want 422", r.Status)
		}
		if r := second.Get(routes.Admin); r.Status != http.StatusSeeOther {
			t.Fatalf("admin page after a replayed code: %d", r.Status)
		}
		// A recovery code works once (typed in lower case, without dashes).
		typed := strings.ToLower(strings.ReplaceAll(recovery[3], "-", " "))
		if r := post(second, check, typed); r.Status != http.StatusSeeOther || r.Location != routes.Admin {
			t.Fatalf("recovery code: %d %q", r.Status, r.Location)
		}
		third := app.NewClient(t)
		third.SignIn("boss@example.com", "correct horse battery")
		check3 := third.Get(routes.AdminTwoFactor)
		if r := post(third, check3, recovery[3]); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("recovery code used twice: %d", r.Status)
		}
		// A fresh code from the authenticator passes.
		if r := post(third, check3, apptest.AdminTOTPCode(t, db, "boss@example.com")); r.Status != http.StatusSeeOther {
			t.Fatalf("fresh code: %d", r.Status)
		}
		// Passing the second factor is then enough for actions too.
		if r := third.Post(routes.AdminTopUpRecheck(topUpID), url.Values{"_csrf": {apptest.Input(third.Get(routes.Admin).Body, "_csrf")}}); r.Location != routes.Admin+"?done=done_recheck_credited" {
			t.Fatalf("recheck after the second factor: %d %q", r.Status, r.Location)
		}

		// Guesses are throttled per admin.
		guesser := app.NewClient(t)
		guesser.SignIn("boss@example.com", "correct horse battery")
		gp := guesser.Get(routes.AdminTwoFactor)
		var last apptest.Response
		for range 6 {
			last = post(guesser, gp, "123456")
		}
		if last.Status != http.StatusTooManyRequests {
			t.Fatalf("after 6 wrong codes: %d, want 429", last.Status)
		}

		// Others do not even see the page.
		user := app.NewClient(t)
		user.SignUp("someone@example.com")
		if r := user.Get(routes.AdminTwoFactor); r.Status != http.StatusNotFound {
			t.Fatalf("a user opened /admin/2fa: %d", r.Status)
		}

		// reset-2fa: the admin enrols anew; no session counts as passed.
		_, newCode, err := app.Server.Auth.ResetTOTP(ctx, "boss@example.com")
		if err != nil || newCode == "" || newCode == enrolCode {
			t.Fatalf("reset: code %q, %v", newCode, err)
		}
		if r := admin.Get(routes.Admin); r.Status != http.StatusSeeOther {
			t.Fatalf("admin page after reset: %d", r.Status)
		}
		askAgain := admin.Get(routes.AdminTwoFactor)
		if r := admin.Post(routes.AdminTwoFactor, url.Values{"_csrf": {apptest.Input(askAgain.Body, "_csrf")}, "enrol_code": {enrolCode}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("the used enrolment code after reset: %d, want 422", r.Status)
		}
		re := admin.Post(routes.AdminTwoFactor, url.Values{"_csrf": {apptest.Input(askAgain.Body, "_csrf")}, "enrol_code": {newCode}})
		if m := secretRE.FindStringSubmatch(re.Body); m == nil || m[1] == secret {
			t.Fatalf("after reset: no new enrolment (%s)", html.EscapeString(re.Body[:min(len(re.Body), 200)]))
		}
		if n := int64(len(authtest.RecoveryCodes(t, db))); n != 0 {
			t.Fatalf("%d recovery codes left after reset", n)
		}
		apptest.CheckInvariants(t, db)
	})
}
