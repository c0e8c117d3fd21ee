package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/kifpool/kifpool/internal/store"
)

// newReadPool opens the pages' read database (DATABASE_READ_URL) beside
// the primary and checks it once: a replica down at start sends the reads
// to the primary until a check finds it answering (the "read replica"
// loop). Without DATABASE_READ_URL every read is on the primary.
func newReadPool(b base) (*store.ReadPool, error) {
	if b.cfg.DatabaseReadURL == "" {
		return store.NewReadPool(b.db, nil), nil
	}
	rdb, err := store.OpenReplica(b.cfg.DatabaseReadURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	if err := rdb.SetPoolSize(b.cfg.DatabaseMaxConns); err != nil {
		_ = rdb.Close() // the pool's error is the one to report
		return nil, fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	pool := store.NewReadPool(b.db, rdb)
	if st := pool.Check(context.Background(), b.now()); !st.Up {
		b.log("reads").Warn("the read database (DATABASE_READ_URL) does not answer: the pages read the primary until it does", "err", st.Err)
	}
	return pool, nil
}

// checkReads is one round of the "read replica" loop: where the pages
// read from until the next one, and a log line when that changes.
func (s *Server) checkReads(log *slog.Logger) func(context.Context) {
	return func(ctx context.Context) {
		before := s.Reads.Status().Up
		st := s.Reads.Check(ctx, s.Clock.Now())
		switch {
		case before && !st.Up && ctx.Err() == nil:
			log.Warn("the read database (DATABASE_READ_URL) does not answer: the pages read the primary", "err", st.Err)
		case !before && st.Up:
			log.Info("the read database (DATABASE_READ_URL) answers again: the pages read it")
		}
	}
}

// Close closes what the server opened itself: the read database's pool
// (the primary is its caller's).
func (s *Server) Close() error { return s.Reads.Close() }
