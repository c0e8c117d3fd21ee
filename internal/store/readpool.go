package store

import (
	"context"
	"log/slog"
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
// it too. A read database found down sends reads to the primary until a
// check finds it answering again.
type ReadPool struct {
	primary *DB
	replica *DB // nil: none configured
	log     *slog.Logger

	mu   sync.Mutex
	last ReplicaStatus
}

// ReplicaCheckEvery is how often an instance checks its read database.
const ReplicaCheckEvery = 5 * time.Second

// ReplicaStatus is what the last check of the read database found.
type ReplicaStatus struct {
	// Configured: DATABASE_READ_URL is set (else nothing below applies).
	Configured bool
	// Up: it answered the last check (reads go to it); before the first
	// check, it answered when the instance opened it.
	Up bool
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

// DB is the database a page's read goes to now.
func (p *ReadPool) DB() *DB {
	if p == nil {
		return nil
	}
	if p.replica == nil {
		return p.primary
	}
	p.mu.Lock()
	up := p.last.Up
	p.mu.Unlock()
	if up {
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
	if err := p.replica.SQL().PingContext(ctx); err != nil {
		st.Err = err.Error()
		p.set(st)
		return st
	}
	st.Up = true
	if p.replica.Dialect == Postgres {
		p.measureLag(ctx, &st)
	} else {
		st.LagBytes = 0
	}
	p.set(st)
	return st
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
	var bytes float64
	var age *float64
	err := p.replica.SQL().QueryRowContext(ctx, `SELECT
		COALESCE(pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn()), 0),
		EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8`, primaryLSN).Scan(&bytes, &age)
	if err != nil {
		st.Err = "lag: " + err.Error()
		return
	}
	st.LagBytes = max(0, int64(bytes))
	if st.LagBytes == 0 {
		return
	}
	if lag, ok := p.replayLag(ctx); ok {
		st.Lag = lag
		return
	}
	if age != nil && *age > 0 {
		st.Lag = time.Duration(*age * float64(time.Second))
	}
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
	was := p.last.Up
	p.last = st
	p.mu.Unlock()
	switch {
	case was && !st.Up:
		p.log.Warn("the read database (DATABASE_READ_URL) does not answer: the pages read the primary", "err", st.Err)
	case !was && st.Up:
		p.log.Info("the read database (DATABASE_READ_URL) answers again: the pages read it")
	}
}

// Close closes the read database's pool (the primary is its owner's).
func (p *ReadPool) Close() error {
	if p == nil || p.replica == nil {
		return nil
	}
	return p.replica.Close()
}
