package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/gateway/callback"
)

// callbackOf parses a request's bank-callback parameters with the
// gateway driver's own parser (its field names; GET query, or a POST's
// form body too).
func (s *Server) callbackOf(c *fiber.Ctx) (callback.Params, bool) {
	return s.ParseCallback(func(k string) string { return c.Query(k) },
		func(k string) string { return c.FormValue(k) }, c.Method() == fiber.MethodPost)
}
