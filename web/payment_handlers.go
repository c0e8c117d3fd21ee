package web

import (
	"errors"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/views"
)

// pendingRefreshSeconds is how often a pending result page reloads itself.
const pendingRefreshSeconds = 5

func paymentView(p payment.Payment) views.PaymentView {
	v := views.PaymentView{
		PublicID: p.PublicID, AmountRials: p.AmountRials, Status: publicStatus(p.Status),
		RefID: p.RefIDValue(), CardPANMasked: p.CardPANMasked, CreatedAt: p.CreatedAt, ResolvedAt: p.ResolvedAt,
	}
	if p.Status == payment.StatusFailed {
		v.FailureCause = failureCause(string(p.StatusReason))
		v.TryAgainURL = routes.TopUp + "?amount=" + itoa(p.AmountRials/10)
	}
	return v
}

// withOtherGateway offers, on a failed payment's page and when several
// gateways are offered, a new attempt with the same amount through
// another gateway than the failed payment's.
func (s *Server) withOtherGateway(c *fiber.Ctx, p payment.Payment, v *views.PaymentView) error {
	if v.TryAgainURL == "" {
		return nil
	}
	offers, err := s.Payments.Offered(c.UserContext())
	if err != nil {
		return err
	}
	if len(offers) > 1 {
		v.OtherGatewayURL = v.TryAgainURL + "&after=" + url.QueryEscape(p.Gateway)
	}
	return nil
}

// publicStatus is the status as pages and their hooks show it: a payment
// whose outcome is not yet known is pending verification to the payer
// (settling too: payment.Status.Public).
func publicStatus(s payment.Status) string {
	if s == payment.StatusCreated {
		return string(payment.StatusAwaitingPayment)
	}
	return string(s.Public())
}

// paymentReturn is the bank's callback (GET or POST). Its parameters are
// hints: only the payment's public id and the authority are read, and the
// authority must match ours. The amount is never taken from the request.
func (s *Server) paymentReturn(c *fiber.Ctx) error {
	id := c.Params("id")
	if payment.ValidPublicID(id) {
		withPayment(c, id)
	}
	p, cb, err := s.Payments.ReturnCallback(c.UserContext(), id, s.callbackParser(c))
	authority := cb.Authority
	switch {
	case errors.Is(err, payment.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, payment.ErrAuthorityMismatch), errors.Is(err, payment.ErrBadCallback),
		errors.Is(err, payment.ErrReceiptReused), errors.Is(err, payment.ErrReceiptMismatch):
		return s.message(c, fiber.StatusBadRequest, "return.bad_title", "return.bad", routes.Wallet, "nav.back_wallet")
	case err != nil && p.ID == 0:
		return err
	case err != nil:
		// The outcome could not be recorded yet; it stays open and is
		// shown as pending.
		s.Log.ErrorContext(c.UserContext(), "return: resolve failed", "payment", p.PublicID, "err", err)
	}
	returnURL := routes.PaymentReturn(p.PublicID) + "?" + callback.OwnTokenParam + "=" + url.QueryEscape(authority)
	if p.ReturnURL != nil {
		// An API top-up with a return_url (its origin registered by the
		// owner when it was created): the partner's page takes over, told
		// the top-up and its status as it stands now (the API's values).
		target, err := webhook.ReturnTarget(*p.ReturnURL, p.PublicID, string(p.Status.Public()))
		if err == nil {
			return s.handOver(c, p.ID, target, returnURL)
		}
		s.Log.ErrorContext(c.UserContext(), "return: stored return_url unusable", "payment", p.PublicID, "err", err)
	}
	if c.Method() == fiber.MethodPost {
		// Post/Redirect/Get: a reload must not re-post to us.
		return c.Redirect(returnURL, fiber.StatusSeeOther)
	}
	v := paymentView(p)
	if u := currentUser(c); u == nil || u.ID != p.UserID {
		// Anyone holding the link (a forwarded URL, a shared screen, a
		// browser history) is not the payer: a neutral status only, no
		// amount, card or bank reference.
		v = views.PaymentView{PublicID: p.PublicID, Status: v.Status, FailureCause: v.FailureCause, Neutral: true}
	} else if err := s.withOtherGateway(c, p, &v); err != nil {
		return err
	}
	pg := s.page(c, views.ResultTitleKey(v.Status))
	if !p.Status.Terminal() {
		v.ReturnURL, v.RefreshSeconds = returnURL, pendingRefreshSeconds
		pg.RefreshURL, pg.RefreshSeconds = returnURL, pendingRefreshSeconds
		if v.Status == string(payment.StatusAwaitingPayment) {
			v.Status = string(payment.StatusPendingVerification)
		}
	}
	return render(c, fiber.StatusOK, views.Result(pg, v))
}

// handOver sends the payer to an API top-up's return_url (target) on the
// bank's first return of the payment only: the bank's request (a POST, or
// a GET with the gateway's fields, not our own URL that carries the token
// alone) that wins the payment's one hand-over claim. Every other visit
// of the link (a reload, our own refresh URL, a link sent to someone) gets
// a page naming the destination, left by a click: a return link is never
// an open redirect. A POST that is not the hand-over goes on to that page
// by Post/Redirect/Get (returnURL).
func (s *Server) handOver(c *fiber.Ctx, paymentID int64, target, returnURL string) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	args := c.Context().QueryArgs()
	ownURL := c.Method() == fiber.MethodGet && args.Len() == 1 && args.Has(callback.OwnTokenParam)
	if !ownURL {
		first, err := s.Webhooks.ClaimReturn(c.UserContext(), paymentID)
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
	return render(c, fiber.StatusOK, views.ReturnHandover(s.page(c, "return.handover_title"), target, host))
}

// receipt is the owner's status page of a payment; others get 404.
func (s *Server) receipt(c *fiber.Ctx) error {
	if payment.ValidPublicID(c.Params("id")) {
		withPayment(c, c.Params("id"))
	}
	p, err := s.Payments.ForOwner(c.UserContext(), c.Params("id"), currentUser(c).ID)
	if errors.Is(err, payment.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := paymentView(p)
	if err := s.unpaidView(c, p, &v); err != nil {
		return err
	}
	if err := s.withOtherGateway(c, p, &v); err != nil {
		return err
	}
	pg := s.page(c, v.ReceiptTitle())
	if p.Status == payment.StatusPendingVerification || p.Status == payment.StatusSettling {
		pg.RefreshURL, pg.RefreshSeconds = routes.Payment(p.PublicID), pendingRefreshSeconds
	}
	return render(c, fiber.StatusOK, views.Receipt(pg, v))
}

// unpaidView offers the payer of a payment the bank still holds open, and
// that never came back from the bank, the way back to the bank's page and
// "I won't pay this one".
func (s *Server) unpaidView(c *fiber.Ctx, p payment.Payment, v *views.PaymentView) error {
	if p.Status != payment.StatusAwaitingPayment && p.Status != payment.StatusPendingVerification {
		return nil
	}
	if p.Status == payment.StatusAwaitingPayment && p.ReturnedAt == nil && p.Authority != nil {
		// A gateway reached only by POST (Mellat) has no link: the way
		// back is its form.
		v.BankURL = s.Payments.PayURL(p)
		if f := s.Payments.PayForm(p); v.BankURL == "" && f != nil {
			v.BankForm = &views.ToBankView{Action: f.Action, AmountRials: p.AmountRials}
			for _, fld := range f.Fields {
				v.BankForm.Fields = append(v.BankForm.Fields, views.FormField{Name: fld.Name, Value: fld.Value})
			}
		}
	}
	d, err := s.Reads.Dismissed(c.UserContext(), p.UserID, []int64{p.ID})
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
func (s *Server) abandon(c *fiber.Ctx) error {
	p, err := s.Payments.ForOwner(c.UserContext(), c.Params("id"), currentUser(c).ID)
	if errors.Is(err, payment.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	withPayment(c, p.PublicID)
	if p.Status == payment.StatusAwaitingPayment || p.Status == payment.StatusCreated {
		resolved, err := s.Payments.Resolve(c.UserContext(), p)
		if err != nil {
			s.Log.WarnContext(c.UserContext(), "abandon: the bank could not be asked", "err", err)
		} else {
			p = resolved
		}
		if p.Status == payment.StatusAwaitingPayment || p.Status == payment.StatusCreated || p.Status == payment.StatusPendingVerification {
			if err := s.Payments.Dismiss(c.UserContext(), p); err != nil {
				return err
			}
		}
		s.Log.InfoContext(c.UserContext(), "payer abandoned a payment", "status", p.Status)
	}
	return c.Redirect(routes.Payment(p.PublicID), fiber.StatusSeeOther)
}
