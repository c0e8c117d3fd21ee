package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/gateway/callback"
)

// callbackParser reads a request's bank-callback parameters with the
// parser of the payment's gateway (its field names; GET query, or a
// POST's form body too). Our own result page's refresh and
// Post/Redirect/Get URLs carry the token as `Authority` in the query,
// which is accepted on a GET for every gateway (a hint like any other:
// the token must still equal the payment's own).
func (s *Server) callbackParser(c *fiber.Ctx) func(gateway string) (callback.Params, bool) {
	return func(gateway string) (callback.Params, bool) {
		isPost := c.Method() == fiber.MethodPost
		p, ok := s.ParseCallback(gateway, func(k string) string { return c.Query(k) },
			func(k string) string { return c.FormValue(k) }, isPost)
		if !ok && !isPost {
			if tok, good := callback.Token(c.Query(callback.OwnTokenParam)); good {
				return callback.Params{Authority: tok}, true
			}
		}
		return p, ok
	}
}
