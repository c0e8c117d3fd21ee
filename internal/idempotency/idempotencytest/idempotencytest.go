// Package idempotencytest reads and writes the API's idempotency records
// for tests above the store: the records a test's requests left, a record
// aged past its time to live, a request that died before it answered.
// Tests use these typed helpers, never SQL, so that a change of the table
// touches idempotency and this package only. Each helper fails the test on
// a database error.
package idempotencytest

import (
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/store"
)

// Records is every idempotency record, oldest first.
func Records(t testing.TB, db *store.DB) []idempotency.Record {
	t.Helper()
	var out []idempotency.Record
	if err := db.Gorm.Order("id").Find(&out).Error; err != nil {
		t.Fatalf("read idempotency records: %v", err)
	}
	return out
}

// Count is how many idempotency records hold key (every record with "").
func Count(t testing.TB, db *store.DB, key string) int64 {
	t.Helper()
	var n int64
	for _, r := range Records(t, db) {
		if key == "" || r.IdempotencyKey == key {
			n++
		}
	}
	return n
}

// Age sets when the records of key were made (in the past: a record past
// its time to live).
func Age(t testing.TB, db *store.DB, key string, createdAt time.Time) {
	t.Helper()
	set(t, db, key, map[string]any{"created_at": createdAt.UTC()})
}

// Crash makes the records of key look like a request that died before it
// answered: no answer, not finished, its lease over at leaseEnd.
func Crash(t testing.TB, db *store.DB, key string, leaseEnd time.Time) {
	t.Helper()
	set(t, db, key, map[string]any{"response_status": nil, "response_body": nil, "finished_at": nil, "locked_until": leaseEnd.UTC()})
}

func set(t testing.TB, db *store.DB, key string, cols map[string]any) {
	t.Helper()
	if err := db.Gorm.Model(&idempotency.Record{}).Where("idempotency_key = ?", key).Updates(cols).Error; err != nil {
		t.Fatalf("write idempotency record %q: %v", key, err)
	}
}
