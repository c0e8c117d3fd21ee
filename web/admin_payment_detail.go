package web

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// adminPayment is the whole story of one payment: its timeline, every
// bank call, its ledger entry, its owner and the admins' actions.
func (s *Server) adminPayment(c *fiber.Ctx) error {
	id := c.Params("id")
	if !payment.ValidPublicID(id) {
		return fiber.ErrNotFound
	}
	withPayment(c, id)
	ctx := c.UserContext()
	d, err := s.Reads.Detail(ctx, id)
	if errors.Is(err, paymentread.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	p, events, calls := d.Payment, d.Events, d.Calls
	owner, err := s.Console.User(ctx, p.UserID)
	if err != nil {
		return err
	}
	actions, err := s.Audit.List(ctx, audit.Query{PaymentPublicID: p.PublicID, Limit: 200})
	if err != nil {
		return err
	}
	recent, _, err := s.Reads.Payments(ctx, paymentread.Filter{UserID: p.UserID}, nil, 10)
	if err != nil {
		return err
	}
	var adminIDs []int64
	for _, e := range events {
		if e.AdminID != nil {
			adminIDs = append(adminIDs, *e.AdminID)
		}
	}
	emails, err := s.Console.Emails(ctx, adminIDs)
	if err != nil {
		return err
	}
	l := lang(c)
	v := views.PaymentDetailView{PublicID: p.PublicID, Status: string(p.Status), Reason: reasonText(l, p.StatusReason),
		AmountRials: p.AmountRials, Gateway: s.gatewayLabel(p.Gateway), Authority: p.AuthorityString(), RefID: p.RefIDValue(),
		Card: p.CardPANMasked, Attempts: p.Attempts, CreatedAt: p.CreatedAt, ResolvedAt: p.ResolvedAt, NextCheckAt: p.NextCheckAt,
		LastCheckedAt: p.LastCheckedAt,
		// "Ask the bank now" is the only way to credit from here, and it
		// credits only on the bank's verify.
		CanRecheck: p.Status != payment.StatusCredited && p.Authority != nil,
		CanClose:   p.Status == payment.StatusNeedsReview,
		User:       adminUserRow(owner), Actions: auditRows(actions)}
	v.Notice, v.NoticeKind = adminNotice(c.Query("done"))
	if p.VerifiedAmountRials != nil {
		v.VerifiedRials = *p.VerifiedAmountRials
	}
	for _, e := range events {
		te := views.TimelineEvent{From: string(e.FromStatus), To: string(e.ToStatus), Actor: string(e.Actor),
			Reason: reasonText(l, string(e.Reason)), GatewayCode: e.GatewayCode, At: e.CreatedAt}
		if e.AdminID != nil {
			te.AdminEmail = emails[*e.AdminID]
		}
		v.Events = append(v.Events, te)
	}
	for _, gc := range calls {
		v.Calls = append(v.Calls, views.GatewayCallView{Operation: gc.Operation, Attempt: gc.Attempt, StartedAt: gc.StartedAt,
			DurationMS: gc.DurationMS, HTTPStatus: gc.HTTPStatus, GatewayCode: gc.GatewayCode, Outcome: gc.Outcome})
	}
	if d.Credit != nil && s.Limits != nil {
		if capRials := s.Limits.Rules().BalanceMaxRials; capRials > 0 && d.Credit.BalanceAfter > capRials {
			v.OverBalanceLimit = capRials
		}
	}
	if d.Credit != nil {
		v.Ledger = &views.LedgerRow{AmountRials: d.Credit.AmountRials, BalanceAfter: d.Credit.BalanceAfter, Kind: d.Credit.Kind,
			PaymentPublicID: p.PublicID, CreatedAt: d.Credit.CreatedAt}
	}
	for _, r := range recent {
		v.UserPayments = append(v.UserPayments, adminListRow(s, r))
	}
	return render(c, fiber.StatusOK, views.PaymentDetail(s.page(c, "console.payment.title"), v))
}

// adminDone sends the admin back after an action: to the payment's page
// when the action came from it, else to the dashboard, with the result.
func adminDone(c *fiber.Ctx, key string) error {
	if c.FormValue("back") == "payment" && payment.ValidPublicID(c.Params("id")) {
		return c.Redirect(routes.AdminPayment(c.Params("id"))+"?done="+key, fiber.StatusSeeOther)
	}
	return c.Redirect(routes.Admin+"?done="+key, fiber.StatusSeeOther)
}

// adminRecheck asks the bank now about a payment ("ask the bank now"):
// the worker's path, safe to press twice.
func (s *Server) adminRecheck(c *fiber.Ctx) error {
	if payment.ValidPublicID(c.Params("id")) {
		withPayment(c, c.Params("id"))
	}
	p, err := s.Payments.AdminRecheck(c.UserContext(), c.Params("id"), currentUser(c).ID)
	switch {
	case errors.Is(err, payment.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, payment.ErrNotUnderReview):
		return adminDone(c, "error_not_review")
	case errors.Is(err, payment.ErrPaymentBusy):
		return adminDone(c, "error_busy")
	case errors.Is(err, payment.ErrNothingToAsk):
		return adminDone(c, "error_nothing_to_ask")
	case err != nil:
		return err
	}
	s.Log.WarnContext(c.UserContext(), "admin rechecked a payment", "payment", p.PublicID, "admin", currentUser(c).ID, "status", p.Status)
	switch p.Status {
	case payment.StatusCredited:
		return adminDone(c, "done_recheck_credited")
	case payment.StatusFailed:
		return adminDone(c, "done_recheck_failed")
	case payment.StatusNeedsReview:
		return adminDone(c, "done_recheck_unchanged")
	}
	return adminDone(c, "done_recheck_open")
}

// adminClose closes a payment under review as failed, with a note.
func (s *Server) adminClose(c *fiber.Ctx) error {
	if payment.ValidPublicID(c.Params("id")) {
		withPayment(c, c.Params("id"))
	}
	_, err := s.Payments.AdminCloseFailed(c.UserContext(), c.Params("id"), currentUser(c).ID, c.FormValue("note"))
	switch {
	case errors.Is(err, payment.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, payment.ErrNoteRequired):
		return adminDone(c, "error_note")
	case errors.Is(err, payment.ErrNotUnderReview):
		return adminDone(c, "error_not_review")
	case errors.Is(err, payment.ErrPaymentBusy):
		return adminDone(c, "error_busy")
	case err != nil:
		return err
	}
	return adminDone(c, "done_closed")
}
