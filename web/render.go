package web

import (
	"net/url"
	"strconv"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

func lang(c *fiber.Ctx) i18n.Lang {
	if l, ok := c.Locals(localLang).(i18n.Lang); ok {
		return l
	}
	return i18n.Default
}

// page builds what every page needs.
func (s *Server) page(c *fiber.Ctx, titleKey string) views.Page {
	l := lang(c)
	p := views.Page{Lang: l, TitleKey: titleKey, Now: s.Now(), Operator: s.Config.Operator}
	p.CSRF, _ = c.Locals(localCSRF).(string)
	p.Nonce, _ = c.Locals(localNonce).(string)
	if u := currentUser(c); u != nil {
		p.User = &views.UserInfo{Email: u.Email, IsAdmin: u.IsAdmin()}
	}
	args := c.Request().URI().QueryArgs()
	q := url.Values{}
	for k, v := range args.All() {
		q.Add(string(k), string(v))
	}
	q.Set("lang", string(l.Other()))
	p.SwitchLangURL = c.Path() + "?" + q.Encode()
	return p
}

// render writes a component as an HTML page with the given status.
func render(c *fiber.Ctx, status int, comp templ.Component) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return comp.Render(c.UserContext(), c.Response().BodyWriter())
}

func (s *Server) message(c *fiber.Ctx, status int, titleKey, msgKey, linkURL, linkKey string) error {
	return render(c, status, views.Message(s.page(c, titleKey), status, msgKey, linkURL, linkKey))
}

func (s *Server) home(c *fiber.Ctx) error {
	if currentUser(c) != nil {
		return c.Redirect(routes.Wallet, fiber.StatusSeeOther)
	}
	// Signed out: what Kifpool is, and the way in.
	offers, err := s.Payments.Offered(c.UserContext())
	if err != nil {
		return err
	}
	var names []string
	for _, o := range offers {
		names = append(names, s.gatewayName(c, o.Name))
	}
	return render(c, fiber.StatusOK, views.Landing(s.page(c, "landing.title"), names))
}
