package web

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// adminTokensPage lists every user's tokens (optionally by email).
func (s *Server) adminTokensPage(c *fiber.Ctx) error {
	filter := c.Query("email")
	rows, err := s.Tokens.All(c.UserContext(), filter, 200)
	if err != nil {
		return err
	}
	v := views.AdminTokensView{Filter: filter}
	if c.Query("done") == "revoked" {
		v.Notice = "tokens.admin_revoked"
	}
	for _, r := range rows {
		v.Tokens = append(v.Tokens, tokenRow(r.Token, r.Email, s))
	}
	return render(c, fiber.StatusOK, views.AdminTokens(s.page(c, "tokens.admin_title"), v))
}

// adminRevokeToken revokes any user's token; the audit log records it.
func (s *Server) adminRevokeToken(c *fiber.Ctx) error {
	id, err := tokenIDParam(c)
	if err != nil {
		return err
	}
	t, err := s.Tokens.AdminRevoke(c.UserContext(), currentUser(c).ID, id)
	switch {
	case errors.Is(err, apitoken.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	s.Log.Warn("admin revoked an api token", "token", t.ID, "owner", t.UserID, "admin", currentUser(c).ID)
	return c.Redirect(routes.AdminTokens+"?done=revoked", fiber.StatusSeeOther)
}
