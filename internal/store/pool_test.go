package store_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// PostgreSQL's pool keeps as many idle connections as it may open (no
// connection churn under load) and DATABASE_MAX_CONNS resizes it; SQLite
// keeps its own small pool whatever is asked.
func TestPoolSize(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		sqlDB := db.SQL()
		want := store.DefaultPoolSize()
		if db.Dialect == store.SQLite {
			want = 4
		}
		if got := sqlDB.Stats().MaxOpenConnections; got != want {
			t.Fatalf("max open %d, want %d", got, want)
		}
		if err := db.SetPoolSize(13); err != nil {
			t.Fatal(err)
		}
		if db.Dialect == store.Postgres {
			want = 13
		}
		if got := sqlDB.Stats().MaxOpenConnections; got != want {
			t.Fatalf("after SetPoolSize(13): max open %d, want %d", got, want)
		}
		if store.DefaultPoolSize() < 8 {
			t.Fatalf("default pool %d, want at least 8", store.DefaultPoolSize())
		}
	})
}
