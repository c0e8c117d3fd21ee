package admin

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/topupread"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// What the admin pages share: notices, rows, labels, the query string.

// breakerViews are the gateways' circuit breakers in this instance.
func (h *handlers) breakerViews(l i18n.Lang) []adminview.BreakerView {
	var out []adminview.BreakerView
	for _, st := range h.breakers() {
		out = append(out, adminview.BreakerView{Name: h.gatewayLabel(l, st.Name), State: st.State, Requests: st.Requests,
			Failures: st.Failures, ConsecutiveFailures: st.ConsecutiveFailures, Since: st.Since})
	}
	return out
}

// breakers are the gateways' breakers (none without Deps.Breakers).
func (h *handlers) breakers() []resilient.BreakerState {
	if h.Breakers == nil {
		return nil
	}
	return h.Breakers()
}

// notice turns ?done= of an action's redirect into a message key and
// its kind; unknown values show nothing.
func notice(done string) (key, kind string) {
	switch done {
	case "done_recheck_credited", "done_recheck_unchanged", "done_recheck_failed", "done_recheck_open", "done_closed", "done_reconcile":
		return "admin." + done, "ok"
	case "error_note", "error_not_review", "error_busy", "error_nothing_to_ask", "error_reconcile", "error_code", "error_code_throttled":
		return "admin." + done, "error"
	}
	return cardRefundNotice(done)
}

// userRow is a user with their wallet, as the admin's pages show them.
func userRow(u people.User) adminview.UserRow {
	return adminview.UserRow{ID: u.ID, Email: u.Email, Role: u.Role, CreatedAt: u.CreatedAt, BalanceRials: u.BalanceRials, HeldRials: u.HeldRials, EmailVerifiedAt: u.EmailVerifiedAt}
}

// auditRows are audit log entries as the admin's pages list them.
func auditRows(rows []audit.Listed) []adminview.AuditRow {
	out := make([]adminview.AuditRow, 0, len(rows))
	for _, r := range rows {
		a := adminview.AuditRow{At: r.CreatedAt, AdminEmail: r.AdminEmail, Action: string(r.Action), Result: r.Result,
			TopUpPublicID: r.TopUpPublicID, TargetEmail: r.TargetEmail, From: r.FromStatus, To: r.ToStatus, Note: r.Note}
		if r.TargetUserID != nil {
			a.TargetUserID = *r.TargetUserID
		}
		out = append(out, a)
	}
	return out
}

// gatewayLabel names a stored gateway for people in l: by its name in
// that language ("زرین‌پال"), else through the driver registry
// (Deps.GatewayLabel); the built-in sandbox bank speaks a driver's
// protocol but is marked "sandbox".
func (h *handlers) gatewayLabel(l i18n.Lang, stored string) string {
	label := stored
	if h.GatewayLabel != nil {
		label = h.GatewayLabel(stored)
	}
	key := "gateway.name." + stored
	if !i18n.Has(l, key) {
		return label
	}
	if strings.HasSuffix(label, "("+drivers.Sandbox+")") {
		return i18n.T(l, "admin.gateway_sandbox", "name", i18n.T(l, key))
	}
	return i18n.T(l, key)
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

// paymentRow is a payment as the admin's lists show it.
func (h *handlers) topUpRow(l i18n.Lang, r topupread.TopUp) adminview.TopUpRow {
	row := adminview.TopUpRow{PublicID: r.PublicID, Email: r.Email, UserID: r.UserID, AmountRials: r.AmountRials,
		Gateway: h.gatewayLabel(l, r.Gateway), Status: r.Status, Card: r.CardPANMasked, CreatedAt: r.CreatedAt}
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
