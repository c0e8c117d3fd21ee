// Package pay is the web app's pages of one payment: the bank's return
// (GET or POST to the payment's return URL, return.go), which resolves the
// payment and shows its result or hands the payer over to a partner's
// return_url, and the owner's receipt with "I won't pay this one"
// (receipt.go). Its pages are views.
//
// Like every feature of the web app (web/account, web/wallet, web/admin,
// web/api), internal/server builds its Deps and web registers it in web's
// order, handing it seam.App. It never imports web. The return is a
// feature of its own (Deps.Return): web registers it before the CSRF
// check, its one exemption, since a bank's POST carries neither the
// payer's session nor a CSRF token.
package pay

import (
	"context"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/web/seam"
)

// Deps are the payment pages' dependencies.
type Deps struct {
	// TopUps resolves and reads payments.
	TopUps *topup.Service
	// Reads tells which payments the payer dismissed.
	Reads *topupread.Reader
	// Webhooks holds each payment's one hand-over to a partner's
	// return_url.
	Webhooks *webhook.Service
	// ParseCallback reads a bank callback's parameters with the parser of
	// the named gateway (gateway.Driver.ParseCallback); ok is false for a
	// gateway it does not know or a callback without a usable token.
	ParseCallback func(gateway string, query, form func(key string) string, isPost bool) (callback.Params, bool)
	// ToCard, when set, says what of a credited top-up went back to its
	// card (cardrefund.Service.ToCard), for its payer's receipt.
	ToCard func(ctx context.Context, topUpID int64) (refunded, onItsWay int64, err error)
}

type handlers struct {
	Deps
	seam.App
	// kept keeps the pages of ended top-ups (kept.go).
	kept *keptPages
}

func (d Deps) handlers(app seam.App) *handlers {
	if d.ParseCallback == nil {
		panic("pay: Deps.ParseCallback is required (the gateway driver's callback parser)")
	}
	return &handlers{Deps: d, App: app, kept: newKeptPages(keptPagesMax)}
}

// Register adds the receipt's routes to r (behind the CSRF check).
func (d Deps) Register(r fiber.Router, app seam.App) {
	h := d.handlers(app)
	r.Get(routes.TopUpPattern, h.RequireUser, h.receipt)
	r.Post(routes.TopUpAbandonPattern, h.RequireUser, h.abandon)
	// The old address of the same action (a page open since before the
	// rename posts there).
	r.Post(routes.LegacyTopUpAbandonPattern, h.RequireUser, h.abandon)
}

// Return is the bank's return as a feature of its own, which web registers
// before the CSRF check, after its own middleware for the return (the CSRF
// cookie and token for the page's forms, the language remembered). Its
// other methods get the site's 404, unchecked too.
func (d Deps) Return() seam.Feature { return returnFeature{d} }

type returnFeature struct{ d Deps }

func (f returnFeature) Register(r fiber.Router, app seam.App) {
	h := f.d.handlers(app)
	// The callback at its new address and at its old one: banks hold the
	// old one for top-ups started before the rename, and a redirect
	// would lose a POST's body. The same handler: the same credit, once.
	for _, p := range []string{routes.TopUpReturnPattern, routes.LegacyTopUpReturnPattern} {
		r.Get(p, h.topUpReturn)
		r.Post(p, h.topUpReturn)
		r.Use(p, seam.NotFound)
	}
}
