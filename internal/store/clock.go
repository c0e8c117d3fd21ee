package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// Clock is the time every instance agrees on: the database's. Leases and
// deadlines compare timestamps written by different instances, so an
// instance whose own clock runs ten minutes fast must not see a live lease
// of another instance as expired (and verify the payment a second time).
//
// The clock samples the database's time (PostgreSQL's clock_timestamp(),
// SQLite's 'now') at Sync, and every refresh while Run runs, measures its
// offset against the instance's base clock at the midpoint of the round
// trip (of a few samples, the one with the shortest round trip wins), and
// Now is base() + offset: no database round trip per reading, an error of
// about half a round trip. SQLite is embedded in the one process, so its
// time is this machine's and the offset is zero unless the base clock is
// not the machine's (a test's skewed clock); it is measured all the same,
// to a millisecond (SQLite's resolution).
//
// Until the first Sync the offset is zero, so a Clock that is never synced
// (tests that drive a fake base clock) is exactly its base clock.
type Clock struct {
	db      *DB
	base    func() time.Time
	refresh time.Duration
	log     *slog.Logger
	offset  atomic.Int64 // nanoseconds to add to base()
	synced  atomic.Bool
}

// DefaultClockRefresh is how often a running Clock samples the database.
const DefaultClockRefresh = 5 * time.Second

// clockSamples is how many round trips one Sync measures (the shortest
// wins: it bounds the error best).
const clockSamples = 3

// NewClock returns the database's clock over base (time.Now when nil),
// sampled every refresh (DefaultClockRefresh when 0) while Run runs.
func NewClock(db *DB, base func() time.Time, refresh time.Duration, log *slog.Logger) *Clock {
	if base == nil {
		base = time.Now
	}
	if refresh <= 0 {
		refresh = DefaultClockRefresh
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Clock{db: db, base: base, refresh: refresh, log: log}
}

// Now is the database's time, as well as this instance can tell.
func (c *Clock) Now() time.Time {
	return c.base().Add(time.Duration(c.offset.Load()))
}

// Offset is what Now adds to the base clock (the database's clock minus
// this instance's, as last measured).
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// Sync measures the offset now.
func (c *Clock) Sync(ctx context.Context) error {
	var best, bestRTT time.Duration
	for i := range clockSamples {
		off, rtt, err := c.sample(ctx)
		if err != nil {
			return err
		}
		if i == 0 || rtt < bestRTT {
			best, bestRTT = off, rtt
		}
	}
	prev := time.Duration(c.offset.Swap(int64(best)))
	if !c.synced.Swap(true) {
		c.log.Info("database clock", "offset", best.Round(time.Microsecond).String(), "round_trip", bestRTT.String())
	} else if d := best - prev; d > time.Second || d < -time.Second {
		c.log.Warn("database clock offset moved", "offset", best.Round(time.Microsecond).String(), "was", prev.Round(time.Microsecond).String())
	}
	return nil
}

// sample asks the database for its time once: the offset at the midpoint
// of the round trip, and the round trip (the error is at most half of it).
func (c *Clock) sample(ctx context.Context) (offset, rtt time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t0 := c.base()
	db, err := c.db.Now(ctx)
	if err != nil {
		return 0, 0, err
	}
	t1 := c.base()
	rtt = t1.Sub(t0)
	mid := t0.Add(rtt / 2)
	// db carries no monotonic reading, so this is wall clock against wall
	// clock, which is what Now corrects.
	return db.Sub(mid), rtt, nil
}

// Now reads the database's current time (not the transaction's start):
// one round trip.
func (db *DB) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	var err error
	switch db.Dialect {
	case Postgres:
		err = db.SQL().QueryRowContext(ctx, "SELECT clock_timestamp()").Scan(&t)
	default:
		var s string
		if err = db.SQL().QueryRowContext(ctx, "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')").Scan(&s); err == nil {
			t, err = time.ParseInLocation("2006-01-02 15:04:05.000", s, time.UTC)
			// SQLite's 'now' is whole milliseconds, cut: the middle of the
			// millisecond is the unbiased reading.
			t = t.Add(500 * time.Microsecond)
		}
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	return t, nil
}

// Run re-syncs every refresh until ctx ends. A failed sample keeps the
// last offset (clocks drift slowly) and is logged.
func (c *Clock) Run(ctx context.Context) {
	t := time.NewTicker(c.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("database clock: keeping the last offset", "err", err)
			}
		}
	}
}
