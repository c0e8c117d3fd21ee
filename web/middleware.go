package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/routes"
)

const (
	cookieSession = "kp_session"
	cookieCSRF    = "kp_csrf"
	// hostPrefix is put before the session and CSRF cookies' names under
	// https: a browser accepts a __Host- cookie only from this very host
	// (Secure, Path=/, no Domain), so a sibling subdomain cannot plant or
	// overwrite them.
	hostPrefix   = "__Host-"
	cookieLang   = "lang"
	localUser    = "user"
	localSession = "session"
	localLang    = "lang"
	localNonce   = "nonce"
	localCSRF    = "csrf"
)

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// random16 is 16 bytes from crypto/rand as 22 base64url characters: a
// CSP nonce or a request id, with one allocation (the string).
func random16() string {
	var b [16]byte
	var out [22]byte
	_, _ = rand.Read(b[:])
	base64.RawURLEncoding.Encode(out[:], b[:])
	return string(out[:])
}

func (s *Server) accessLog(c *fiber.Ctx) error {
	// Nothing to build or box when the level drops the line (LOG_LEVEL
	// above info, as in a busy deployment).
	if !s.Log.Enabled(c.UserContext(), slog.LevelInfo) {
		return c.Next()
	}
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		if fe, ok := err.(*fiber.Error); ok {
			status = fe.Code
		} else {
			status = fiber.StatusInternalServerError
		}
	}
	// The path only: query strings can carry gateway parameters.
	s.Log.InfoContext(c.UserContext(), "http", "method", c.Method(), "path", loggedPath(c), "status", status,
		"duration_ms", time.Since(start).Milliseconds())
	return err
}

// secretPaths are the patterns whose last segment is a link's secret
// token: a password reset link (it sets the account's password for 30
// minutes) and an address's confirmation link.
func secretPaths() [2]string {
	return [2]string{routes.PasswordResetPattern, routes.EmailVerifyPattern}
}

// loggedPath is the request's path as a log line may hold it: a secret
// link's token is never written, only which kind of link the path was; in
// any case of its letters, as routing matches it (a mail gateway may
// rewrite a link).
func loggedPath(c *fiber.Ctx) string {
	p := c.Path()
	for _, pattern := range secretPaths() {
		if strings.HasPrefix(strings.ToLower(p), strings.TrimSuffix(pattern, ":token")) {
			return pattern
		}
	}
	return p
}

// plainRequestID reports whether a caller's X-Request-Id is a plain token
// we may echo and log: 8 to 64 of A–Z, a–z, 0–9, '.', '_', ':', '-'.
func plainRequestID(id []byte) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for _, b := range id {
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}

// requestID gives every request an id: the caller's X-Request-Id when it
// is a plain token (a proxy's), a fresh one otherwise. It is sent back in
// X-Request-Id and put in the request's context, so every line logged
// with that context carries it.
func (s *Server) requestID(c *fiber.Ctx) error {
	var id string
	if raw := c.Request().Header.Peek(fiber.HeaderXRequestID); plainRequestID(raw) {
		id = string(raw)
	} else {
		id = random16()
	}
	c.Set(fiber.HeaderXRequestID, id)
	c.Locals("requestid", id)
	c.SetUserContext(logging.WithRequestID(c.UserContext(), id))
	return c.Next()
}

// securityHeaders sets a strict CSP with a per-request nonce and the usual
// hardening headers. Referrer-Policy is same-origin (not no-referrer) so
// that same-site form posts keep their Referer.
func (s *Server) securityHeaders(c *fiber.Ctx) error {
	nonce := random16()
	c.Locals(localNonce, nonce)
	// The policy around the nonce is fixed at start (cspBefore,
	// cspAfter); the header is assembled on the stack and copied once.
	var buf [512]byte
	csp := append(append(append(buf[:0], s.cspBefore...), nonce...), s.cspAfter...)
	c.Response().Header.SetBytesV(fiber.HeaderContentSecurityPolicy, csp)
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("Cross-Origin-Opener-Policy", "same-origin")
	if s.secureCookie {
		c.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
	}
	return c.Next()
}

// language picks the page language: ?lang= (remembered in a cookie, then
// redirected away), the cookie, the user's saved locale (session), else
// Persian. Accept-Language is not consulted. A GET changes no server
// state: the signed-in user's saved locale follows the cookie on their
// next state-changing request (rememberLocale), not here.
func (s *Server) language(c *fiber.Ctx) error {
	if q := c.Query("lang"); q != "" && c.Method() == fiber.MethodGet {
		l, ok := i18n.Parse(q)
		if !ok {
			l = i18n.Default
		}
		s.setCookie(c, cookieLang, string(l), time.Now().Add(365*24*time.Hour), false)
		args := c.Request().URI().QueryArgs()
		args.Del("lang")
		// Only ever back to a path on this site ("//evil.example/" is
		// another site to a browser).
		target := "/" + strings.TrimLeft(c.Path(), "/\\")
		if qs := string(args.QueryString()); qs != "" {
			target += "?" + qs
		}
		return c.Redirect(target, fiber.StatusSeeOther)
	}
	// Persian is the product's language: the browser's Accept-Language
	// does not switch it, only the person's own choice does.
	l, ok := i18n.Parse(c.Cookies(cookieLang))
	if !ok {
		l = i18n.Default
	}
	c.Locals(localLang, l)
	return c.Next()
}

func (s *Server) setCookie(c *fiber.Ctx, name, value string, expires time.Time, httpOnly bool) {
	ck := &fiber.Cookie{Name: name, Value: value, Path: "/", HTTPOnly: httpOnly, Secure: s.secureCookie, SameSite: fiber.CookieSameSiteLaxMode}
	if !expires.IsZero() {
		ck.Expires = expires
	}
	c.Cookie(ck)
}

func (s *Server) clearCookie(c *fiber.Ctx, name string) {
	c.Cookie(&fiber.Cookie{Name: name, Value: "", Path: "/", Expires: time.Unix(1, 0), HTTPOnly: true, Secure: s.secureCookie, SameSite: fiber.CookieSameSiteLaxMode})
}

// session loads the signed-in user (and their session) from the session
// cookie.
func (s *Server) session(c *fiber.Ctx) error {
	if tok := c.Cookies(s.sessionCookie); tok != "" {
		u, sess, err := s.Auth.Lookup(c.UserContext(), tok)
		if err == nil {
			c.Locals(localUser, &u)
			c.Locals(localSession, &sess)
			if _, set := i18n.Parse(c.Cookies(cookieLang)); !set {
				if l, ok := i18n.Parse(u.Locale); ok {
					c.Locals(localLang, l)
				}
			}
		} else if err != auth.ErrNoSession {
			return err
		}
	}
	return c.Next()
}

func currentUser(c *fiber.Ctx) *auth.User {
	u, _ := c.Locals(localUser).(*auth.User)
	return u
}

func currentSession(c *fiber.Ctx) *auth.Session {
	sess, _ := c.Locals(localSession).(*auth.Session)
	return sess
}

// requireUser sends someone who is not signed in to sign in, and holds
// an admin whose session has not passed the second factor (signed in
// with the password alone) to reading: their state-changing requests (a
// top-up, a transfer, a payment, a withdrawal, a merchant's capture or
// refund, a new credential, a setting) are refused before any handler
// and sent to the second-factor page, so that someone holding only an
// admin's password moves none of the admin's money and changes nothing
// of theirs. The few acts such a session may still do (the second-factor
// page itself, and acts that only take away) are registered with
// requireUserBeforeSecondFactor instead.
func (s *Server) requireUser(c *fiber.Ctx) error {
	if currentUser(c) == nil {
		return s.toSignIn(c)
	}
	if !safeMethod(c.Method()) && shortOfSecondFactor(currentUser(c), currentSession(c)) {
		s.Log.WarnContext(c.UserContext(), "admin's request without the second factor refused",
			"path", loggedPath(c), "method", c.Method(), "user", currentUser(c).ID)
		return c.Redirect(routes.AdminTwoFactor, fiber.StatusSeeOther)
	}
	return c.Next()
}

// requireUserBeforeSecondFactor is requireUser without the admin's second
// factor: for the second-factor page, and for the acts SECURITY.md lets an
// admin signed in with the password alone do, each of which takes
// something of theirs away and adds nothing (revoking their own API
// token, disabling or deleting their own webhook endpoint, deleting their
// own return origin). Signing out needs no sign-in at all.
func (s *Server) requireUserBeforeSecondFactor(c *fiber.Ctx) error {
	if currentUser(c) == nil {
		return s.toSignIn(c)
	}
	return c.Next()
}

// toSignIn sends a visitor to sign in (back to the page they asked for,
// when it was one).
func (s *Server) toSignIn(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodGet && safeNext(c.OriginalURL()) {
		return c.Redirect(routes.SignIn+"?next="+urlQueryEscape(c.OriginalURL()), fiber.StatusSeeOther)
	}
	return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
}

// safeMethod reports whether a request of this method only reads (GET,
// HEAD): pages stay viewable to an admin short of the second factor.
func safeMethod(m string) bool {
	return m == fiber.MethodGet || m == fiber.MethodHead
}

// shortOfSecondFactor reports whether u is an admin whose session has not
// passed the second factor (or who has no authenticator enrolled yet), as
// the admin console's own check (web/admin) decides it.
func shortOfSecondFactor(u *auth.User, sess *auth.Session) bool {
	if u == nil || !u.IsAdmin() {
		return false
	}
	return sess == nil || sess.SecondFactorAt == nil || u.TOTPConfirmedAt == nil
}

// csrfToken derives the form token from the browser's random CSRF cookie
// with the server secret: a page from another site can neither read the
// cookie nor compute the token, and no server-side state is needed, so
// every instance accepts every other instance's forms. Once signed in, the
// token is also bound to the session: a token made for another session
// (say, an attacker's, with a CSRF cookie planted in the victim's
// browser) is refused, and a token dies with its session.
func (s *Server) csrfToken(cookie, session string) string {
	// The keyed HMAC and its input buffer are reused (a pool): Reset
	// brings an HMAC back to its key's state, and the bytes hashed are
	// the same as ever ("csrf:" + cookie [+ "\x00session:" + session]).
	st, _ := s.csrfMACs.Get().(*csrfMAC)
	if st == nil {
		st = &csrfMAC{mac: hmac.New(sha256.New, s.csrfKey)}
	}
	st.mac.Reset()
	st.in = append(append(st.in[:0], "csrf:"...), cookie...)
	if session != "" {
		st.in = append(append(st.in, "\x00session:"...), session...)
	}
	st.mac.Write(st.in)
	st.sum = st.mac.Sum(st.sum[:0])
	tok := base64.RawURLEncoding.EncodeToString(st.sum)
	// The input held the session token: not kept in the pool.
	clear(st.in)
	s.csrfMACs.Put(st)
	return tok
}

// csrfMAC is one reusable CSRF token computation (Server.csrfMACs).
type csrfMAC struct {
	mac     hash.Hash
	in, sum []byte
}

// boundSession is the session token a CSRF token is bound to: the
// signed-in session's, "" for a visitor.
func (s *Server) boundSession(c *fiber.Ctx) string {
	if currentUser(c) == nil {
		return ""
	}
	return c.Cookies(s.sessionCookie)
}

// csrf checks the token of every state-changing request and makes a
// token available to forms (issueCSRF). The bank's callback is registered
// before it (web.New): its one exemption.
func (s *Server) csrf(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
	default:
		ck := s.csrfCookieValue(c)
		// From the form body or the header, never the query string: a
		// token in a URL leaks through logs, Referer and history.
		sent := formValue(c, "_csrf")
		if sent == "" {
			sent = c.Get("X-CSRF-Token")
		}
		if ck == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(s.csrfToken(ck, s.boundSession(c)))) != 1 || !s.sameOrigin(c) {
			s.Log.WarnContext(c.UserContext(), "csrf check failed", "path", loggedPath(c))
			return s.message(c, fiber.StatusForbidden, "error.csrf_title", "error.csrf", c.Path(), "error.reload")
		}
	}
	return s.issueCSRF(c)
}

// csrfCookieValue is the browser's CSRF cookie ("" when missing or too
// short to be ours).
func (s *Server) csrfCookieValue(c *fiber.Ctx) string {
	ck := c.Cookies(s.csrfCookie)
	if len(ck) < 20 {
		ck = ""
	}
	return ck
}

// issueCSRF gives a browser without one a CSRF cookie and makes the form
// token available to the page's forms; it checks nothing.
func (s *Server) issueCSRF(c *fiber.Ctx) error {
	ck := s.csrfCookieValue(c)
	if ck == "" {
		ck = randomToken(24)
		s.setCookie(c, s.csrfCookie, ck, time.Time{}, true)
	}
	c.Locals(localCSRF, s.csrfToken(ck, s.boundSession(c)))
	return c.Next()
}

// rememberLocale saves the signed-in user's language choice (the lang
// cookie) as their locale (e-mails, a new browser) on a state-changing
// request that passed the CSRF check, never on a GET.
func (s *Server) rememberLocale(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	if u := currentUser(c); u != nil {
		if l, ok := i18n.Parse(c.Cookies(cookieLang)); ok && string(l) != u.Locale {
			if err := s.Auth.SetLocale(c.UserContext(), u.ID, string(l)); err != nil {
				s.Log.WarnContext(c.UserContext(), "save locale", "err", err)
			}
		}
	}
	return c.Next()
}

// rotateCSRF gives the browser a new CSRF cookie (at sign-in and -out),
// bound to the new session token ("" when signed out).
func (s *Server) rotateCSRF(c *fiber.Ctx, session string) {
	ck := randomToken(24)
	s.setCookie(c, s.csrfCookie, ck, time.Time{}, true)
	c.Locals(localCSRF, s.csrfToken(ck, session))
}

// sameOrigin refuses a request whose Origin header names another site.
func (s *Server) sameOrigin(c *fiber.Ctx) bool {
	o := c.Get(fiber.HeaderOrigin)
	if o == "" || o == "null" {
		return o == ""
	}
	return o == s.Config.BaseURL || o == s.requestOrigin(c)
}

// requestOrigin is the scheme://host the request was addressed to. The
// X-Forwarded-Proto and -Host headers are believed only from a proxy named
// in TRUSTED_PROXIES: from anyone else they are whatever the client chose
// to send (Fiber's own Protocol and Hostname believe them from everyone
// when no proxy is configured).
func (s *Server) requestOrigin(c *fiber.Ctx) string {
	scheme, host := "http", string(c.Request().Host())
	if c.Context().IsTLS() {
		scheme = "https"
	}
	if len(s.trusted) > 0 && s.isTrusted(c.Context().RemoteIP()) {
		if p := strings.ToLower(strings.TrimSpace(firstOf(c.Get(fiber.HeaderXForwardedProto)))); p == "http" || p == "https" {
			scheme = p
		}
		if h := strings.TrimSpace(firstOf(c.Get(fiber.HeaderXForwardedHost))); h != "" {
			host = h
		}
	}
	return scheme + "://" + host
}

// firstOf is the first entry of a comma-separated header value.
func firstOf(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return first
}

// safeNext reports whether next is a path on this site to go back to
// after signing in: one leading slash, no backslash, no control or space
// characters (browsers drop tabs and newlines, so "/\t/evil" is "//evil").
func safeNext(next string) bool {
	if len(next) < 1 || len(next) > 512 || next[0] != '/' || strings.HasPrefix(next, "//") {
		return false
	}
	for _, r := range next {
		if r <= ' ' || r == '\\' || r == 0x7f {
			return false
		}
	}
	return true
}

// clientIP is the address rate limits key on. Behind trusted proxies it is
// the right-most X-Forwarded-For address that is not one of them (the
// left-most entries are whatever the client chose to send). An IPv6
// client is its /64 (clientKey): one subscriber holds a whole /64, and
// counted per address it would have 2^64 allowances.
func (s *Server) clientIP(c *fiber.Ctx) string {
	remote := c.Context().RemoteIP()
	if len(s.trusted) == 0 || !s.isTrusted(remote) {
		return clientKey(remote)
	}
	parts := strings.Split(c.Get(fiber.HeaderXForwardedFor), ",")
	for i := len(parts) - 1; i >= 0; i-- {
		ip := net.ParseIP(strings.TrimSpace(parts[i]))
		if ip == nil {
			break
		}
		if !s.isTrusted(ip) {
			return clientKey(ip)
		}
	}
	return clientKey(remote)
}

// clientKey is an address as limits count it: an IPv4 address (also one
// written as IPv4-mapped IPv6) as itself, an IPv6 address as its /64.
func clientKey(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (s *Server) isTrusted(ip net.IP) bool {
	for _, n := range s.trusted {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// parseTrusted turns TRUSTED_PROXIES entries (IPs or CIDRs) into networks.
func parseTrusted(list []string) []*net.IPNet {
	var out []*net.IPNet
	for _, p := range list {
		if ip := net.ParseIP(p); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		if _, n, err := net.ParseCIDR(p); err == nil {
			out = append(out, n)
		}
	}
	return out
}
