package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kifpool/kifpool/internal/lifecycle"
)

// Clock is the time every instance agrees on: the database's. Leases and
// deadlines compare timestamps written by different instances, so an
// instance whose own clock runs ten minutes fast must not see a live lease
// of another instance as expired (and verify the payment a second time).
//
// The clock samples the database's time (PostgreSQL's clock_timestamp(),
// SQLite's 'now') at Sync, and every refresh while Run runs, and anchors
// it to the instance's monotonic clock at the midpoint of the round trip
// (of a few samples, the one with the shortest round trip wins). Now is
// that database reading plus the monotonic time elapsed since: no
// database round trip per reading, an error of about half a round trip,
// and a step of the machine's wall clock between two syncs (NTP, an
// operator) moves nothing — with wall time plus a measured offset, a
// step of a minute would have made a live lease of another instance look
// expired here. SQLite is embedded in the one process, so its time is
// this machine's; it is measured all the same, to a millisecond (SQLite's
// resolution).
//
// Until the first Sync a Clock is exactly its base clock (tests that drive
// a fake base clock never sync).
type Clock struct {
	db      *DB
	base    func() time.Time
	mono    func() time.Duration // monotonic time elapsed since an origin of its own
	refresh time.Duration
	log     *slog.Logger
	anchor  atomic.Pointer[anchor] // nil until the first Sync
}

// anchor is one sync: the database's time at a moment of the monotonic
// clock.
type anchor struct {
	db   time.Time
	mono time.Duration
}

// DefaultClockRefresh is how often a running Clock samples the database.
const DefaultClockRefresh = 5 * time.Second

// clockSamples is how many round trips one Sync measures (the shortest
// wins: it bounds the error best).
const clockSamples = 3

// NewClock returns the database's clock over base (time.Now when nil),
// sampled every refresh (DefaultClockRefresh when 0) while Run runs.
func NewClock(db *DB, base func() time.Time, refresh time.Duration, log *slog.Logger) *Clock {
	return NewClockMono(db, base, nil, refresh, log)
}

// NewClockMono is NewClock over an explicit monotonic clock (the time
// elapsed since an origin of its own; nil: the process's monotonic clock).
// Tests pass one to step the wall clock without it.
func NewClockMono(db *DB, base func() time.Time, mono func() time.Duration, refresh time.Duration, log *slog.Logger) *Clock {
	if mono == nil {
		origin := time.Now() // carries a monotonic reading: Since uses it
		mono = func() time.Duration { return time.Since(origin) }
	}
	if base == nil {
		base = time.Now
	}
	if refresh <= 0 {
		refresh = DefaultClockRefresh
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Clock{db: db, base: base, mono: mono, refresh: refresh, log: log}
}

// Now is the database's time, as well as this instance can tell: the
// last sync's reading plus the monotonic time elapsed since.
func (c *Clock) Now() time.Time {
	a := c.anchor.Load()
	if a == nil {
		return c.base()
	}
	return a.db.Add(c.mono() - a.mono)
}

// Offset is how far Now is from the base clock (the database's clock
// minus this instance's wall clock).
func (c *Clock) Offset() time.Duration {
	if c.anchor.Load() == nil {
		return 0
	}
	return c.Now().Sub(c.base())
}

// Sync measures the offset now.
func (c *Clock) Sync(ctx context.Context) error {
	var best anchor
	var bestRTT time.Duration
	for i := range clockSamples {
		a, rtt, err := c.sample(ctx)
		if err != nil {
			return err
		}
		if i == 0 || rtt < bestRTT {
			best, bestRTT = a, rtt
		}
	}
	var drift time.Duration // how far the last anchor's Now was off
	prev := c.anchor.Load()
	if prev != nil {
		drift = best.db.Sub(prev.db.Add(best.mono - prev.mono))
	}
	c.anchor.Store(&best)
	off := c.Offset()
	if prev == nil {
		c.log.Info("database clock", "offset", off.Round(time.Microsecond).String(), "round_trip", bestRTT.String())
	} else if drift > time.Second || drift < -time.Second {
		c.log.Warn("database clock moved against this instance's monotonic clock", "drift", drift.Round(time.Microsecond).String())
	}
	return nil
}

// sample asks the database for its time once: its reading anchored at
// the midpoint of the round trip on the monotonic clock, and the round
// trip (the error is at most half of it).
func (c *Clock) sample(ctx context.Context) (anchor, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t0 := c.mono()
	db, err := c.db.Now(ctx)
	if err != nil {
		return anchor{}, 0, err
	}
	rtt := c.mono() - t0
	return anchor{db: db, mono: t0 + rtt/2}, rtt, nil
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

// Run re-syncs every refresh until ctx ends (the first one refresh after
// the start: the caller has just synced). A failed sample keeps the last
// anchor (clocks drift slowly) and is logged.
func (c *Clock) Run(ctx context.Context) {
	lifecycle.Loop{Interval: c.refresh, Later: true}.Run(ctx, func(ctx context.Context) {
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("database clock: keeping the last offset", "err", err)
		}
	})
}
