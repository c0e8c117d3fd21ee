package apptest

import (
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// CheckInvariants asserts the promises of ARCHITECTURE §2 over the whole
// database (see storetest.CheckInvariants).
func CheckInvariants(t testing.TB, db *store.DB) {
	t.Helper()
	storetest.CheckInvariants(t, db)
}

// Count runs a COUNT query.
func Count(t testing.TB, db *store.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(sql, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
