package store

import (
	"context"
	"time"
)

// SchemaLockID exposes PerSchemaLock's advisory lock id to the tests.
func (db *DB) SchemaLockID(ctx context.Context) (int64, error) { return db.schemaLockID(ctx) }

// ParseLSN exposes parseLSN to the tests.
func ParseLSN(s string) (uint64, bool) { return parseLSN(s) }

// WALSamples exposes the replica's staleness bound to the tests.
type WALSamples struct{ w walSamples }

// Stale is walSamples.stale.
func (w *WALSamples) Stale(now time.Time, written, replayed uint64) time.Duration {
	return w.w.stale(now, written, replayed)
}

// WithoutJIT exposes withoutJIT to the tests.
func WithoutJIT(dsn string) string { return withoutJIT(dsn) }
