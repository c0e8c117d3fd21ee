package store_test

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3/lock"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/migrations"
)

// Migrations on PostgreSQL take an advisory lock. Production (migrate,
// serve) locks goose's one id, so instances starting together — of any
// version — migrate once; the tests' databases (a schema each) lock their
// own schema's id and do not queue behind each other.
func TestMigrationLocks(t *testing.T) {
	ctx := context.Background()
	fresh := func(t *testing.T) (*store.DB, string) {
		t.Helper()
		url := storetest.URL(t, store.Postgres)
		return open(t, url), url
	}
	// hold takes the advisory lock id on a connection of its own until the
	// returned function releases it.
	hold := func(t *testing.T, db *store.DB, id int64) func() {
		t.Helper()
		conn, err := db.SQL().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// pg_try_advisory_lock, polled: a blocking pg_advisory_lock would
		// queue, and other tests' migrations holding goose's lock briefly
		// could make the queue a deadlock.
		testwait.Eventually(t, time.Minute, fmt.Sprintf("advisory lock %d, held by someone else", id), func() bool {
			var got bool
			if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&got); err != nil {
				t.Fatal(err)
			}
			return got
		})
		var once sync.Once
		release := func() {
			once.Do(func() {
				_, _ = conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, id)
				_ = conn.Close()
			})
		}
		t.Cleanup(release)
		return release
	}
	migrated := func(t *testing.T, db *store.DB) bool {
		t.Helper()
		var n int64
		if err := db.Gorm.Raw(`SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'topups'`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	// waitsFor checks that migrate cannot run while the lock is held
	// (it gives up at a short deadline), and runs once it is released.
	waitsFor := func(t *testing.T, db *store.DB, release func(), opts ...store.MigrateOption) {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
		defer cancel()
		if err := db.Migrate(short, nil, opts...); err == nil {
			t.Fatal("migrated while another holder had the lock")
		}
		if migrated(t, db) {
			t.Fatal("a migration ran without the lock")
		}
		release()
		if err := db.Migrate(ctx, nil, opts...); err != nil {
			t.Fatalf("migrate after the lock was released: %v", err)
		}
		if !migrated(t, db) {
			t.Fatal("not migrated")
		}
	}

	t.Run("production locks goose's id", func(t *testing.T) {
		db, _ := fresh(t)
		waitsFor(t, db, hold(t, db, lock.DefaultLockID))
	})
	t.Run("tests lock their own schema", func(t *testing.T) {
		db, _ := fresh(t)
		id, err := db.SchemaLockID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		other, _ := fresh(t)
		otherID, err := other.SchemaLockID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if id == lock.DefaultLockID || id == otherID {
			t.Fatalf("schema lock ids %d and %d (goose's is %d)", id, otherID, lock.DefaultLockID)
		}
		// Goose's lock and another schema's lock are held: no wait.
		hold(t, db, lock.DefaultLockID)
		hold(t, other, otherID)
		bounded, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := db.Migrate(bounded, nil, store.PerSchemaLock()); err != nil {
			t.Fatalf("migrate while other locks are held: %v", err)
		}
		// Its own schema's lock is waited for.
		third, _ := fresh(t)
		thirdID, err := third.SchemaLockID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitsFor(t, third, hold(t, third, thirdID), store.PerSchemaLock())
	})
	for _, tc := range []struct {
		name string
		opts []store.MigrateOption
	}{
		{"production", nil},
		{"per schema", []store.MigrateOption{store.PerSchemaLock()}},
	} {
		t.Run("instances starting together migrate once/"+tc.name, func(t *testing.T) {
			_, url := fresh(t)
			const n = 3
			dbs := make([]*store.DB, n)
			for i := range dbs {
				dbs[i] = open(t, url)
			}
			errs := make(chan error, n)
			var start sync.WaitGroup
			start.Add(1)
			for _, db := range dbs {
				go func() {
					start.Wait()
					errs <- db.Migrate(ctx, nil, tc.opts...)
				}()
			}
			start.Done()
			for range n {
				if err := <-errs; err != nil {
					t.Errorf("migrate: %v", err)
				}
			}
			files, err := fs.Glob(must(migrations.FS("postgres")), "*.sql")
			if err != nil {
				t.Fatal(err)
			}
			var rows, versions int64
			if err := dbs[0].Gorm.Raw(`SELECT COUNT(*), COUNT(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Row().Scan(&rows, &versions); err != nil {
				t.Fatal(err)
			}
			if rows != int64(len(files)) || versions != int64(len(files)) {
				t.Errorf("goose_db_version: %d rows of %d versions, want each of the %d migrations once", rows, versions, len(files))
			}
		})
	}
}

func open(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
