package web

import (
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
)

// metrics serves the Prometheus metrics (internal/metrics). It answers
// only to METRICS_TOKEN given as "Authorization: Bearer <token>" (the
// scheme in any case, as RFC 9110 §11.1 says); anything else (no header,
// another scheme, a token in the URL) is a 404.
func (s *Server) metrics(c *fiber.Ctx) error {
	want := s.Config.MetricsToken
	scheme, token, _ := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	token = strings.TrimLeft(token, " ")
	if want == "" || s.Metrics == nil || !strings.EqualFold(scheme, "Bearer") ||
		subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return adaptor.HTTPHandler(s.Metrics.Handler())(c)
}

// observe times every request by its route pattern (not its path: ids stay
// out of the labels).
func (s *Server) observe(c *fiber.Ctx) error {
	if s.Metrics == nil {
		return c.Next()
	}
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		var fe *fiber.Error
		if errors.As(err, &fe) {
			status = fe.Code
		} else {
			status = fiber.StatusInternalServerError
		}
	}
	// The pattern of the handler that answered: a route ("/topups/:id"),
	// or the prefix of the middleware that stopped the request ("/admin");
	// the final catch-all answers everything else.
	route := "unmatched"
	if r := c.Route(); r != nil && (r.Path != "/" || c.Path() == "/") {
		route = r.Path
	}
	s.Metrics.ObserveHTTP(route, c.Method(), status, time.Since(start))
	return err
}
