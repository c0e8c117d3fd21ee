// Package api is Kifpool's JSON API under /api (for the mobile app and
// partner services): personal API tokens as bearer tokens, no cookies and
// no CSRF, RFC 9457 problem+json errors with stable codes, the
// Idempotency-Key header on POST, and the OpenAPI 3.1 document at
// /api/openapi.json. Handlers are thin: they parse, call the domain
// packages and write JSON.
package api

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/web/seam"
)

// Deps are the API's dependencies.
type Deps struct {
	Tokens  *apitoken.Service
	Keys    *idempotency.Store
	TopUps  *topup.Service
	Wallets *wallet.Service
	// TopUp is the top-up start use case (the form's too).
	TopUp topup.Starter
	// Reads reads the caller's top-ups.
	Reads *topupread.Reader
	Log   *slog.Logger
	// TopUpsPerMinute limits POST /api/v1/topups per token (default 30).
	TopUpsPerMinute int
	// UserTopUps, when set, is each user's top-up allowance, shared with
	// the web form (and between all of the user's tokens).
	UserTopUps *ratelimit.Window
	// Webhooks checks return_url against the user's registered origins.
	Webhooks *webhook.Service
	// Transfers sends money between people (the page's use case too).
	Transfers *transfer.Service
	// Withdrawals and BankAccounts are cash-out (scope withdraw).
	Withdrawals  *withdrawal.Service
	BankAccounts *bankaccount.Service
	// Charges are merchants' charges (scope charges; the checkout's use
	// case too).
	Charges *charge.Service
	// TokenCharges, when set, is each token's allowance of new charges
	// (API_CHARGES_PER_MINUTE).
	TokenCharges *ratelimit.Window
	// UnknownRecipients, when set, is each user's allowance of transfers
	// refused for an address with no account (RATE_LIMIT_UNKNOWN_RECIPIENTS
	// an hour), shared with the page.
	UnknownRecipients *ratelimit.Window
	// AuthFailures, when set, is each client address's allowance of
	// requests refused for their token (RATE_LIMIT_API_AUTH_FAILURES a
	// minute); spent, the address is refused before any token is read.
	AuthFailures *ratelimit.Window
}

type handler struct {
	Deps
	clientIP func(c *fiber.Ctx) string
}

// AnswerError implements seam.ErrorAnswerer: StatusProblem.
func (Deps) AnswerError(c *fiber.Ctx, status int) error { return StatusProblem(c, status) }

const localPrincipal = "api_principal"

// Register adds the API's routes (internal/routes: everything under
// routes.APIAll) to r, the app's root router. It must come before the cookie
// session and CSRF middleware: nothing under routes.API falls through to
// them. The API shares nothing with the pages (seam.App): it answers in
// JSON, to bearer tokens.
func (d Deps) Register(r fiber.Router, app seam.App) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.TopUpsPerMinute <= 0 {
		d.TopUpsPerMinute = 30
	}
	h := &handler{Deps: d, clientIP: app.ClientIP}
	r.Use(routes.APIAll, h.problems)
	r.Get(routes.APIOpenAPI, serveOpenAPI)

	r.Use(routes.APIv1, h.authenticate)
	r.Post(routes.APITopUps, h.need(apitoken.ScopeTopUp), h.topUpLimit(), h.userTopUpLimit, h.createTopUp)
	r.Get(routes.APITopUps, h.need(apitoken.ScopeRead), h.listTopUps)
	r.Get(routes.APITopUpPattern, h.need(apitoken.ScopeRead), h.getTopUp)
	r.Get(routes.APIWallet, h.need(apitoken.ScopeRead), h.getWallet)
	r.Get(routes.APIWalletLedger, h.need(apitoken.ScopeRead), h.listLedger)
	r.Post(routes.APITransfers, h.need(apitoken.ScopeTransfer), h.createTransfer)
	r.Get(routes.APITransfers, h.need(apitoken.ScopeRead), h.listTransfers)
	r.Get(routes.APITransferPattern, h.need(apitoken.ScopeRead), h.getTransfer)
	r.Get(routes.APIBankAccounts, h.need(apitoken.ScopeRead), h.listBankAccounts)
	r.Post(routes.APIBankAccounts, h.need(apitoken.ScopeWithdraw), h.addBankAccount)
	r.Post(routes.APIWithdrawals, h.need(apitoken.ScopeWithdraw), h.createWithdrawal)
	r.Get(routes.APIWithdrawals, h.need(apitoken.ScopeRead), h.listWithdrawals)
	r.Get(routes.APIWithdrawalPattern, h.need(apitoken.ScopeRead), h.getWithdrawal)
	r.Post(routes.APICharges, h.need(apitoken.ScopeCharges), h.chargeLimit, h.createCharge)
	r.Get(routes.APICharges, h.need(apitoken.ScopeRead), h.listCharges)
	r.Get(routes.APIChargePattern, h.need(apitoken.ScopeRead), h.getCharge)
	r.Post(routes.APIChargeCapturePattern, h.need(apitoken.ScopeCharges), h.captureCharge)
	r.Post(routes.APIChargeCancelPattern, h.need(apitoken.ScopeCharges), h.cancelCharge)
	r.Post(routes.APIChargeRefundsPattern, h.need(apitoken.ScopeCharges), h.refundCharge)

	// Whatever else is asked under routes.API is a problem+json 404, never
	// a page (and never reaches the cookie session).
	r.Use(routes.APIAll, func(c *fiber.Ctx) error {
		return problem(c, CodeNotFound, "No such API endpoint: "+c.Method()+" "+c.Path())
	})
}

// problems turns an error a handler returned into a problem (no Go error
// text reaches the client; it goes to the log).
func (h *handler) problems(c *fiber.Ctx) error {
	err := c.Next()
	if err == nil {
		return nil
	}
	var fe *fiber.Error
	if errors.As(err, &fe) && fe.Code < 500 {
		return StatusProblem(c, fe.Code)
	}
	h.Log.Error("api request failed", "method", c.Method(), "path", c.Path(), "request_id", c.Locals("requestid"), "err", err)
	return StatusProblem(c, fiber.StatusInternalServerError)
}

// authenticate accepts "Authorization: Bearer kp_…" only. Cookies are
// never looked at.
func (h *handler) authenticate(c *fiber.Ctx) error {
	// An address that has spent its refusals is refused before its token
	// is read: guessing tokens costs the database nothing more.
	client := ""
	if h.AuthFailures != nil && h.clientIP != nil {
		client = h.clientIP(c)
		if spent, wait := h.AuthFailures.Spent(client); spent {
			seam.RetryAfter(c, wait)
			return problem(c, CodeRateLimited, "Too many requests with an unknown, revoked or expired token from this address; retry after the Retry-After seconds.")
		}
	}
	refused := func() {
		if client != "" {
			h.AuthFailures.Take(client)
		}
	}
	authz := c.Get(fiber.HeaderAuthorization)
	scheme, secret, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		refused()
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="kifpool"`)
		return problem(c, CodeUnauthorized, "Send a personal API token: Authorization: Bearer kp_… (create one at /account/tokens).")
	}
	p, err := h.Tokens.Authenticate(c.UserContext(), strings.TrimSpace(secret))
	if errors.Is(err, apitoken.ErrUnauthorized) {
		refused()
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="kifpool", error="invalid_token"`)
		return problem(c, CodeUnauthorized, "The token is unknown, revoked or expired.")
	}
	if err != nil {
		return err
	}
	c.Locals(localPrincipal, p)
	return c.Next()
}

func principal(c *fiber.Ctx) apitoken.Principal {
	p, _ := c.Locals(localPrincipal).(apitoken.Principal)
	return p
}

func (h *handler) need(scope apitoken.Scope) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !principal(c).Scope.Allows(scope) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="kifpool", error="insufficient_scope", scope="`+string(scope)+`"`)
			return problem(c, CodeInsufficientScope, "This needs a token with scope "+string(scope)+".")
		}
		return c.Next()
	}
}

// topUpLimit limits top-ups per token (per instance, like the site's
// limits). It runs before the idempotency layer, so a 429 is never stored
// and a retry after Retry-After with the same key goes through.
func (h *handler) topUpLimit() fiber.Handler {
	return limiter.New(limiter.Config{
		Max: h.TopUpsPerMinute, Expiration: time.Minute,
		KeyGenerator: func(c *fiber.Ctx) string { return "t" + strconv.FormatInt(principal(c).TokenID, 10) },
		LimitReached: func(c *fiber.Ctx) error {
			if n, err := strconv.Atoi(string(c.Response().Header.Peek(fiber.HeaderRetryAfter))); err != nil || n < 1 {
				c.Set(fiber.HeaderRetryAfter, "1")
			}
			return problem(c, CodeRateLimited, "At most "+strconv.Itoa(h.TopUpsPerMinute)+" top-ups a minute per token; retry after the Retry-After seconds.")
		},
	})
}

// userTopUpLimit takes one top-up from the user's allowance, shared with
// the web form and every other token of theirs.
func (h *handler) userTopUpLimit(c *fiber.Ctx) error {
	if h.UserTopUps == nil {
		return c.Next()
	}
	return takeOrRefuse(c, h.UserTopUps, "u"+strconv.FormatInt(principal(c).UserID, 10),
		" top-ups a minute per user, through the site and every token together; retry after the Retry-After seconds.")
}

// chargeLimit takes one charge from the token's allowance. It runs before
// the idempotency layer, so a 429 is never stored and a retry after
// Retry-After with the same key goes through.
func (h *handler) chargeLimit(c *fiber.Ctx) error {
	if h.TokenCharges == nil {
		return c.Next()
	}
	return takeOrRefuse(c, h.TokenCharges, "t"+strconv.FormatInt(principal(c).TokenID, 10),
		" charges a minute per token; retry after the Retry-After seconds.")
}

// takeOrRefuse takes one from key's allowance in w and goes on, or
// answers 429 rate_limited with Retry-After in whole seconds (at least
// one) and "At most {max}{what}".
func takeOrRefuse(c *fiber.Ctx, w *ratelimit.Window, key, what string) error {
	if ok, wait := w.Take(key); !ok {
		return rateLimited(c, w, wait, what)
	}
	return c.Next()
}

// rateLimited answers 429 rate_limited with Retry-After in whole seconds
// (at least one) and "At most {max}{what}".
func rateLimited(c *fiber.Ctx, w *ratelimit.Window, wait time.Duration, what string) error {
	secs := max(int64((wait+time.Second-1)/time.Second), 1)
	c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(secs, 10))
	return problem(c, CodeRateLimited, "At most "+strconv.Itoa(w.Max())+what)
}

// cursorParams reads ?cursor= (a positive integer, from next_cursor) and
// ?limit= (1 to 100, default 20).
func cursorParams(c *fiber.Ctx) (before int64, limit int, detail string) {
	limit = 20
	if s := c.Query("cursor"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, "cursor must be a next_cursor value from an earlier page"
		}
		before = n
	}
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return 0, 0, "limit must be an integer from 1 to 100"
		}
		limit = n
	}
	return before, limit, ""
}

func cursorString(next int64) *string {
	if next == 0 {
		return nil
	}
	s := strconv.FormatInt(next, 10)
	return &s
}
