package web

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/console"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/views"
)

// adminNotice turns ?done= of an action's redirect into a message key and
// its kind; unknown values show nothing.
func adminNotice(done string) (key, kind string) {
	switch done {
	case "done_recheck_credited", "done_recheck_unchanged", "done_recheck_failed", "done_recheck_open", "done_closed", "done_reconcile":
		return "admin." + done, "ok"
	case "error_note", "error_not_review", "error_busy", "error_nothing_to_ask", "error_reconcile":
		return "admin." + done, "error"
	}
	return "", ""
}

func consoleUser(u console.User) views.ConsoleUser {
	return views.ConsoleUser{ID: u.ID, Email: u.Email, Role: u.Role, CreatedAt: u.CreatedAt, BalanceRials: u.BalanceRials}
}

func auditRows(rows []audit.Listed) []views.AuditRow {
	out := make([]views.AuditRow, 0, len(rows))
	for _, r := range rows {
		a := views.AuditRow{At: r.CreatedAt, AdminEmail: r.AdminEmail, Action: string(r.Action), Result: r.Result,
			PaymentPublicID: r.PaymentPublicID, From: r.FromStatus, To: r.ToStatus, Note: r.Note}
		if r.TargetUserID != nil {
			a.TargetUserID = *r.TargetUserID
		}
		out = append(out, a)
	}
	return out
}

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
		User:       consoleUser(owner), Actions: auditRows(actions)}
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
		v.UserPayments = append(v.UserPayments, consoleRow(s, r))
	}
	return render(c, fiber.StatusOK, views.PaymentDetail(s.page(c, "console.payment.title"), v))
}

// adminUsers finds users by e-mail.
func (s *Server) adminUsers(c *fiber.Ctx) error {
	q := strings.TrimSpace(c.Query("q"))
	if len([]rune(q)) > 200 {
		return fiber.NewError(fiber.StatusBadRequest, "query too long")
	}
	users, err := s.Console.Users(c.UserContext(), q, 100)
	if err != nil {
		return err
	}
	v := views.UserListView{Query: q}
	for _, u := range users {
		v.Users = append(v.Users, consoleUser(u))
	}
	return render(c, fiber.StatusOK, views.UserList(s.page(c, "console.users.title"), v))
}

// adminUser is one user: wallet, ledger and payments.
func (s *Server) adminUser(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return fiber.ErrNotFound
	}
	ctx := c.UserContext()
	u, err := s.Console.User(ctx, id)
	if errors.Is(err, console.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := views.UserDetailView{User: consoleUser(u), PaymentsURL: "/admin/payments?q=" + urlQueryEscape(u.Email)}
	if u.WalletID != 0 {
		entries, err := s.Console.Ledger(ctx, u.WalletID, 50)
		if err != nil {
			return err
		}
		for _, e := range entries {
			v.Ledger = append(v.Ledger, views.LedgerRow{AmountRials: e.AmountRials, BalanceAfter: e.BalanceAfter, Kind: e.Kind,
				PaymentPublicID: e.PaymentPublicID, CreatedAt: e.CreatedAt})
		}
	}
	rows, _, err := s.Reads.Payments(ctx, paymentread.Filter{UserID: u.ID}, nil, 50)
	if err != nil {
		return err
	}
	for _, r := range rows {
		v.Payments = append(v.Payments, consoleRow(s, r))
	}
	return render(c, fiber.StatusOK, views.UserDetail(s.page(c, "console.users.title"), v))
}

// adminAudit is the audit log, filterable by admin (e-mail) and payment
// (public id), newest first. Read-only: no route changes it.
func (s *Server) adminAudit(c *fiber.Ctx) error {
	q := audit.Query{AdminEmail: strings.TrimSpace(c.Query("admin")), PaymentPublicID: strings.TrimSpace(c.Query("payment")), Limit: 100}
	if len(q.AdminEmail) > 254 || len(q.PaymentPublicID) > 24 {
		return fiber.NewError(fiber.StatusBadRequest, "bad filter")
	}
	if b := c.Query("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return fiber.NewError(fiber.StatusBadRequest, "bad cursor")
		}
		q.BeforeID = n
	}
	rows, err := s.Audit.List(c.UserContext(), q)
	if err != nil {
		return err
	}
	v := views.AuditView{Admin: q.AdminEmail, Payment: q.PaymentPublicID, Rows: auditRows(rows)}
	if len(rows) == q.Limit {
		v.NextURL = "/admin/audit?" + queryWith(c, "before", strconv.FormatInt(rows[len(rows)-1].ID, 10))
	}
	return render(c, fiber.StatusOK, views.Audit(s.page(c, "console.audit.title"), v))
}

// adminReconcile runs reconciliation with the gateway now ("run
// reconciliation now"), recorded in the audit log.
func (s *Server) adminReconcile(c *fiber.Ctx) error {
	ctx := c.UserContext()
	rep, err := s.Payments.Reconcile(ctx)
	result, done := audit.ResultDone, "done_reconcile"
	if err != nil {
		s.Log.ErrorContext(ctx, "reconciliation run by an admin failed", "err", err)
		result, done = "failed", "error_reconcile"
	}
	note := "listed " + strconv.Itoa(rep.Listed) + ", credited " + strconv.Itoa(rep.Credited) + ", mismatches " + strconv.Itoa(rep.Mismatches)
	if rerr := s.Audit.Record(ctx, audit.Entry{AdminID: currentUser(c).ID, Action: audit.ActionReconcile, Note: note, Result: result, CreatedAt: s.Now().UTC()}); rerr != nil {
		return rerr
	}
	return c.Redirect("/admin?done="+done, fiber.StatusSeeOther)
}
