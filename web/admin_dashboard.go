package web

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

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
			Late: (r.Status == payment.StatusAwaitingPayment || r.Status == payment.StatusPendingVerification || r.Status == payment.StatusSettling) &&
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
	pg.RefreshURL, pg.RefreshSeconds = routes.Admin, 30
	return render(c, fiber.StatusOK, views.Admin(pg, v))
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
	return c.Redirect(routes.Admin+"?done="+done, fiber.StatusSeeOther)
}
