package merchant

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// topUpOffer is the top-up the checkout offers for a shortfall of short
// rials: whole tomans, at least the top-up minimum, at most its maximum
// (a shortfall above it takes more than one top-up), so that the button
// names the amount the form opens with.
func (h *handlers) topUpOffer(short int64) int64 {
	offer := (short + money.RialsPerToman - 1) / money.RialsPerToman * money.RialsPerToman
	if h.TopUps != nil {
		minRials, maxRials := h.TopUps.Limits()
		offer = max(offer, minRials)
		if maxRials > 0 {
			offer = min(offer, maxRials)
		}
	}
	return offer
}

// checkoutView is charge ch as the signed-in payer's checkout shows it.
func (h *handlers) checkoutView(c *fiber.Ctx, ch charge.Charge) (views.CheckoutView, error) {
	u := h.User(c)
	v := views.CheckoutView{PublicID: ch.PublicID, MerchantName: ch.MerchantName, Description: ch.Description,
		AmountRials: ch.AmountRials, Token: formtoken.New()}
	if ch.Status == charge.StatusRequiresConfirmation && !h.Now().Before(ch.ExpiresAt) {
		// Past its time: the worker has not written it yet, and a confirm
		// would be refused. The page and the way back to the merchant
		// both say expired, never "requires_confirmation".
		ch.Status = charge.StatusExpired
	}
	switch {
	case ch.Status == charge.StatusRequiresConfirmation && ch.MerchantUserID == u.ID:
		v.State = "own"
	case ch.Status == charge.StatusRequiresConfirmation && !u.Verified():
		// Paying names the payer's address to the merchant: not before
		// its owner confirms it (the write refuses it as well).
		v.State = "unconfirmed"
	case ch.Status == charge.StatusRequiresConfirmation:
		w, err := h.Wallets.Figures(c.UserContext(), u.ID)
		if err != nil {
			return v, err
		}
		v.AvailableRials, v.State = w.AvailableRials(), "open"
		if short := ch.AmountRials - v.AvailableRials; short > 0 {
			v.State, v.ShortRials, v.TopUpRials = "short", short, h.topUpOffer(short)
		}
	// A charge that ended without money (canceled, expired) says so to
	// whoever opens it, even one another payer had authorized: nobody
	// paid it.
	case ch.Status == charge.StatusCanceled:
		v.State = "canceled"
	case ch.Status == charge.StatusExpired:
		v.State = "expired"
	case ch.PayerUserID != 0 && ch.PayerUserID != u.ID:
		v.State = "taken"
	case ch.Status == charge.StatusSucceeded:
		v.State = "paid"
	case ch.Status == charge.StatusAuthorized:
		v.State = "authorized"
	default:
		v.State = "expired"
	}
	if (v.State == "paid" || v.State == "authorized" || v.State == "canceled" || v.State == "expired") &&
		(ch.PayerUserID == 0 || ch.PayerUserID == u.ID) {
		v.ReturnURL = charge.ReturnTarget(ch)
		if r, err := url.Parse(v.ReturnURL); err == nil {
			v.ReturnHost = r.Host
		}
	}
	if ch.PayerUserID == u.ID || (ch.PayerUserID == 0 && ch.Status == charge.StatusRequiresConfirmation) {
		// The order's own reference: to the payer who confirmed it, or
		// while it waits for one; not on a charge that ended unpaid.
		v.OrderID = ch.OrderID
	}
	if ch.PayerUserID == u.ID && ch.ConfirmedAt != nil {
		r := &views.CheckoutReceipt{CapturedRials: ch.CapturedRials, RefundedRials: ch.RefundedRials, ConfirmedAt: *ch.ConfirmedAt}
		if ch.Status == charge.StatusAuthorized {
			r.HoldUntil = ch.HoldExpiresAt
		}
		v.Receipt = r
	}
	return v, nil
}

// loadCheckout reads the route's charge (404: none).
func (h *handlers) loadCheckout(c *fiber.Ctx) (charge.Charge, error) {
	id, err := chargeID(c)
	if err != nil {
		return charge.Charge{}, err
	}
	ch, err := h.Charges.Checkout(c.UserContext(), id)
	if errors.Is(err, charge.ErrNotFound) {
		return ch, fiber.ErrNotFound
	}
	return ch, err
}

// checkout is GET /checkout/{id}: the charge, the payer's balance, and
// what they may do (pay, cancel, top up the difference), or the outcome;
// ?done=1 right after paying or canceling (done's cookie) sends the
// browser on to the merchant's return_url at once, that once.
func (h *handlers) checkout(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	ch, err := h.loadCheckout(c)
	if err != nil {
		return err
	}
	return h.showCheckout(c, fiber.StatusOK, ch, "", nil)
}

// showCheckout renders ch's checkout, with a refusal's sentence (errKey).
func (h *handlers) showCheckout(c *fiber.Ctx, status int, ch charge.Charge, errKey string, args []any) error {
	v, err := h.checkoutView(c, ch)
	if err != nil {
		return err
	}
	switch {
	case v.State == "unconfirmed":
		// Remembered, so that the page that confirms the address leads
		// back here.
		h.SetPendingCheckout(c, ch.PublicID)
	case !v.Open() && h.PendingCheckout(c) == ch.PublicID:
		h.SetPendingCheckout(c, "") // nothing to come back to any more
	}
	// The outcome goes on to the merchant by itself once, in the browser
	// that has just paid or canceled (done's cookie): a link to
	// ?done=1 opened later, or sent to someone, is no redirect off-site,
	// only a page with the merchant's link.
	if c.Query("done") == "1" && h.CheckoutDone(c) == ch.PublicID {
		h.SetCheckoutDone(c, "")
		v.AutoReturn = v.ReturnURL != "" && errKey == ""
	}
	v.ErrorKey, v.ErrorArgs = errKey, args
	return h.Render(c, status, views.Checkout(h.Page(c, "checkout.page_title"), v))
}

// done sends the browser to the checkout's outcome (Post/Redirect/Get):
// that page goes on to the merchant's return_url. A form's POST may not
// redirect to another site (the policy's form-action), a page may.
func (h *handlers) done(c *fiber.Ctx, publicID string) error {
	if h.PendingCheckout(c) == publicID {
		h.SetPendingCheckout(c, "")
	}
	h.SetCheckoutDone(c, publicID)
	return c.Redirect(routes.Checkout(publicID)+"?done=1", fiber.StatusSeeOther)
}

// pay is POST /checkout/{id}: the payer confirms with the form's own
// token (charge.Service.ConfirmForm). The charge is paid (or authorized)
// once whatever the submits: a second one, from this form or another
// tab, answers with the first; the form's token once used pays no other
// charge (409); a token of no form's shape is refused (400). A form of
// another session fails the CSRF check first (403).
func (h *handlers) pay(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	ch, err := h.loadCheckout(c)
	if err != nil {
		return err
	}
	res, err := h.Charges.ConfirmForm(c.UserContext(), h.User(c).ID, ch.PublicID, h.FormValue(c, "token"))
	if err == nil {
		return h.done(c, res.Charge.PublicID)
	}
	return h.refused(c, ch, res.Charge, err)
}

// cancelCheckout is POST /checkout/{id}/cancel: the payer declines; the
// browser goes back to the merchant told so.
func (h *handlers) cancelCheckout(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	ch, err := h.loadCheckout(c)
	if err != nil {
		return err
	}
	res, err := h.Charges.CancelCheckout(c.UserContext(), h.User(c).ID, ch.PublicID)
	if err == nil {
		return h.done(c, res.Charge.PublicID)
	}
	return h.refused(c, ch, res.Charge, err)
}

// refused shows the checkout again with a refusal's one sentence; the
// charge as it stands after (after: when the move read it).
func (h *handlers) refused(c *fiber.Ctx, before, after charge.Charge, err error) error {
	ch := before
	if after.ID != 0 {
		ch = after
	}
	var key string
	switch {
	case errors.Is(err, charge.ErrBadFormToken):
		return h.showCheckout(c, fiber.StatusBadRequest, ch, "checkout.error_form_expired", nil)
	case errors.Is(err, charge.ErrFormReused):
		key = "checkout.error_form_used"
	case errors.Is(err, charge.ErrInsufficientFunds):
		key = "checkout.error_funds"
	case errors.Is(err, charge.ErrExpired):
		key = "checkout.error_expired"
		if ch.Status == charge.StatusRequiresConfirmation {
			ch.Status = charge.StatusExpired
		}
	case errors.Is(err, charge.ErrNotCancelable) && ch.Status == charge.StatusAuthorized:
		// The payer's own authorization: only the merchant ends it now,
		// or its time, which gives the money back.
		key = "checkout.error_held"
	case errors.Is(err, charge.ErrNotCancelable) && ch.Status == charge.StatusSucceeded:
		key = "checkout.error_paid"
	case errors.Is(err, charge.ErrCanceled), errors.Is(err, charge.ErrNotCancelable):
		key = "checkout.error_over"
	case errors.Is(err, charge.ErrPaidByAnother):
		key = "checkout.error_taken"
	case errors.Is(err, charge.ErrPayToSelf):
		key = "checkout.error_own"
	case errors.Is(err, charge.ErrAddressUnconfirmed):
		// The page's own state ("unconfirmed", from the session) says
		// it; a session that still read the address as confirmed gets
		// the sentence instead.
		key := ""
		if h.User(c).Verified() {
			key = "verify.needed"
		}
		return h.showCheckout(c, fiber.StatusForbidden, ch, key, nil)
	case errors.Is(err, charge.ErrNotFound):
		return fiber.ErrNotFound
	default:
		return err
	}
	if fresh, rerr := h.Charges.Checkout(c.UserContext(), ch.PublicID); rerr == nil {
		ch = fresh
	}
	return h.showCheckout(c, fiber.StatusConflict, ch, key, nil)
}

// topUpDifference is GET /checkout/{id}/topup: the top-up form filled in
// with what the balance lacks (at least the top-up minimum), the checkout
// remembered so that the credited top-up's page leads back to it.
func (h *handlers) topUpDifference(c *fiber.Ctx) error {
	ch, err := h.loadCheckout(c)
	if err != nil {
		return err
	}
	v, err := h.checkoutView(c, ch)
	if err != nil {
		return err
	}
	if v.State != "short" {
		return c.Redirect(routes.Checkout(ch.PublicID), fiber.StatusSeeOther)
	}
	if site := c.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		// A link from another site would make its charge the one the
		// payer's next credited top-up leads back to: the checkout's own
		// page first, where the payer sees whose charge it is and follows
		// its own "top up" link.
		return c.Redirect(routes.Checkout(ch.PublicID), fiber.StatusSeeOther)
	}
	tomans := v.TopUpRials / money.RialsPerToman
	h.SetPendingCheckout(c, ch.PublicID)
	return c.Redirect(routes.TopUp+"?amount="+strconv.FormatInt(tomans, 10), fiber.StatusSeeOther)
}
