package web

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/web/seam"
)

// shared is what the app shares with its features (seam.App): its page
// model and rendering, the signed-in user and the session cookie, the
// client's address and the rate-limit pages.
func (s *Server) shared() seam.App {
	return seam.App{
		Page: s.page, Render: render, Message: s.message,
		User: currentUser, Session: currentSession, Lang: lang,
		RequireUser:                   s.requireUser,
		RequireUserBeforeSecondFactor: s.requireUserBeforeSecondFactor,
		FormValue:                     formValue, SafeNext: safeNext,
		GatewayName:   s.gatewayName,
		GatewayNameIn: s.gatewayNameIn,
		SessionToken:  func(c *fiber.Ctx) string { return c.Cookies(s.sessionCookie) },
		PassSession:   s.passSession,
		SignedOut: func(c *fiber.Ctx) {
			s.clearCookie(c, s.sessionCookie)
			s.rotateCSRF(c, "")
			s.setPendingCheckout(c, "") // the browser's next person has no checkout to come back to
			s.setCheckoutDone(c, "")
		},
		ClearSession: func(c *fiber.Ctx) { s.clearCookie(c, s.sessionCookie) },
		ClientIP:     s.clientIP,
		Limit: func(perMinute int, page func(c *fiber.Ctx, secs int64) error) fiber.Handler {
			return s.limitPage(perMinute, s.clientIP, page)
		},
		PendingCheckout:    s.pendingCheckout,
		SetPendingCheckout: s.setPendingCheckout,
		CheckoutDone:       func(c *fiber.Ctx) string { return s.chargeCookie(c, cookieCheckoutDone) },
		SetCheckoutDone:    s.setCheckoutDone,
		Log:                s.Log, Now: s.Now,
	}
}

// cookieCheckout names the checkout a payer left to top up (a charge's
// public id, for half an hour: a checkout's life); cookieCheckoutDone the
// checkout this browser has just paid or canceled (two minutes: its
// outcome's page goes on to the merchant once).
const (
	cookieCheckout     = "checkout"
	cookieCheckoutDone = "checkout_done"
	checkoutDoneFor    = 2 * time.Minute
)

// chargeCookie is the charge id the cookie name holds, only when it holds
// one (never a path or an address: no open redirect can be built from
// it); "" otherwise.
func (s *Server) chargeCookie(c *fiber.Ctx, name string) string {
	if id := c.Cookies(name); charge.ValidPublicID(id) {
		return id
	}
	return ""
}

// setChargeCookie remembers charge publicID in the cookie name for ttl
// ("" forgets it).
func (s *Server) setChargeCookie(c *fiber.Ctx, name, publicID string, ttl time.Duration) {
	if publicID == "" || !charge.ValidPublicID(publicID) {
		if c.Cookies(name) != "" {
			s.clearCookie(c, name)
		}
		return
	}
	// Its life is also given as Max-Age, which a browser counts from
	// now by its own clock: a device whose clock runs ahead (an hour, by
	// an old daylight-saving rule) would take the date alone for the
	// past, and drop the cookie at once.
	ck := &fiber.Cookie{Name: name, Value: publicID, Path: "/", HTTPOnly: true, Secure: s.secureCookie, SameSite: fiber.CookieSameSiteLaxMode,
		Expires: s.Now().Add(ttl), MaxAge: int(ttl / time.Second)}
	c.Cookie(ck)
}

// pendingCheckout is the checkout the payer left to top up.
func (s *Server) pendingCheckout(c *fiber.Ctx) string { return s.chargeCookie(c, cookieCheckout) }

// setPendingCheckout remembers checkout publicID ("" forgets it).
func (s *Server) setPendingCheckout(c *fiber.Ctx, publicID string) {
	s.setChargeCookie(c, cookieCheckout, publicID, charge.DefaultCheckoutTTL)
}

// setCheckoutDone remembers the checkout just paid or canceled ("" forgets
// it).
func (s *Server) setCheckoutDone(c *fiber.Ctx, publicID string) {
	s.setChargeCookie(c, cookieCheckoutDone, publicID, checkoutDoneFor)
}

// passSession gives the browser a session that has just been made or
// passed the second factor: its cookie, and a CSRF token bound to it. A
// checkout remembered before belongs to whoever was signed in then (a
// shared browser): forgotten.
func (s *Server) passSession(c *fiber.Ctx, token string, expires time.Time) {
	s.setCookie(c, s.sessionCookie, token, expires, true)
	s.rotateCSRF(c, token)
	s.setPendingCheckout(c, "")
	s.setCheckoutDone(c, "")
}

// gatewayName names a gateway for the payer, in their language (the
// registry's label for one the catalogue does not name).
func (s *Server) gatewayName(c *fiber.Ctx, name string) string {
	return s.gatewayNameIn(lang(c), name)
}

// gatewayNameIn is gatewayName in the language l.
func (s *Server) gatewayNameIn(l i18n.Lang, name string) string {
	if key := "gateway.name." + name; i18n.Has(l, key) {
		return i18n.T(l, key)
	}
	if s.GatewayLabel == nil {
		return name
	}
	return s.GatewayLabel(name)
}
