package admin

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image/png"
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// requireSecondFactor is the admin group's last middleware: an admin
// whose session has not passed the second factor reaches no admin page
// and no admin action, whatever its route (routes added to the group later
// are covered too); they are sent to routes.AdminTwoFactor (registered
// before the group, so not behind this) to enrol (first visit) or to type
// a code (once per session).
func (h *handlers) requireSecondFactor(c *fiber.Ctx) error {
	if h.passedSecondFactor(c) {
		return c.Next()
	}
	target := routes.AdminTwoFactor
	if c.Method() == fiber.MethodGet && h.SafeNext(c.OriginalURL()) {
		target += "?next=" + url.QueryEscape(c.OriginalURL())
	} else if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		h.Log.Warn("admin action without the second factor refused", "path", c.Path(), "user", h.User(c).ID)
	}
	return c.Redirect(target, fiber.StatusSeeOther)
}

// twoFactorForm is GET /admin/2fa: the enrolment or code page, or back to
// the admin console for a session that has passed.
func (h *handlers) twoFactorForm(c *fiber.Ctx) error {
	if h.passedSecondFactor(c) {
		return c.Redirect(routes.Admin, fiber.StatusSeeOther)
	}
	return h.twoFactorPage(c, fiber.StatusOK, h.nextPage(c.Query("next")), "", nil)
}

func (h *handlers) passedSecondFactor(c *fiber.Ctx) bool {
	u, sess := h.User(c), h.Session(c)
	return u != nil && sess != nil && u.TOTPConfirmedAt != nil && sess.SecondFactorAt != nil
}

// nextPage is the admin page to go on to after the second factor.
func (h *handlers) nextPage(next string) string {
	if h.SafeNext(next) && routes.Within(routes.Admin, next) && !strings.HasPrefix(next, routes.AdminTwoFactor) {
		return next
	}
	return routes.Admin
}

// twoFactorPage renders the second-factor page. For an admin not yet
// enrolled it asks for the one-time enrolment code first (enrolCode ""):
// nothing is written and no secret is shown until that code is right
// (enrolCode is then the accepted code, and the secret is shown).
func (h *handlers) twoFactorPage(c *fiber.Ctx, status int, next, errKey string, errArgs []any) error {
	return h.twoFactorPageWith(c, status, next, "", errKey, errArgs)
}

func (h *handlers) twoFactorPageWith(c *fiber.Ctx, status int, next, enrolCode, errKey string, errArgs []any) error {
	u := h.User(c)
	v := adminview.TwoFactorView{Next: next, ErrorKey: errKey, ErrorArgs: errArgs}
	title := "twofa.check_title"
	if u.TOTPConfirmedAt == nil {
		title = "twofa.enrol_title"
		if enrolCode == "" {
			v.EnrolCodeStep = true
			return h.Render(c, status, adminview.TwoFactor(h.Page(c, title), v))
		}
		en, err := h.Auth.BeginTOTP(c.UserContext(), u.ID, enrolCode)
		if err != nil {
			return err
		}
		img, err := en.QR(200)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			return err
		}
		v.Enrol, v.Secret, v.EnrolCode = true, en.Secret, enrolCode
		v.QR = templ.SafeURL("data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())) // #nosec G203 -- an image we just encoded
	}
	return h.Render(c, status, adminview.TwoFactor(h.Page(c, title), v))
}

func (h *handlers) twoFactorSubmit(c *fiber.Ctx) error {
	u, sess := h.User(c), h.Session(c)
	next := h.nextPage(h.FormValue(c, "next"))
	code := h.FormValue(c, "code")
	enrolCode := h.FormValue(c, "enrol_code")
	var err error
	var codes []string
	var tok string
	enrolling := u.TOTPConfirmedAt == nil
	if enrolling && code == "" && enrolCode == "" {
		return h.twoFactorError(c, auth.ErrEnrolmentCode, next)
	}
	if enrolling && code == "" {
		// The enrolment code alone: checked (throttled), then the secret
		// is made and shown with the form for the first code.
		err := h.twoFactorPageWith(c, fiber.StatusOK, next, enrolCode, "", nil)
		return h.twoFactorError(c, err, next)
	}
	if enrolling {
		codes, tok, err = h.Auth.ConfirmTOTP(c.UserContext(), u.ID, sess.ID, enrolCode, code)
	} else {
		tok, err = h.Auth.VerifySecondFactor(c.UserContext(), u.ID, sess.ID, code)
	}
	if err != nil {
		return h.twoFactorErrorWith(c, err, next, enrolCode)
	}
	// The session that passed is a new one (auth.passSession): the
	// browser gets its token, and CSRF tokens bound to the old one die.
	h.PassSession(c, tok, sess.ExpiresAt)
	h.Log.Info("admin passed the second factor", "user", u.ID, "enrolled", enrolling)
	if enrolling {
		return h.Render(c, fiber.StatusOK, adminview.RecoveryCodes(h.Page(c, "twofa.recovery_title"), adminview.TwoFactorView{Next: next, RecoveryCodes: codes}))
	}
	return c.Redirect(next, fiber.StatusSeeOther)
}

// twoFactorError answers a refused enrolment code or second-factor code
// (nil: nothing to answer).
func (h *handlers) twoFactorError(c *fiber.Ctx, err error, next string) error {
	if err == nil {
		return nil
	}
	return h.twoFactorErrorWith(c, err, next, "")
}

func (h *handlers) twoFactorErrorWith(c *fiber.Ctx, err error, next, enrolCode string) error {
	u := h.User(c)
	var throttled *auth.ThrottledError
	switch {
	case errors.As(err, &throttled):
		secs := int64(throttled.RetryAfter.Seconds() + 0.999)
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(secs, 10))
		h.Log.Warn("admin second factor throttled", "user", u.ID)
		return h.twoFactorPage(c, fiber.StatusTooManyRequests, next, "twofa.throttled", []any{"seconds", secs})
	case errors.Is(err, auth.ErrEnrolmentCode):
		h.Log.Warn("admin enrolment code refused", "user", u.ID)
		return h.twoFactorPage(c, fiber.StatusUnprocessableEntity, next, "twofa.error_enrol_code", nil)
	case errors.Is(err, auth.ErrCodeInvalid):
		h.Log.Warn("admin second factor refused", "user", u.ID)
		return h.twoFactorPageWith(c, fiber.StatusUnprocessableEntity, next, enrolCode, "twofa.error_code", nil)
	case errors.Is(err, auth.ErrNoSession):
		// Signed out (or elevated) meanwhile in another tab.
		return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
	case errors.Is(err, auth.ErrTOTPEnrolled), errors.Is(err, auth.ErrTOTPNotEnrolled):
		// Enrolled (or reset) meanwhile in another tab: start over.
		return c.Redirect(routes.AdminTwoFactor, fiber.StatusSeeOther)
	}
	return err
}
