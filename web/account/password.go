package account

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

// errWrongPassword: the password typed to confirm an act is wrong.
var errWrongPassword = errors.New("wrong password")

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

// refusal is a form's answer to a refused act: its message, the field it
// is about and the status.
type refusal struct {
	key    string
	args   []any
	status int
}

// unconfirmed refuses an act that gives the account something lasting (an
// API token, a webhook endpoint, a return origin) while its address is
// not confirmed: the account may be a stranger's who signed up with
// someone else's address, which the owner takes back by a password reset
// (sessions and tokens end then, but an endpoint would keep feeding the
// stranger the account's events).
func unconfirmed(u *auth.User) *refusal {
	if u.Verified() {
		return nil
	}
	return &refusal{"verify.needed", nil, fiber.StatusForbidden}
}

// mayAddCredential is the refusal, if any, of adding something lasting to
// the signed-in account (an API token, a webhook endpoint): an
// unconfirmed address first, so that its refusal spends no admin's code,
// then an admin's fresh second factor.
func (h *handlers) mayAddCredential(c *fiber.Ctx) (*refusal, error) {
	if r := unconfirmed(h.User(c)); r != nil {
		return r, nil
	}
	return h.freshSecondFactor(c, h.User(c))
}

// proveCredential is what adding a credential (an endpoint, a return
// origin, an endpoint enabled again) asks: mayAddCredential, then the
// password again (throttled). A refusal carries its sentence (wrongKey
// for a wrong password); nil, nil: proven.
func (h *handlers) proveCredential(c *fiber.Ctx, wrongKey string) (*refusal, error) {
	if r, err := h.mayAddCredential(c); r != nil || err != nil {
		return r, err
	}
	var throttled *auth.ThrottledError
	switch err := h.Auth.VerifyPassword(c.UserContext(), h.User(c).ID, h.FormValue(c, "password")); {
	case errors.As(err, &throttled):
		return &refusal{"tokens.error_throttled", []any{"seconds", seam.RetryAfter(c, throttled.RetryAfter)}, fiber.StatusTooManyRequests}, nil
	case errors.Is(err, auth.ErrBadCredentials):
		return &refusal{wrongKey, nil, fiber.StatusUnprocessableEntity}, nil
	case err != nil:
		return nil, err
	}
	return nil, nil
}

// freshSecondFactor asks an admin (only) for a fresh second factor before
// an act that changes their credentials (a new password, a new API
// token): the form's code is spent whatever the session passed before, so
// that someone holding only the admin's password cannot sign the admin
// out everywhere or mint a lasting credential. A refusal changes nothing.
func (h *handlers) freshSecondFactor(c *fiber.Ctx, u *auth.User) (*refusal, error) {
	if !u.IsAdmin() {
		return nil, nil
	}
	err := h.Auth.ConfirmSecondFactor(c.UserContext(), u.ID, h.FormValue(c, "code"))
	var throttled *auth.ThrottledError
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &throttled):
		return &refusal{"fresh2fa.throttled", []any{"seconds", seam.RetryAfter(c, throttled.RetryAfter)}, fiber.StatusTooManyRequests}, nil
	case errors.Is(err, auth.ErrCodeInvalid):
		h.Log.WarnContext(c.UserContext(), "admin's fresh second factor refused", "user", u.ID, "path", c.Path())
		return &refusal{"fresh2fa.wrong", nil, fiber.StatusUnprocessableEntity}, nil
	case errors.Is(err, auth.ErrTOTPNotEnrolled):
		return &refusal{"fresh2fa.not_enrolled", nil, fiber.StatusUnprocessableEntity}, nil
	}
	return nil, err
}

func (h *handlers) passwordForm(c *fiber.Ctx) error {
	return h.Render(c, fiber.StatusOK, views.PasswordChange(h.Page(c, "password.change_title"), views.PasswordView{}))
}

// changePassword checks the current password, sets the new one, signs
// every browser out (this one's session too, in the password change's own
// transaction), revokes every API token and turns off every webhook
// endpoint, then says so on the account page. This browser goes on signed
// in on a new session made after that: a copy of its old session cookie
// (the thief's) died with the others, whatever happens next. Should the
// new session fail, the browser is signed out and the sign-in page says
// the password was changed and every browser signed out (reset.done),
// which is then true.
//
// An admin types a fresh second factor too (freshSecondFactor), checked
// first: a wrong code spends no password attempt and changes nothing.
func (h *handlers) changePassword(c *fiber.Ctx) error {
	u := h.User(c)
	if r, err := h.freshSecondFactor(c, u); err != nil {
		return err
	} else if r != nil {
		return h.Render(c, r.status, views.PasswordChange(h.Page(c, "password.change_title"),
			views.PasswordView{ErrorKey: r.key, ErrorArgs: r.args, ErrorField: "code"}))
	}
	// No session kept: this one ends with the others, atomically with
	// the new password, never in a later step that could fail.
	ended, err := h.Auth.ChangePassword(c.UserContext(), u.ID, "",
		h.FormValue(c, "current_password"), h.FormValue(c, "new_password"))
	var throttled *auth.ThrottledError
	v := views.PasswordView{}
	status := fiber.StatusUnprocessableEntity
	switch {
	case err == nil:
		h.Log.InfoContext(c.UserContext(), "password changed", "user", u.ID, "sessions_ended", ended.Sessions, "tokens_revoked", ended.Tokens,
			"webhook_endpoints_disabled", ended.Endpoints)
		return h.sessionAfterPasswordChange(c, *u)
	case errors.As(err, &throttled):
		status = fiber.StatusTooManyRequests
		v.ErrorKey, v.ErrorArgs, v.ErrorField = "password.throttled", []any{"seconds", seam.RetryAfter(c, throttled.RetryAfter)}, "current_password"
	case errors.Is(err, auth.ErrBadCredentials):
		v.ErrorKey, v.ErrorField = "password.wrong_current", "current_password"
	case passwordKey(err) != "":
		v.ErrorKey, v.ErrorField = passwordKey(err), "new_password"
	default:
		return err
	}
	return h.Render(c, status, views.PasswordChange(h.Page(c, "password.change_title"), v))
}

// sessionAfterPasswordChange signs this browser in again on a new session
// once the password change has ended every session of the user (the
// browser's old one included): there is no old session left to end. If
// the new session cannot be made, the browser is signed out and sent to
// sign in with the new password, told what was done.
func (h *handlers) sessionAfterPasswordChange(c *fiber.Ctx, u auth.User) error {
	tok, exp, err := h.Auth.NewSession(c.UserContext(), u.ID)
	if err != nil {
		h.Log.ErrorContext(c.UserContext(), "password changed, but no new session: signed out", "user", u.ID, "err", err)
		h.SignedOut(c)
		return c.Redirect(routes.SignIn+"?done=reset", fiber.StatusSeeOther)
	}
	h.PassSession(c, tok, exp)
	return c.Redirect(routes.Account+"?done=password", fiber.StatusSeeOther)
}

func (h *handlers) forgotForm(c *fiber.Ctx) error {
	return h.Render(c, fiber.StatusOK, views.Forgot(h.Page(c, "forgot.title"), views.ForgotView{}))
}

// forgot queues a reset link if an account has the address, and answers
// the same either way (the answer never says whether it exists).
func (h *handlers) forgot(c *fiber.Ctx) error {
	email := h.FormValue(c, "email")
	err := h.Auth.RequestReset(c.UserContext(), email, h.ClientIP(c))
	var throttled *auth.ThrottledError
	switch {
	case errors.As(err, &throttled):
		secs := seam.RetryAfter(c, throttled.RetryAfter)
		return h.Render(c, fiber.StatusTooManyRequests, views.Forgot(h.Page(c, "forgot.title"),
			views.ForgotView{Email: email, ErrorKey: "forgot.throttled", ErrorArgs: []any{"seconds", secs}}))
	case err != nil:
		return err
	}
	if h.MailQueued != nil {
		h.MailQueued()
	}
	return h.Render(c, fiber.StatusOK, views.Forgot(h.Page(c, "forgot.title"), views.ForgotView{Sent: true}))
}

// resetForm shows the new-password form of a live reset link. The page is
// never cached, and like every page (Referrer-Policy: same-origin) sends
// no Referer to another site (the link is a secret).
func (h *handlers) resetForm(c *fiber.Ctx) error {
	tok := c.Params("token")
	u, err := h.Auth.CheckReset(c.UserContext(), tok)
	if errors.Is(err, auth.ErrResetInvalid) {
		return h.Render(c, fiber.StatusGone, views.ResetInvalid(h.Page(c, "reset.invalid_title")))
	}
	if err != nil {
		return err
	}
	return h.Render(c, fiber.StatusOK, views.Reset(h.Page(c, "reset.title"), views.ResetView{Token: tok, Email: u.Email}))
}

// reset uses the link once: new password, every session ended, every API
// token revoked, every webhook endpoint turned off; then the sign-in page
// says so.
func (h *handlers) reset(c *fiber.Ctx) error {
	tok := c.Params("token")
	if _, err := h.Auth.CheckReset(c.UserContext(), tok); errors.Is(err, auth.ErrResetInvalid) {
		return h.Render(c, fiber.StatusGone, views.ResetInvalid(h.Page(c, "reset.invalid_title")))
	} else if err != nil {
		return err
	}
	u, ended, err := h.Auth.ResetPassword(c.UserContext(), tok, h.FormValue(c, "password"))
	switch {
	case errors.Is(err, auth.ErrResetInvalid):
		return h.Render(c, fiber.StatusGone, views.ResetInvalid(h.Page(c, "reset.invalid_title")))
	case passwordKey(err) != "":
		v := views.ResetView{Token: tok, ErrorKey: passwordKey(err)}
		if cu, err := h.Auth.CheckReset(c.UserContext(), tok); err == nil {
			v.Email = cu.Email
		}
		return h.Render(c, fiber.StatusUnprocessableEntity, views.Reset(h.Page(c, "reset.title"), v))
	case err != nil:
		return err
	}
	h.Log.InfoContext(c.UserContext(), "password reset by e-mail link", "user", u.ID, "sessions_ended", ended.Sessions, "tokens_revoked", ended.Tokens,
		"webhook_endpoints_disabled", ended.Endpoints)
	// This browser's session ended with the others when it was the
	// link's user's; another user's (the link opened in a browser signed
	// in as someone else) is ended here, as a sign-out ends it, never
	// only forgotten by the browser. The password is changed already: a
	// failure here is logged, and the page still says so.
	if err := h.Auth.EndSession(c.UserContext(), h.SessionToken(c)); err != nil {
		h.Log.ErrorContext(c.UserContext(), "ending the browser's session after a password reset", "err", err)
	}
	h.SignedOut(c)
	return c.Redirect(routes.SignIn+"?done=reset", fiber.StatusSeeOther)
}

// resetLimited is a reset link's form again, saying how long to wait: its
// submits count against the client's sign-in limit.
func (h *handlers) resetLimited(c *fiber.Ctx, tok string, secs int64) error {
	u, err := h.Auth.CheckReset(c.UserContext(), tok)
	if errors.Is(err, auth.ErrResetInvalid) {
		return h.Render(c, fiber.StatusGone, views.ResetInvalid(h.Page(c, "reset.invalid_title")))
	}
	if err != nil {
		return err
	}
	return h.Render(c, fiber.StatusTooManyRequests, views.Reset(h.Page(c, "reset.title"),
		views.ResetView{Token: tok, Email: u.Email, ErrorKey: "forgot.throttled", ErrorArgs: []any{"seconds", secs}}))
}

// setName stores the display name others see when they send to this
// user; a refused name changes nothing and shows the form again with the
// name as typed.
func (h *handlers) setName(c *fiber.Ctx) error {
	u := h.User(c)
	typed := h.FormValue(c, "name")
	_, err := h.Auth.SetDisplayName(c.UserContext(), u.ID, typed)
	var key string
	switch {
	case errors.Is(err, auth.ErrDisplayNameInvalid):
		key = "account.name_invalid"
	case errors.Is(err, auth.ErrDisplayNameTooLong):
		key = "account.name_too_long"
	case err != nil:
		return err
	default:
		return c.Redirect(routes.Account+"?done=name", fiber.StatusSeeOther)
	}
	v, err := h.accountView(c, u.ID, u.Email)
	if err != nil {
		return err
	}
	v.Name, v.NameErrorKey = typed, key
	return h.Render(c, fiber.StatusUnprocessableEntity, views.Account(h.Page(c, "account.title"), v))
}

// setReceipts turns receipts by e-mail on or off.
func (h *handlers) setReceipts(c *fiber.Ctx) error {
	on := h.FormValue(c, "receipts") == "on"
	if err := h.Auth.SetReceipts(c.UserContext(), h.User(c).ID, on); err != nil {
		return err
	}
	return c.Redirect(routes.Account+"?done=receipts", fiber.StatusSeeOther)
}
