// Package account is the web app's pages for a person's account: sign-up,
// sign-in and sign-out (signin.go), the account page, the password (change,
// forgotten, reset by e-mail link) and receipts by e-mail (password.go),
// personal API tokens (tokens.go) and webhooks with return origins
// (webhooks.go). Its pages are views.
//
// Like every feature of the web app (web/wallet, web/pay, web/admin,
// web/api), internal/server builds its Deps and web registers it in web's
// order, handing it seam.App (the page model, rendering, the signed-in
// user, the session cookie). It never imports web. A handler's error goes
// back to the app, whose error handler renders the error page.
package account

import (
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

// Deps are the account pages' dependencies.
type Deps struct {
	// Auth signs people up and in, and keeps their sessions, passwords
	// and settings.
	Auth *auth.Service
	// Tokens are the user's API tokens.
	Tokens *apitoken.Service
	// Webhooks are the user's endpoints and return origins.
	Webhooks *webhook.Service
	// MailQueued, when set, is called after a mail is queued that the
	// person is waiting for (a reset link): the outbox's kick.
	MailQueued func()
	// SignInPerMinute and SignUpPerMinute are each client address's
	// allowance (RATE_LIMIT_SIGNIN, RATE_LIMIT_SIGNUP); a reset link's
	// form counts with sign-ins. ForgotPerMinute is a reset request's
	// (RATE_LIMIT_FORGOT), counted apart.
	SignInPerMinute, SignUpPerMinute, ForgotPerMinute int
}

type handlers struct {
	Deps
	seam.App
}

// Register adds the account pages' routes to r.
func (d Deps) Register(r fiber.Router, app seam.App) {
	h := &handlers{Deps: d, App: app}
	// Sign-in and sign-up count apart, per client address; each page says
	// how long to wait (and Retry-After).
	signInLimit := h.Limit(d.SignInPerMinute, func(c *fiber.Ctx, secs int64) error {
		if tok := c.Params("token"); tok != "" { // a reset link's form counts with sign-ins
			return h.resetLimited(c, tok, secs)
		}
		return h.Render(c, fiber.StatusTooManyRequests, views.SignIn(h.Page(c, "signin.title"),
			views.AuthForm{Email: h.FormValue(c, "email"), ErrorKey: "signin.too_many", ErrorArgs: []any{"seconds", secs}, Next: h.nextParam(c)}))
	})
	signUpLimit := h.Limit(d.SignUpPerMinute, func(c *fiber.Ctx, secs int64) error {
		return h.Render(c, fiber.StatusTooManyRequests, views.SignUp(h.Page(c, "signup.title"),
			views.AuthForm{Email: h.FormValue(c, "email"), ErrorKey: "signup.too_many", ErrorArgs: []any{"seconds", secs}}))
	})
	// A reset request may send a mail: its own allowance, before the
	// database's own throttle.
	forgotLimit := h.Limit(d.ForgotPerMinute, func(c *fiber.Ctx, secs int64) error {
		return h.Render(c, fiber.StatusTooManyRequests, views.Forgot(h.Page(c, "forgot.title"),
			views.ForgotView{Email: h.FormValue(c, "email"), ErrorKey: "forgot.throttled", ErrorArgs: []any{"seconds", secs}}))
	})
	r.Get(routes.SignUp, h.signUpForm)
	r.Post(routes.SignUp, signUpLimit, h.signUp)
	r.Get(routes.PasswordForgot, h.forgotForm)
	r.Post(routes.PasswordForgot, forgotLimit, h.forgot)
	r.Get(routes.PasswordResetPattern, h.resetForm)
	r.Post(routes.PasswordResetPattern, signInLimit, h.reset)
	r.Get(routes.EmailVerifyPattern, h.verifyForm)
	r.Post(routes.EmailVerifyPattern, h.verify)
	r.Post(routes.AccountEmailVerify, h.RequireUser, h.resendVerify)
	r.Post(routes.AccountReceipts, h.RequireUser, h.setReceipts)
	r.Post(routes.AccountName, h.RequireUser, h.setName)
	r.Get(routes.SignIn, h.signInForm)
	r.Post(routes.SignIn, signInLimit, h.signIn)
	r.Post(routes.SignOut, h.signOut)
	r.Get(routes.Account, h.RequireUser, h.accountPage)
	r.Post(routes.AccountSignOutEverywhere, h.RequireUser, h.signOutEverywhere)
	r.Get(routes.AccountPassword, h.RequireUser, h.passwordForm)
	r.Post(routes.AccountPassword, h.RequireUser, h.changePassword)

	// An admin signed in with the password alone (short of the second
	// factor) is refused every state-changing request by RequireUser but
	// these, which take away and add nothing (SECURITY.md).
	r.Get(routes.Tokens, h.RequireUser, h.tokensPage)
	r.Post(routes.Tokens, h.RequireUser, h.createToken)
	r.Post(routes.TokenRevokePattern, h.RequireUserBeforeSecondFactor, h.revokeToken)
	r.Get(routes.Webhooks, h.RequireUser, h.webhooksPage)
	r.Post(routes.Webhooks, h.RequireUser, h.createWebhook)
	r.Post(routes.WebhookDisablePattern, h.RequireUserBeforeSecondFactor, h.disableWebhook)
	r.Post(routes.WebhookEnablePattern, h.RequireUser, h.enableWebhook)
	r.Post(routes.WebhookDeletePattern, h.RequireUserBeforeSecondFactor, h.deleteWebhook)
	r.Post(routes.WebhookRotatePattern, h.RequireUser, h.rotateWebhook)
	r.Post(routes.WebhookOrigins, h.RequireUser, h.addReturnOrigin)
	r.Post(routes.WebhookOriginDeletePattern, h.RequireUserBeforeSecondFactor, h.deleteReturnOrigin)
}
