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
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/gofiber/fiber/v2/middleware/limiter"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/metrics"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/static"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/admin"
	"github.com/kifpool/kifpool/web/api"
)

// Deps are the web layer's explicit dependencies.
type Deps struct {
	Config   config.Config
	Auth     *auth.Service
	Wallets  *wallet.Service
	Payments *payment.Service
	// TopUp is the top-up start use case: the form and the API call it.
	TopUp topup.Starter
	// People reads users, their wallets and ledgers for the admin pages.
	People *people.Reader
	// Reads is the one home of payment reads: the admin list, detail and
	// dashboard, the wallet page's payments in progress, the API's top-ups.
	Reads *paymentread.Reader
	// Audit is the admins' audit log.
	Audit *audit.Log
	// Metrics, when set, observes every request and serves GET /metrics.
	Metrics *metrics.Metrics
	// GatewayNames are the gateways' names as payments store them (the
	// drivers'), in the order they are offered; GatewayLabel names a
	// stored gateway for people (the registry's labels, marked "sandbox"
	// for the built-in bank's payments).
	GatewayNames []string
	GatewayLabel func(stored string) string
	// ParseCallback reads a bank callback's parameters with the parser of
	// the named gateway (gateway.Driver.ParseCallback); ok is false for a
	// gateway it does not know or a callback without a usable token.
	ParseCallback func(gateway string, query, form func(key string) string, isPost bool) (callback.Params, bool)
	Tokens        *apitoken.Service
	// Keys serves the JSON API's idempotency keys.
	Keys *idempotency.Store
	// Bank, when set, is the built-in sandbox bank, served under /sandbank.
	Bank http.Handler
	Log  *slog.Logger
	Now  func() time.Time
	// Health checks what the app needs to serve (the database); nil: none.
	Health func(ctx context.Context) error
	// Ready checks that the app may take traffic: the database answers
	// and its schema is at this build's latest migration; nil: Health.
	Ready func(ctx context.Context) error
	// Breakers report the gateways' circuit breakers (the admin's
	// dashboard and gateways page).
	Breakers func() []resilient.BreakerState
	// RateLimits turns on the per-IP/per-user limits on sign-in, sign-up
	// and top-up (on in serve; tests that hammer one route turn it off).
	RateLimits bool
	// UserTopUps, when set, is each user's top-up allowance
	// (RATE_LIMIT_TOPUP a minute), shared by the form and the API: more
	// tokens or more browsers give no more top-ups.
	UserTopUps *ratelimit.Window
	// Limits, when set, are the payers' daily and balance limits (the
	// form shows what is left; the top-up start enforces them).
	Limits *limits.Policy
	// Outbox, when set, is kicked after a mail is queued that the person
	// is waiting for (a reset link).
	Outbox *mail.Outbox
	// Webhooks are the partners' endpoints and return origins; Hooks, when
	// set, is kicked after an admin's "send again".
	Webhooks *webhook.Service
	Hooks    *webhook.Sender
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
	if d.ParseCallback == nil {
		panic("web: Deps.ParseCallback is required (the gateway driver's callback parser)")
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
	api.Register(app, api.Deps{
		Tokens: d.Tokens, Keys: d.Keys, Payments: d.Payments, Wallets: d.Wallets, TopUp: d.TopUp, Reads: d.Reads,
		Log: d.Log.With("component", "api"), TopUpsPerMinute: d.Config.APITopUpsPerMinute,
		UserTopUps: d.UserTopUps, Webhooks: d.Webhooks,
	})

	// Before anything else reads or sets a cookie: one host name only.
	app.Use(s.canonicalHost)
	app.Use(s.securityHeaders)
	app.Use(cleanInput)

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
	// it is registered before the CSRF check, its one exemption. Its page
	// still gets the CSRF cookie and token for the forms it shows.
	callback := []fiber.Handler{s.issueCSRF, s.rememberLocale, s.paymentReturn}
	app.Get(routes.PaymentReturnPattern, callback...)
	app.Post(routes.PaymentReturnPattern, callback...)
	// Its other methods: the site's 404, as anywhere, unchecked too.
	app.Use(routes.PaymentReturnPattern, s.issueCSRF, s.rememberLocale, notFound)
	app.Use(s.csrf)
	app.Use(s.rememberLocale)

	app.Get(routes.Home, s.home)
	// Sign-in and sign-up count apart, per client address; each page says
	// how long to wait (and Retry-After).
	authLimit := s.limitPage(d.Config.RateLimitSignIn, s.clientIP, func(c *fiber.Ctx, secs int64) error {
		if tok := c.Params("token"); tok != "" { // a reset link's form counts with sign-ins
			return s.resetLimited(c, tok, secs)
		}
		return render(c, fiber.StatusTooManyRequests, views.SignIn(s.page(c, "signin.title"),
			views.AuthForm{Email: c.FormValue("email"), ErrorKey: "signin.too_many", ErrorArgs: []any{"seconds", secs}, Next: nextParam(c)}))
	})
	signUpLimit := s.limitPage(d.Config.RateLimitSignUp, s.clientIP, func(c *fiber.Ctx, secs int64) error {
		return render(c, fiber.StatusTooManyRequests, views.SignUp(s.page(c, "signup.title"),
			views.AuthForm{Email: c.FormValue("email"), ErrorKey: "signup.too_many", ErrorArgs: []any{"seconds", secs}}))
	})
	app.Get(routes.SignUp, s.signUpForm)
	app.Post(routes.SignUp, signUpLimit, s.signUp)
	app.Get(routes.PasswordForgot, s.forgotForm)
	app.Post(routes.PasswordForgot, s.forgot)
	app.Get(routes.PasswordResetPattern, s.resetForm)
	app.Post(routes.PasswordResetPattern, authLimit, s.reset)
	app.Post(routes.AccountReceipts, s.requireUser, s.setReceipts)
	app.Get(routes.SignIn, s.signInForm)
	app.Post(routes.SignIn, authLimit, s.signIn)
	app.Post(routes.SignOut, s.signOut)
	app.Get(routes.Account, s.requireUser, s.accountPage)
	app.Post(routes.AccountSignOutEverywhere, s.requireUser, s.signOutEverywhere)
	app.Get(routes.AccountPassword, s.requireUser, s.passwordForm)
	app.Post(routes.AccountPassword, s.requireUser, s.changePassword)

	app.Get(routes.Wallet, s.requireUser, s.walletPage)
	app.Get(routes.WalletPayments, s.requireUser, s.walletPayments)
	app.Get(routes.WalletPaymentsCSV, s.requireUser, s.walletPaymentsCSV)
	app.Get(routes.TopUp, s.requireUser, s.topUpForm)
	app.Post(routes.TopUp, s.requireUser, s.topUpLimit, s.topUp)

	app.Get(routes.PaymentPattern, s.requireUser, s.receipt)
	app.Post(routes.PaymentAbandonPattern, s.requireUser, s.abandon)

	app.Get(routes.Tokens, s.requireUser, s.tokensPage)
	app.Post(routes.Tokens, s.requireUser, s.createToken)
	app.Post(routes.TokenRevokePattern, s.requireUser, s.revokeToken)
	app.Get(routes.Webhooks, s.requireUser, s.webhooksPage)
	app.Post(routes.Webhooks, s.requireUser, s.createWebhook)
	app.Post(routes.WebhookDisablePattern, s.requireUser, s.disableWebhook)
	app.Post(routes.WebhookEnablePattern, s.requireUser, s.enableWebhook)
	app.Post(routes.WebhookDeletePattern, s.requireUser, s.deleteWebhook)
	app.Post(routes.WebhookOrigins, s.requireUser, s.addReturnOrigin)
	app.Post(routes.WebhookOriginDeletePattern, s.requireUser, s.deleteReturnOrigin)

	// The admin console (web/admin), registered last: its second-factor
	// page before the admin group's middleware, then the group.
	s.adminHandlers().Register(app)
	app.Use(notFound)
	return app
}

// adminHandlers are the admin console over the app's use cases, sharing with it
// the page model, rendering, the signed-in user and the rows the user's
// own pages list.
func (s *Server) adminHandlers() *admin.Handlers {
	d := s.Deps
	return admin.New(admin.Deps{
		App: admin.App{
			Page: s.page, Render: render, User: currentUser, Session: currentSession, Lang: lang,
			RequireUser: s.requireUser, FormValue: formValue, SafeNext: safeNext, PassSession: s.passSession,
			GatewayName: s.gatewayName,
			TokenRow:    func(t apitoken.Token, owner string) views.TokenRow { return tokenRow(t, owner, s) },
			WebhookRow:  webhookRow,
		},
		Payments: d.Payments, Reads: d.Reads, People: d.People, Audit: d.Audit, Auth: d.Auth, Tokens: d.Tokens,
		Webhooks: d.Webhooks, Hooks: d.Hooks, Limits: d.Limits, Breakers: d.Breakers,
		GatewayNames: d.GatewayNames, GatewayLabel: d.GatewayLabel, AbandonedAfter: d.Config.WorkerAbandonedAfter,
		Log: d.Log, Now: d.Now,
	})
}

// passSession gives the browser a session that has just been made or
// passed the second factor: its cookie, and a CSRF token bound to it.
func (s *Server) passSession(c *fiber.Ctx, token string, expires time.Time) {
	s.setCookie(c, s.sessionCookie, token, expires, true)
	s.rotateCSRF(c, token)
}

// notFound answers what no route takes: the site's 404 page.
func notFound(*fiber.Ctx) error { return fiber.ErrNotFound }

// healthz answers 200 "ok" when the app can serve (its database answers),
// 503 otherwise, for load balancers and orchestrators.
func (s *Server) healthz(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	if s.Health != nil {
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
		defer cancel()
		if err := s.Health(ctx); err != nil {
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
	check := s.Ready
	if check == nil {
		check = s.Health
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

// topUpLimit takes one of the user's top-ups from the allowance they
// share with the API; a replay of a form already submitted (a double
// click) takes none.
func (s *Server) topUpLimit(c *fiber.Ctx) error {
	if s.UserTopUps == nil || s.formReplay(c) {
		return c.Next()
	}
	if ok, wait := s.UserTopUps.Take("u" + itoa(currentUser(c).ID)); !ok {
		retryAfter(c, wait)
		return fiber.NewError(fiber.StatusTooManyRequests, "too many top-ups")
	}
	return c.Next()
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
	c.Response().ResetBody()
	return s.message(c, code, key+"_title", key, routes.Home, "nav.home")
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
