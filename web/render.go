package web

import (
	"net/url"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/views"
)

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
