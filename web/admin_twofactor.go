package web

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image/png"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// requireSecondFactor is the admin group's last middleware: an admin
// whose session has not passed the second factor reaches no admin page
// and no admin action, whatever its route (routes added to the group later
// are covered too); they are sent to routes.AdminTwoFactor (registered
// before the group, so not behind this) to enrol (first visit) or to type
// a code (once per session).
func (s *Server) requireSecondFactor(c *fiber.Ctx) error {
	if s.passedSecondFactor(c) {
		return c.Next()
	}
	target := routes.AdminTwoFactor
	if c.Method() == fiber.MethodGet && safeNext(c.OriginalURL()) {
		target += "?next=" + urlQueryEscape(c.OriginalURL())
	} else if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		s.Log.Warn("admin action without the second factor refused", "path", c.Path(), "user", currentUser(c).ID)
	}
	return c.Redirect(target, fiber.StatusSeeOther)
}

// twoFactorForm is GET /admin/2fa: the enrolment or code page, or back to
// the console for a session that has passed.
func (s *Server) twoFactorForm(c *fiber.Ctx) error {
	if s.passedSecondFactor(c) {
		return c.Redirect(routes.Admin, fiber.StatusSeeOther)
	}
	return s.twoFactorPage(c, fiber.StatusOK, adminNext(c.Query("next")), "", nil)
}

func (s *Server) passedSecondFactor(c *fiber.Ctx) bool {
	u, sess := currentUser(c), currentSession(c)
	return u != nil && sess != nil && u.TOTPConfirmedAt != nil && sess.SecondFactorAt != nil
}

// adminNext is the admin page to go on to after the second factor.
func adminNext(next string) string {
	if safeNext(next) && routes.Within(routes.Admin, next) && !strings.HasPrefix(next, routes.AdminTwoFactor) {
		return next
	}
	return routes.Admin
}

// twoFactorPage renders the second-factor page. For an admin not yet
// enrolled it asks for the one-time enrolment code first (enrolCode ""):
// nothing is written and no secret is shown until that code is right
// (enrolCode is then the accepted code, and the secret is shown).
func (s *Server) twoFactorPage(c *fiber.Ctx, status int, next, errKey string, errArgs []any) error {
	return s.twoFactorPageWith(c, status, next, "", errKey, errArgs)
}

func (s *Server) twoFactorPageWith(c *fiber.Ctx, status int, next, enrolCode, errKey string, errArgs []any) error {
	u := currentUser(c)
	v := views.TwoFactorView{Next: next, ErrorKey: errKey, ErrorArgs: errArgs}
	title := "twofa.check_title"
	if u.TOTPConfirmedAt == nil {
		title = "twofa.enrol_title"
		if enrolCode == "" {
			v.EnrolCodeStep = true
			return render(c, status, views.TwoFactor(s.page(c, title), v))
		}
		en, err := s.Auth.BeginTOTP(c.UserContext(), u.ID, enrolCode)
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
	return render(c, status, views.TwoFactor(s.page(c, title), v))
}

func (s *Server) twoFactorSubmit(c *fiber.Ctx) error {
	u, sess := currentUser(c), currentSession(c)
	next := adminNext(formValue(c, "next"))
	code := formValue(c, "code")
	enrolCode := formValue(c, "enrol_code")
	var err error
	var codes []string
	var tok string
	enrolling := u.TOTPConfirmedAt == nil
	if enrolling && code == "" && enrolCode == "" {
		return s.twoFactorError(c, auth.ErrEnrolmentCode, next)
	}
	if enrolling && code == "" {
		// The enrolment code alone: checked (throttled), then the secret
		// is made and shown with the form for the first code.
		err := s.twoFactorPageWith(c, fiber.StatusOK, next, enrolCode, "", nil)
		return s.twoFactorError(c, err, next)
	}
	if enrolling {
		codes, tok, err = s.Auth.ConfirmTOTP(c.UserContext(), u.ID, sess.ID, enrolCode, code)
	} else {
		tok, err = s.Auth.VerifySecondFactor(c.UserContext(), u.ID, sess.ID, code)
	}
	if err != nil {
		return s.twoFactorErrorWith(c, err, next, enrolCode)
	}
	// The session that passed is a new one (auth.passSession): the
	// browser gets its token, and CSRF tokens bound to the old one die.
	s.setCookie(c, s.sessionCookie, tok, sess.ExpiresAt, true)
	s.rotateCSRF(c, tok)
	s.Log.Info("admin passed the second factor", "user", u.ID, "enrolled", enrolling)
	if enrolling {
		return render(c, fiber.StatusOK, views.RecoveryCodes(s.page(c, "twofa.recovery_title"), views.TwoFactorView{Next: next, RecoveryCodes: codes}))
	}
	return c.Redirect(next, fiber.StatusSeeOther)
}

// twoFactorError answers a refused enrolment code or second-factor code
// (nil: nothing to answer).
func (s *Server) twoFactorError(c *fiber.Ctx, err error, next string) error {
	if err == nil {
		return nil
	}
	return s.twoFactorErrorWith(c, err, next, "")
}

func (s *Server) twoFactorErrorWith(c *fiber.Ctx, err error, next, enrolCode string) error {
	u := currentUser(c)
	var throttled *auth.ThrottledError
	switch {
	case errors.As(err, &throttled):
		secs := int64(throttled.RetryAfter.Seconds() + 0.999)
		c.Set(fiber.HeaderRetryAfter, itoa(secs))
		s.Log.Warn("admin second factor throttled", "user", u.ID)
		return s.twoFactorPage(c, fiber.StatusTooManyRequests, next, "twofa.throttled", []any{"seconds", secs})
	case errors.Is(err, auth.ErrEnrolmentCode):
		s.Log.Warn("admin enrolment code refused", "user", u.ID)
		return s.twoFactorPage(c, fiber.StatusUnprocessableEntity, next, "twofa.error_enrol_code", nil)
	case errors.Is(err, auth.ErrCodeInvalid):
		s.Log.Warn("admin second factor refused", "user", u.ID)
		return s.twoFactorPageWith(c, fiber.StatusUnprocessableEntity, next, enrolCode, "twofa.error_code", nil)
	case errors.Is(err, auth.ErrNoSession):
		// Signed out (or elevated) meanwhile in another tab.
		return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
	case errors.Is(err, auth.ErrTOTPEnrolled), errors.Is(err, auth.ErrTOTPNotEnrolled):
		// Enrolled (or reset) meanwhile in another tab: start over.
		return c.Redirect(routes.AdminTwoFactor, fiber.StatusSeeOther)
	}
	return err
}
