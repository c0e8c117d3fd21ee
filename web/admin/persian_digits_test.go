package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The admin's second-factor code is a numeric field too (issue 18, item
// 9): typed on a Persian keyboard (Persian digits) or pasted with
// Arabic-Indic ones, it is taken, at enrolment and at a later sign-in.
func TestSecondFactorCodeInPersianDigits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		const email = "digits-admin@example.com"
		if _, err := app.Server.Auth.SignUp(context.Background(), email, "correct horse battery", "admin", "fa"); err != nil {
			t.Fatal(err)
		}
		arabicIndic := func(s string) string {
			out := []rune(s)
			for i, r := range out {
				if r >= '0' && r <= '9' {
					out[i] = '٠' + (r - '0')
				}
			}
			return string(out)
		}
		for i, typed := range []func(string) string{
			func(code string) string { return i18n.Digits(i18n.FA, code) },
			arabicIndic,
		} {
			c := app.NewClient(t)
			c.SignIn(email, "correct horse battery")
			page := c.Get(routes.AdminTwoFactor)
			if page.Status != http.StatusOK {
				t.Fatalf("second factor page: %d", page.Status)
			}
			form := url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}}
			want := http.StatusSeeOther
			if i == 0 { // the first visit enrols the authenticator
				form.Set("enrol_code", apptest.EnrolmentCode(t, db, email))
				if r := c.Post(routes.AdminTwoFactor, form); r.Status != http.StatusOK {
					t.Fatalf("enrolment code: %d", r.Status)
				}
				want = http.StatusOK // the recovery codes, shown once
			}
			code := apptest.AdminTOTPCode(t, db, email)
			form.Set("code", typed(code))
			if r := c.Post(routes.AdminTwoFactor, form); r.Status != want {
				t.Fatalf("code %q: %d, want %d", typed(code), r.Status, want)
			}
			if r := c.Get(routes.AdminTopUps); r.Status != http.StatusOK {
				t.Fatalf("the console after a code in %q: %d", typed(code), r.Status)
			}
		}
	})
}
