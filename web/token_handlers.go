package web

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

func tokenRow(t apitoken.Token, owner string, s *Server) views.TokenRow {
	state := "active"
	switch {
	case t.RevokedAt != nil:
		state = "revoked"
	case !t.Active(s.Now()):
		state = "expired"
	}
	return views.TokenRow{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Scope: string(t.Scope), State: state, Owner: owner,
		CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, ExpiresAt: t.ExpiresAt}
}

func (s *Server) tokensView(c *fiber.Ctx, v views.TokensView) (views.TokensView, error) {
	v.DefaultDays, _ = s.Tokens.Rules()
	list, err := s.Tokens.ForUser(c.UserContext(), currentUser(c).ID)
	if err != nil {
		return v, err
	}
	for _, t := range list {
		v.Tokens = append(v.Tokens, tokenRow(t, "", s))
	}
	return v, nil
}

// tokensPage is "API access": create, list and revoke personal tokens.
func (s *Server) tokensPage(c *fiber.Ctx) error {
	v := views.TokensView{}
	if c.Query("done") == "revoked" {
		v.Notice = "tokens.revoked"
	}
	v, err := s.tokensView(c, v)
	if err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.Tokens(s.page(c, "tokens.title"), v))
}

// createToken makes a token and shows it once (the answer is not cached
// and not redirected: the secret never appears in a URL or a later page).
// It asks for the password first: a borrowed or stolen session alone
// cannot mint a long-lived credential.
//
// An admin types a fresh second factor too (freshSecondFactor), checked
// first: an admin's token must never come from the password alone.
func (s *Server) createToken(c *fiber.Ctx) error {
	form := views.TokenForm{Name: c.FormValue("name"), Scope: c.FormValue("scope"), ExpiresDays: c.FormValue("expires_days")}
	status := fiber.StatusOK
	if r, err := s.freshSecondFactor(c, currentUser(c)); err != nil {
		return err
	} else if r != nil {
		form.ErrorKey, form.ErrorArgs = r.key, r.args
		v, err := s.tokensView(c, views.TokensView{Form: form})
		if err != nil {
			return err
		}
		return render(c, r.status, views.Tokens(s.page(c, "tokens.title"), v))
	}
	err := s.Auth.VerifyPassword(c.UserContext(), currentUser(c).ID, c.FormValue("password"))
	var throttled *auth.ThrottledError
	var secret string
	switch {
	case errors.As(err, &throttled):
		secs := retryAfter(c, throttled.RetryAfter)
		form.ErrorKey, form.ErrorArgs = "tokens.error_throttled", []any{"seconds", secs}
		v, err := s.tokensView(c, views.TokensView{Form: form})
		if err != nil {
			return err
		}
		return render(c, fiber.StatusTooManyRequests, views.Tokens(s.page(c, "tokens.title"), v))
	case errors.Is(err, auth.ErrBadCredentials):
		err = errWrongPassword
	case err == nil:
		secret, _, err = s.Tokens.Create(c.UserContext(), apitoken.CreateInput{
			UserID: currentUser(c).ID, Name: form.Name, Scope: form.Scope, ExpiresDays: form.ExpiresDays,
			Still: auth.SessionLive(c.Cookies(s.sessionCookie)),
		})
	}
	switch {
	case errors.Is(err, auth.ErrNoSession):
		// Signed out everywhere (or the password changed) while the
		// token was being made: no token.
		s.clearCookie(c, s.sessionCookie)
		return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
	case errors.Is(err, errWrongPassword):
		form.ErrorKey = "tokens.error_password"
	case errors.Is(err, apitoken.ErrTooMany):
		_, maxLive := s.Tokens.Rules()
		form.ErrorKey, form.ErrorArgs = "tokens.error_too_many", []any{"max", maxLive}
	case errors.Is(err, apitoken.ErrNameRequired):
		form.ErrorKey = "tokens.error_name"
	case errors.Is(err, apitoken.ErrNameTooLong):
		form.ErrorKey = "tokens.error_name_long"
	case errors.Is(err, apitoken.ErrNameInvalid):
		form.ErrorKey = "tokens.error_name_chars"
	case errors.Is(err, apitoken.ErrBadScope):
		form.ErrorKey = "tokens.error_scope"
	case errors.Is(err, apitoken.ErrBadExpiry):
		form.ErrorKey = "tokens.error_expiry"
	case err != nil:
		return err
	}
	v := views.TokensView{}
	if form.ErrorKey != "" {
		status, v.Form = fiber.StatusUnprocessableEntity, form
	} else {
		v.NewToken = secret
		s.Log.Info("api token created", "user", currentUser(c).ID)
	}
	v, err = s.tokensView(c, v)
	if err != nil {
		return err
	}
	return render(c, status, views.Tokens(s.page(c, "tokens.title"), v))
}

func tokenIDParam(c *fiber.Ctx) (int64, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fiber.ErrNotFound
	}
	return id, nil
}

// revokeToken revokes one of the signed-in user's tokens.
func (s *Server) revokeToken(c *fiber.Ctx) error {
	id, err := tokenIDParam(c)
	if err != nil {
		return err
	}
	switch err := s.Tokens.Revoke(c.UserContext(), currentUser(c).ID, id); {
	case errors.Is(err, apitoken.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	return c.Redirect(routes.Tokens+"?done=revoked", fiber.StatusSeeOther)
}
