package account

import (
	"time"

	"github.com/gofiber/fiber/v2"
)

// endSession ends the browser's old session (token; "" for none) before
// userID is signed in on a new one.
func (h *handlers) endSession(c *fiber.Ctx, token string) error {
	if token == "" {
		return nil
	}
	return h.Auth.EndSession(c.UserContext(), token)
}

// newSession makes a new session of userID.
func (h *handlers) newSession(c *fiber.Ctx, userID int64) (string, time.Time, error) {
	return h.Auth.NewSession(c.UserContext(), userID)
}
