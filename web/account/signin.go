package account

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

func (h *handlers) signUpForm(c *fiber.Ctx) error {
	if h.User(c) != nil {
		return c.Redirect(routes.Wallet, fiber.StatusSeeOther)
	}
	return h.Render(c, fiber.StatusOK, views.SignUp(h.Page(c, "signup.title"), views.AuthForm{}))
}

func (h *handlers) signUp(c *fiber.Ctx) error {
	email, password := h.FormValue(c, "email"), h.FormValue(c, "password")
	u, err := h.Auth.Register(c.UserContext(), email, password, string(h.Lang(c)))
	if err != nil {
		key, field := "", "password"
		switch {
		case errors.Is(err, auth.ErrEmailInvalid), errors.Is(err, auth.ErrEmailTaken):
			field = ""
		}
		switch {
		case errors.Is(err, auth.ErrEmailInvalid):
			key = "signup.error_email"
		case errors.Is(err, auth.ErrEmailTaken):
			key = "signup.error_taken"
		case errors.Is(err, auth.ErrPasswordTooShort):
			key = "signup.error_password_short"
		case errors.Is(err, auth.ErrPasswordTooLong):
			key = "signup.error_password_long"
		case errors.Is(err, auth.ErrPasswordTooSimple):
			key = "signup.error_password_simple"
		case errors.Is(err, auth.ErrPasswordCommon):
			key = "signup.error_password_common"
		default:
			return err
		}
		return h.Render(c, fiber.StatusUnprocessableEntity, views.SignUp(h.Page(c, "signup.title"), views.AuthForm{Email: email, ErrorKey: key, ErrorField: field}))
	}
	h.Log.InfoContext(c.UserContext(), "user signed up", "user", u.ID)
	if h.MailQueued != nil { // the confirmation link, which the person waits for
		h.MailQueued()
	}
	return h.startSession(c, u, routes.Wallet)
}

func (h *handlers) signInForm(c *fiber.Ctx) error {
	if h.User(c) != nil {
		return c.Redirect(routes.Wallet, fiber.StatusSeeOther)
	}
	f := views.AuthForm{Next: h.nextParam(c)}
	if c.Query("done") == "reset" {
		f.Notice = "reset.done"
	}
	return h.Render(c, fiber.StatusOK, views.SignIn(h.Page(c, "signin.title"), f))
}

func (h *handlers) signIn(c *fiber.Ctx) error {
	email := h.FormValue(c, "email")
	u, err := h.Auth.AuthenticateFrom(c.UserContext(), email, h.FormValue(c, "password"), h.ClientIP(c))
	var throttled *auth.ThrottledError
	if errors.As(err, &throttled) {
		secs := int64(throttled.RetryAfter.Seconds() + 0.999)
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(secs, 10))
		h.Log.Warn("sign-in throttled", "retry_after_s", secs)
		return h.Render(c, fiber.StatusTooManyRequests, views.SignIn(h.Page(c, "signin.title"),
			views.AuthForm{Email: email, ErrorKey: "signin.throttled", ErrorArgs: []any{"seconds", secs}, Next: h.nextParam(c)}))
	}
	if errors.Is(err, auth.ErrBadCredentials) {
		return h.Render(c, fiber.StatusUnauthorized, views.SignIn(h.Page(c, "signin.title"), views.AuthForm{Email: email, ErrorKey: "signin.error", Next: h.nextParam(c)}))
	}
	if err != nil {
		return err
	}
	next := c.Query("next")
	if !h.SafeNext(next) {
		next = routes.Wallet
	}
	return h.startSession(c, u, next)
}

// startSession signs the browser in with a brand-new session (the old one,
// if any, is ended first: no session fixation) and a new CSRF cookie. If
// the old session cannot be ended, no new one is made: the request fails
// (logged, the error page), never leaving a token alive that the browser
// was told had been replaced.
func (h *handlers) startSession(c *fiber.Ctx, u auth.User, next string) error {
	if err := h.Auth.EndSession(c.UserContext(), h.SessionToken(c)); err != nil {
		h.Log.ErrorContext(c.UserContext(), "old session not ended: no new session made", "user", u.ID, "err", err)
		return err
	}
	tok, exp, err := h.Auth.NewSession(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	h.PassSession(c, tok, exp)
	return c.Redirect(next, fiber.StatusSeeOther)
}

func (h *handlers) signOut(c *fiber.Ctx) error {
	if err := h.Auth.EndSession(c.UserContext(), h.SessionToken(c)); err != nil {
		return err
	}
	h.SignedOut(c)
	return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
}

// accountPage shows the signed-in account and offers to sign out
// everywhere.
func (h *handlers) accountPage(c *fiber.Ctx) error {
	v, err := h.accountWithName(c)
	if err != nil {
		return err
	}
	switch c.Query("done") {
	case "password":
		v.Notice = "password.changed"
	case "receipts":
		v.Notice = "account.receipts_saved"
	case "name":
		v.Notice = "account.name_saved"
	case "verify", "verify_pending":
		if h.User(c).Verified() {
			break
		}
		v.Notice, v.NoticeArgs = "verify.resent", []any{"email", i18n.UserText(h.User(c).Email)}
		if c.Query("done") == "verify_pending" {
			v.Notice = "verify.pending"
		}
	}
	return h.Render(c, fiber.StatusOK, views.Account(h.Page(c, "account.title"), v))
}

// accountWithName is the signed-in user's account page as it stands:
// its figures and the display name.
func (h *handlers) accountWithName(c *fiber.Ctx) (views.AccountView, error) {
	u := h.User(c)
	v, err := h.accountView(c, u.ID, u.Email)
	if err != nil {
		return v, err
	}
	v.Name, err = h.Auth.DisplayName(c.UserContext(), u.ID)
	return v, err
}

// accountView is the account page's figures: live sessions and the
// receipts setting.
func (h *handlers) accountView(c *fiber.Ctx, userID int64, addr string) (views.AccountView, error) {
	n, err := h.Auth.CountSessions(c.UserContext(), userID)
	if err != nil {
		return views.AccountView{}, err
	}
	on, err := h.Auth.ReceiptsEnabled(c.UserContext(), userID)
	if err != nil {
		return views.AccountView{}, err
	}
	return views.AccountView{Email: addr, Sessions: n, Receipts: on}, nil
}

// signOutEverywhere ends every session of the user, on every device and
// instance, this one included.
func (h *handlers) signOutEverywhere(c *fiber.Ctx) error {
	u := h.User(c)
	// An admin types a fresh second factor: the password alone (a
	// session that has not passed the second factor) must not sign the
	// admin out everywhere and revoke every token, again and again.
	if r, err := h.freshSecondFactor(c, u); err != nil {
		return err
	} else if r != nil {
		v, err := h.accountWithName(c)
		if err != nil {
			return err
		}
		v.SignOutErrorKey, v.SignOutErrorArgs = r.key, r.args
		return h.Render(c, r.status, views.Account(h.Page(c, "account.title"), v))
	}
	n, err := h.Auth.EndAllSessions(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	h.Log.Info("user signed out everywhere", "user", u.ID, "sessions", n)
	h.SignedOut(c)
	return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
}

// nextParam is the page to return to after signing in, if it is safe.
func (h *handlers) nextParam(c *fiber.Ctx) string {
	if n := c.Query("next"); h.SafeNext(n) {
		return n
	}
	return ""
}
