package topupread

import (
	"context"
	"maps"
	"sync"
	"time"
)

// EndedHoursFresh is how long the dashboard's chart keeps its counts of
// the hours that have ended before it counts them again; the hour in
// progress is counted at every load. A top-up's status can still change
// after its hour ends (a payer back from the bank a few minutes later, the
// worker's verdict on an abandoned one), so the ended hours are recounted,
// and a change shows within this long.
const EndedHoursFresh = 5 * time.Minute

// LatencyFresh is how long the dashboard keeps the bank's latency
// percentiles before it ranks the latest calls again.
const LatencyFresh = time.Minute

// dashCache keeps, per instance and for every admin, the two dashboard
// reads whose cost grows with the day's traffic rather than with what
// changed since the last load: the counts of the day's hours that have
// ended (at 10M top-ups, 27,000 a day: the chart's read took 6.5 ms p50)
// and the bank's latency (ranking the latest 20,000 calls: 9 ms; both
// quiet, docs/benchmarks.md). The page refreshes
// every 30 s; without the cache each refresh counted the whole day again.
// Nothing in it is a balance or a status a decision is made on.
type dashCache struct {
	mu sync.Mutex
	// ended holds the counts of hours endedFrom to endedUntil-1, counted
	// at endedAt.
	ended                 map[int64]hourCount
	endedFrom, endedUntil int64
	endedAt               time.Time
	latency               []Latency
	latencyAt             time.Time
}

// fresh: a copy taken at at may still be served at now.
func fresh(at, now time.Time, within time.Duration) bool {
	return !at.IsZero() && !now.Before(at) && now.Sub(at) < within
}

// dashboardHours is TopUpsByHour for the dashboard: the hour in progress
// counted now, the ended hours from the cache while EndedHoursFresh.
func (r *Reader) dashboardHours(ctx context.Context, now time.Time) ([]HourBucket, error) {
	w := hourWindowAt(now)
	cur, curStart := w.current()
	c := r.cache
	c.mu.Lock()
	var ended map[int64]hourCount
	if c.endedFrom == w.base && c.endedUntil == cur && fresh(c.endedAt, now, EndedHoursFresh) {
		ended = c.ended
	}
	c.mu.Unlock()
	if ended == nil {
		var err error
		if ended, err = r.countByHour(ctx, w, w.first, curStart, false); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.ended, c.endedFrom, c.endedUntil, c.endedAt = ended, w.base, cur, now
		c.mu.Unlock()
	}
	live, err := r.countByHour(ctx, w, curStart, now, true)
	if err != nil {
		return nil, err
	}
	all := maps.Clone(ended) // countByHour's maps are never nil
	all[cur] = live[cur]
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
