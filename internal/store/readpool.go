package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ReadPool is where the pages' reads go (lists, searches, histories, the
// dashboard, CSV files, the API's lists): the read database of
// DATABASE_READ_URL (a streaming replica, or any PostgreSQL that serves the
// same data) while its last check found it answering, else the primary.
// Reads that must be fresh (inside a use case that then writes, a receipt
// right after its move, sessions, idempotency records, balances and limits
// before a move) never come here: they read the primary
// (docs/design/scaling.md#read-replicas).
//
// Check pings the read database and measures its lag; the instance checks
// it every ReplicaCheckEvery, and the dashboard and a metrics scrape check
// it too. A read database found down, or further behind than its maximum
// lag (WithMaxLag), sends reads to the primary until a check finds it
// answering, and within it, again.
type ReadPool struct {
	primary *DB
	replica *DB // nil: none configured
	log     *slog.Logger
	maxLag  time.Duration // 0: any lag is read

	unreplayed walSamples

	mu   sync.Mutex
	last ReplicaStatus
}

// ReplicaCheckEvery is how often an instance checks its read database.
const ReplicaCheckEvery = 5 * time.Second

// ReplicaStatus is what the last check of the read database found.
type ReplicaStatus struct {
	// Configured: DATABASE_READ_URL is set (else nothing below applies).
	Configured bool
	// Up: it answered the last check; before the first check, it
	// answered when the instance opened it. Reads go to it while it is
	// up and not Behind.
	Up bool
	// Behind: up, but further behind than the pool's maximum lag at the
	// last check (Stale): reads go to the primary.
	Behind bool
	// Standby: it is a streaming replica (in recovery); a database that
	// is not has no lag.
	Standby bool
	// Lag is how far the replica is behind while it is behind the
	// primary's WAL position (0 caught up): the primary's replay_lag, else
	// how long ago it replayed the newest transaction it has (measureLag).
	Lag time.Duration
	// LagBytes is the WAL between the primary's current position and the
	// replica's replay (0 caught up or not a standby; -1 unknown).
	LagBytes int64
	// Stale is how stale the replica is at least: how long ago the
	// primary had written WAL that it has still not replayed, as this
	// instance's checks saw the primary's position (walSamples); 0 when it
	// replayed every position seen. It decides Behind: replay_lag alone
	// would understate a replica whose replay stopped (it moves only when
	// replay does), the newest replayed transaction's age would overstate
	// one whose primary rarely commits.
	Stale time.Duration
	// CheckedAt is when the check ran (zero: never); Err what failed.
	CheckedAt time.Time
	Err       string
}

// NewReadPool sends reads to replica while it answers, else to primary; a
// nil replica sends every read to primary. log (nil: none) is told when
// the reads move from one to the other.
func NewReadPool(primary, replica *DB, log *slog.Logger) *ReadPool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ReadPool{primary: primary, replica: replica, log: log,
		last: ReplicaStatus{Configured: replica != nil, Up: replica != nil}}
}

// WithMaxLag makes a read database found further behind than max (its
// Stale) send the reads to the primary until a check finds it within;
// 0 reads it however far behind. It returns p.
func (p *ReadPool) WithMaxLag(max time.Duration) *ReadPool {
	p.maxLag = max
	return p
}

// Serves reports whether reads go to the read database of this finding.
func (st ReplicaStatus) Serves() bool { return st.Up && !st.Behind }

// DB is the database a page's read goes to now.
func (p *ReadPool) DB() *DB {
	if p == nil {
		return nil
	}
	if p.replica == nil {
		return p.primary
	}
	p.mu.Lock()
	serves := p.last.Serves()
	p.mu.Unlock()
	if serves {
		return p.replica
	}
	return p.primary
}

// Primary is the primary database.
func (p *ReadPool) Primary() *DB { return p.primary }

// Replica is the read database (nil when none is configured).
func (p *ReadPool) Replica() *DB { return p.replica }

// Status is the last check's finding.
func (p *ReadPool) Status() ReplicaStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Check pings the read database and measures how far it is behind the
// primary; its finding decides where reads go until the next check. now
// stamps the finding.
func (p *ReadPool) Check(ctx context.Context, now time.Time) ReplicaStatus {
	if p.replica == nil {
		return ReplicaStatus{}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st := ReplicaStatus{Configured: true, CheckedAt: now, LagBytes: -1}
	if err := p.ping(ctx); err != nil {
		st.Err = err.Error()
		// Whatever it kept is of no use now, and its connections,
		// ended by the replica, would fail the first reads once it is
		// back.
		p.replica.DropIdleConns()
		p.set(st)
		return st
	}
	st.Up = true
	if p.replica.Dialect == Postgres {
		p.measureLag(ctx, &st)
	} else {
		st.LagBytes = 0
	}
	st.Behind = p.maxLag > 0 && st.Stale > p.maxLag
	p.set(st)
	return st
}

// ping asks the read database whether it answers. database/sql pings on
// one idle connection and does not try another when that one is dead, so
// a replica restarted since (which ended the pool's connections) would be
// called down by each dead connection in turn: on a dead connection the
// pool's idle ones are dropped and the ping is made again on a new one.
func (p *ReadPool) ping(ctx context.Context) error {
	err := p.replica.SQL().PingContext(ctx)
	if errors.Is(err, driver.ErrBadConn) && ctx.Err() == nil {
		p.replica.DropIdleConns()
		err = p.replica.SQL().PingContext(ctx)
	}
	return err
}

// measureLag reads the primary's WAL position, then the replica's replay
// of it: bytes behind, and, while behind, the lag: the primary's
// pg_stat_replication.replay_lag when it has one (replayLag), else the age
// of the newest replayed transaction (the age alone grows on an idle
// primary, so it counts only while WAL is waiting). Errors leave the lag
// unknown, the replica up.
func (p *ReadPool) measureLag(ctx context.Context, st *ReplicaStatus) {
	var standby bool
	if err := p.replica.SQL().QueryRowContext(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby); err != nil {
		st.Err = "lag: " + err.Error()
		return
	}
	st.Standby = standby
	if !standby {
		st.LagBytes = 0
		return
	}
	var primaryLSN string
	if err := p.primary.SQL().QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&primaryLSN); err != nil {
		st.Err = "lag: primary's position: " + err.Error()
		return
	}
	var replayedLSN *string
	var age *float64
	err := p.replica.SQL().QueryRowContext(ctx, `SELECT pg_last_wal_replay_lsn()::text,
		EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8`).Scan(&replayedLSN, &age)
	if err != nil {
		st.Err = "lag: " + err.Error()
		return
	}
	written, ok1 := parseLSN(primaryLSN)
	replayed, ok2 := uint64(0), replayedLSN != nil
	if ok2 {
		replayed, ok2 = parseLSN(*replayedLSN)
	}
	if !ok1 || !ok2 {
		st.Err = "lag: unreadable WAL positions"
		return
	}
	st.Stale = p.unreplayed.stale(st.CheckedAt, written, replayed)
	if written <= replayed {
		st.LagBytes = 0
		return
	}
	st.LagBytes = int64(min(written-replayed, 1<<62))
	if age != nil && *age > 0 {
		st.Lag = time.Duration(*age * float64(time.Second))
	}
	if lag, ok := p.replayLag(ctx); ok {
		st.Lag = lag
	}
}

// parseLSN reads PostgreSQL's text form of a WAL position, "X/Y" (two
// hexadecimal halves).
func parseLSN(s string) (uint64, bool) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, false
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return h<<32 | l, true
}

// walSamples remembers the primary's WAL position at each check the
// replica had not replayed yet: the oldest of them proves how stale the
// replica is at least (it has not replayed what the primary had written
// then). Unlike the age of the newest replayed transaction, this never
// overstates on a primary that rarely commits; unlike replay_lag, it goes
// on growing while the replica's replay is stuck.
type walSamples struct {
	mu sync.Mutex
	s  []walSample
}

type walSample struct {
	at  time.Time
	lsn uint64
}

// maxWALSamples bounds the memory; past it the oldest is kept and the
// second oldest dropped, so the bound stays a bound.
const maxWALSamples = 256

// stale records written at now, forgets what replayed covers, and
// returns how long ago the oldest position still not replayed was
// written (0: the replica has replayed every position we saw).
func (w *walSamples) stale(now time.Time, written, replayed uint64) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if written > replayed {
		w.s = append(w.s, walSample{at: now, lsn: written})
		if len(w.s) > maxWALSamples {
			w.s = append(w.s[:1], w.s[2:]...)
		}
	}
	i := 0
	for i < len(w.s) && w.s[i].lsn <= replayed {
		i++
	}
	w.s = w.s[i:]
	if len(w.s) == 0 {
		return 0
	}
	return max(now.Sub(w.s[0].at), 0)
}

// replayLag is the primary's own measure of its standby's lag,
// pg_stat_replication.replay_lag: how long WAL the primary flushed took to
// be replayed, which stays right while the replica replays WAL without
// commits (the newest replayed transaction's age then overstates it). It
// counts only with exactly one standby (the row is then the read
// database's) and a value (a role without pg_monitor sees none; a standby
// idle for a while shows none): else ok is false and the age is used.
func (p *ReadPool) replayLag(ctx context.Context) (time.Duration, bool) {
	var n int
	var secs *float64
	err := p.primary.SQL().QueryRowContext(ctx, `SELECT count(*), max(EXTRACT(EPOCH FROM replay_lag))::float8
		FROM pg_stat_replication`).Scan(&n, &secs)
	if err != nil || n != 1 || secs == nil || *secs < 0 {
		return 0, false
	}
	return time.Duration(*secs * float64(time.Second)), true
}

func (p *ReadPool) set(st ReplicaStatus) {
	p.mu.Lock()
	was := p.last
	p.last = st
	p.mu.Unlock()
	switch {
	case was.Up && !st.Up:
		p.log.Warn("the read database (DATABASE_READ_URL) does not answer: the pages read the primary", "err", st.Err)
	case !was.Behind && st.Behind:
		p.log.Warn("the read database (DATABASE_READ_URL) is further behind than DATABASE_READ_MAX_LAG: the pages read the primary",
			"stale", st.Stale, "max", p.maxLag, "lag_bytes", st.LagBytes)
	case !was.Serves() && st.Serves():
		p.log.Info("the read database (DATABASE_READ_URL) answers, within its lag: the pages read it")
	}
}

// Close closes the read database's pool (the primary is its owner's).
func (p *ReadPool) Close() error {
	if p == nil || p.replica == nil {
		return nil
	}
	return p.replica.Close()
}
