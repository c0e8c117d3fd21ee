package withdraw

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/views"
)

// form is a fresh withdrawal form with the person's verified accounts,
// balance and what today's limit leaves.
func (h *handlers) form(c *fiber.Ctx) (views.WithdrawForm, error) {
	u := h.User(c)
	ctx := c.UserContext()
	cfg := h.Withdrawals.Config()
	f := views.WithdrawForm{Token: formtoken.New(), MinRials: cfg.MinRials, DailyMaxRials: cfg.DailyMaxRials,
		ReviewAboveRials: cfg.ReviewAboveRials, Off: !h.Withdrawals.On()}
	accts, err := h.BankAccounts.List(ctx, u.ID)
	if err != nil {
		return f, err
	}
	for _, a := range accts {
		if a.Verified() {
			f.Accounts = append(f.Accounts, accountRow(a))
		}
	}
	w, err := h.Wallets.Figures(ctx, u.ID)
	if err != nil {
		return f, err
	}
	f.AvailableRials = w.AvailableRials()
	if cfg.DailyMaxRials > 0 {
		used, err := h.Withdrawals.UsedToday(ctx, u.ID)
		if err != nil {
			return f, err
		}
		f.LeftTodayRials = max(cfg.DailyMaxRials-used, 0)
	}
	return f, nil
}

// withdrawForm shows the form.
func (h *handlers) withdrawForm(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	f, err := h.form(c)
	if err != nil {
		return err
	}
	return h.Render(c, fiber.StatusOK, views.Withdraw(h.Page(c, "withdraw.title"), f))
}

// withdraw is the form's two steps (and "Change", edit=1, the form again
// filled in): without confirm, the amount and the
// account are checked and the confirmation page shows the rail and the
// arrival estimate; with confirm, the withdrawal is made (its amount
// held) and the browser goes to its receipt (303). The form's token makes
// a second submit the same withdrawal.
func (h *handlers) withdraw(c *fiber.Ctx) error {
	u := h.User(c)
	ctx := c.UserContext()
	f, err := h.form(c)
	if err != nil {
		return err
	}
	token := h.FormValue(c, "token")
	f.Amount = h.FormValue(c, "amount")
	f.Account, _ = strconv.ParseInt(h.FormValue(c, "bank_account"), 10, 64)
	// refuse shows the form again, as it was filled in, with the
	// sentence and the field at fault ("amount", "bank_account", or ""
	// for the whole form).
	refuse := func(status int, field, key string, args ...any) error {
		f.Token, f.ErrorKey, f.ErrorArgs, f.ErrorField = token, key, args, field
		return h.Render(c, status, views.Withdraw(h.Page(c, "withdraw.title"), f))
	}
	if f.Off {
		return h.Render(c, fiber.StatusServiceUnavailable, views.Withdraw(h.Page(c, "withdraw.title"), f))
	}
	if !formtoken.Valid(token) {
		// A fresh token (the one sent is no form's); no field is at fault.
		f.ErrorKey, f.ErrorField = "withdraw.error_form_expired", ""
		return h.Render(c, fiber.StatusBadRequest, views.Withdraw(h.Page(c, "withdraw.title"), f))
	}
	if h.FormValue(c, "edit") == "1" {
		// "Change" on the confirmation: the form again, filled in as
		// sent, under the same token (one form, one withdrawal).
		f.Token = token
		c.Set(fiber.HeaderCacheControl, "no-store")
		return h.Render(c, fiber.StatusOK, views.Withdraw(h.Page(c, "withdraw.title"), f))
	}
	cfg := h.Withdrawals.Config()
	rials, err := cfg.Limits().ParseTomans(f.Amount)
	if key, args, ok := amountErrorKey(err, cfg.MinRials, cfg.Limits().MaxRials); ok {
		return refuse(fiber.StatusUnprocessableEntity, "amount", key, args...)
	}
	acct, err := h.BankAccounts.Get(ctx, u.ID, f.Account)
	if errors.Is(err, bankaccount.ErrNotFound) || (err == nil && !acct.Verified()) {
		return refuse(fiber.StatusUnprocessableEntity, "bank_account", "withdraw.error_account")
	}
	if err != nil {
		return err
	}
	if h.FormValue(c, "confirm") != "1" {
		if rials > f.AvailableRials {
			return refuse(fiber.StatusUnprocessableEntity, "amount", "withdraw.error_insufficient", "available", i18n.Money(f.AvailableRials))
		}
		if cfg.DailyMaxRials > 0 && rials > f.LeftTodayRials {
			return refuse(fiber.StatusUnprocessableEntity, "amount", "withdraw.error_daily", "left", i18n.Money(f.LeftTodayRials))
		}
		est, ok := h.Withdrawals.Estimate(rials)
		if !ok {
			return refuse(fiber.StatusUnprocessableEntity, "", "withdraw.error_no_provider")
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return h.Render(c, fiber.StatusOK, views.WithdrawConfirm(h.Page(c, "withdraw.confirm_title"), views.WithdrawConfirmView{
			Token: token, Account: accountRow(acct), AmountRials: rials, Amount: f.Amount, Rail: string(est.Rail),
			Cutoff: est.Cutoff, Arrival: est.Arrival, Review: cfg.ReviewAboveRials > 0 && rials > cfg.ReviewAboveRials,
			ReviewAboveRials: cfg.ReviewAboveRials, AmountWords: i18n.Words(h.Lang(c), rials/money.RialsPerToman),
			AfterRials: f.AvailableRials - rials}))
	}
	res, err := h.Withdrawals.Request(ctx, withdrawal.Request{UserID: u.ID, FormToken: token, BankAccountID: acct.ID, AmountRials: rials})
	var daily *withdrawal.DailyLimitError
	switch {
	case err == nil:
		return c.Redirect(routes.Withdrawal(res.Withdrawal.PublicID), fiber.StatusSeeOther)
	case errors.As(err, &daily):
		return refuse(fiber.StatusUnprocessableEntity, "amount", "withdraw.error_daily", "left", i18n.Money(daily.Left))
	case errors.Is(err, withdrawal.ErrInsufficientFunds):
		return refuse(fiber.StatusUnprocessableEntity, "amount", "withdraw.error_insufficient", "available", i18n.Money(f.AvailableRials))
	case errors.Is(err, withdrawal.ErrBankAccountMissing), errors.Is(err, withdrawal.ErrBankAccountUnchecked):
		return refuse(fiber.StatusUnprocessableEntity, "bank_account", "withdraw.error_account")
	case errors.Is(err, withdrawal.ErrNoProvider):
		return refuse(fiber.StatusUnprocessableEntity, "", "withdraw.error_no_provider")
	case errors.Is(err, withdrawal.ErrOff):
		f.Off = true
		return h.Render(c, fiber.StatusServiceUnavailable, views.Withdraw(h.Page(c, "withdraw.title"), f))
	}
	return err
}

// withdrawalView is a withdrawal as its receipt shows it.
func withdrawalView(w withdrawal.Withdrawal) views.WithdrawalView {
	return views.WithdrawalView{PublicID: w.PublicID, Status: string(w.Status), Review: w.ReviewRequired, AmountRials: w.AmountRials,
		BankCode: w.BankCode, Grouped: iban.Sheba(w.Sheba).Grouped(), Last4: w.Last4(), Rail: w.Rail, ProviderRef: w.ProviderRef,
		CreatedAt: w.CreatedAt, ResolvedAt: w.ResolvedAt,
		Cancellable: w.Status == withdrawal.StatusRequested || w.Status == withdrawal.StatusApproved}
}
