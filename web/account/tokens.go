package account

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

// TokenRow is a token as the lists show it at now, the user's own page and
// the admin's alike (owner: "" on the user's own).
func TokenRow(t apitoken.Token, owner string, now time.Time) views.TokenRow {
	state := "active"
	switch {
	case t.RevokedAt != nil:
		state = "revoked"
	case !t.Active(now):
		state = "expired"
	}
	return views.TokenRow{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Scope: string(t.Scope), State: state, Owner: owner,
		CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, ExpiresAt: t.ExpiresAt}
}

func (h *handlers) tokensView(c *fiber.Ctx, v views.TokensView) (views.TokensView, error) {
	v.DefaultDays, _ = h.Tokens.Rules()
	list, err := h.Tokens.ForUser(c.UserContext(), h.User(c).ID)
	if err != nil {
		return v, err
	}
	for _, t := range list {
		v.Tokens = append(v.Tokens, TokenRow(t, "", h.Now()))
	}
	return v, nil
}

// tokensPage is "API access": create, list and revoke personal tokens.
func (h *handlers) tokensPage(c *fiber.Ctx) error {
	v := views.TokensView{}
	if c.Query("done") == "revoked" {
		v.Notice = "tokens.revoked"
	}
	v, err := h.tokensView(c, v)
	if err != nil {
		return err
	}
	return h.Render(c, fiber.StatusOK, views.Tokens(h.Page(c, "tokens.title"), v))
}

// createToken makes a token and shows it once (the answer is not cached
// and not redirected: the secret never appears in a URL or a later page).
// It asks for the password first: a borrowed or stolen session alone
// cannot mint a long-lived credential.
//
// An admin types a fresh second factor too (freshSecondFactor), checked
// first: an admin's token must never come from the password alone.
func (h *handlers) createToken(c *fiber.Ctx) error {
	form := views.TokenForm{Name: h.FormValue(c, "name"), Scope: h.FormValue(c, "scope"), ExpiresDays: h.FormValue(c, "expires_days")}
	status := fiber.StatusOK
	r, err := h.mayAddCredential(c)
	if err != nil {
		return err
	}
	if r != nil {
		form.ErrorKey, form.ErrorArgs = r.key, r.args
		v, err := h.tokensView(c, views.TokensView{Form: form})
		if err != nil {
			return err
		}
		return h.Render(c, r.status, views.Tokens(h.Page(c, "tokens.title"), v))
	}
	err = h.Auth.VerifyPassword(c.UserContext(), h.User(c).ID, h.FormValue(c, "password"))
	var throttled *auth.ThrottledError
	var secret string
	switch {
	case errors.As(err, &throttled):
		secs := seam.RetryAfter(c, throttled.RetryAfter)
		form.ErrorKey, form.ErrorArgs = "tokens.error_throttled", []any{"seconds", secs}
		v, err := h.tokensView(c, views.TokensView{Form: form})
		if err != nil {
			return err
		}
		return h.Render(c, fiber.StatusTooManyRequests, views.Tokens(h.Page(c, "tokens.title"), v))
	case errors.Is(err, auth.ErrBadCredentials):
		err = errWrongPassword
	case err == nil:
		secret, _, err = h.Tokens.Create(c.UserContext(), apitoken.CreateInput{
			UserID: h.User(c).ID, Name: form.Name, Scope: form.Scope, ExpiresDays: form.ExpiresDays,
			Still: auth.SessionLive(h.SessionToken(c)),
		})
	}
	switch {
	case errors.Is(err, auth.ErrNoSession):
		// Signed out everywhere (or the password changed) while the
		// token was being made: no token.
		h.ClearSession(c)
		return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
	case errors.Is(err, errWrongPassword):
		form.ErrorKey = "tokens.error_password"
	case errors.Is(err, apitoken.ErrTooMany):
		_, maxLive := h.Tokens.Rules()
		form.ErrorKey, form.ErrorArgs = "tokens.error_too_many", []any{"max", maxLive}
	case errors.Is(err, apitoken.ErrNameRequired):
		form.ErrorKey = "tokens.error_name"
	case errors.Is(err, apitoken.ErrNameTooLong):
		form.ErrorKey = "tokens.error_name_long"
	case errors.Is(err, apitoken.ErrNameInvalid):
		form.ErrorKey = "tokens.error_name_chars"
	case errors.Is(err, apitoken.ErrBadScope):
		form.ErrorKey = "tokens.error_scope"
	case errors.Is(err, apitoken.ErrNotMerchant):
		form.ErrorKey = "tokens.error_merchant"
	case errors.Is(err, apitoken.ErrBadExpiry):
		form.ErrorKey = "tokens.error_expiry"
	case errors.Is(err, owner.ErrUnconfirmed):
		// The service's own refusal (the session's check above answers
		// first; this one holds whatever the session read).
		form.ErrorKey, status = "verify.needed", fiber.StatusForbidden
	case err != nil:
		return err
	}
	v := views.TokensView{}
	if form.ErrorKey != "" {
		if status == fiber.StatusOK {
			status = fiber.StatusUnprocessableEntity
		}
		v.Form = form
	} else {
		v.NewToken = secret
		h.Log.Info("api token created", "user", h.User(c).ID)
	}
	v, err = h.tokensView(c, v)
	if err != nil {
		return err
	}
	return h.Render(c, status, views.Tokens(h.Page(c, "tokens.title"), v))
}

// revokeToken revokes one of the signed-in user's tokens.
func (h *handlers) revokeToken(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	switch err := h.Tokens.Revoke(c.UserContext(), h.User(c).ID, id); {
	case errors.Is(err, apitoken.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	return c.Redirect(routes.Tokens+"?done=revoked", fiber.StatusSeeOther)
}
