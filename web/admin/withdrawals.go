package admin

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/withdrawal"
	adminview "github.com/kifpool/kifpool/views/admin"
	"github.com/kifpool/kifpool/web/seam"
)

// withdrawalRow is a withdrawal as the admin's lists show it.
func withdrawalRow(w withdrawal.Withdrawal) adminview.WithdrawalRow {
	return adminview.WithdrawalRow{PublicID: w.PublicID, UserID: w.UserID, AmountRials: w.AmountRials, BankCode: w.BankCode,
		Last4: w.Last4(), Provider: w.Provider, Status: string(w.Status), Reason: w.StatusReason, CreatedAt: w.CreatedAt,
		ProviderState: string(w.ProviderState), ProviderRef: w.ProviderRef,
		ProviderPaid: w.Status == withdrawal.StatusNeedsReview && w.ProviderState == withdrawal.ProviderTransferred}
}

// withdrawalsView reads the queue.
func (h *handlers) withdrawalsView(c *fiber.Ctx) (adminview.WithdrawalsView, error) {
	ctx := c.UserContext()
	v := adminview.WithdrawalsView{Off: !h.Withdrawals.On()}
	// The queues oldest first, a page each: who has waited longest is
	// never the one past the page.
	review, moreReview, err := h.Withdrawals.Queue(ctx, withdrawal.Filter{ReviewOnly: true, Oldest: true, Limit: adminview.QueueShown})
	if err != nil {
		return v, err
	}
	under, moreUnder, err := h.Withdrawals.Queue(ctx, withdrawal.Filter{Statuses: []withdrawal.Status{withdrawal.StatusNeedsReview}, Oldest: true, Limit: adminview.QueueShown})
	if err != nil {
		return v, err
	}
	v.MoreReview, v.MoreUnderReview = moreReview, moreUnder
	recent, _, err := h.Withdrawals.Queue(ctx, withdrawal.Filter{Limit: 20})
	if err != nil {
		return v, err
	}
	for _, w := range review {
		v.Review = append(v.Review, withdrawalRow(w))
	}
	for _, w := range under {
		v.UnderReview = append(v.UnderReview, withdrawalRow(w))
	}
	for _, w := range recent {
		v.Recent = append(v.Recent, withdrawalRow(w))
	}
	accts, err := h.BankAccounts.Pending(ctx, 100)
	if err != nil {
		return v, err
	}
	for _, a := range accts {
		v.Accounts = append(v.Accounts, adminview.BankAccountReviewRow{ID: a.ID, UserID: a.UserID, Email: a.Email, NationalCode: a.NationalCode,
			BankCode: a.BankCode, Grouped: iban.Sheba(a.Sheba).Grouped(), CreatedAt: a.CreatedAt})
	}
	reports, err := h.Withdrawals.Reports(ctx, 10)
	if err != nil {
		return v, err
	}
	for _, r := range reports {
		row := adminview.PayoutReportRow{ID: r.ID, Provider: r.Provider, FinishedAt: r.FinishedAt, Checked: r.Checked, Paid: r.Paid,
			Returned: r.Returned, InFlight: r.InFlight, Settled: r.Settled, Diffs: r.Differences, Error: r.Error}
		for _, d := range r.Items() {
			row.Items = append(row.Items, adminview.PayoutDiffRow{Kind: d.Kind, PublicID: d.PublicID, Ours: string(d.Ours), Theirs: d.Theirs,
				AmountRials: d.AmountRials})
		}
		v.Reports = append(v.Reports, row)
	}
	return v, nil
}

// withdrawals is the cash-out queue page.
func (h *handlers) withdrawals(c *fiber.Ctx) error {
	v, err := h.withdrawalsView(c)
	if err != nil {
		return err
	}
	switch d := c.Query("done"); d {
	case "approved", "rejected", "failed", "paid", "account", "reconciled", "reconcile_busy":
		v.Notice = "admin.wd.done." + d
	}
	return h.Render(c, fiber.StatusOK, adminview.Withdrawals(h.Page(c, "admin.wd.title"), v))
}

// withdrawalsError shows the queue with one sentence (nothing changed).
// form is the refused form's id on the page ("approve-" and the
// withdrawal's public id, …) and field its field at fault ("code",
// "note" or "" for neither): that field is marked invalid and described
// by the sentence, and the form keeps the note typed into it.
func (h *handlers) withdrawalsError(c *fiber.Ctx, form, field string, status int, key string, args ...any) error {
	v, err := h.withdrawalsView(c)
	if err != nil {
		return err
	}
	v.ErrorKey, v.ErrorArgs = key, args
	v.Refused = adminview.Refusal{Form: form, Field: field, Note: h.FormValue(c, "note")}
	return h.Render(c, status, adminview.Withdrawals(h.Page(c, "admin.wd.title"), v))
}

// freshFactor checks the fresh second factor every cash-out action
// asks for (the form's code): true when the action may go on; otherwise
// it has answered, with form's code field marked invalid.
func (h *handlers) freshFactor(c *fiber.Ctx, form string) (bool, error) {
	status, key, args, err := h.checkFresh(c)
	if err != nil {
		return false, err
	}
	if key != "" {
		return false, h.withdrawalsError(c, form, "code", status, key, args...)
	}
	return true, nil
}

// checkFresh checks the fresh second factor an admin's action asks for
// (the form's code): key "" when the action may go on; otherwise the
// status and message (key, args) to answer with.
func (h *handlers) checkFresh(c *fiber.Ctx) (status int, key string, args []any, err error) {
	err = h.Auth.ConfirmSecondFactor(c.UserContext(), h.User(c).ID, h.FormValue(c, "code"))
	var throttled *auth.ThrottledError
	switch {
	case err == nil:
		return 0, "", nil, nil
	case errors.As(err, &throttled):
		return fiber.StatusTooManyRequests, "fresh2fa.throttled", []any{"seconds", seam.RetryAfter(c, throttled.RetryAfter)}, nil
	case errors.Is(err, auth.ErrCodeInvalid):
		h.Log.WarnContext(c.UserContext(), "admin's fresh second factor refused", "user", h.User(c).ID, "path", c.Path())
		return fiber.StatusUnprocessableEntity, "fresh2fa.wrong", nil, nil
	case errors.Is(err, auth.ErrTOTPNotEnrolled):
		return fiber.StatusUnprocessableEntity, "fresh2fa.not_enrolled", nil, nil
	}
	return 0, "", nil, err
}

// reviewWithdrawal approves or rejects one waiting for review, or closes
// one under review as failed or paid, with a note and a fresh second
// factor. form is the action's form id on the page, less the
// withdrawal's id ("approve", "reject", "fail", "paid").
func (h *handlers) reviewWithdrawal(act func(svc *withdrawal.Service) func(c *fiber.Ctx, adminID int64, id, note string) (withdrawal.Withdrawal, error), form, done string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		formID := adminview.ReviewForm(form, c.Params("id"))
		// Refusals that need no code spend none: a missing note, the
		// admin's own withdrawal (the use case refuses both again).
		if _, err := withdrawal.CheckNote(h.FormValue(c, "note")); err != nil {
			return h.withdrawalsError(c, formID, "note", fiber.StatusUnprocessableEntity, "admin.wd.error_note")
		}
		if w, err := h.Withdrawals.ByPublicID(c.UserContext(), c.Params("id")); err == nil && w.UserID == h.User(c).ID {
			return h.withdrawalsError(c, formID, "", fiber.StatusForbidden, "admin.wd.error_own")
		}
		if ok, err := h.freshFactor(c, formID); !ok {
			return err
		}
		_, err := act(h.Withdrawals)(c, h.User(c).ID, c.Params("id"), h.FormValue(c, "note"))
		switch {
		case errors.Is(err, withdrawal.ErrNotFound):
			return fiber.ErrNotFound
		case errors.Is(err, withdrawal.ErrNoteRequired):
			return h.withdrawalsError(c, formID, "note", fiber.StatusUnprocessableEntity, "admin.wd.error_note")
		case errors.Is(err, withdrawal.ErrNotReviewable):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_state")
		case errors.Is(err, withdrawal.ErrBusy):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_busy")
		case errors.Is(err, withdrawal.ErrFailedAfterTransferred):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_provider_failed_after_paid")
		case errors.Is(err, withdrawal.ErrProviderPaid):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_provider_paid")
		case errors.Is(err, withdrawal.ErrProviderForgot):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_provider_forgot")
		case errors.Is(err, withdrawal.ErrProviderHasIt):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_provider_has_it")
		case errors.Is(err, withdrawal.ErrOwnWithdrawal):
			return h.withdrawalsError(c, formID, "", fiber.StatusForbidden, "admin.wd.error_own")
		case errors.Is(err, withdrawal.ErrProviderUnreachable):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_provider_unreachable")
		case errors.Is(err, withdrawal.ErrProviderReturned):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_provider_returned")
		case errors.Is(err, withdrawal.ErrProviderEnded):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_provider_ended")
		case errors.Is(err, withdrawal.ErrProviderNotPaid):
			return h.withdrawalsError(c, formID, "", fiber.StatusConflict, "admin.wd.error_provider_not_paid")
		case err != nil:
			return err
		}
		return c.Redirect(routes.AdminWithdrawals+"?done="+done, fiber.StatusSeeOther)
	}
}

func (h *handlers) approveWithdrawal() fiber.Handler {
	return h.reviewWithdrawal(func(svc *withdrawal.Service) func(*fiber.Ctx, int64, string, string) (withdrawal.Withdrawal, error) {
		return func(c *fiber.Ctx, admin int64, id, note string) (withdrawal.Withdrawal, error) {
			return svc.Approve(c.UserContext(), admin, id, note)
		}
	}, "approve", "approved")
}

func (h *handlers) rejectWithdrawal() fiber.Handler {
	return h.reviewWithdrawal(func(svc *withdrawal.Service) func(*fiber.Ctx, int64, string, string) (withdrawal.Withdrawal, error) {
		return func(c *fiber.Ctx, admin int64, id, note string) (withdrawal.Withdrawal, error) {
			return svc.Reject(c.UserContext(), admin, id, note)
		}
	}, "reject", "rejected")
}

func (h *handlers) failWithdrawal() fiber.Handler {
	return h.reviewWithdrawal(func(svc *withdrawal.Service) func(*fiber.Ctx, int64, string, string) (withdrawal.Withdrawal, error) {
		return func(c *fiber.Ctx, admin int64, id, note string) (withdrawal.Withdrawal, error) {
			return svc.AdminFail(c.UserContext(), admin, id, note)
		}
	}, "fail", "failed")
}

// paidWithdrawal closes one under review as paid, on the provider's
// recorded word that it transferred it.
func (h *handlers) paidWithdrawal() fiber.Handler {
	return h.reviewWithdrawal(func(svc *withdrawal.Service) func(*fiber.Ctx, int64, string, string) (withdrawal.Withdrawal, error) {
		return func(c *fiber.Ctx, admin int64, id, note string) (withdrawal.Withdrawal, error) {
			return svc.AdminPay(c.UserContext(), admin, id, note)
		}
	}, "paid", "paid")
}

// reviewBankAccount verifies or rejects an account waiting for review,
// with a note and a fresh second factor.
func (h *handlers) reviewBankAccount(approve bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := strconv.ParseInt(c.Params("id"), 10, 64)
		if err != nil || id <= 0 {
			return fiber.ErrNotFound
		}
		action := "account-reject"
		if approve {
			action = "account-approve"
		}
		form := adminview.ReviewForm(action, strconv.FormatInt(id, 10))
		if _, err := bankaccount.CheckNote(h.FormValue(c, "note")); err != nil {
			return h.withdrawalsError(c, form, "note", fiber.StatusUnprocessableEntity, "admin.wd.error_note")
		}
		if _, err := h.BankAccounts.Get(c.UserContext(), h.User(c).ID, id); err == nil {
			return h.withdrawalsError(c, form, "", fiber.StatusForbidden, "admin.wd.error_own")
		}
		if ok, err := h.freshFactor(c, form); !ok {
			return err
		}
		_, err = h.BankAccounts.Review(c.UserContext(), h.User(c).ID, id, approve, h.FormValue(c, "note"))
		switch {
		case errors.Is(err, bankaccount.ErrNotFound):
			return fiber.ErrNotFound
		case errors.Is(err, bankaccount.ErrNoteRequired):
			return h.withdrawalsError(c, form, "note", fiber.StatusUnprocessableEntity, "admin.wd.error_note")
		case errors.Is(err, bankaccount.ErrOwnAccount):
			return h.withdrawalsError(c, form, "", fiber.StatusForbidden, "admin.wd.error_own")
		case errors.Is(err, bankaccount.ErrNotPending):
			return h.withdrawalsError(c, form, "", fiber.StatusConflict, "admin.wd.error_state")
		case err != nil:
			return err
		}
		return c.Redirect(routes.AdminWithdrawals+"?done=account", fiber.StatusSeeOther)
	}
}

// reconcileWithdrawals runs the payout reconciliation now (audited),
// each provider with its turn: while another run holds a provider's,
// that provider is not reconciled again, and the admin is told so.
func (h *handlers) reconcileWithdrawals(c *fiber.Ctx) error {
	ctx := c.UserContext()
	reps, held, err := h.Withdrawals.ReconcileNow(ctx, h.Withdrawals.Lister(), h.TopUps)
	done := "reconciled"
	if len(held) > 0 {
		done = "reconcile_busy"
	}
	if len(reps) == 0 && len(held) > 0 && err == nil {
		return c.Redirect(routes.AdminWithdrawals+"?done="+done, fiber.StatusSeeOther)
	}
	diffs := 0
	for _, r := range reps {
		diffs += r.Differences
		if r.Error != "" && err == nil {
			err = errors.New(r.Provider + ": " + r.Error)
		}
	}
	result := audit.ResultDone
	if err != nil {
		result = resultFailed
		h.Log.ErrorContext(ctx, "payout reconciliation", "err", err)
	}
	if aerr := h.Audit.Record(ctx, audit.Entry{AdminID: h.User(c).ID, Action: audit.ActionPayoutReconcile,
		Note: strconv.Itoa(len(reps)) + " providers, " + strconv.Itoa(diffs) + " differences", Result: result, CreatedAt: h.Now()}); aerr != nil {
		return aerr
	}
	return c.Redirect(routes.AdminWithdrawals+"?done="+done, fiber.StatusSeeOther)
}
