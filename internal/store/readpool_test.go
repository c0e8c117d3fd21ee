package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Without a read database every read is the primary's, and there is
// nothing to check.
func TestReadPoolWithoutReplica(t *testing.T) {
	db := storetest.New(t, store.SQLite)
	pool := store.NewReadPool(db, nil, nil)
	if pool.DB() != db {
		t.Fatal("reads without a replica: not on the primary")
	}
	if st := pool.Check(context.Background(), time.Now()); st.Configured || pool.Status().Configured {
		t.Fatalf("check without a replica: %+v", st)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
}

// OpenReplica takes PostgreSQL only; a replica that does not answer at
// start is opened all the same, and the first check sends the reads to
// the primary.
func TestReadPoolFallsBackWhenTheReplicaIsDown(t *testing.T) {
	if _, err := store.OpenReplica("sqlite:./replica.db"); err == nil {
		t.Fatal("an SQLite read database was opened")
	}
	db := storetest.New(t, store.SQLite)
	down, err := store.OpenReplica("postgres://nobody@127.0.0.1:1/kifpool?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatalf("a replica down at start: %v", err)
	}
	pool := store.NewReadPool(db, down, nil)
	defer pool.Close()
	if pool.DB() != down {
		t.Fatal("before the first check: not on the replica")
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	st := pool.Check(context.Background(), now)
	if !st.Configured || st.Up || st.Err == "" || !st.CheckedAt.Equal(now) {
		t.Fatalf("check of a replica that does not answer: %+v", st)
	}
	if pool.DB() != db {
		t.Fatal("the replica down: reads not on the primary")
	}
}

// A second PostgreSQL connection string as the read database: it answers,
// is not a standby (no lag), takes the reads, and refuses writes (its
// sessions are read-only).
func TestReadPoolOnASecondConnection(t *testing.T) {
	url := storetest.URL(t, store.Postgres)
	ctx := context.Background()
	db, err := store.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx, nil, store.PerSchemaLock()); err != nil {
		t.Fatal(err)
	}
	rdb, err := store.OpenReplica(url)
	if err != nil {
		t.Fatal(err)
	}
	pool := store.NewReadPool(db, rdb, nil)
	defer pool.Close()
	st := pool.Check(ctx, time.Now())
	if !st.Up || st.Standby || st.Lag != 0 || st.LagBytes != 0 || st.Err != "" {
		t.Fatalf("check: %+v", st)
	}
	if pool.DB() != rdb {
		t.Fatal("reads not on the read database")
	}
	err = rdb.Gorm.WithContext(ctx).Exec(`CREATE TABLE written_on_the_replica (id int)`).Error
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a write on the read database: %v, want a read-only refusal", err)
	}
}
