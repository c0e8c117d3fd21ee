// Package admin is the admin console's HTTP side (everything under
// routes.Admin): its handlers, one file per page (dashboard.go,
// topup_list.go, topup_detail.go, user_list.go, user_detail.go,
// audit.go, gateways.go, tokens.go, webhooks.go, twofactor.go), what they
// share (parts.go), the group's middleware (the admin role here, the
// second factor in twofactor.go) and the group's registration. Its pages
// are views/admin.
//
// Like every feature of the web app (web/account, web/wallet, web/pay,
// web/api), internal/server builds its Deps (the use cases it reads and
// acts through) and web registers it, last, handing it seam.App (what the
// app shares with it: the page model of a request, rendering, the
// signed-in user). It never imports web; it shows tokens and endpoints as
// the user's own pages do (web/account's rows). A handler's error goes
// back to the app, whose error handler renders the error page.
package admin

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/web/seam"
)

// Deps are the admin console's dependencies.
type Deps struct {
	// TopUps acts on payments (ask the bank, close, reconcile) and
	// switches gateways.
	TopUps *topup.Service
	// Reads are the payment reads (list, detail, dashboard).
	Reads *topupread.Reader
	// People reads users, their wallets and ledgers.
	People *people.Reader
	// Replica, when set, is where the pages read (DATABASE_READ_URL): the
	// dashboard checks it and shows its lag.
	Replica *store.ReadPool
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
	// Transfers finds transfers; Ledger reads their ledger transactions.
	Transfers *transfer.Service
	Ledger    *ledger.Ledger
	// Withdrawals and BankAccounts are cash-out's queue
	// (/admin/withdrawals).
	Withdrawals  *withdrawal.Service
	BankAccounts *bankaccount.Service
	// CardRefunds, when set, give a credited top-up back to the card
	// (the top-up's page).
	CardRefunds *cardrefund.Service
	// Charges makes users merchants (the user's page).
	Charges *charge.Service
}

type handlers struct {
	Deps
	seam.App
}

// Register adds the admin console's routes to r. The second-factor page
// needs sign-in and the admin role, but is registered before the admin
// group's middleware (and with RequireUserBeforeSecondFactor, not
// RequireUser, which refuses an admin's forms before the second factor),
// so that it is the one admin page an admin reaches before passing the
// second factor. Every other admin route lives under
// routes.Admin: its middleware (sign-in, admin role, and the second factor
// once per session) covers them all, routes added later included.
func (d Deps) Register(r fiber.Router, app seam.App) {
	h := &handlers{Deps: d, App: app}
	r.Get(routes.AdminTwoFactor, h.RequireUserBeforeSecondFactor, h.requireAdmin, h.twoFactorForm)
	r.Post(routes.AdminTwoFactor, h.RequireUserBeforeSecondFactor, h.requireAdmin, h.twoFactorSubmit)
	r.Use(routes.AdminTwoFactor, h.RequireUserBeforeSecondFactor, h.requireAdmin, seam.NotFound) // its other methods

	r.Use(routes.Admin, h.RequireUser, h.requireAdmin, h.requireSecondFactor)
	r.Get(routes.AdminDashboardPattern, h.dashboard)
	r.Get(routes.AdminTopUps, h.topUpList)
	r.Get(routes.AdminTopUpsCSV, h.topUpsCSV)
	r.Get(routes.AdminTopUpPattern, h.topUpDetail)
	r.Get(routes.AdminUsers, h.userList)
	r.Get(routes.AdminUserPattern, h.userDetail)
	r.Post(routes.AdminUserMerchantPattern, h.makeMerchant)
	r.Get(routes.AdminAudit, h.auditLog)
	r.Post(routes.AdminReconcile, h.reconcile)
	r.Get(routes.AdminGateways, h.gateways)
	r.Post(routes.AdminGatewaySwitchPattern, h.switchGateway)
	r.Post(routes.AdminTopUpRecheckPattern, h.recheck)
	r.Post(routes.AdminTopUpClosePattern, h.closeFailed)
	// The old addresses of the same actions (a page open since before
	// the rename posts there).
	r.Post(routes.LegacyAdminTopUpRecheckPattern, h.recheck)
	r.Post(routes.LegacyAdminTopUpClosePattern, h.closeFailed)
	r.Post(routes.AdminTopUpCardRefundPattern, h.startCardRefund)
	r.Post(routes.AdminTopUpCardRefundRecheckPattern, h.recheckCardRefund)
	r.Post(routes.AdminTopUpCardRefundClosePattern, h.closeCardRefund)
	r.Get(routes.AdminTokens, h.tokens)
	r.Post(routes.AdminTokenRevokePattern, h.revokeToken)
	r.Get(routes.AdminWebhooks, h.webhooks)
	r.Get(routes.AdminWebhookPattern, h.webhookLog)
	r.Post(routes.AdminWebhookDisablePattern, h.disableWebhook)
	r.Post(routes.AdminWebhookEnablePattern, h.enableWebhook)
	r.Post(routes.AdminDeliveryResendPattern, h.resendDelivery)
	r.Get(routes.AdminTransfers, h.transfers)
	r.Get(routes.AdminCharges, h.charges)
	r.Get(routes.AdminChargePattern, h.chargeDetail)
	r.Get(routes.AdminTransferPattern, h.transferDetail)
	r.Get(routes.AdminWithdrawals, h.withdrawals)
	r.Post(routes.AdminWithdrawalsReconcile, h.reconcileWithdrawals)
	r.Get(routes.AdminWithdrawalPattern, h.withdrawalDetail)
	r.Post(routes.AdminWithdrawalApprovePattern, h.approveWithdrawal())
	r.Post(routes.AdminWithdrawalRejectPattern, h.rejectWithdrawal())
	r.Post(routes.AdminWithdrawalFailPattern, h.failWithdrawal())
	r.Post(routes.AdminWithdrawalPaidPattern, h.paidWithdrawal())
	r.Post(routes.AdminBankAccountApprovePattern, h.reviewBankAccount(true))
	r.Post(routes.AdminBankAccountRejectPattern, h.reviewBankAccount(false))
}

// requireAdmin hides the admin console from everyone but admins.
func (h *handlers) requireAdmin(c *fiber.Ctx) error {
	if u := h.User(c); u == nil || !u.IsAdmin() {
		return fiber.ErrNotFound // admins' pages do not exist for others
	}
	return c.Next()
}
