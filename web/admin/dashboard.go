package admin

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// lateAfter is how long past its check an open payment is shown as late.
const lateAfter = time.Minute

// dashboard shows the payments that are still unresolved, the gateway's
// breaker and the latest reconciliations.
func (h *handlers) dashboard(c *fiber.Ctx) error {
	ctx := c.UserContext()
	now := h.Now()
	// The read database is checked first: found down, the dashboard's
	// own reads go to the primary.
	var replica store.ReplicaStatus
	if h.Replica != nil {
		replica = h.Replica.Check(ctx, now)
	}
	d, err := h.Reads.Dashboard(ctx, now, h.AbandonedAfter)
	if err != nil {
		return err
	}
	rows, reports, backlog := d.Unresolved, d.Reconciles, d.Backlog
	v := adminview.DashboardView{Breakers: h.breakerViews(h.Lang(c)), ExactUpTo: topupread.TotalCap,
		HoursFreshMinutes: int64(topupread.EndedHoursFresh / time.Minute), LatencyFreshSeconds: int64(topupread.LatencyFresh / time.Second)}
	for _, hr := range d.Hours {
		hv := adminview.HourView{Start: hr.Start, Total: hr.Total, Credited: hr.Credited, Failed: hr.Failed, Ratio: -1}
		if r := hr.SuccessRatio(); r >= 0 {
			hv.Ratio = int(r*100 + 0.5)
		}
		v.TopUps = append(v.TopUps, hv)
	}
	for _, l := range d.Latency {
		v.Latency = append(v.Latency, adminview.LatencyView{Operation: l.Operation, Calls: l.Calls, P50: l.P50, P90: l.P90, P99: l.P99})
	}
	v.Backlog = adminview.BacklogView{Due: backlog.Due, Lag: backlog.Lag}
	if replica.Configured {
		v.Replica = &adminview.ReplicaView{Up: replica.Up, Standby: replica.Standby, Behind: replica.Behind, Stale: replica.Stale, Lag: replica.Lag, LagBytes: replica.LagBytes}
	}
	v.Notice, _ = notice(c.Query("done"))
	if c.Query("done") == busyReconcile {
		v.Notice = "admin." + busyReconcile
	}
	for _, t := range d.Totals {
		v.Counts = append(v.Counts, adminview.StatusCount{Status: t.Status, N: t.N, Estimate: t.Estimate})
		v.CountsEstimated = v.CountsEstimated || t.Estimate
	}
	for _, r := range rows {
		v.Unresolved = append(v.Unresolved, adminview.UnresolvedRow{PublicID: r.PublicID, Email: r.Email, AmountRials: r.AmountRials,
			Status: string(r.Status), Reason: reasonText(h.Lang(c), r.StatusReason), Attempts: r.Attempts, CreatedAt: r.CreatedAt, NextCheckAt: r.NextCheckAt,
			Late: (r.Status == topup.StatusAwaitingPayment || r.Status == topup.StatusPendingVerification || r.Status == topup.StatusSettling ||
				r.Status == topup.StatusReversing) &&
				r.NextCheckAt != nil && r.NextCheckAt.Before(now.Add(-lateAfter))})
	}
	if d.MoreUnresolved {
		v.UnresolvedAllURL = unresolvedListURL()
	}
	for _, r := range reports {
		rv := adminview.ReconcileView{StartedAt: r.StartedAt, Listed: r.Listed, Ours: r.Ours, Credited: r.Credited,
			CreditedRials: r.CreditedRials, Foreign: r.ForeignCount, ForeignRials: r.ForeignRials, Mismatches: r.Mismatches, Error: r.Error}
		for _, it := range r.Items() {
			rv.Items = append(rv.Items, adminview.ReconcileItemView{Authority: it.Authority, AmountRials: it.AmountRials,
				PublicID: it.PublicID, Kind: it.Kind, Detail: it.Detail})
		}
		v.Reconcile = append(v.Reconcile, rv)
	}
	// A payout reconciliation's differences are flagged here too: they
	// wait for an admin on the withdrawals page.
	if h.Withdrawals != nil && h.Withdrawals.On() {
		latest, err := h.Withdrawals.LatestReports(ctx)
		if err != nil {
			return err
		}
		for _, r := range latest {
			if r.Differences > 0 {
				v.PayoutDifferences = append(v.PayoutDifferences, adminview.PayoutDifferenceFlag{Provider: r.Provider, Differences: r.Differences})
			}
		}
	}
	// Card refunds under review wait on their top-ups' pages: listed
	// here, the one place an admin looks for what waits.
	if h.CardRefunds != nil {
		waiting, err := h.CardRefunds.UnderReview(ctx, adminview.CardRefundsShown)
		if err != nil {
			return err
		}
		for _, w := range waiting {
			v.CardRefundsUnderReview = append(v.CardRefundsUnderReview, adminview.CardRefundFlag{PublicID: w.PublicID, TopUpPublicID: w.TopUpPublicID,
				AmountRials: w.AmountRials, Reason: string(w.StatusReason), Since: w.CreatedAt})
		}
	}
	if v.Waiting, err = h.waiting(ctx); err != nil {
		return err
	}
	pg := h.Page(c, "admin.title")
	pg.RefreshURL, pg.RefreshSeconds = routes.Admin, 30
	return h.Render(c, fiber.StatusOK, adminview.Dashboard(pg, v))
}

// waiting counts what waits for an admin's decision, by kind: the one
// place that says how much waits and for how long (the lists stop at a
// page; the metrics are the same counts).
func (h *handlers) waiting(ctx context.Context) ([]adminview.WaitingKind, error) {
	type source struct {
		kind, url string
		count     func(context.Context) (int64, time.Time, error)
	}
	var sources []source
	if h.Withdrawals != nil && h.Withdrawals.On() {
		sources = append(sources, source{"withdrawals", routes.AdminWithdrawals, h.Withdrawals.AwaitingAdmin})
	}
	if h.BankAccounts != nil {
		sources = append(sources, source{"bank_accounts", routes.AdminWithdrawals + "#wd-accounts", h.BankAccounts.AwaitingAdmin})
	}
	if h.CardRefunds != nil {
		sources = append(sources, source{"card_refunds", routes.Admin + "#card-refunds-review", h.CardRefunds.AwaitingAdmin})
	}
	var out []adminview.WaitingKind
	for _, s := range sources {
		n, since, err := s.count(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s waiting for an admin: %w", s.kind, err)
		}
		if n > 0 {
			out = append(out, adminview.WaitingKind{Kind: s.kind, N: n, Since: since, URL: s.url})
		}
	}
	return out, nil
}

// resultFailed is the audit result of a reconciliation run by an admin
// that did not complete (top-ups' and payouts' alike; admin.result.failed).
const resultFailed = "failed"

// reconcile runs reconciliation with the gateway now ("run
// reconciliation now"), recorded in the audit log. It takes each
// gateway's turn as the periodic runs do: while another run (the
// schedule's, another admin's, this one's first click) holds the turns,
// none is started, and the admin is told so.
func (h *handlers) reconcile(c *fiber.Ctx) error {
	ctx := c.UserContext()
	rep, held, ran, err := h.TopUps.ReconcileNow(ctx)
	if !ran && err == nil {
		return c.Redirect(routes.Admin+"?done="+busyReconcile, fiber.StatusSeeOther)
	}
	result, done := audit.ResultDone, "done_reconcile"
	if err != nil {
		h.Log.ErrorContext(ctx, "reconciliation run by an admin failed", "err", err)
		result, done = resultFailed, "error_reconcile"
	} else if len(held) > 0 {
		done = busyReconcile
	}
	note := "listed " + strconv.Itoa(rep.Listed) + ", credited " + strconv.Itoa(rep.Credited) + ", mismatches " + strconv.Itoa(rep.Mismatches)
	if rerr := h.Audit.Record(ctx, audit.Entry{AdminID: h.User(c).ID, Action: audit.ActionReconcile, Note: note, Result: result, CreatedAt: h.Now().UTC()}); rerr != nil {
		return rerr
	}
	return c.Redirect(routes.Admin+"?done="+done, fiber.StatusSeeOther)
}

// busyReconcile is the dashboard's ?done= when another run held a
// gateway's turn: that gateway was not reconciled again.
const busyReconcile = "busy_reconcile"

// unresolvedListURL is the admin's list of every unresolved top-up (the
// dashboard's statuses), oldest first, as the dashboard orders them.
func unresolvedListURL() string {
	q := url.Values{"status": topupread.OpenStatuses, "sort": {"oldest"}}
	return routes.AdminTopUps + "?" + q.Encode()
}
