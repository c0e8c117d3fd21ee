package pay

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

// pendingRefreshSeconds is how often a pending result page reloads itself.
const pendingRefreshSeconds = 5

func topUpView(p topup.TopUp) views.TopUpView {
	v := views.TopUpView{
		PublicID: p.PublicID, AmountRials: p.AmountRials, Status: publicStatus(p.Status),
		RefID: p.RefIDValue(), CardPANMasked: p.CardPANMasked, CreatedAt: p.CreatedAt, ResolvedAt: p.ResolvedAt,
	}
	v.Reversing = p.Status == topup.StatusReversing
	v.ReversingUnsettled = topup.ReversingUnsettled(p)
	if p.Status == topup.StatusFailed {
		v.FailureCause = failureCause(string(p.StatusReason))
		v.TryAgainURL = routes.TopUp + "?amount=" + strconv.FormatInt(p.AmountRials/10, 10)
	}
	return v
}

// withOtherGateway offers, on a failed payment's page and when several
// gateways are offered, a new attempt with the same amount through
// another gateway than the failed payment's.
func (h *handlers) withOtherGateway(c *fiber.Ctx, p topup.TopUp, v *views.TopUpView) error {
	if v.TryAgainURL == "" {
		return nil
	}
	offers, err := h.TopUps.Offered(c.UserContext())
	if err != nil {
		return err
	}
	if len(offers) > 1 {
		v.OtherGatewayURL = v.TryAgainURL + "&after=" + url.QueryEscape(p.Gateway)
	}
	return nil
}

// withCheckout leads a credited top-up's page back to the checkout the
// payer left to top up its difference (remembered by the checkout's
// "top up" link; only ever our own /checkout/{id}).
func (h *handlers) withCheckout(c *fiber.Ctx, v *views.TopUpView) {
	if v.Status != string(topup.StatusCredited) || v.Neutral || h.PendingCheckout == nil {
		return
	}
	if id := h.PendingCheckout(c); id != "" {
		v.CheckoutURL = routes.Checkout(id)
	}
}

// publicStatus is the status as pages and their hooks show it: a payment
// whose outcome is not yet known is pending verification to the payer
// (settling too: topup.Status.Public).
func publicStatus(s topup.Status) string {
	if s == topup.StatusCreated {
		return string(topup.StatusAwaitingPayment)
	}
	return string(s.Public())
}

// receipt is the owner's status page of a payment; others get 404.
func (h *handlers) receipt(c *fiber.Ctx) error {
	if topup.ValidPublicID(c.Params("id")) {
		seam.WithTopUp(c, c.Params("id"))
	}
	p, err := h.TopUps.ForOwner(c.UserContext(), c.Params("id"), h.User(c).ID)
	if errors.Is(err, topup.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := topUpView(p)
	if err := h.unpaidView(c, p, &v); err != nil {
		return err
	}
	if err := h.withOtherGateway(c, p, &v); err != nil {
		return err
	}
	h.withCheckout(c, &v)
	if p.Status == topup.StatusCredited && h.ToCard != nil {
		if v.ToCardRials, v.ToCardPendingRials, err = h.ToCard(c.UserContext(), p.ID); err != nil {
			return err
		}
	}
	pg := h.Page(c, v.ReceiptTitle())
	if p.Status == topup.StatusPendingVerification || p.Status == topup.StatusSettling || p.Status == topup.StatusReversing ||
		(views.StatusClass(v.Status) == "pending" && !v.Unpaid() && !v.Dismissed) {
		// The page says it updates itself: it does, whatever the open
		// status (a top-up being started, one whose payer came back
		// before the bank's word).
		pg.RefreshURL, pg.RefreshSeconds = routes.TopUpPage(p.PublicID), pendingRefreshSeconds
	}
	if p.Status.Terminal() {
		return h.topUpPage(c, keptReceipt, pg, v)
	}
	return h.Render(c, fiber.StatusOK, views.Receipt(pg, v))
}

// unpaidView offers the payer of a payment the bank still holds open, and
// that never came back from the bank, the way back to the bank's page and
// "I won't pay this one".
func (h *handlers) unpaidView(c *fiber.Ctx, p topup.TopUp, v *views.TopUpView) error {
	if p.Status != topup.StatusAwaitingPayment && p.Status != topup.StatusPendingVerification {
		return nil
	}
	if p.Status == topup.StatusAwaitingPayment && p.ReturnedAt == nil && p.Authority != nil {
		// A gateway reached only by POST (Mellat) has no link: the way
		// back is its form.
		v.BankURL = h.TopUps.PayURL(p)
		if f := h.TopUps.PayForm(p); v.BankURL == "" && f != nil {
			v.BankForm = &views.ToBankView{Action: f.Action, AmountRials: p.AmountRials}
			for _, fld := range f.Fields {
				v.BankForm.Fields = append(v.BankForm.Fields, views.FormField{Name: fld.Name, Value: fld.Value})
			}
		}
	}
	d, err := h.Reads.Dismissed(c.UserContext(), p.UserID, []int64{p.ID})
	if err != nil {
		return err
	}
	v.Dismissed = d[p.ID]
	return nil
}

// abandon is "I won't pay this one": the bank is asked first (a payment it
// was paid for is credited, one it says was not paid fails: never failed
// on our word alone); if the bank cannot say yet, the payment leaves the
// payer's "in progress" list and the worker keeps asking.
func (h *handlers) abandon(c *fiber.Ctx) error {
	p, err := h.TopUps.ForOwner(c.UserContext(), c.Params("id"), h.User(c).ID)
	if errors.Is(err, topup.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	seam.WithTopUp(c, p.PublicID)
	if p.Status == topup.StatusAwaitingPayment || p.Status == topup.StatusCreated {
		resolved, err := h.TopUps.Resolve(c.UserContext(), p)
		if err != nil {
			h.Log.WarnContext(c.UserContext(), "abandon: the bank could not be asked", "err", err)
		} else {
			p = resolved
		}
		if p.Status == topup.StatusAwaitingPayment || p.Status == topup.StatusCreated || p.Status == topup.StatusPendingVerification {
			if err := h.TopUps.Dismiss(c.UserContext(), p); err != nil {
				return err
			}
		}
		h.Log.InfoContext(c.UserContext(), "payer abandoned a payment", "status", p.Status)
	}
	return c.Redirect(routes.TopUpPage(p.PublicID), fiber.StatusSeeOther)
}
