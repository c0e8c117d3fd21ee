package store_test

import (
	"context"
	"database/sql"
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

func TestParseLSN(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0/0", 0, true},
		{"0/16B3748", 0x16B3748, true},
		{"1/0", 1 << 32, true},
		{"FF/FFFFFFFF", 0xFF<<32 | 0xFFFFFFFF, true},
		{"16B3748", 0, false},
		{"0/XYZ", 0, false},
		{"1/100000000", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := store.ParseLSN(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseLSN(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// The staleness bound: how long ago the primary had written WAL the
// replica has still not replayed, as the checks saw it. A primary that
// wrote nothing new for an hour does not make a caught-up replica stale
// (the newest replayed transaction's age would); a stuck replay grows it
// check after check (replay_lag would not).
func TestReplicaStaleness(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var w store.WALSamples
	steps := []struct {
		sec               int
		written, replayed uint64
		want              time.Duration
	}{
		{0, 100, 100, 0},                // caught up
		{5, 200, 150, 0},                // behind, first seen now
		{10, 300, 150, 5 * time.Second}, // still not at 200 (written at 5 s)
		{15, 300, 250, 5 * time.Second}, // 200 replayed; 300 was seen at 10 s
		{20, 300, 300, 0},               // caught up: forgotten
		{3620, 300, 300, 0},             // an hour without writes: not stale
		{3625, 400, 300, 0},             // WAL just written
		{3660, 500, 300, 35 * time.Second},
	}
	for _, s := range steps {
		if got := w.Stale(at(s.sec), s.written, s.replayed); got != s.want {
			t.Errorf("at %d s (written %d, replayed %d): stale %v, want %v", s.sec, s.written, s.replayed, got, s.want)
		}
	}
	// Bounded memory, the bound kept: 1,000 checks of a stuck replica.
	var stuck store.WALSamples
	for i := range 1000 {
		stuck.Stale(at(i), uint64(1000+i), 10)
	}
	if got := stuck.Stale(at(1000), 5000, 10); got != 1000*time.Second {
		t.Errorf("stuck for 1,000 checks: stale %v, want 1000s", got)
	}
}

// A read database back after it was down (a restart) ended the
// connections the pool kept from before: the check that finds it back
// drops them, so that no page's read fails on one.
func TestReadPoolBackAfterDownReadsOnNewConnections(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	snap := storetest.SnapshotReplica(t, db)
	ctx := context.Background()
	rdb, err := store.OpenReplica(snap.URL)
	if err != nil {
		t.Fatal(err)
	}
	pool := store.NewReadPool(db, rdb, nil)
	defer pool.Close()
	if st := pool.Check(ctx, time.Now()); !st.Up {
		t.Fatalf("first check: %+v", st)
	}
	// Three connections in the read pool, held at once so that they are
	// three, then back in it, idle.
	conns := make([]*sql.Conn, 3)
	hold := func() {
		t.Helper()
		for i := range conns {
			if conns[i], err = rdb.SQL().Conn(ctx); err != nil {
				t.Fatal(err)
			}
			if err := conns[i].PingContext(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range conns {
			_ = c.Close()
		}
	}
	hold()
	snap.Stop() // refuses logins and ends the role's connections
	if st := pool.Check(ctx, time.Now()); st.Up {
		t.Fatalf("check with the replica down: %+v, want down", st)
	}
	if pool.DB() != db {
		t.Fatal("reads not on the primary while the replica is down")
	}
	snap.Start()
	if st := pool.Check(ctx, time.Now()); !st.Up || st.Err != "" {
		t.Fatalf("check with the replica back: %+v, want up", st)
	}
	if pool.DB() != rdb {
		t.Fatal("reads not on the read database once it is back")
	}
	// As many reads as the pool had connections, one after another: each
	// would take an idle connection from before if any were left.
	reads := func(when string) {
		t.Helper()
		for i := range len(conns) + 1 {
			var n int
			if err := pool.DB().SQL().QueryRowContext(ctx, `SELECT 1`).Scan(&n); err != nil {
				t.Fatalf("read %d on the read database %s: %v", i, when, err)
			}
		}
	}
	reads("back")

	// Restarted between two checks, never seen down: the next check
	// finds its dead connections and still calls it up.
	hold()
	snap.Stop()
	snap.Start()
	if st := pool.Check(ctx, time.Now()); !st.Up || st.Err != "" {
		t.Fatalf("check after a restart no check saw: %+v, want up", st)
	}
	reads("after a restart no check saw")
}
