// Package merchant is the web app's pages of "Pay with Kifpool" (issue
// 33 §2): the payer's checkout of a charge (checkout.go: pay, cancel, top
// up the difference and come back) and the merchant's page (merchant.go:
// its balance, its charges with filters and CSV, capture, cancel and
// refund). Every action calls the one charge use case (charge.Service),
// the API's too; the pages add nothing to its rules.
//
// Like every feature of the web app, internal/server builds its Deps and
// web registers it in web's order, handing it seam.App. It never imports
// web.
package merchant

import (
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/web/seam"
)

// Deps are the charges' pages' dependencies.
type Deps struct {
	Charges *charge.Service
	Wallets *wallet.Service
	// TopUps, when set, give the top-up form's minimum (the difference
	// offered is never below it).
	TopUps *topup.Service
}

type handlers struct {
	Deps
	seam.App
}

// Register adds the checkout's and the merchant page's routes to r.
func (d Deps) Register(r fiber.Router, app seam.App) {
	h := &handlers{Deps: d, App: app}
	r.Get(routes.CheckoutPattern, h.RequireUser, h.checkout)
	r.Post(routes.CheckoutPattern, h.RequireUser, h.pay)
	r.Post(routes.CheckoutCancelPattern, h.RequireUser, h.cancelCheckout)
	r.Get(routes.CheckoutTopUpPattern, h.RequireUser, h.topUpDifference)
	r.Get(routes.Merchant, h.RequireUser, h.merchantPage)
	r.Get(routes.MerchantChargesCSV, h.RequireUser, h.merchantCSV)
	r.Get(routes.MerchantChargePattern, h.RequireUser, h.chargePage)
	r.Post(routes.MerchantChargeCapturePattern, h.RequireUser, h.capture)
	r.Post(routes.MerchantChargeCancelPattern, h.RequireUser, h.cancel)
	r.Post(routes.MerchantChargeRefundPattern, h.RequireUser, h.refund)
}

// chargeID is the route's charge id (404 unless it has the shape of one).
func chargeID(c *fiber.Ctx) (string, error) {
	id := c.Params("id")
	if !charge.ValidPublicID(id) {
		return "", fiber.ErrNotFound
	}
	return id, nil
}
