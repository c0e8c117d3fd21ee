package web

import (
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/console"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/views"
)

// The admin console: the /admin group's middleware and what its pages
// share. Each page's handlers are in admin_<page>.go.

// BreakerSource reports a gateway's circuit breaker.
type BreakerSource interface {
	BreakerState() resilient.BreakerState
}

func (s *Server) requireAdmin(c *fiber.Ctx) error {
	if u := currentUser(c); u == nil || !u.IsAdmin() {
		return fiber.ErrNotFound // admins' pages do not exist for others
	}
	return c.Next()
}

func (s *Server) breakerViews() []views.BreakerView {
	var out []views.BreakerView
	for _, b := range s.Breakers {
		st := b.BreakerState()
		out = append(out, views.BreakerView{Name: s.gatewayLabel(st.Name), State: st.State, Requests: st.Requests,
			Failures: st.Failures, ConsecutiveFailures: st.ConsecutiveFailures, Since: st.Since})
	}
	return out
}

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

func adminUserRow(u console.User) views.AdminUserRow {
	return views.AdminUserRow{ID: u.ID, Email: u.Email, Role: u.Role, CreatedAt: u.CreatedAt, BalanceRials: u.BalanceRials}
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

// gatewayLabel names a stored gateway for people, through the driver
// registry (Deps.GatewayLabel): the built-in sandbox bank speaks a
// driver's protocol but is called "sandbox".
func (s *Server) gatewayLabel(stored string) string {
	if s.GatewayLabel == nil {
		return stored
	}
	return s.GatewayLabel(stored)
}

// queryWith is the current query string with key set to value ("" drops
// it).
func queryWith(c *fiber.Ctx, key, value string) string {
	q := url.Values{}
	for k, v := range c.Request().URI().QueryArgs().All() {
		if string(k) != key {
			q.Add(string(k), string(v))
		}
	}
	if value != "" {
		q.Set(key, value)
	}
	return q.Encode()
}

func adminListRow(s *Server, r paymentread.Payment) views.AdminPaymentListRow {
	row := views.AdminPaymentListRow{PublicID: r.PublicID, Email: r.Email, UserID: r.UserID, AmountRials: r.AmountRials,
		Gateway: s.gatewayLabel(r.Gateway), Status: r.Status, Card: r.CardPANMasked, CreatedAt: r.CreatedAt}
	if r.RefID != nil {
		row.RefID = *r.RefID
	}
	return row
}

// reasonText says a payment's reason code in words; an older free-text
// reason is shown as it is.
func reasonText(l i18n.Lang, code string) string {
	if code == "" || !i18n.Has(l, "reason."+code) {
		return code
	}
	return i18n.T(l, "reason."+code)
}
