package console

import (
	"context"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"
)

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
// now (oldest first, every hour present).
func (c *Console) TopUpsByHour(ctx context.Context, now time.Time) ([]HourBucket, error) {
	now = now.UTC()
	first := now.Truncate(time.Hour).Add(-23 * time.Hour)
	var rows []struct {
		Hour   int64
		Status string
		N      int64
	}
	hour := c.db.HourNumber("created_at")
	err := c.db.Gorm.WithContext(ctx).Table("payments").
		Select(hour+" AS hour, status, COUNT(*) AS n").
		Where("created_at >= ? AND created_at <= ?", first, now).
		Group(hour + ", status").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("top-ups by hour: %w", err)
	}
	out := make([]HourBucket, 24)
	for i := range out {
		out[i].Start = first.Add(time.Duration(i) * time.Hour)
	}
	base := first.Unix() / 3600
	for _, r := range rows {
		i := r.Hour - base
		if i < 0 || i >= 24 {
			continue
		}
		out[i].Total += r.N
		switch r.Status {
		case "credited":
			out[i].Credited += r.N
		case "failed":
			out[i].Failed += r.N
		}
	}
	return out, nil
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
// maxLatencySample).
func (c *Console) BankLatency(ctx context.Context, now time.Time) ([]Latency, error) {
	var rows []struct {
		Operation  string
		DurationMS int64
	}
	err := c.db.Gorm.WithContext(ctx).Table("gateway_calls").Select("operation, duration_ms").
		Where("started_at >= ?", now.UTC().Add(-24*time.Hour)).
		Order("started_at DESC").Limit(maxLatencySample).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("bank latency: %w", err)
	}
	by := map[string][]int64{}
	for _, r := range rows {
		by[r.Operation] = append(by[r.Operation], r.DurationMS)
	}
	var out []Latency
	for op, ds := range by {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		out = append(out, Latency{Operation: op, Calls: len(ds), P50: percentile(ds, 50), P90: percentile(ds, 90), P99: percentile(ds, 99)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Operation < out[j].Operation })
	return out, nil
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// Backlog is the worker's queue: open payments due for a check.
type Backlog struct {
	Due int64
	// Lag is how long the oldest due payment has waited past its time (0
	// when none is due).
	Lag time.Duration
}

// WorkerBacklog measures the worker's queue at now, with the worker's own
// rule of what is due: pending_verification whose next check has come, and
// awaiting_payment opened at least grace ago (WORKER_ABANDONED_AFTER) whose
// next check has come.
func (c *Console) WorkerBacklog(ctx context.Context, now time.Time, grace time.Duration) (Backlog, error) {
	now = now.UTC()
	due := func() *gorm.DB {
		return c.db.Gorm.WithContext(ctx).Table("payments").
			Where("(next_check_at IS NULL OR next_check_at <= ?)", now).
			Where("(status = 'pending_verification' OR (status = 'awaiting_payment' AND opened_at <= ?))", now.Add(-grace))
	}
	var b Backlog
	if err := due().Count(&b.Due).Error; err != nil {
		return Backlog{}, fmt.Errorf("worker backlog: %w", err)
	}
	if b.Due == 0 {
		return b, nil
	}
	// The longest wait: a scheduled check overdue, or an unscheduled
	// payment due since it was opened (plus the grace, when awaiting).
	var scheduled []struct{ NextCheckAt time.Time }
	if err := due().Select("next_check_at").Where("next_check_at IS NOT NULL").Order("next_check_at").Limit(1).Scan(&scheduled).Error; err != nil {
		return Backlog{}, fmt.Errorf("worker lag: %w", err)
	}
	var unscheduled []struct {
		Status   string
		OpenedAt *time.Time
	}
	if err := due().Select("status, opened_at").Where("next_check_at IS NULL").Order("opened_at").Limit(1).Scan(&unscheduled).Error; err != nil {
		return Backlog{}, fmt.Errorf("worker lag: %w", err)
	}
	if len(scheduled) == 1 && now.Sub(scheduled[0].NextCheckAt) > b.Lag {
		b.Lag = now.Sub(scheduled[0].NextCheckAt)
	}
	if len(unscheduled) == 1 && unscheduled[0].OpenedAt != nil {
		since := *unscheduled[0].OpenedAt
		if unscheduled[0].Status == "awaiting_payment" {
			since = since.Add(grace)
		}
		if now.Sub(since) > b.Lag {
			b.Lag = now.Sub(since)
		}
	}
	return b, nil
}
