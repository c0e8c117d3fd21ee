package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/views"
)

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
		out = append(out, views.BreakerView{Name: st.Name, State: st.State, Requests: st.Requests,
			Failures: st.Failures, ConsecutiveFailures: st.ConsecutiveFailures, Since: st.Since})
	}
	return out
}

// adminPage shows the payments that are still unresolved, the gateway's
// breaker and the latest reconciliations.
func (s *Server) adminPage(c *fiber.Ctx) error {
	ctx := c.UserContext()
	rows, err := s.Payments.Unresolved(ctx, 200)
	if err != nil {
		return err
	}
	counts, err := s.Payments.StatusCounts(ctx)
	if err != nil {
		return err
	}
	reports, err := s.Payments.LatestReconcileReports(ctx, 5)
	if err != nil {
		return err
	}
	v := views.AdminView{Breakers: s.breakerViews()}
	v.Notice, _ = adminNotice(c.Query("done"))
	for _, st := range []payment.Status{payment.StatusCreated, payment.StatusAwaitingPayment, payment.StatusPendingVerification,
		payment.StatusNeedsReview, payment.StatusCredited, payment.StatusFailed} {
		v.Counts = append(v.Counts, views.StatusCount{Status: string(st), N: counts[st]})
	}
	for _, r := range rows {
		v.Payments = append(v.Payments, views.AdminPaymentRow{PublicID: r.PublicID, Email: r.Email, AmountRials: r.AmountRials,
			Status: string(r.Status), Reason: reasonText(lang(c), r.StatusReason), Attempts: r.Attempts, CreatedAt: r.CreatedAt, NextCheckAt: r.NextCheckAt})
	}
	for _, r := range reports {
		rv := views.ReconcileView{StartedAt: r.StartedAt, Listed: r.Listed, Ours: r.Ours, Credited: r.Credited,
			CreditedRials: r.CreditedRials, Foreign: r.ForeignCount, ForeignRials: r.ForeignRials, Mismatches: r.Mismatches, Error: r.Error}
		for _, it := range r.Items() {
			rv.Items = append(rv.Items, views.ReconcileItemView{Authority: it.Authority, AmountRials: it.AmountRials,
				PublicID: it.PublicID, Kind: it.Kind, Detail: it.Detail})
		}
		v.Reconcile = append(v.Reconcile, rv)
	}
	pg := s.page(c, "admin.title")
	pg.RefreshURL, pg.RefreshSeconds = "/admin", 30
	return render(c, fiber.StatusOK, views.Admin(pg, v))
}

// metrics serves Prometheus text: payments by status and the breakers'
// state. It answers only with METRICS_TOKEN as a bearer token.
func (s *Server) metrics(c *fiber.Ctx) error {
	want := s.Config.MetricsToken
	got := strings.TrimPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return fiber.ErrNotFound
	}
	counts, err := s.Payments.StatusCounts(c.UserContext())
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# HELP kifpool_payments Payments by status.\n# TYPE kifpool_payments gauge\n")
	keys := make([]string, 0, len(counts))
	for st := range counts {
		keys = append(keys, string(st))
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "kifpool_payments{status=%q} %d\n", k, counts[payment.Status(k)])
	}
	b.WriteString("# HELP kifpool_gateway_breaker_open 1 when the gateway's circuit breaker refuses calls (0 closed, 0.5 half-open).\n# TYPE kifpool_gateway_breaker_open gauge\n")
	for _, br := range s.breakerViews() {
		v := "0"
		switch br.State {
		case "open":
			v = "1"
		case "half-open":
			v = "0.5"
		}
		fmt.Fprintf(&b, "kifpool_gateway_breaker_open{gateway=%q} %s\n", br.Name, v)
		fmt.Fprintf(&b, "kifpool_gateway_breaker_window_requests{gateway=%q} %d\n", br.Name, br.Requests)
		fmt.Fprintf(&b, "kifpool_gateway_breaker_window_failures{gateway=%q} %d\n", br.Name, br.Failures)
	}
	c.Set(fiber.HeaderContentType, "text/plain; version=0.0.4")
	return c.SendString(b.String())
}

// adminDone sends the admin back after an action: to the payment's page
// when the action came from it, else to the dashboard, with the result.
func adminDone(c *fiber.Ctx, key string) error {
	if c.FormValue("back") == "payment" && payment.ValidPublicID(c.Params("id")) {
		return c.Redirect("/admin/payments/"+c.Params("id")+"?done="+key, fiber.StatusSeeOther)
	}
	return c.Redirect("/admin?done="+key, fiber.StatusSeeOther)
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

// reasonText says a payment's reason code in words; an older free-text
// reason is shown as it is.
func reasonText(l i18n.Lang, code string) string {
	if code == "" || !i18n.Has(l, "reason."+code) {
		return code
	}
	return i18n.T(l, "reason."+code)
}
