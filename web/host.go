package web

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// hostOf is BASE_URL's host as requests name it: lower case, without the
// scheme's default port ("" when BASE_URL cannot be parsed).
func hostOf(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return canonicalHostName(u.Host, u.Scheme)
}

// canonicalHostName lower-cases a Host header and drops the default port
// of scheme, so that "Localhost:80" and "localhost" compare equal for http.
func canonicalHostName(host, scheme string) string {
	host = strings.ToLower(strings.TrimSpace(host))
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	}
	return host
}

// requestHost is the host the client asked for: the Host header, or the
// X-Forwarded-Host a trusted reverse proxy passes on.
func (s *Server) requestHost(c *fiber.Ctx) string {
	if len(s.trusted) > 0 && s.isTrusted(c.Context().RemoteIP()) {
		if fh := firstOf(c.Get(fiber.HeaderXForwardedHost)); fh != "" {
			return canonicalHostName(fh, s.baseScheme)
		}
	}
	return canonicalHostName(string(c.Request().Header.Host()), s.baseScheme)
}

// canonicalHost sends a request for another name of this app (say
// http://127.0.0.1:8080 while BASE_URL is http://localhost:8080) to the
// same path and query on BASE_URL's host, before anything reads or sets a
// cookie: cookies belong to a host name, so a session or a CSRF cookie set
// on one name is unknown on the other, and the bank brings the payer back
// to BASE_URL. 307 keeps the method and body (a form post, the bank's
// callback) and is not cached for good, so a changed BASE_URL takes effect
// at once. What is answered under any name (health and readiness checks,
// metrics scrapes, the API) is registered before this middleware (web.New).
func (s *Server) canonicalHost(c *fiber.Ctx) error {
	if s.baseHost == "" {
		return c.Next()
	}
	if s.requestHost(c) == s.baseHost {
		return c.Next()
	}
	path := string(c.Request().URI().PathOriginal())
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	target := s.Config.BaseURL + path
	if qs := c.Request().URI().QueryString(); len(qs) > 0 {
		target += "?" + string(qs)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Redirect(target, fiber.StatusTemporaryRedirect)
}
