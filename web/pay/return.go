package pay

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

// paymentReturn is the bank's callback (GET or POST). Its parameters are
// hints: only the payment's public id and the authority are read, and the
// authority must match ours. The amount is never taken from the request.
func (h *handlers) topUpReturn(c *fiber.Ctx) error {
	id := c.Params("id")
	if topup.ValidPublicID(id) {
		seam.WithTopUp(c, id)
	}
	p, cb, err := h.TopUps.Return(c.UserContext(), id, h.callbackParser(c))
	authority := cb.Authority
	switch {
	case errors.Is(err, topup.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, topup.ErrAuthorityMismatch), errors.Is(err, topup.ErrBadCallback),
		errors.Is(err, topup.ErrReceiptReused), errors.Is(err, topup.ErrReceiptMismatch):
		return h.Message(c, fiber.StatusBadRequest, "return.bad_title", "return.bad", routes.Wallet, "nav.back_wallet")
	case err != nil && p.ID == 0 && topup.ValidPublicID(id):
		// The payment could not even be read (a database that failed
		// for a moment), just as its payer comes back from paying: not
		// an error page, whose "try again" could send them to pay a
		// second time, but the pending page, asking again in a few
		// seconds. The worker asks the bank meanwhile.
		h.Log.ErrorContext(c.UserContext(), "return: payment not read; shown as pending", "payment", id, "err", err)
		return h.notReadYet(c, id)
	case err != nil && p.ID == 0:
		return err
	case err != nil:
		// The outcome could not be recorded yet; it stays open and is
		// shown as pending.
		h.Log.ErrorContext(c.UserContext(), "return: resolve failed", "payment", p.PublicID, "err", err)
	}
	returnURL := routes.TopUpReturn(p.PublicID) + "?" + callback.OwnTokenParam + "=" + url.QueryEscape(authority)
	if p.ReturnURL != nil {
		// An API top-up with a return_url (its origin registered by the
		// owner when it was created): the partner's page takes over, told
		// the top-up and its status as it stands now (the API's values).
		target, err := webhook.ReturnTarget(*p.ReturnURL, p.PublicID, string(p.Status.Public()))
		if err == nil {
			return h.handOver(c, p.ID, target, returnURL)
		}
		h.Log.ErrorContext(c.UserContext(), "return: stored return_url unusable", "payment", p.PublicID, "err", err)
	}
	if c.Method() == fiber.MethodPost {
		// Post/Redirect/Get: a reload must not re-post to us.
		return c.Redirect(returnURL, fiber.StatusSeeOther)
	}
	v := topUpView(p)
	if u := h.User(c); u == nil || u.ID != p.UserID {
		// Anyone holding the link (a forwarded URL, a shared screen, a
		// browser history) is not the payer: a neutral status only, no
		// amount, card or bank reference.
		v = views.TopUpView{PublicID: p.PublicID, Status: v.Status, FailureCause: v.FailureCause, Neutral: true}
	} else if err := h.withOtherGateway(c, p, &v); err != nil {
		return err
	}
	h.withCheckout(c, &v)
	pg := h.Page(c, views.ResultTitleKey(v.Status))
	if p.Status.Terminal() {
		return h.topUpPage(c, keptResult, pg, v)
	}
	if !p.Status.Terminal() {
		v.ReturnURL, v.RefreshSeconds = returnURL, pendingRefreshSeconds
		pg.RefreshURL, pg.RefreshSeconds = returnURL, pendingRefreshSeconds
		if v.Status == string(topup.StatusAwaitingPayment) {
			v.Status = string(topup.StatusPendingVerification)
		}
	}
	return h.Render(c, fiber.StatusOK, views.Result(pg, v))
}

// notReadYet is the pending page of payment id, which could not be read:
// neutral (whose it is was not read either), 503, refreshed by the same
// return when the bank's was a GET (safe to repeat: its parameters are
// hints), else through the payment's receipt (a POST is not repeated).
func (h *handlers) notReadYet(c *fiber.Ctx, id string) error {
	again := routes.TopUpPage(id)
	if c.Method() == fiber.MethodGet {
		again = routes.TopUpReturn(id)
		if q := string(c.Request().URI().QueryString()); q != "" {
			again += "?" + q
		}
	}
	v := views.TopUpView{PublicID: id, Status: string(topup.StatusPendingVerification), Neutral: true,
		ReturnURL: again, RefreshSeconds: pendingRefreshSeconds}
	pg := h.Page(c, views.ResultTitleKey(v.Status))
	pg.RefreshURL, pg.RefreshSeconds = again, pendingRefreshSeconds
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(pendingRefreshSeconds))
	return h.Render(c, fiber.StatusServiceUnavailable, views.Result(pg, v))
}

// handOver sends the payer to an API top-up's return_url (target) on the
// bank's first return of the payment only: the bank's request (a POST, or
// a GET with the gateway's fields, not our own URL that carries the token
// alone) that wins the payment's one hand-over claim. Every other visit
// of the link (a reload, our own refresh URL, a link sent to someone) gets
// a page naming the destination, left by a click: a return link is never
// an open redirect. A POST that is not the hand-over goes on to that page
// by Post/Redirect/Get (returnURL).
func (h *handlers) handOver(c *fiber.Ctx, topUpID int64, target, returnURL string) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	args := c.Context().QueryArgs()
	ownURL := c.Method() == fiber.MethodGet && args.Len() == 1 && args.Has(callback.OwnTokenParam)
	// A page's own background check (app.js's fetch of its refresh URL,
	// which may carry the bank's fields after a 503) never takes the
	// claim: the browser does not follow a fetch to another site, so the
	// hand-over would be spent unseen. The navigation that follows it
	// takes it.
	if mode := c.Get("Sec-Fetch-Mode"); mode != "" && mode != "navigate" {
		ownURL = true
	}
	if !ownURL {
		first, err := h.Webhooks.ClaimReturn(c.UserContext(), topUpID)
		if err != nil {
			return err
		}
		if first {
			return c.Redirect(target, fiber.StatusSeeOther)
		}
	}
	if c.Method() == fiber.MethodPost {
		return c.Redirect(returnURL, fiber.StatusSeeOther)
	}
	host := target
	if u, err := url.Parse(target); err == nil {
		host = u.Host
	}
	return h.Render(c, fiber.StatusOK, views.ReturnHandover(h.Page(c, "return.handover_title"), target, host))
}

// callbackParser reads a request's bank-callback parameters with the
// parser of the payment's gateway (its field names; GET query, or a
// POST's form body too). Our own result page's refresh and
// Post/Redirect/Get URLs carry the token as `Authority` in the query,
// which is accepted on a GET for every gateway (a hint like any other:
// the token must still equal the payment's own).
func (h *handlers) callbackParser(c *fiber.Ctx) func(gateway string) (callback.Params, bool) {
	return func(gateway string) (callback.Params, bool) {
		isPost := c.Method() == fiber.MethodPost
		p, ok := h.ParseCallback(gateway, func(k string) string { return c.Query(k) },
			func(k string) string { return c.FormValue(k) }, isPost)
		if !ok && !isPost {
			if tok, good := callback.Token(c.Query(callback.OwnTokenParam)); good {
				return callback.Params{Authority: tok}, true
			}
		}
		return p, ok
	}
}
