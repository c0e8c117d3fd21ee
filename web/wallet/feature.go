// Package wallet is the web app's pages for the payer's money: the landing
// page (home.go), the wallet with its history and payments in progress
// (wallet.go), the top-up form and its start (topup.go) and the payer's
// list of payments with its CSV export (payments.go). Its pages are views.
//
// Like every feature of the web app (web/account, web/pay, web/admin,
// web/api), internal/server builds its Deps and web registers it in web's
// order, handing it seam.App. It never imports web.
package wallet

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/web/seam"
)

// Deps are the wallet pages' dependencies.
type Deps struct {
	// Wallets are the payers' balances and histories.
	Wallets *wallet.Service
	// TopUps offers the gateways (their health, the operator's order).
	TopUps *topup.Service
	// TopUp is the top-up start use case (the API's too).
	TopUp topup.Starter
	// Reads are the payer's payments (in progress, the list).
	Reads *topupread.Reader
	// Limits, when set, are the payers' daily and balance limits (the
	// form shows what is left; the top-up start enforces them).
	Limits *limits.Policy
	// UserTopUps, when set, is each user's top-up allowance
	// (RATE_LIMIT_TOPUP a minute), shared by the form and the API: more
	// tokens or more browsers give no more top-ups.
	UserTopUps *ratelimit.Window
	// UnknownRecipients, when set, is each user's allowance of transfers
	// refused for an address with no account (RATE_LIMIT_UNKNOWN_RECIPIENTS
	// an hour), shared with the API: a place reserved before an address is
	// looked up, counted when it is unknown.
	UnknownRecipients *ratelimit.Window
	// RecipientPreviews, when set, is each user's allowance of
	// confirmation pages that name a recipient
	// (RATE_LIMIT_RECIPIENT_PREVIEWS an hour): a place reserved before the
	// address is looked up, counted when the page named someone.
	RecipientPreviews *ratelimit.Window
	// Transfers sends money between people (the API's use case too).
	Transfers *transfer.Service
	// Withdrawals, when set, name the withdrawals of the history's lines
	// ("to your account at {bank} …1234").
	Withdrawals *withdrawal.Service
	// Charges, when set, name the merchants of the history's charges and
	// refunds ("paid to {merchant}", "refund from {merchant}").
	Charges *charge.Service
}

type handlers struct {
	Deps
	seam.App
}

// Register adds the wallet pages' routes to r.
func (d Deps) Register(r fiber.Router, app seam.App) {
	h := &handlers{Deps: d, App: app}
	r.Get(routes.Home, h.home)
	r.Get(routes.Wallet, h.RequireUser, h.walletPage)
	r.Get(routes.WalletTopUps, h.RequireUser, h.walletTopUps)
	r.Get(routes.WalletTopUpsCSV, h.RequireUser, h.walletTopUpsCSV)
	r.Get(routes.TopUp, h.RequireUser, h.topUpForm)
	r.Post(routes.TopUp, h.RequireUser, h.topUpLimit, h.topUp)
	r.Get(routes.Transfer, h.RequireUser, h.transferForm)
	r.Post(routes.Transfer, h.RequireUser, h.transfer)
	r.Get(routes.TransferPattern, h.RequireUser, h.transferReceipt)
}

// topUpLimit takes one of the user's top-ups from the allowance they
// share with the API; a replay of a form already submitted (a double
// click) takes none.
func (h *handlers) topUpLimit(c *fiber.Ctx) error {
	if h.UserTopUps == nil || h.formReplay(c) {
		return c.Next()
	}
	if ok, wait := h.UserTopUps.Take("u" + strconv.FormatInt(h.User(c).ID, 10)); !ok {
		// The form again, as typed, with the wait in its sentence: its
		// token unspent, the same submit works once the wait is over.
		secs := seam.RetryAfter(c, wait)
		form := h.newTopUpForm()
		form.Amount, form.Token = h.FormValue(c, "amount"), h.FormValue(c, "token")
		form.ErrorKey, form.ErrorArgs = "topup.error_too_many", []any{"seconds", secs}
		return h.topUpAgain(c, fiber.StatusTooManyRequests, form, strings.TrimSpace(h.FormValue(c, "gateway")))
	}
	return c.Next()
}
