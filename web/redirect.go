package web

import (
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/routes"
)

// movedTo answers an old GET address (a routes.Redirect's From) with 301
// to its new one, the same parameters in place and the query string kept:
// a bookmark or a link in an old mail to /admin/payments?status=failed
// opens /admin/topups?status=failed.
func movedTo(r routes.Redirect) fiber.Handler {
	names := routes.Params(r.To)
	return func(c *fiber.Ctx) error {
		args := make([]string, len(names))
		for i, name := range names {
			// The raw segment, unescaped, since Fill escapes it again.
			v, err := url.PathUnescape(c.Params(name))
			if err != nil {
				return fiber.ErrNotFound
			}
			args[i] = v
		}
		loc := routes.Fill(r.To, args...)
		if q := c.Request().URI().QueryString(); len(q) > 0 {
			loc += "?" + string(q)
		}
		return c.Redirect(loc, fiber.StatusMovedPermanently)
	}
}
