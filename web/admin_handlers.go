package web

import (
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/paymentread"
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
		out = append(out, views.BreakerView{Name: s.gatewayLabel(st.Name), State: st.State, Requests: st.Requests,
			Failures: st.Failures, ConsecutiveFailures: st.ConsecutiveFailures, Since: st.Since})
	}
	return out
}

// lateAfter is how long past its check an open payment is shown as late.
const lateAfter = time.Minute

// adminPage shows the payments that are still unresolved, the gateway's
// breaker and the latest reconciliations.
func (s *Server) adminPage(c *fiber.Ctx) error {
	ctx := c.UserContext()
	now := s.Now()
	d, err := s.Reads.Dashboard(ctx, now, s.Config.WorkerAbandonedAfter)
	if err != nil {
		return err
	}
	rows, reports, backlog := d.Unresolved, d.Reconciles, d.Backlog
	v := views.AdminView{Breakers: s.breakerViews(), ExactUpTo: paymentread.TotalCap}
	for _, h := range d.Hours {
		hv := views.HourView{Start: h.Start, Total: h.Total, Credited: h.Credited, Failed: h.Failed, Ratio: -1}
		if r := h.SuccessRatio(); r >= 0 {
			hv.Ratio = int(r*100 + 0.5)
		}
		v.TopUps = append(v.TopUps, hv)
	}
	for _, l := range d.Latency {
		v.Latency = append(v.Latency, views.LatencyView{Operation: l.Operation, Calls: l.Calls, P50: l.P50, P90: l.P90, P99: l.P99})
	}
	v.Backlog = views.BacklogView{Due: backlog.Due, Lag: backlog.Lag}
	v.Notice, _ = adminNotice(c.Query("done"))
	for _, t := range d.Totals {
		v.Counts = append(v.Counts, views.StatusCount{Status: t.Status, N: t.N, Estimate: t.Estimate})
		v.CountsEstimated = v.CountsEstimated || t.Estimate
	}
	for _, r := range rows {
		v.Payments = append(v.Payments, views.AdminPaymentRow{PublicID: r.PublicID, Email: r.Email, AmountRials: r.AmountRials,
			Status: string(r.Status), Reason: reasonText(lang(c), r.StatusReason), Attempts: r.Attempts, CreatedAt: r.CreatedAt, NextCheckAt: r.NextCheckAt,
			Late: (r.Status == payment.StatusAwaitingPayment || r.Status == payment.StatusPendingVerification) &&
				r.NextCheckAt != nil && r.NextCheckAt.Before(now.Add(-lateAfter))})
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

// metrics serves the Prometheus metrics (internal/metrics). It answers
// only to METRICS_TOKEN given as "Authorization: Bearer <token>" (the
// scheme in any case, as RFC 9110 §11.1 says); anything else (no header,
// another scheme, a token in the URL) is a 404.
func (s *Server) metrics(c *fiber.Ctx) error {
	want := s.Config.MetricsToken
	scheme, token, _ := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	token = strings.TrimLeft(token, " ")
	if want == "" || s.Metrics == nil || !strings.EqualFold(scheme, "Bearer") ||
		subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return adaptor.HTTPHandler(s.Metrics.Handler())(c)
}

// observe times every request by its route pattern (not its path: ids stay
// out of the labels).
func (s *Server) observe(c *fiber.Ctx) error {
	if s.Metrics == nil {
		return c.Next()
	}
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		var fe *fiber.Error
		if errors.As(err, &fe) {
			status = fe.Code
		} else {
			status = fiber.StatusInternalServerError
		}
	}
	// The pattern of the handler that answered: a route ("/payments/:id"),
	// or the prefix of the middleware that stopped the request ("/admin");
	// the final catch-all answers everything else.
	route := "unmatched"
	if r := c.Route(); r != nil && (r.Path != "/" || c.Path() == "/") {
		route = r.Path
	}
	s.Metrics.ObserveHTTP(route, c.Method(), status, time.Since(start))
	return err
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
