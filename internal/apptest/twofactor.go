package apptest

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
)

// AdminTOTPCode returns a code that the admin's authenticator would show
// and that the app has not accepted yet: the app accepts each time step's
// code once, so after the last step used it takes the next one (within the
// one-step drift the app allows), waiting for the clock if it must.
// It reads the admin's secret from the database, where the first visit to
// /admin put it (the same secret the enrolment page shows).
func AdminTOTPCode(t testing.TB, db *store.DB, email string) string {
	t.Helper()
	return AdminTOTPCodeAt(t, db, email, nil)
}

// AdminTOTPCodeAt is AdminTOTPCode for an app whose clock is now (nil:
// real time), such as the screenshot fixture's fixed clock.
func AdminTOTPCodeAt(t testing.TB, db *store.DB, email string, now func() time.Time) string {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	var row struct {
		TOTPSecret   string `gorm:"column:totp_secret"`
		TOTPLastStep int64  `gorm:"column:totp_last_step"`
	}
	if err := db.Gorm.Raw(`SELECT totp_secret, totp_last_step FROM users WHERE lower(email) = lower(?)`, email).Scan(&row).Error; err != nil {
		t.Fatalf("admin %s: %v", email, err)
	}
	if row.TOTPSecret == "" {
		t.Fatalf("admin %s has no authenticator secret yet (open /admin first)", email)
	}
	for {
		step := now().Unix() / 30
		st := max(step, row.TOTPLastStep+1)
		if st <= step+1 {
			code, err := totp.GenerateCodeCustom(row.TOTPSecret, time.Unix(st*30, 0),
				totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
			if err != nil {
				t.Fatal(err)
			}
			return code
		}
		// Every code the app would take now was used: wait for the next step.
		// real time: an app on real time (now == time.Now) takes the next code only then
		time.Sleep(time.Unix((st-1)*30, 0).Sub(now()) + 50*time.Millisecond)
	}
}

// EnrolmentCode issues a new one-time enrolment code for the admin (not
// yet enrolled), as `kifpool user create --admin` or `user reset-2fa`
// prints it for the operator.
func EnrolmentCode(t testing.TB, db *store.DB, email string) string {
	t.Helper()
	code, err := auth.NewService(db, auth.Options{}).IssueEnrolmentCode(context.Background(), email)
	if err != nil {
		t.Fatalf("enrolment code for %s: %v", email, err)
	}
	return code
}

// PassAdminChecks passes the admin console's second factor for this
// signed-in admin: it enrols the authenticator on the first visit (and
// keeps the recovery codes shown in LastRecoveryCodes) or types a fresh
// code, exactly as a person would through /admin/2fa.
func (c *Client) PassAdminChecks(email string) {
	c.t.Helper()
	page := c.Get(routes.AdminTwoFactor)
	if page.Status == http.StatusSeeOther {
		return // this session has passed already
	}
	if page.Status != http.StatusOK {
		c.t.Fatalf("GET /admin/2fa: %d", page.Status)
	}
	form := url.Values{"_csrf": {Input(page.Body, "_csrf")}}
	if strings.Contains(page.Body, `name="enrol_code"`) {
		// Not enrolled: the operator's one-time enrolment code first (as
		// `kifpool user create --admin` or `user reset-2fa` prints it).
		form.Set("enrol_code", EnrolmentCode(c.t, c.app.DB, email))
		if r := c.Post(routes.AdminTwoFactor, form); r.Status != http.StatusOK {
			c.t.Fatalf("enrolment code for %s: %d", email, r.Status)
		}
	}
	form.Set("code", AdminTOTPCode(c.t, c.app.DB, email))
	r := c.Post(routes.AdminTwoFactor, form)
	switch r.Status {
	case http.StatusOK: // enrolled: the recovery codes are shown once
		c.LastRecoveryCodes = recoveryCodes(r.Body)
	case http.StatusSeeOther:
	default:
		c.t.Fatalf("second factor for %s: %d", email, r.Status)
	}
}

// RecoveryCodes lists the recovery codes on a page.
func RecoveryCodes(body string) []string { return recoveryCodes(body) }
