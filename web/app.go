// Package web is Kifpool's HTTP layer: the Fiber app, its middleware and
// one thin handler per action (parse, call the domain, render).
package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/gofiber/fiber/v2/middleware/limiter"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/metrics"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/static"
	"github.com/kifpool/kifpool/web/seam"
)

// Deps are the web layer's explicit dependencies: what the middleware and
// the page shell need, and the features, each with its own Deps (built by
// internal/server).
type Deps struct {
	Config config.Config
	// Auth finds the signed-in user behind a session cookie and saves a
	// user's language choice.
	Auth *auth.Service
	// Features are the app's parts by audience, registered in web's
	// order (New).
	Features Features
	// GatewayLabel names a stored gateway for people (the registry's
	// labels, marked "sandbox" for the built-in bank's payments); nil:
	// the stored name.
	GatewayLabel func(stored string) string
	// Metrics, when set, observes every request and serves GET /metrics.
	Metrics *metrics.Metrics
	// Bank, when set, is the built-in sandbox bank, served under /sandbank.
	Bank http.Handler
	// Probes answer the health and readiness checks.
	Probes Probes
	// RateLimits turns on the per-IP limits on sign-in, sign-up and the
	// like (on in serve; tests that hammer one route turn it off).
	RateLimits bool
	Log        *slog.Logger
	Now        func() time.Time
}

// Features are the web app's parts by audience. Each registers its own
// routes; web decides where in the middleware chain each goes.
type Features struct {
	// API is the JSON API (web/api): bearer tokens only, registered before
	// the cookie session and the CSRF check.
	API seam.Feature
	// Return is the bank's return (web/pay's Deps.Return): without the
	// payer's session cookie (a POST from the bank carries no SameSite=Lax
	// cookie) and without a CSRF token, registered before the CSRF check,
	// its one exemption.
	Return seam.Feature
	// Account (web/account), Wallet (web/wallet), Pay (web/pay) and
	// Withdraw (web/withdraw: bank accounts, withdrawals) are the payer's
	// pages; Merchant (web/merchant) is "Pay with Kifpool": the payer's
	// checkout and the merchant's page; Admin (web/admin) is the admin
	// console, registered last.
	Account, Wallet, Pay, Withdraw, Merchant, Admin seam.Feature
}

// Probes are the checks behind /healthz and /readyz.
type Probes struct {
	// Health checks what the app needs to serve (the database); nil: none.
	Health func(ctx context.Context) error
	// Ready checks that the app may take traffic: the database answers
	// and its schema is at this build's latest migration; nil: Health.
	Ready func(ctx context.Context) error
}

// Server holds the handlers' dependencies.
type Server struct {
	Deps
	csrfKey      []byte
	formAction   string
	imgSrc       string // the CSP's img-src: the app's own, and the operator's seal (ENAMAD_HTML)
	secureCookie bool
	trusted      []*net.IPNet
	baseHost     string // BASE_URL's host: requests for another are redirected there
	baseScheme   string
	// Cookie names: with the __Host- prefix under https.
	sessionCookie, csrfCookie string
	// The Content-Security-Policy before and after its per-request nonce.
	cspBefore, cspAfter string
	// csrfMACs are reusable CSRF token computations (csrfToken).
	csrfMACs sync.Pool
}

// MaxBodyBytes is the largest request body accepted (413 beyond it, read
// no further): every form and API body is far smaller.
const MaxBodyBytes = 64 * 1024

// New builds the Fiber app with every route.
func New(d Deps) *fiber.App {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	for _, f := range []seam.Feature{d.Features.API, d.Features.Return, d.Features.Account, d.Features.Wallet, d.Features.Pay, d.Features.Withdraw, d.Features.Merchant, d.Features.Admin} {
		if f == nil {
			panic("web: every feature is required (Deps.Features)")
		}
	}
	s := &Server{Deps: d, csrfKey: d.Config.SessionSecret, secureCookie: d.Config.Secure(), trusted: parseTrusted(d.Config.TrustedProxies)}
	s.baseHost = hostOf(d.Config.BaseURL)
	if u, err := url.Parse(d.Config.BaseURL); err == nil {
		s.baseScheme = u.Scheme
	}
	s.sessionCookie, s.csrfCookie = cookieSession, cookieCSRF
	if s.secureCookie {
		s.sessionCookie, s.csrfCookie = hostPrefix+cookieSession, hostPrefix+cookieCSRF
	}
	s.imgSrc = strings.Join(append([]string{"'self'", "data:"}, d.Config.Operator.SealOrigins...), " ")
	s.formAction = "'self'"
	for _, name := range d.Config.Gateways {
		if gw := d.Config.GatewayURLOf(name); gw != "" && !strings.HasPrefix(gw, d.Config.BaseURL) {
			if u, err := url.Parse(gw); err == nil && u.Host != "" && !strings.Contains(s.formAction, " "+u.Scheme+"://"+u.Host) {
				s.formAction += " " + u.Scheme + "://" + u.Host
			}
		}
	}

	s.cspBefore = "default-src 'self'; script-src 'self' 'nonce-"
	s.cspAfter = "'; style-src 'self'; img-src " + s.imgSrc + "; form-action " + s.formAction + "; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

	// Reading one request (headers and body) is bounded from its start,
	// not per byte: a client trickling bytes is cut off all the same.
	readTimeout := d.Config.HTTPReadTimeout
	app := fiber.New(fiber.Config{
		AppName:               "kifpool",
		Immutable:             true, // values from the context outlive the handler safely
		DisableStartupMessage: true,
		BodyLimit:             MaxBodyBytes,
		ReadTimeout:           readTimeout,
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           90 * time.Second,
		ErrorHandler:          s.errorHandler,
		// Behind a reverse proxy, forwarded scheme and host are believed
		// only from the proxies named; the client's address for rate
		// limits comes from clientIP.
		EnableTrustedProxyCheck: len(d.Config.TrustedProxies) > 0,
		TrustedProxies:          d.Config.TrustedProxies,
	})
	app.Use(recover.New())
	app.Use(strictFraming)
	app.Use(s.requestID)
	app.Use(s.observe)
	app.Use(s.accessLog)

	// Answered under any name of the app, so registered before
	// canonicalHost (which redirects everything after it to BASE_URL's
	// host): health and readiness checks and metrics scrapes address an
	// instance by its IP, and the API authenticates with a bearer token,
	// not a cookie (a redirect to another host would make clients drop the
	// Authorization header: a confusing 401).
	anyHost := func(h ...fiber.Handler) []fiber.Handler {
		return append([]fiber.Handler{s.securityHeaders, cleanInput}, h...)
	}
	app.Get(routes.Healthz, anyHost(s.healthz)...)
	app.Get(routes.Readyz, anyHost(s.readyz)...)
	app.Get(routes.Metrics, anyHost(s.metrics)...)
	// The JSON API: bearer tokens only. It is registered before the cookie
	// session and CSRF middleware, and answers everything under its prefix
	// itself, so neither ever runs for it.
	app.Use(routes.APIAll, s.securityHeaders, cleanInput)
	shared := s.shared()
	d.Features.API.Register(app, shared)

	// Before anything else reads or sets a cookie: one host name only.
	app.Use(s.canonicalHost)
	app.Use(s.securityHeaders)
	app.Use(cleanInput)
	// The top-ups' pages and lists at their old addresses (before the
	// rename, a top-up was called a payment): 301 to the new ones, before
	// the session is read (a redirect shows nothing; the new address
	// checks who may see it).
	for _, r := range routes.Redirects() {
		app.Get(r.From, movedTo(r))
	}

	app.Use(routes.Static, filesystem.New(filesystem.Config{Root: http.FS(static.FS), MaxAge: 3600}))
	if d.Bank != nil {
		bank := adaptor.HTTPHandler(detached(http.StripPrefix(routes.Sandbank, d.Bank)))
		app.All(routes.SandbankAll, func(c *fiber.Ctx) error {
			// The bank's pages send a policy of their own (its form posts
			// to the merchant): one policy per answer, never two (a
			// browser would enforce both). The app's stays on the bank's
			// other answers.
			appCSP := string(c.Response().Header.Peek(fiber.HeaderContentSecurityPolicy))
			c.Response().Header.Del(fiber.HeaderContentSecurityPolicy)
			err := bank(c)
			if len(c.Response().Header.Peek(fiber.HeaderContentSecurityPolicy)) == 0 {
				c.Set(fiber.HeaderContentSecurityPolicy, appCSP)
			}
			return err
		})
	}

	app.Use(s.language)
	app.Use(s.session)
	// The bank's callback works without the user's session (a POST from
	// the bank carries no SameSite=Lax cookie) and without a CSRF token:
	// it is registered before the CSRF check, its one exemption (at its
	// new address and at its old one, which banks hold for top-ups
	// started before the rename). Its page
	// still gets the CSRF cookie and token for the forms it shows.
	app.Use(routes.TopUpReturnPattern, s.issueCSRF, s.rememberLocale)
	app.Use(routes.LegacyTopUpReturnPattern, s.issueCSRF, s.rememberLocale)
	d.Features.Return.Register(app, shared)
	app.Use(s.csrf)
	app.Use(s.rememberLocale)

	d.Features.Wallet.Register(app, shared)
	d.Features.Account.Register(app, shared)
	d.Features.Pay.Register(app, shared)
	d.Features.Withdraw.Register(app, shared)
	d.Features.Merchant.Register(app, shared)
	// The admin console, registered last: its second-factor page before
	// the admin group's middleware, then the group.
	d.Features.Admin.Register(app, shared)
	app.Use(seam.NotFound)
	return app
}

// healthz answers 200 "ok" when the app can serve (its database answers),
// 503 otherwise, for load balancers and orchestrators.
func (s *Server) healthz(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	if s.Probes.Health != nil {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
		defer cancel()
		if err := s.Probes.Health(ctx); err != nil {
			s.Log.ErrorContext(c.UserContext(), "health check failed", "err", err)
			return c.Status(fiber.StatusServiceUnavailable).SendString("unavailable")
		}
	}
	return c.SendString("ok")
}

// readyz answers 200 "ready" when the app may take traffic: the database
// answers and no migration of this build is pending; 503 otherwise.
func (s *Server) readyz(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	check := s.Probes.Ready
	if check == nil {
		check = s.Probes.Health
	}
	if check != nil {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
		defer cancel()
		if err := check(ctx); err != nil {
			s.Log.WarnContext(c.UserContext(), "not ready", "err", err)
			return c.Status(fiber.StatusServiceUnavailable).SendString("not ready")
		}
	}
	return c.SendString("ready")
}

// limitPage allows max requests a minute per key (0: no limit); above it,
// page answers with the seconds to wait (Retry-After is set).
func (s *Server) limitPage(max int, key func(*fiber.Ctx) string, page func(c *fiber.Ctx, secs int64) error) fiber.Handler {
	if !s.RateLimits || max <= 0 {
		return func(c *fiber.Ctx) error { return c.Next() }
	}
	return limiter.New(limiter.Config{
		Max: max, Expiration: time.Minute, KeyGenerator: key,
		LimiterMiddleware: limiter.SlidingWindow{},
		LimitReached: func(c *fiber.Ctx) error {
			secs, err := strconv.ParseInt(string(c.Response().Header.Peek(fiber.HeaderRetryAfter)), 10, 64)
			if err != nil || secs < 1 {
				secs = 1
				c.Set(fiber.HeaderRetryAfter, "1")
			}
			return page(c, secs)
		},
	})
}

// errorHandler renders every error as a page: no stack traces, no raw Go
// errors. Details go to the log.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	code := fiber.StatusInternalServerError
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code = fe.Code
	}
	key := "error.internal"
	switch code {
	case fiber.StatusNotFound:
		key = "error.not_found"
	case fiber.StatusMethodNotAllowed:
		key = "error.method"
	case fiber.StatusRequestEntityTooLarge, fiber.StatusRequestURITooLong, fiber.StatusRequestHeaderFieldsTooLarge:
		key = "error.too_large"
	case fiber.StatusTooManyRequests:
		key = "error.too_many"
	case fiber.StatusForbidden:
		key = "error.forbidden"
	case fiber.StatusBadRequest:
		key = "error.bad_request"
	default:
		if code >= 400 && code < 500 {
			// The request's fault, whatever it was: never "something
			// went wrong on our side".
			key = "error.bad_request"
		}
	}
	if code >= 500 {
		s.Log.ErrorContext(c.UserContext(), "request failed", "path", loggedPath(c), "err", err)
	}
	if a, ok := s.Features.API.(seam.ErrorAnswerer); ok && underAPI(c.Path()) {
		// A partner's client reads problem+json, never a page: a request
		// refused before the API's handlers ran (framing, input, size) or
		// a recovered panic.
		return a.AnswerError(c, code)
	}
	c.Response().ResetBody()
	if code >= 500 && c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead && movesMoney(c.Path()) {
		// A form sent (a top-up, a transfer, a payment, a withdrawal)
		// whose outcome we could not tell: not "try again", which could
		// make a second one from a new form, but look first. A repeat of
		// the same form is answered as its first submit was.
		return s.message(c, code, "error.internal_title", "error.internal_post", routes.Wallet, "nav.back_wallet")
	}
	return s.message(c, code, key+"_title", key, routes.Home, "nav.home")
}

// movesMoney reports whether path is a payer's or a merchant's form that
// moves money (a top-up, a transfer, a withdrawal and its cancel, a
// checkout, a merchant's capture or refund), whose unknown outcome the
// error page must not answer with "try again".
func movesMoney(path string) bool {
	for _, prefix := range []string{routes.Wallet + "/", routes.Checkouts + "/", routes.Merchant + "/", routes.TopUps + "/", routes.Withdrawals + "/"} {
		if strings.HasPrefix(strings.ToLower(path), prefix) {
			return true
		}
	}
	return false
}

// underAPI reports whether path is the API's, in any case of its letters
// (as routing matches it).
func underAPI(path string) bool {
	p := strings.ToLower(path)
	return p == routes.API || strings.HasPrefix(p, routes.API+"/")
}

// detached hands h a request whose strings are its own. Fiber's adaptor
// builds the net/http request over fasthttp's buffers (its URL, host and
// header strings point into memory fasthttp reuses for the connection's
// next request), and the built-in bank keeps what a request says (a
// token from the path, a header) in its state, which it saves to
// DATA_DIR after the answer: kept as is, those strings would change under
// it.
func detached(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.Clone(r.Context())
		c.Method, c.Host, c.RemoteAddr, c.RequestURI = strings.Clone(r.Method), strings.Clone(r.Host), strings.Clone(r.RemoteAddr), strings.Clone(r.RequestURI)
		if u, err := url.Parse(strings.Clone(r.URL.String())); err == nil {
			c.URL = u
		}
		c.Header = make(http.Header, len(r.Header))
		for k, vs := range r.Header {
			cp := make([]string, len(vs))
			for i, v := range vs {
				cp[i] = strings.Clone(v)
			}
			c.Header[strings.Clone(k)] = cp
		}
		h.ServeHTTP(w, c)
	})
}
