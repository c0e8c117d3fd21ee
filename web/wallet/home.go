package wallet

import (
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// home sends the signed-in to their wallet; the signed-out get what
// Kifpool is, and the way in.
func (h *handlers) home(c *fiber.Ctx) error {
	if h.User(c) != nil {
		return c.Redirect(routes.Wallet, fiber.StatusSeeOther)
	}
	offers, err := h.TopUps.Offered(c.UserContext())
	if err != nil {
		return err
	}
	var names []string
	for _, o := range offers {
		names = append(names, h.GatewayName(c, o.Name))
	}
	return h.Render(c, fiber.StatusOK, views.Landing(h.Page(c, "landing.title"), names))
}
