package web

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/views"
)

// errWrongPassword: the password typed to confirm an act is wrong.
var errWrongPassword = errors.New("wrong password")

// retryAfter sets Retry-After for a wait and returns it in whole seconds.
func retryAfter(c *fiber.Ctx, d time.Duration) int64 {
	secs := max(int64((d+time.Second-1)/time.Second), 1)
	c.Set(fiber.HeaderRetryAfter, itoa(secs))
	return secs
}

// passwordKey is the message of a password rule the new password broke,
// or "".
func passwordKey(err error) string {
	switch {
	case errors.Is(err, auth.ErrPasswordTooShort):
		return "signup.error_password_short"
	case errors.Is(err, auth.ErrPasswordTooLong):
		return "signup.error_password_long"
	case errors.Is(err, auth.ErrPasswordTooSimple):
		return "signup.error_password_simple"
	case errors.Is(err, auth.ErrPasswordCommon):
		return "signup.error_password_common"
	case errors.Is(err, auth.ErrPasswordSame):
		return "password.same"
	}
	return ""
}

func (s *Server) passwordForm(c *fiber.Ctx) error {
	return render(c, fiber.StatusOK, views.PasswordChange(s.page(c, "password.change_title"), views.PasswordView{}))
}

// changePassword checks the current password, sets the new one, signs
// every other browser out and revokes every API token (this browser stays
// signed in), then says so on the account page.
func (s *Server) changePassword(c *fiber.Ctx) error {
	u := currentUser(c)
	ended, err := s.Auth.ChangePassword(c.UserContext(), u.ID, c.Cookies(s.sessionCookie),
		c.FormValue("current_password"), c.FormValue("new_password"))
	var throttled *auth.ThrottledError
	v := views.PasswordView{}
	status := fiber.StatusUnprocessableEntity
	switch {
	case err == nil:
		s.Log.InfoContext(c.UserContext(), "password changed", "user", u.ID, "sessions_ended", ended.Sessions, "tokens_revoked", ended.Tokens)
		return c.Redirect("/account?done=password", fiber.StatusSeeOther)
	case errors.As(err, &throttled):
		status = fiber.StatusTooManyRequests
		v.ErrorKey, v.ErrorArgs, v.ErrorField = "password.throttled", []any{"seconds", retryAfter(c, throttled.RetryAfter)}, "current_password"
	case errors.Is(err, auth.ErrBadCredentials):
		v.ErrorKey, v.ErrorField = "password.wrong_current", "current_password"
	case passwordKey(err) != "":
		v.ErrorKey, v.ErrorField = passwordKey(err), "new_password"
	default:
		return err
	}
	return render(c, status, views.PasswordChange(s.page(c, "password.change_title"), v))
}
