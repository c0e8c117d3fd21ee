package topupread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
)

// Dashboard is everything the admin dashboard (GET /admin) shows of
// payments.
type Dashboard struct {
	Totals     []Total         // by status, in Statuses' order
	Unresolved []UnresolvedRow // open and under review, oldest first, at most DashboardUnresolved
	// MoreUnresolved: there are more than DashboardUnresolved (the admin's
	// list of top-ups has them all).
	MoreUnresolved bool
	Hours          []HourBucket // the last 24 hours, oldest first
	Latency        []Latency    // per bank operation, the last 24 hours
	Backlog        Backlog
	Reconciles     []topup.ReconcileReport // newest first
}

// DashboardUnresolved is how many unresolved top-ups the dashboard lists,
// oldest first: a page an admin reads, refreshed every 30 s, not the whole
// queue (its link goes to the list of all of them). At 200 rows the page
// was 248 KB and its slowest part at 10M top-ups (docs/benchmarks.md).
const DashboardUnresolved = 50

// dashboardReconciles is how many reconciliation reports it shows.
const dashboardReconciles = 5

// Dashboard reads the dashboard at now; grace is the worker's
// WORKER_ABANDONED_AFTER (what counts as due in its backlog). Its six
// reads are independent and run at once, each on its own connection. The
// chart's ended hours and the bank's latency come from the reader's cache
// while fresh (EndedHoursFresh, LatencyFresh); everything else is read at
// every load.
func (r *Reader) Dashboard(ctx context.Context, now time.Time, grace time.Duration) (Dashboard, error) {
	var d Dashboard
	reads := []func(context.Context) error{
		func(ctx context.Context) (err error) { d.Totals, err = r.Totals(ctx); return },
		func(ctx context.Context) (err error) {
			d.Unresolved, err = r.Unresolved(ctx, DashboardUnresolved+1)
			return
		},
		func(ctx context.Context) (err error) { d.Hours, err = r.dashboardHours(ctx, now); return },
		func(ctx context.Context) (err error) { d.Latency, err = r.dashboardLatency(ctx, now); return },
		func(ctx context.Context) (err error) { d.Backlog, err = r.WorkerBacklog(ctx, now, grace); return },
		func(ctx context.Context) (err error) {
			d.Reconciles, err = r.Reconciles(ctx, dashboardReconciles)
			return
		},
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, read := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = read(ctx); errs[i] != nil {
				cancel() // the page fails anyway: the others need not finish
			}
		}()
	}
	wg.Wait()
	if len(d.Unresolved) > DashboardUnresolved {
		d.Unresolved, d.MoreUnresolved = d.Unresolved[:DashboardUnresolved], true
	}
	return d, errors.Join(errs...)
}

// TotalCap is how far the totals by status count exactly (as the list's
// CountCap): a status with more payments than this is counted from
// PostgreSQL's statistics instead (an estimate, shown as such). Counting a
// million rows exactly took ~370 ms; reading at most TotalCap+1 entries of
// the status index per status takes well under one.
const TotalCap = 1_000

// Total is how many payments are in one status.
type Total struct {
	Status string
	N      int64
	// Estimate: N is PostgreSQL's planner estimate for the status (the
	// table's size times the status's share in its statistics, which
	// autovacuum's ANALYZE keeps fresh), rounded to three significant
	// digits; pages show it with "≈". Never less than TotalCap+1.
	Estimate bool
}

// Totals counts the payments of each status: exactly up to TotalCap (one
// statement of capped counts, each an index-only walk of the status
// index), and above it an estimate on PostgreSQL, an exact count on SQLite
// (the embedded single-process default, which keeps no such statistics).
// No counter row is kept: a row that every credit updated would make
// credits wait on each other.
func (r *Reader) Totals(ctx context.Context) ([]Total, error) {
	capped, err := r.StatusCounts(ctx, Filter{}, TotalCap)
	if err != nil {
		return nil, fmt.Errorf("totals by status: %w", err)
	}
	out := make([]Total, 0, len(Statuses))
	for _, st := range Statuses {
		t := Total{Status: st, N: capped[st]}
		if t.N > TotalCap {
			switch r.db.Dialect {
			case store.Postgres:
				est, err := r.plannedRows(ctx, "SELECT 1 FROM topups WHERE status = "+literals([]string{st}))
				if err != nil {
					return nil, fmt.Errorf("estimate payments %s: %w", st, err)
				}
				t.N, t.Estimate = roughly(max(est, TotalCap+1)), true
			default:
				if err := r.page().Gorm.WithContext(ctx).Raw("SELECT COUNT(*) FROM topups WHERE status = " + literals([]string{st})).
					Scan(&t.N).Error; err != nil {
					return nil, fmt.Errorf("count payments %s: %w", st, err)
				}
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// plannedRows is PostgreSQL's estimate of the rows a query returns (its
// plan's top "Plan Rows"): statistics only, the query is not run.
func (r *Reader) plannedRows(ctx context.Context, query string) (int64, error) {
	var plan string
	if err := r.page().Gorm.WithContext(ctx).Raw("EXPLAIN (FORMAT JSON) " + query).Row().Scan(&plan); err != nil {
		return 0, err
	}
	var parsed []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	if err := json.Unmarshal([]byte(plan), &parsed); err != nil || len(parsed) != 1 {
		return 0, fmt.Errorf("read plan %q: %v", plan, err)
	}
	return int64(parsed[0].Plan.Rows), nil
}

// roughly rounds an estimate to three significant digits (812,345 →
// 812,000), so that it does not look more precise than it is.
func roughly(n int64) int64 {
	p := int64(1)
	for n/p >= 1000 {
		p *= 10
	}
	return (n + p/2) / p * p
}

// UnresolvedRow is an open or needs-review payment with its owner, as
// the dashboard lists it.
type UnresolvedRow struct {
	PublicID     string
	Email        string
	AmountRials  int64
	Status       topup.Status
	StatusReason string
	Attempts     int
	CreatedAt    time.Time
	NextCheckAt  *time.Time
}

// Unresolved lists payments that are not credited or failed, oldest
// first: what admins watch. The status condition is written as literals,
// so that it reads the partial index of open payments by creation time
// (topups_open_created_idx) in a cached plan too.
func (r *Reader) Unresolved(ctx context.Context, limit int) ([]UnresolvedRow, error) {
	rs, err := r.page().Gorm.WithContext(ctx).Table("topups AS p").
		Select("p.public_id, u.email, p.amount_rials, p.status, p.status_reason, p.attempts, p.created_at, p.next_check_at").
		Joins("JOIN users u ON u.id = p.user_id").
		Where("p.status IN (" + literals(OpenStatuses) + ")").
		Order("p.created_at, p.id").Limit(limit).Rows()
	if err != nil {
		return nil, fmt.Errorf("unresolved payments: %w", err)
	}
	defer rs.Close()
	var rows []UnresolvedRow
	for rs.Next() {
		var u UnresolvedRow
		if err := rs.Scan(&u.PublicID, &u.Email, &u.AmountRials, &u.Status, &u.StatusReason, &u.Attempts, &u.CreatedAt, &u.NextCheckAt); err != nil {
			return nil, fmt.Errorf("unresolved payments: %w", err)
		}
		rows = append(rows, u)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("unresolved payments: %w", err)
	}
	return rows, nil
}

// Reconciles returns the latest reconciliation reports, newest first.
func (r *Reader) Reconciles(ctx context.Context, limit int) ([]topup.ReconcileReport, error) {
	var out []topup.ReconcileReport
	if err := r.page().Gorm.WithContext(ctx).Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("reconciliation reports: %w", err)
	}
	return out, nil
}

// NewestReconciles returns each of the gateways' newest reconciliation
// report, by gateway (none: not in the map). One indexed read each: the
// table's id order, walked back to the gateway's newest.
func (r *Reader) NewestReconciles(ctx context.Context, gateways []string) (map[string]topup.ReconcileReport, error) {
	out := make(map[string]topup.ReconcileReport, len(gateways))
	for _, gw := range gateways {
		var reps []topup.ReconcileReport
		if err := r.page().Gorm.WithContext(ctx).Where("gateway = ?", gw).Order("id DESC").Limit(1).Find(&reps).Error; err != nil {
			return out, fmt.Errorf("newest reconciliation of %s: %w", gw, err)
		}
		if len(reps) == 1 {
			out[gw] = reps[0]
		}
	}
	return out, nil
}

// HourBucket is one hour of top-ups.
type HourBucket struct {
	Start    time.Time // the hour's beginning, UTC
	Total    int64     // payments created in the hour
	Credited int64     // of which credited
	Failed   int64     // of which failed
}

// SuccessRatio is credited / (credited + failed): the share of finished
// top-ups that succeeded; -1 when none finished.
func (h HourBucket) SuccessRatio() float64 {
	if h.Credited+h.Failed == 0 {
		return -1
	}
	return float64(h.Credited) / float64(h.Credited+h.Failed)
}

// TopUpsByHour counts the payments created in each of the 24 hours before
// now (oldest first, every hour present), exactly as of now. The hours are
// Tehran's (whole hours of +03:30, i.e. from :30 UTC), so that the chart's
// "14:00" is the hour from 14:00 to 15:00 as its readers live it. The
// dashboard reads them through its cache instead (dashboardHours).
func (r *Reader) TopUpsByHour(ctx context.Context, now time.Time) ([]HourBucket, error) {
	w := hourWindowAt(now)
	counts, err := r.countByHour(ctx, w, w.first, now, true)
	if err != nil {
		return nil, err
	}
	return w.buckets(counts), nil
}

// hourWindow is the chart's 24 hours on Tehran's clock: hour numbers
// (whole hours since the epoch on that clock) base to base+23, the last
// one the hour now is in.
type hourWindow struct {
	offset int       // Tehran's offset from UTC at now, seconds
	base   int64     // the first hour's number
	first  time.Time // the first hour's beginning, UTC
}

func hourWindowAt(now time.Time) hourWindow {
	now = now.UTC()
	_, offset := now.In(i18n.Tehran()).Zone()
	off := int64(offset)
	base := (now.Unix()+off)/3600 - 23
	return hourWindow{offset: offset, base: base, first: time.Unix(base*3600-off, 0).UTC()}
}

// hourCount is one hour's top-ups: all, credited, failed.
type hourCount struct{ total, credited, failed int64 }

// buckets lays counts (by hour number) out as the 24 hours of the window,
// oldest first, every hour present.
func (w hourWindow) buckets(counts map[int64]hourCount) []HourBucket {
	out := make([]HourBucket, 24)
	for i := range out {
		c := counts[w.base+int64(i)]
		out[i] = HourBucket{Start: w.first.Add(time.Duration(i) * time.Hour), Total: c.total, Credited: c.credited, Failed: c.failed}
	}
	return out
}

// countByHour counts the payments created from from to to (to itself
// included when inclusive) by Tehran hour number and status.
func (r *Reader) countByHour(ctx context.Context, w hourWindow, from, to time.Time, inclusive bool) (map[int64]hourCount, error) {
	var rows []struct {
		Hour   int64
		Status string
		N      int64
	}
	// One range of the (status, created_at, id) index per status, joined
	// with UNION ALL: each is an index-only scan. A single range on
	// created_at visited every payment's row for its status.
	// Grouped by the hour itself (on PostgreSQL date_trunc of the time on
	// Tehran's clock, then the number of the hour once per group: numeric
	// arithmetic per row cost more than the scan).
	group := "created_at"
	hour := r.db.LocalHourNumber("created_at", w.offset)
	if r.db.Dialect == store.Postgres {
		group = fmt.Sprintf("date_trunc('hour', (created_at AT TIME ZONE 'UTC') + interval '%d seconds')", w.offset)
		hour = r.db.HourNumber(group)
	}
	upTo := " AND created_at < ?"
	if inclusive {
		upTo = " AND created_at <= ?"
	}
	parts := make([]string, len(Statuses))
	args := make([]any, 0, 2*len(Statuses))
	for i, st := range Statuses {
		parts[i] = "SELECT " + hour + " AS hour, " + literals([]string{st}) + " AS status, COUNT(*) AS n FROM topups" +
			" WHERE status = " + literals([]string{st}) + " AND created_at >= ?" + upTo + " GROUP BY " + group
		args = append(args, from.UTC(), to.UTC())
	}
	err := r.page().Gorm.WithContext(ctx).Raw(strings.Join(parts, " UNION ALL "), args...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("top-ups by hour: %w", err)
	}
	counts := make(map[int64]hourCount, 24)
	for _, row := range rows {
		c := counts[row.Hour]
		c.total += row.N
		switch row.Status {
		case "credited":
			c.credited += row.N
		case "failed":
			c.failed += row.N
		}
		counts[row.Hour] = c
	}
	return counts, nil
}

// Latency is the bank's latency percentiles of one operation.
type Latency struct {
	Operation     string
	Calls         int
	P50, P90, P99 int64 // milliseconds
}

// maxLatencySample bounds how many recent calls the percentiles read.
const maxLatencySample = 20_000

// BankLatency computes the latency percentiles of each gateway operation
// over the calls of the 24 hours before now (the latest calls, at most
// maxLatencySample): nearest-rank percentiles (the value at rank
// ceil(p/100 × n) of the sorted durations), computed in the database (the
// calls' rows do not travel to Go) from an index that carries each call's
// operation and duration (migration 00010).
func (r *Reader) BankLatency(ctx context.Context, now time.Time) ([]Latency, error) {
	recent := `(SELECT operation, duration_ms FROM gateway_calls WHERE started_at >= ?
		ORDER BY started_at DESC LIMIT ` + strconv.Itoa(maxLatencySample) + `) recent`
	var q string
	switch r.db.Dialect {
	case store.Postgres:
		// percentile_disc(f) is the value at rank ceil(f × n): the same
		// nearest rank (for 0.5, 0.9 and 0.99 and up to maxLatencySample
		// calls the float product never lands off an integer), sorting
		// each operation's durations as integers.
		disc := func(p int) string {
			return "percentile_disc(" + strconv.Itoa(p) + " / 100.0) WITHIN GROUP (ORDER BY duration_ms)"
		}
		// Grouped by the operation's bytes (COLLATE "C"): the names are
		// ASCII, and the locale's collation made grouping the day's calls
		// cost as much as ranking them.
		q = `SELECT operation COLLATE "C" AS operation, COUNT(*) AS calls, ` + disc(50) + ` AS p50, ` + disc(90) + ` AS p90, ` + disc(99) + ` AS p99
			FROM ` + recent + ` GROUP BY operation COLLATE "C" ORDER BY 1`
	default:
		rank := func(p int) string {
			return "MIN(CASE WHEN rn = (" + strconv.Itoa(p) + " * n + 99) / 100 THEN duration_ms END)"
		}
		q = `SELECT operation, n AS calls, ` + rank(50) + ` AS p50, ` + rank(90) + ` AS p90, ` + rank(99) + ` AS p99
			FROM (SELECT operation, duration_ms,
			             ROW_NUMBER() OVER (PARTITION BY operation ORDER BY duration_ms) AS rn,
			             COUNT(*) OVER (PARTITION BY operation) AS n
			      FROM ` + recent + `) ranked
			GROUP BY operation, n ORDER BY operation`
	}
	var out []Latency
	if err := r.page().Gorm.WithContext(ctx).Raw(q, now.UTC().Add(-24*time.Hour)).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("bank latency: %w", err)
	}
	return out, nil
}

// Backlog is the worker's queue: open payments due for a check.
type Backlog struct {
	Due int64
	// Lag is how long the oldest due payment has waited past its time (0
	// when none is due).
	Lag time.Duration
}

// WorkerBacklog measures the worker's queue at now, with the worker's own
// rule of what is due: pending_verification, settling and reversing whose next check has come, and
// awaiting_payment opened at least grace ago (WORKER_ABANDONED_AFTER) whose
// next check has come. Every read is a range of the index on (status,
// next_check_at, opened_at) (migration 00010), one status at a time, so
// that no payment's row is visited.
func (r *Reader) WorkerBacklog(ctx context.Context, now time.Time, grace time.Duration) (Backlog, error) {
	now = now.UTC()
	cut := now.Add(-grace)
	db := r.page().Gorm.WithContext(ctx)
	pending := func() *gorm.DB {
		return db.Table("topups").Where("status = 'pending_verification' AND (next_check_at IS NULL OR next_check_at <= ?)", now)
	}
	settling := func() *gorm.DB {
		return db.Table("topups").Where("status = 'settling' AND (next_check_at IS NULL OR next_check_at <= ?)", now)
	}
	// A reversing payment's one reverse has a window (SEP: under an
	// hour): one the worker does not get to is what lag must show.
	reversing := func() *gorm.DB {
		return db.Table("topups").Where("status = 'reversing' AND (next_check_at IS NULL OR next_check_at <= ?)", now)
	}
	awaiting := func() *gorm.DB {
		return db.Table("topups").Where("status = 'awaiting_payment' AND (next_check_at IS NULL OR next_check_at <= ?) AND opened_at <= ?", now, cut)
	}
	var b Backlog
	for _, due := range []func() *gorm.DB{pending, settling, reversing, awaiting} {
		var n int64
		if err := due().Count(&n).Error; err != nil {
			return Backlog{}, fmt.Errorf("worker backlog: %w", err)
		}
		b.Due += n
	}
	if b.Due == 0 {
		return b, nil
	}
	// The longest wait: a scheduled check overdue since its time, or an
	// unscheduled payment due since it was opened (plus the grace, when
	// awaiting). Each candidate is the first entry of its index range.
	wait := func(q *gorm.DB, col string, extra time.Duration) error {
		var at []struct{ T time.Time }
		if err := q.Select(col + " AS t").Order(col).Limit(1).Scan(&at).Error; err != nil {
			return fmt.Errorf("worker lag: %w", err)
		}
		if len(at) == 1 && now.Sub(at[0].T.Add(extra)) > b.Lag {
			b.Lag = now.Sub(at[0].T.Add(extra))
		}
		return nil
	}
	for _, c := range []struct {
		q     *gorm.DB
		col   string
		extra time.Duration
	}{
		{pending().Where("next_check_at IS NOT NULL"), "next_check_at", 0},
		{settling().Where("next_check_at IS NOT NULL"), "next_check_at", 0},
		{reversing().Where("next_check_at IS NOT NULL"), "next_check_at", 0},
		{awaiting().Where("next_check_at IS NOT NULL"), "next_check_at", 0},
		{pending().Where("next_check_at IS NULL AND opened_at IS NOT NULL"), "opened_at", 0},
		{settling().Where("next_check_at IS NULL AND opened_at IS NOT NULL"), "opened_at", 0},
		{reversing().Where("next_check_at IS NULL AND opened_at IS NOT NULL"), "opened_at", 0},
		{awaiting().Where("next_check_at IS NULL"), "opened_at", grace},
	} {
		if err := wait(c.q, c.col, c.extra); err != nil {
			return Backlog{}, err
		}
	}
	return b, nil
}

// GatewayLatency is one gateway operation's latency percentiles.
type GatewayLatency struct {
	Gateway string
	Latency
}

// GatewayLatencies computes each gateway's latency percentiles per
// operation over the calls of the hour before now (the latest calls, at
// most maxLatencySample), as BankLatency does for the dashboard: for the
// admin's gateways page, where one bank slow and another fine must be
// told apart. The gateway is read from the calls' rows (the dashboard's
// index carries the operation and duration only): an hour's calls, bounded.
func (r *Reader) GatewayLatencies(ctx context.Context, now time.Time) ([]GatewayLatency, error) {
	recent := `(SELECT gateway, operation, duration_ms FROM gateway_calls WHERE started_at >= ?
		ORDER BY started_at DESC LIMIT ` + strconv.Itoa(maxLatencySample) + `) recent`
	var q string
	switch r.db.Dialect {
	case store.Postgres:
		disc := func(p int) string {
			return "percentile_disc(" + strconv.Itoa(p) + " / 100.0) WITHIN GROUP (ORDER BY duration_ms)"
		}
		q = `SELECT gateway COLLATE "C" AS gateway, operation COLLATE "C" AS operation, COUNT(*) AS calls, ` + disc(50) + ` AS p50, ` + disc(90) + ` AS p90, ` + disc(99) + ` AS p99
			FROM ` + recent + ` GROUP BY gateway COLLATE "C", operation COLLATE "C" ORDER BY 1, 2`
	default:
		rank := func(p int) string {
			return "MIN(CASE WHEN rn = (" + strconv.Itoa(p) + " * n + 99) / 100 THEN duration_ms END)"
		}
		q = `SELECT gateway, operation, n AS calls, ` + rank(50) + ` AS p50, ` + rank(90) + ` AS p90, ` + rank(99) + ` AS p99
			FROM (SELECT gateway, operation, duration_ms,
			             ROW_NUMBER() OVER (PARTITION BY gateway, operation ORDER BY duration_ms) AS rn,
			             COUNT(*) OVER (PARTITION BY gateway, operation) AS n
			      FROM ` + recent + `) ranked
			GROUP BY gateway, operation, n ORDER BY gateway, operation`
	}
	var rows []struct {
		Gateway, Operation string
		Calls              int
		P50, P90, P99      int64
	}
	if err := r.page().Gorm.WithContext(ctx).Raw(q, now.UTC().Add(-time.Hour)).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("gateway latency: %w", err)
	}
	out := make([]GatewayLatency, len(rows))
	for i, x := range rows {
		out[i] = GatewayLatency{Gateway: x.Gateway, Latency: Latency{Operation: x.Operation, Calls: x.Calls, P50: x.P50, P90: x.P90, P99: x.P99}}
	}
	return out, nil
}
