// Package admin is the admin console's HTTP side (everything under
// routes.Admin): its handlers, one file per page (dashboard.go,
// payment_list.go, payment_detail.go, user_list.go, user_detail.go,
// audit.go, gateways.go, tokens.go, webhooks.go, twofactor.go), what they
// share (parts.go), the group's middleware (the admin role here, the
// second factor in twofactor.go) and the group's registration. Its pages
// are views/admin.
//
// The web app builds it with New, from the use cases it reads and acts
// through and App (what the app shares with it: the page model of a
// request, rendering, the signed-in user), and registers it last. It never
// imports web. A handler's error goes back to the app, whose error handler
// renders the error page.
package admin

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/views"
)

// App is what the web app shares with the admin console.
type App struct {
	// Page is what every page needs for this request (language, CSRF
	// token, the signed-in user), with its title's message key.
	Page func(c *fiber.Ctx, titleKey string) views.Page
	// Render writes a component as an HTML page with the given status.
	Render func(c *fiber.Ctx, status int, page templ.Component) error
	// User and Session are the signed-in user and their session (nil
	// when signed out).
	User    func(c *fiber.Ctx) *auth.User
	Session func(c *fiber.Ctx) *auth.Session
	// Lang is the request's page language.
	Lang func(c *fiber.Ctx) i18n.Lang
	// RequireUser sends someone who is not signed in to sign in.
	RequireUser fiber.Handler
	// FormValue is a field of the request's form body, never of its query
	// string.
	FormValue func(c *fiber.Ctx, name string) string
	// SafeNext reports whether next is a path on this site to go on to.
	SafeNext func(next string) bool
	// PassSession gives the browser the session that has just passed the
	// second factor (its cookie, and a CSRF token bound to it).
	PassSession func(c *fiber.Ctx, token string, expires time.Time)
	// GatewayName names a gateway in the request's language, as payers
	// see it.
	GatewayName func(c *fiber.Ctx, name string) string
	// TokenRow and WebhookRow are a token and an endpoint as the lists
	// show them, the user's own pages and the admin's alike.
	TokenRow   func(t apitoken.Token, owner string) views.TokenRow
	WebhookRow func(e webhook.Endpoint, owner string, pending, failed int64) views.WebhookRow
}

// Deps are the admin console's dependencies.
type Deps struct {
	App
	// Payments acts on payments (ask the bank, close, reconcile) and
	// switches gateways.
	Payments *payment.Service
	// Reads are the payment reads (list, detail, dashboard).
	Reads *paymentread.Reader
	// People reads users, their wallets and ledgers.
	People *people.Reader
	// Audit is the admins' audit log.
	Audit *audit.Log
	// Auth enrols and checks the admins' second factor.
	Auth *auth.Service
	// Tokens are every user's API tokens.
	Tokens *apitoken.Service
	// Webhooks are every user's endpoints and deliveries; Hooks, when
	// set, is kicked after an admin's "send again".
	Webhooks *webhook.Service
	Hooks    *webhook.Sender
	// Limits, when set, are the payers' limits (a credit over the
	// balance cap is flagged on the payment's page).
	Limits *limits.Policy
	// Breakers, when set, report the gateways' circuit breakers in this
	// instance.
	Breakers func() []resilient.BreakerState
	// GatewayNames are the gateways' names as payments store them, in the
	// order they are offered; GatewayLabel names a stored gateway for
	// people (nil: the stored name).
	GatewayNames []string
	GatewayLabel func(stored string) string
	// AbandonedAfter is when the worker gives up on an open payment (the
	// dashboard's backlog).
	AbandonedAfter time.Duration
	Log            *slog.Logger
	Now            func() time.Time
}

// Handlers are the admin console's handlers.
type Handlers struct {
	Deps
}

// New returns the admin console over d.
func New(d Deps) *Handlers {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Handlers{Deps: d}
}

// Register adds the admin console's routes to r. The second-factor page
// needs sign-in and the admin role, but is registered before the admin
// group's middleware, so that it is the one admin page an admin reaches
// before passing the second factor. Every other admin route lives under
// routes.Admin: its middleware (sign-in, admin role, and the second factor
// once per session) covers them all, routes added later included.
func (h *Handlers) Register(r fiber.Router) {
	r.Get(routes.AdminTwoFactor, h.RequireUser, h.requireAdmin, h.twoFactorForm)
	r.Post(routes.AdminTwoFactor, h.RequireUser, h.requireAdmin, h.twoFactorSubmit)
	r.Use(routes.AdminTwoFactor, h.RequireUser, h.requireAdmin, notFound) // its other methods

	r.Use(routes.Admin, h.RequireUser, h.requireAdmin, h.requireSecondFactor)
	r.Get(routes.AdminDashboardPattern, h.dashboard)
	r.Get(routes.AdminPayments, h.paymentList)
	r.Get(routes.AdminPaymentsCSV, h.paymentsCSV)
	r.Get(routes.AdminPaymentPattern, h.paymentDetail)
	r.Get(routes.AdminUsers, h.userList)
	r.Get(routes.AdminUserPattern, h.userDetail)
	r.Get(routes.AdminAudit, h.auditLog)
	r.Post(routes.AdminReconcile, h.reconcile)
	r.Get(routes.AdminGateways, h.gateways)
	r.Post(routes.AdminGatewaySwitchPattern, h.switchGateway)
	r.Post(routes.AdminPaymentRecheckPattern, h.recheck)
	r.Post(routes.AdminPaymentClosePattern, h.closeFailed)
	r.Get(routes.AdminTokens, h.tokens)
	r.Post(routes.AdminTokenRevokePattern, h.revokeToken)
	r.Get(routes.AdminWebhooks, h.webhooks)
	r.Get(routes.AdminWebhookPattern, h.webhookLog)
	r.Post(routes.AdminWebhookDisablePattern, h.disableWebhook)
	r.Post(routes.AdminWebhookEnablePattern, h.enableWebhook)
	r.Post(routes.AdminDeliveryResendPattern, h.resendDelivery)
}

// requireAdmin hides the admin console from everyone but admins.
func (h *Handlers) requireAdmin(c *fiber.Ctx) error {
	if u := h.User(c); u == nil || !u.IsAdmin() {
		return fiber.ErrNotFound // admins' pages do not exist for others
	}
	return c.Next()
}

// notFound answers what no route takes: the app's 404 page.
func notFound(*fiber.Ctx) error { return fiber.ErrNotFound }

// idParam is the route's positive numeric :id (404 otherwise).
func idParam(c *fiber.Ctx) (int64, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fiber.ErrNotFound
	}
	return id, nil
}

// withPayment puts a payment's public id in the request's context: every
// line logged with it names the payment.
func withPayment(c *fiber.Ctx, publicID string) {
	c.SetUserContext(logging.WithPayment(c.UserContext(), publicID))
}
