package web

import (
	"iter"
	"net/url"
	"slices"
	"strings"

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
		p.User = &views.UserInfo{Email: u.Email, IsAdmin: u.IsAdmin(), IsMerchant: u.Merchant, Unverified: !u.Verified()}
	}
	p.SwitchLangURL = switchLangURL(c.Path(), c.Request().URI().QueryArgs().All(), string(l.Other()))
	return p
}

// switchLangURL is path with its query and lang=other in place of any
// lang: the query as url.Values would encode it (keys sorted, each key's
// values in their order, query-escaped), built without the map.
func switchLangURL(path string, args iter.Seq2[[]byte, []byte], other string) string {
	type pair struct{ k, v string }
	var buf [8]pair
	pairs := buf[:0]
	for k, v := range args {
		if string(k) != "lang" {
			pairs = append(pairs, pair{string(k), string(v)})
		}
	}
	pairs = append(pairs, pair{"lang", other})
	if len(pairs) == 1 {
		return path + "?lang=" + url.QueryEscape(other)
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	var sb strings.Builder
	sb.Grow(len(path) + 64)
	sb.WriteString(path)
	for i, p := range pairs {
		if i == 0 {
			sb.WriteByte('?')
		} else {
			sb.WriteByte('&')
		}
		sb.WriteString(url.QueryEscape(p.k))
		sb.WriteByte('=')
		sb.WriteString(url.QueryEscape(p.v))
	}
	return sb.String()
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
