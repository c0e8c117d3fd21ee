package web

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

func (s *Server) signUpForm(c *fiber.Ctx) error {
	if currentUser(c) != nil {
		return c.Redirect(routes.Wallet, fiber.StatusSeeOther)
	}
	return render(c, fiber.StatusOK, views.SignUp(s.page(c, "signup.title"), views.AuthForm{}))
}

func (s *Server) signUp(c *fiber.Ctx) error {
	email, password := c.FormValue("email"), c.FormValue("password")
	u, err := s.Auth.SignUp(c.UserContext(), email, password, auth.RoleUser, string(lang(c)))
	if err != nil {
		key := ""
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
		return render(c, fiber.StatusUnprocessableEntity, views.SignUp(s.page(c, "signup.title"), views.AuthForm{Email: email, ErrorKey: key}))
	}
	s.Log.InfoContext(c.UserContext(), "user signed up", "user", u.ID)
	return s.startSession(c, u, routes.Wallet)
}

func (s *Server) signInForm(c *fiber.Ctx) error {
	if currentUser(c) != nil {
		return c.Redirect(routes.Wallet, fiber.StatusSeeOther)
	}
	f := views.AuthForm{Next: nextParam(c)}
	if c.Query("done") == "reset" {
		f.Notice = "reset.done"
	}
	return render(c, fiber.StatusOK, views.SignIn(s.page(c, "signin.title"), f))
}

func (s *Server) signIn(c *fiber.Ctx) error {
	email := c.FormValue("email")
	u, err := s.Auth.Authenticate(c.UserContext(), email, c.FormValue("password"))
	var throttled *auth.ThrottledError
	if errors.As(err, &throttled) {
		secs := int64(throttled.RetryAfter.Seconds() + 0.999)
		c.Set(fiber.HeaderRetryAfter, itoa(secs))
		s.Log.Warn("sign-in throttled", "retry_after_s", secs)
		return render(c, fiber.StatusTooManyRequests, views.SignIn(s.page(c, "signin.title"),
			views.AuthForm{Email: email, ErrorKey: "signin.throttled", ErrorArgs: []any{"seconds", secs}, Next: nextParam(c)}))
	}
	if errors.Is(err, auth.ErrBadCredentials) {
		return render(c, fiber.StatusUnauthorized, views.SignIn(s.page(c, "signin.title"), views.AuthForm{Email: email, ErrorKey: "signin.error", Next: nextParam(c)}))
	}
	if err != nil {
		return err
	}
	next := c.Query("next")
	if !safeNext(next) {
		next = routes.Wallet
	}
	return s.startSession(c, u, next)
}

// startSession signs the browser in with a brand-new session (the old one,
// if any, is ended: no session fixation) and a new CSRF cookie.
func (s *Server) startSession(c *fiber.Ctx, u auth.User, next string) error {
	_ = s.Auth.EndSession(c.UserContext(), c.Cookies(s.sessionCookie))
	tok, exp, err := s.Auth.NewSession(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	s.setCookie(c, s.sessionCookie, tok, exp, true)
	s.rotateCSRF(c, tok)
	return c.Redirect(next, fiber.StatusSeeOther)
}

func (s *Server) signOut(c *fiber.Ctx) error {
	if err := s.Auth.EndSession(c.UserContext(), c.Cookies(s.sessionCookie)); err != nil {
		return err
	}
	s.clearCookie(c, s.sessionCookie)
	s.rotateCSRF(c, "")
	return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
}

// accountPage shows the signed-in account and offers to sign out
// everywhere.
func (s *Server) accountPage(c *fiber.Ctx) error {
	u := currentUser(c)
	n, err := s.Auth.CountSessions(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	on, err := s.Auth.ReceiptsEnabled(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	v := views.AccountView{Email: u.Email, Sessions: n, Receipts: on}
	switch c.Query("done") {
	case "password":
		v.Notice = "password.changed"
	case "receipts":
		v.Notice = "account.receipts_saved"
	}
	return render(c, fiber.StatusOK, views.Account(s.page(c, "account.title"), v))
}

// signOutEverywhere ends every session of the user, on every device and
// instance, this one included.
func (s *Server) signOutEverywhere(c *fiber.Ctx) error {
	u := currentUser(c)
	n, err := s.Auth.EndAllSessions(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	s.Log.Info("user signed out everywhere", "user", u.ID, "sessions", n)
	s.clearCookie(c, s.sessionCookie)
	s.rotateCSRF(c, "")
	return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
}

// nextParam is the page to return to after signing in, if it is safe.
func nextParam(c *fiber.Ctx) string {
	if n := c.Query("next"); safeNext(n) {
		return n
	}
	return ""
}
