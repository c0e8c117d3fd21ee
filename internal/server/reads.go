package server

import (
	"context"
	"fmt"

	"github.com/kifpool/kifpool/internal/store"
)

// newReadPool opens the pages' read database (DATABASE_READ_URL) beside
// the primary and checks it once: a replica down at start sends the reads
// to the primary until a check finds it answering (the "read replica"
// loop). Without DATABASE_READ_URL every read is on the primary.
func newReadPool(b base) (*store.ReadPool, error) {
	if b.cfg.DatabaseReadURL == "" {
		return store.NewReadPool(b.db, nil, nil), nil
	}
	rdb, err := store.OpenReplica(b.cfg.DatabaseReadURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	if err := rdb.SetPoolSize(b.cfg.DatabaseMaxConns); err != nil {
		_ = rdb.Close() // the pool's error is the one to report
		return nil, fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	pool := store.NewReadPool(b.db, rdb, b.log("reads")).WithMaxLag(b.cfg.DatabaseReadMaxLag)
	pool.Check(context.Background(), b.now()) // down: logged, reads on the primary
	return pool, nil
}

// checkReads is one round of the "read replica" loop: where the pages
// read from until the next one (the pool logs a change).
func (s *Server) checkReads(ctx context.Context) { s.Reads.Check(ctx, s.Clock.Now()) }

// Close closes what the server opened itself: the read database's pool
// (the primary is its caller's).
func (s *Server) Close() error { return s.Reads.Close() }
