package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/gateway/callback"
)

// callbackOf parses a request's bank-callback parameters.
func callbackOf(c *fiber.Ctx) (callback.Params, bool) {
	return callback.Parse(func(k string) string { return c.Query(k) },
		func(k string) string { return c.FormValue(k) }, c.Method() == fiber.MethodPost)
}
