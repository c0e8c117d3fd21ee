package store_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// PostgreSQL's pool keeps as many idle connections as it may open (no
// connection churn under load: a burst's connections are reused by the
// next) and DATABASE_MAX_CONNS resizes it; SQLite keeps its own small pool
// whatever is asked.
func TestPoolSize(t *testing.T) {
	if n := store.DefaultPoolSize(); n < 8 || n > 20 {
		t.Fatalf("default pool %d, want 8..20", n)
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		sqlDB := db.SQL()
		want := store.DefaultPoolSize()
		if db.Dialect == store.SQLite {
			want = 4
		}
		if got := sqlDB.Stats().MaxOpenConnections; got != want {
			t.Fatalf("max open %d, want %d", got, want)
		}
		if err := db.SetPoolSize(6); err != nil {
			t.Fatal(err)
		}
		if db.Dialect == store.Postgres {
			want = 6
		}
		if got := sqlDB.Stats().MaxOpenConnections; got != want {
			t.Fatalf("after SetPoolSize(6): max open %d, want %d", got, want)
		}
		// A burst that uses every connection leaves them all idle, ready.
		ctx := context.Background()
		var conns []*sql.Conn
		for range want {
			c, err := sqlDB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if db.Dialect == store.Postgres {
			if st := sqlDB.Stats(); st.Idle != want || st.MaxIdleClosed != 0 {
				t.Fatalf("after a burst of %d: %d idle, %d closed for the idle limit; want all %d kept", want, st.Idle, st.MaxIdleClosed, want)
			}
		}
	})
}
