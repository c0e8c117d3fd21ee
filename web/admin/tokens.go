package admin

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/routes"
	adminview "github.com/kifpool/kifpool/views/admin"
	"github.com/kifpool/kifpool/web/account"
	"github.com/kifpool/kifpool/web/seam"
)

// tokens lists every user's tokens (optionally by email).
func (h *handlers) tokens(c *fiber.Ctx) error {
	filter := c.Query("email")
	rows, err := h.Tokens.All(c.UserContext(), filter, 200)
	if err != nil {
		return err
	}
	v := adminview.TokensView{Filter: filter}
	if c.Query("done") == "revoked" {
		v.Notice = "tokens.admin_revoked"
	}
	for _, r := range rows {
		v.Tokens = append(v.Tokens, account.TokenRow(r.Token, r.Email, h.Now()))
	}
	return h.Render(c, fiber.StatusOK, adminview.Tokens(h.Page(c, "tokens.admin_title"), v))
}

// revokeToken revokes any user's token; the audit log records it.
func (h *handlers) revokeToken(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	t, err := h.Tokens.AdminRevoke(c.UserContext(), h.User(c).ID, id)
	switch {
	case errors.Is(err, apitoken.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	h.Log.Warn("admin revoked an api token", "token", t.ID, "owner", t.UserID, "admin", h.User(c).ID)
	return c.Redirect(routes.AdminTokens+"?done=revoked", fiber.StatusSeeOther)
}
