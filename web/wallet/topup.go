package wallet

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/views"
)

// quickTomans are the quick-pick amounts offered on the form.
func quickTomans(minRials, maxRials int64) []int64 {
	var out []int64
	for _, t := range []int64{50_000, 100_000, 200_000, 500_000, 1_000_000} {
		if t*10 >= minRials && t*10 <= maxRials {
			out = append(out, t)
		}
	}
	return out
}

func (h *handlers) newTopUpForm() views.TopUpForm {
	l := h.TopUp.Limits()
	return views.TopUpForm{Token: formtoken.New(), MinRials: l.MinRials, MaxRials: l.MaxRials, QuickTomans: quickTomans(l.MinRials, l.MaxRials)}
}

// withGateways fills in the gateways the payer may choose from, in the
// operator's order, and selects want when it is one of them, else the
// first healthy one after avoid (a gateway that just failed), else the
// first healthy one.
func (h *handlers) withGateways(c *fiber.Ctx, f views.TopUpForm, want, avoid string) (views.TopUpForm, error) {
	offers, err := h.TopUps.Offered(c.UserContext())
	if err != nil {
		return f, err
	}
	f.Gateways, f.Gateway = nil, ""
	for _, o := range offers {
		f.Gateways = append(f.Gateways, views.GatewayChoice{Name: o.Name, Label: h.GatewayName(c, o.Name), Healthy: o.Healthy})
		if o.Name == want {
			f.Gateway = want
		}
	}
	if f.Gateway == "" && avoid != "" {
		for i, o := range offers {
			if o.Name == avoid {
				for j := 1; j < len(offers); j++ {
					if n := offers[(i+j)%len(offers)]; n.Healthy {
						f.Gateway = n.Name
						break
					}
				}
			}
		}
	}
	if f.Gateway == "" {
		if name, err := topup.PickGateway(offers, ""); err == nil {
			f.Gateway = name
		} else if len(offers) > 0 {
			f.Gateway = offers[0].Name
		}
	}
	return f, nil
}

// withLeft fills in what the user's limits still allow today.
func (h *handlers) withLeft(c *fiber.Ctx, f views.TopUpForm) (views.TopUpForm, error) {
	if h.Limits == nil || !h.Limits.Rules().Shown() {
		return f, nil
	}
	u, err := h.Limits.Usage(c.UserContext(), h.User(c).ID)
	if err != nil {
		return f, err
	}
	f.Left = h.Limits.Rules().Left(u)
	return f, nil
}

// limitErrorKey is the one sentence of a refusal by a limit.
func limitErrorKey(ex *limits.Exceeded) (string, []any) {
	switch ex.Kind {
	case limits.KindDailyCount:
		return "limits.error_daily_count", []any{"limit", ex.Limit}
	case limits.KindDailyAmount:
		return "limits.error_daily_amount", []any{"limit", i18n.Money(ex.Limit), "left", i18n.Money(ex.Left)}
	case limits.KindWaiting:
		return "limits.error_waiting", []any{"limit", ex.Limit}
	}
	return "limits.error_balance", []any{"limit", i18n.Money(ex.Limit), "left", i18n.Money(ex.Left)}
}

// topUpForm shows the form; ?amount=N (whole tomans, any digits) fills it
// in (the quick picks without JavaScript, "try again" after a failure). An
// amount that is not a valid top-up is ignored: the empty form, no error.
func (h *handlers) topUpForm(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	form, err := h.withLeft(c, h.newTopUpForm())
	if err != nil {
		return err
	}
	if form, err = h.withGateways(c, form, c.Query("gateway"), c.Query("after")); err != nil {
		return err
	}
	if q := c.Query("amount"); q != "" {
		if rials, err := h.TopUp.Amount(topup.Typed(q)); err == nil {
			form.Amount = i18n.TomansNumber(h.Lang(c), rials)
		}
	}
	return h.Render(c, fiber.StatusOK, views.TopUp(h.Page(c, "topup.title"), form))
}

// topUp starts a payment and sends the browser to the bank (303), or
// answers a repeat of the same form exactly as the first submit was.
func (h *handlers) topUp(c *fiber.Ctx) error {
	u := h.User(c)
	// A refusal shows a fresh form: the switches read once for both.
	c.SetUserContext(topup.ReadSwitchesOnce(c.UserContext()))
	form := h.newTopUpForm()
	form.Amount = h.FormValue(c, "amount")
	token := h.FormValue(c, "token")
	chosen := strings.TrimSpace(h.FormValue(c, "gateway"))
	res, err := h.TopUp.Start(c.UserContext(), topup.Request{
		UserID: u.ID, Email: u.Email, FormToken: token, Amount: topup.Typed(form.Amount),
		English: h.Lang(c) == i18n.EN, Gateway: chosen,
	})
	var reused *topup.FormReusedError
	var exceeded *limits.Exceeded
	switch {
	case errors.As(err, &exceeded):
		form.Token = token
		form.ErrorKey, form.ErrorArgs = limitErrorKey(exceeded)
		return h.topUpAgain(c, fiber.StatusUnprocessableEntity, form, chosen)
	case errors.Is(err, topup.ErrBadFormToken):
		form.ErrorKey = "topup.error_form_expired"
		return h.topUpAgain(c, fiber.StatusBadRequest, form, chosen)
	case isAmountError(err):
		form.Token = token
		form.ErrorKey, form.ErrorArgs = amountErrorKey(err, form.MinRials, form.MaxRials)
		return h.topUpAgain(c, fiber.StatusUnprocessableEntity, form, chosen)
	case errors.Is(err, topup.ErrUnknownGateway):
		form.Token = token
		form.ErrorKey = "topup.error_gateway"
		return h.topUpAgain(c, fiber.StatusUnprocessableEntity, form, chosen)
	case errors.As(err, &reused):
		return h.Message(c, fiber.StatusConflict, "topup.reused_title", "topup.reused", routes.TopUp, "topup.new_form")
	case errors.Is(err, topup.ErrGatewayFailed):
		failed := res.TopUp.Gateway
		if failed == "" {
			failed = chosen
		}
		return h.gatewayFailed(c, form.Amount, failed)
	case errors.Is(err, topup.ErrStillProcessing):
		c.Set(fiber.HeaderRetryAfter, "3")
		return h.Message(c, fiber.StatusServiceUnavailable, "topup.in_progress_title", "topup.in_progress", routes.Wallet, "nav.back_wallet")
	case err != nil:
		return err
	}
	if res.PayForm != nil {
		// The bank takes its token only by POST (SEP, Mellat): a page
		// whose one form posts to the bank, submitted by our script, with
		// a button for a browser without it.
		c.Set(fiber.HeaderCacheControl, "no-store")
		v := views.ToBankView{Action: res.PayForm.Action, AmountRials: res.TopUp.AmountRials}
		for _, f := range res.PayForm.Fields {
			v.Fields = append(v.Fields, views.FormField{Name: f.Name, Value: f.Value})
		}
		return h.Render(c, fiber.StatusOK, views.ToBank(h.Page(c, "tobank.title"), v))
	}
	if res.PayURL != "" {
		return c.Redirect(res.PayURL, fiber.StatusSeeOther)
	}
	// A repeat submit after the payment moved on: show where it stands.
	return c.Redirect(routes.TopUpPage(res.TopUp.PublicID), fiber.StatusSeeOther)
}

// topUpAgain shows form again after a refusal, as typed: the payer's
// choice of gateway kept, and what is left of today's limits (the same
// hints as the fresh form).
func (h *handlers) topUpAgain(c *fiber.Ctx, status int, form views.TopUpForm, chosen string) error {
	form, err := h.withGateways(c, form, chosen, "")
	if err != nil {
		return err
	}
	if form, err = h.withLeft(c, form); err != nil {
		return err
	}
	return h.Render(c, status, views.TopUp(h.Page(c, "topup.title"), form))
}

// gatewayFailed says that the bank could not start the payment and no
// money was taken, with a fresh form holding the same amount: a new
// attempt, with another gateway than the one that failed preselected
// when there are several ("try with another gateway").
func (h *handlers) gatewayFailed(c *fiber.Ctx, amount, failed string) error {
	fresh := h.newTopUpForm()
	fresh.Amount = amount
	fresh, err := h.withGateways(c, fresh, "", failed)
	if err != nil {
		return err
	}
	return h.Render(c, fiber.StatusServiceUnavailable, views.GatewayFailed(h.Page(c, "topup.gateway_failed_title"), fresh))
}

// isAmountError reports whether err is a refusal by the amount rules.
func isAmountError(err error) bool {
	for _, e := range []error{money.ErrEmpty, money.ErrInvalid, money.ErrTooLong, money.ErrNotPositive,
		money.ErrNotWholeTomans, money.ErrTooSmall, money.ErrTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func amountErrorKey(err error, minRials, maxRials int64) (string, []any) {
	switch {
	case errors.Is(err, money.ErrEmpty):
		return "topup.error_empty", nil
	case errors.Is(err, money.ErrTooLong), errors.Is(err, money.ErrTooLarge):
		return "topup.error_max", []any{"max", i18n.Money(maxRials)}
	case errors.Is(err, money.ErrNotPositive):
		return "topup.error_positive", nil
	case errors.Is(err, money.ErrNegative):
		return "topup.error_negative", nil
	case errors.Is(err, money.ErrDecimal):
		return "topup.error_decimal", nil
	case errors.Is(err, money.ErrTooSmall):
		return "topup.error_min", []any{"min", i18n.Money(minRials)}
	}
	return "topup.error_invalid", nil
}

// formReplay reports whether a top-up POST repeats a form this user has
// already submitted (a double click): such a replay is answered from the
// first submit and does not count against the top-up rate limit.
func (h *handlers) formReplay(c *fiber.Ctx) bool {
	u := h.User(c)
	if u == nil {
		return false
	}
	seen, err := h.TopUp.Submitted(c.UserContext(), u.ID, h.FormValue(c, "token"))
	if err != nil {
		h.Log.WarnContext(c.UserContext(), "top-up rate limit: replay check", "err", err)
		return false
	}
	return seen
}
