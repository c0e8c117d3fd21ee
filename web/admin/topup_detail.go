package admin

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	adminview "github.com/kifpool/kifpool/views/admin"
	"github.com/kifpool/kifpool/web/seam"
)

// paymentDetail is the whole story of one payment: its timeline, every
// bank call, its ledger entry, its owner and the admins' actions.
func (h *handlers) topUpDetail(c *fiber.Ctx) error {
	return h.renderTopUpDetail(c, fiber.StatusOK, cardRefundForm{})
}

// renderTopUpDetail renders the top-up's page with status, and its
// "refund to card" as form left it (a refused submit's input and error).
func (h *handlers) renderTopUpDetail(c *fiber.Ctx, status int, form cardRefundForm) error {
	id := c.Params("id")
	if !topup.ValidPublicID(id) {
		return fiber.ErrNotFound
	}
	seam.WithTopUp(c, id)
	ctx := c.UserContext()
	// The page of one top-up reads the primary, whole: it shows an
	// action's outcome right after the action, and the owner of a top-up
	// just started.
	reads, people := h.Reads.Fresh(), h.People.Fresh()
	d, err := reads.Detail(ctx, id)
	if errors.Is(err, topupread.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	p, events, calls := d.TopUp, d.Events, d.Calls
	owner, err := people.User(ctx, p.UserID)
	if err != nil {
		return err
	}
	actions, err := h.Audit.Fresh().List(ctx, audit.Query{TopUpPublicID: p.PublicID, Limit: 200})
	if err != nil {
		return err
	}
	recent, _, err := reads.List(ctx, topupread.Filter{UserID: p.UserID}, nil, 10)
	if err != nil {
		return err
	}
	var adminIDs []int64
	for _, e := range events {
		if e.AdminID != nil {
			adminIDs = append(adminIDs, *e.AdminID)
		}
	}
	emails, err := people.Emails(ctx, adminIDs)
	if err != nil {
		return err
	}
	l := h.Lang(c)
	v := adminview.TopUpDetailView{PublicID: p.PublicID, Status: string(p.Status), Reason: topUpReasonText(l, p.Status, p.Status, p.StatusReason),
		AmountRials: p.AmountRials, Gateway: h.gatewayLabel(l, p.Gateway), Authority: p.AuthorityString(), RefID: p.RefIDValue(),
		Card: p.CardPANMasked, Attempts: p.Attempts, CreatedAt: p.CreatedAt, ResolvedAt: p.ResolvedAt, NextCheckAt: p.NextCheckAt,
		LastCheckedAt: p.LastCheckedAt,
		// "Ask the bank now" is the only way to credit from here, and it
		// credits only on the bank's verify.
		CanRecheck: topup.MayRecheck(p),
		CanClose:   p.Status == topup.StatusNeedsReview,
		User:       userRow(owner), Actions: auditRows(actions)}
	v.Notice, v.NoticeKind = notice(c.Query("done"))
	if p.VerifiedAmountRials != nil {
		v.VerifiedRials = *p.VerifiedAmountRials
	}
	for _, e := range events {
		te := adminview.TimelineEvent{From: string(e.FromStatus), To: string(e.ToStatus), Actor: string(e.Actor),
			Reason: topUpReasonText(l, e.ToStatus, p.Status, string(e.Reason)), GatewayCode: e.GatewayCode, At: e.CreatedAt}
		if e.AdminID != nil {
			te.AdminEmail = emails[*e.AdminID]
		}
		v.Events = append(v.Events, te)
	}
	for _, gc := range calls {
		v.Calls = append(v.Calls, adminview.GatewayCallView{Operation: gc.Operation, Attempt: gc.Attempt, StartedAt: gc.StartedAt,
			DurationMS: gc.DurationMS, HTTPStatus: gc.HTTPStatus, GatewayCode: gc.GatewayCode, Outcome: gc.Outcome})
	}
	if d.Credit != nil && h.Limits != nil {
		if capRials := h.Limits.Rules().BalanceMaxRials; capRials > 0 && d.Credit.BalanceAfter > capRials {
			v.OverBalanceLimit = capRials
		}
	}
	if d.Credit != nil {
		v.Ledger = &adminview.LedgerRow{AmountRials: d.Credit.AmountRials, BalanceAfter: d.Credit.BalanceAfter, Kind: d.Credit.Kind,
			TopUpPublicID: p.PublicID, CreatedAt: d.Credit.CreatedAt}
	}
	for _, r := range recent {
		v.UserTopUps = append(v.UserTopUps, h.topUpRow(l, r))
	}
	if v.CardRefunds, err = h.cardRefundsView(c, p.PublicID, form); err != nil {
		return err
	}
	return h.Render(c, status, adminview.TopUpDetail(h.Page(c, "admin.topup.title"), v))
}

// topUpReasonText says the reason a top-up (or one of its events) in
// status has, as true for the top-up now in current. A reverse's end says
// "our staff are looking into it" only while its review is open: once an
// admin closed it (it keeps the reverse's reason, topupread.ClosedByAdmin,
// the payer's page's rule too) it says the close and the reverse's end as
// history, and so does the timeline's event that sent it to review.
func topUpReasonText(l i18n.Lang, status, current topup.Status, reason string) string {
	history := "admin.topup.reverse_ended." + reason
	switch {
	case reason == "" || !i18n.Has(l, history):
	case topupread.ClosedByAdmin(status, topup.Reason(reason)):
		return i18n.T(l, "admin.topup.closed_after_reverse", "reverse", i18n.T(l, history))
	case current != topup.StatusNeedsReview:
		return i18n.T(l, history)
	}
	return reasonText(l, reason)
}

// afterAction sends the admin back after an action: to the payment's page
// when the action came from it, else to the dashboard, with the result.
func (h *handlers) afterAction(c *fiber.Ctx, key string) error {
	if h.FormValue(c, "back") == "payment" && topup.ValidPublicID(c.Params("id")) {
		return c.Redirect(routes.AdminTopUp(c.Params("id"))+"?done="+key, fiber.StatusSeeOther)
	}
	return c.Redirect(routes.Admin+"?done="+key, fiber.StatusSeeOther)
}

// recheck asks the bank now about a payment ("ask the bank now"):
// the worker's path, safe to press twice.
func (h *handlers) recheck(c *fiber.Ctx) error {
	if topup.ValidPublicID(c.Params("id")) {
		seam.WithTopUp(c, c.Params("id"))
	}
	p, err := h.TopUps.AdminRecheck(c.UserContext(), c.Params("id"), h.User(c).ID)
	switch {
	case errors.Is(err, topup.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, topup.ErrNotUnderReview):
		return h.afterAction(c, "error_not_review")
	case errors.Is(err, topup.ErrTopUpBusy):
		return h.afterAction(c, "error_busy")
	case errors.Is(err, topup.ErrNothingToAsk):
		return h.afterAction(c, "error_nothing_to_ask")
	case err != nil:
		return err
	}
	h.Log.WarnContext(c.UserContext(), "admin rechecked a payment", "payment", p.PublicID, "admin", h.User(c).ID, "status", p.Status)
	switch p.Status {
	case topup.StatusCredited:
		return h.afterAction(c, "done_recheck_credited")
	case topup.StatusFailed:
		return h.afterAction(c, "done_recheck_failed")
	case topup.StatusNeedsReview:
		return h.afterAction(c, "done_recheck_unchanged")
	}
	return h.afterAction(c, "done_recheck_open")
}

// closeFailed closes a payment under review as failed, with a note.
func (h *handlers) closeFailed(c *fiber.Ctx) error {
	if topup.ValidPublicID(c.Params("id")) {
		seam.WithTopUp(c, c.Params("id"))
	}
	note := h.FormValue(c, "note")
	if topup.CheckCloseNote(note) != nil {
		return h.afterAction(c, "error_note") // before the code: a code is spent once
	}
	// A close denies the payer's credit for good (callbacks no longer
	// reopen it): a fresh second factor, as every close of a withdrawal
	// or card refund asks.
	switch _, key, _, err := h.checkFresh(c); {
	case err != nil:
		return err
	case key == "fresh2fa.throttled":
		return h.afterAction(c, "error_code_throttled")
	case key != "":
		return h.afterAction(c, "error_code")
	}
	_, err := h.TopUps.AdminCloseFailed(c.UserContext(), c.Params("id"), h.User(c).ID, note)
	switch {
	case errors.Is(err, topup.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, topup.ErrNoteRequired):
		return h.afterAction(c, "error_note")
	case errors.Is(err, topup.ErrNotUnderReview):
		return h.afterAction(c, "error_not_review")
	case errors.Is(err, topup.ErrTopUpBusy):
		return h.afterAction(c, "error_busy")
	case err != nil:
		return err
	}
	return h.afterAction(c, "done_closed")
}
