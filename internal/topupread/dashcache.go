package topupread

import (
	"context"
	"maps"
	"sync"
	"time"
)

// EndedHoursFresh is how long the dashboard's chart keeps its counts
// before it counts again: of the hours that have ended, and of the hour in
// progress up to a minute before the count. Top-ups created since then are
// counted at every load. A top-up's status can still change after it is
// counted (a payer back from the bank a few minutes later, the worker's
// verdict on an abandoned one), so the counts are taken again, and such a
// change shows within this long; a new top-up shows at once.
const EndedHoursFresh = 5 * time.Minute

// countedSettle is how far before the moment of a count the cached part
// of the chart ends: a top-up whose insert is still in flight then (its
// created_at taken, its row not yet committed) falls in the part counted
// at every load, not into a count it would miss until the next one.
const countedSettle = time.Minute

// LatencyFresh is how long the dashboard keeps the bank's latency
// percentiles before it ranks the latest calls again.
const LatencyFresh = time.Minute

// dashCache keeps, per instance and for every admin, the two dashboard
// reads whose cost grows with the day's traffic rather than with what
// changed since the last load: the counts of the day's hours up to a
// minute before they were counted (at 10M top-ups, 27,000 a day: the
// chart's read took 6.5 ms p50; the hour in progress alone, with 230,000
// top-ups in it, 215 ms p50, docs/benchmarks.md)
// and the bank's latency (ranking the latest 20,000 calls: 9 ms; both
// quiet, docs/benchmarks.md). The page refreshes
// every 30 s; without the cache each refresh counted the whole day again.
// Nothing in it is a balance or a status a decision is made on.
type dashCache struct {
	mu sync.Mutex
	// counted holds the counts by hour number of the top-ups created from
	// the beginning of hour countedFrom (the chart's first) to
	// countedUntil (excluded), counted at countedAt.
	counted                 map[int64]hourCount
	countedFrom             int64
	countedUntil, countedAt time.Time
	latency                 []Latency
	latencyAt               time.Time
}

// fresh: a copy taken at at may still be served at now.
func fresh(at, now time.Time, within time.Duration) bool {
	return !at.IsZero() && !now.Before(at) && now.Sub(at) < within
}

// dashboardHours is TopUpsByHour for the dashboard: the counts up to a
// minute before the last count from the cache while EndedHoursFresh (and
// while the chart's first hour is the same), what was created since then
// counted now. At every load it reads at most the top-ups of the last
// EndedHoursFresh + countedSettle + a minute (the count ends on a whole
// minute): seven minutes, not the whole hour in progress.
func (r *Reader) dashboardHours(ctx context.Context, now time.Time) ([]HourBucket, error) {
	w := hourWindowAt(now)
	c := r.cache
	c.mu.Lock()
	counted, until := c.counted, c.countedUntil
	if c.countedFrom != w.base || !fresh(c.countedAt, now, EndedHoursFresh) || until.After(now) {
		counted = nil
	}
	c.mu.Unlock()
	if counted == nil {
		if until = now.UTC().Add(-countedSettle).Truncate(time.Minute); until.Before(w.first) {
			until = w.first
		}
		var err error
		if counted, err = r.countByHour(ctx, w, w.first, until, false); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.counted, c.countedFrom, c.countedUntil, c.countedAt = counted, w.base, until, now
		c.mu.Unlock()
	}
	live, err := r.countByHour(ctx, w, until, now, true)
	if err != nil {
		return nil, err
	}
	all := maps.Clone(counted) // countByHour's maps are never nil
	for h, n := range live {
		a := all[h]
		a.total, a.credited, a.failed = a.total+n.total, a.credited+n.credited, a.failed+n.failed
		all[h] = a
	}
	return w.buckets(all), nil
}

// dashboardLatency is BankLatency for the dashboard, ranked again once
// LatencyFresh has passed.
func (r *Reader) dashboardLatency(ctx context.Context, now time.Time) ([]Latency, error) {
	c := r.cache
	c.mu.Lock()
	if fresh(c.latencyAt, now, LatencyFresh) {
		l := c.latency
		c.mu.Unlock()
		return l, nil
	}
	c.mu.Unlock()
	l, err := r.BankLatency(ctx, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.latency, c.latencyAt = l, now
	c.mu.Unlock()
	return l, nil
}
