// Package storetest gives each integration test a fresh, migrated database,
// on SQLite and on PostgreSQL, through one helper.
//
// PostgreSQL tests use TEST_DATABASE_URL (a database the tests may create
// schemas in). Without it they are skipped with a message, unless
// REQUIRE_POSTGRES=1, which turns a missing or unreachable PostgreSQL into a
// failure (CI sets it). Under -short (make test-quick) they are skipped
// whatever the environment says: the quick loop is SQLite only.
//
// KEEPDB=1 keeps the database of a test that failed (the SQLite file, or
// the PostgreSQL schema) and logs where it is, for inspection; databases
// of passing tests are removed as always.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

// Each runs fn as a subtest once per dialect, each with its own fresh
// migrated database.
func Each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			fn(t, New(t, d))
		})
	}
}

// URL returns a DATABASE_URL for a fresh empty database of the dialect that
// lives as long as the test (for tests that start the app as a process).
func URL(t testing.TB, d store.Dialect) string {
	t.Helper()
	switch d {
	case store.SQLite:
		return "sqlite:" + filepath.Join(sqliteDir(t), "kifpool.db")
	case store.Postgres:
		return postgresURL(t)
	}
	t.Fatalf("unknown dialect %q", d)
	return ""
}

// New opens and migrates a fresh database of dialect d, closed at the end
// of the test. On PostgreSQL every test has a schema of its own, so its
// migration locks that schema only (store.PerSchemaLock): tests migrating
// at once do not queue on goose's one lock.
func New(t testing.TB, d store.Dialect) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, URL(t, d), nil)
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() {
		// Logged, not failed: a close error says nothing about the code
		// under test (the test is over), but it should not pass unseen.
		if err := db.Close(); err != nil {
			t.Logf("close %s database: %v", d, err)
		}
	})
	if err := db.Migrate(ctx, nil, store.PerSchemaLock()); err != nil {
		t.Fatalf("migrate %s: %v", d, err)
	}
	return db
}

// KeepDB reports whether KEEPDB=1 asks to keep failing tests' databases.
func KeepDB() bool { return os.Getenv("KEEPDB") == "1" }

// keep reports whether the test's database stays after it: KEEPDB=1 and
// the test (or one of its subtests) failed.
func keep(t testing.TB) bool { return KeepDB() && t.Failed() }

// sqliteDir is a folder for the test's SQLite file: t.TempDir(), or with
// KEEPDB=1 a folder that outlives a failing test.
func sqliteDir(t testing.TB) string {
	t.Helper()
	if !KeepDB() {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "kifpool-test-db-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the database's own Close, so it runs after it.
	t.Cleanup(func() {
		if keep(t) {
			t.Logf("KEEPDB=1: kept the SQLite database of %s: %s", t.Name(), filepath.Join(dir, "kifpool.db"))
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

func postgresURL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("PostgreSQL tests skipped under -short (make test-quick); make test runs them")
	}
	base := os.Getenv("TEST_DATABASE_URL")
	required := os.Getenv("REQUIRE_POSTGRES") == "1"
	if base == "" {
		if required {
			t.Fatal("REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set")
		}
		t.Skip("PostgreSQL tests skipped: set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/kifpool_test?sslmode=disable)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	admin, err := store.Open(ctx, base, nil)
	if err != nil {
		if required {
			t.Fatalf("REQUIRE_POSTGRES=1 but PostgreSQL is unreachable: %v", err)
		}
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	defer admin.Close()
	// The migrations' database-wide objects, made once under a lock: each
	// schema migrates on a lock of its own, and two CREATE EXTENSIONs at
	// once collide (a duplicate key in pg_extension) on a fresh database.
	err = admin.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtext('kifpool storetest extensions'))`).Error; err != nil {
			return err
		}
		return tx.Exec(`CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public`).Error
	})
	if err != nil {
		t.Fatalf("database-wide extensions: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if err := admin.Gorm.WithContext(ctx).Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if keep(t) {
			t.Logf("KEEPDB=1: kept the PostgreSQL schema of %s: schema %s in %s (psql \"%s\" -c 'SET search_path = %s')",
				t.Name(), schema, redact(base), redact(base), schema)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a, err := store.Open(ctx, base, nil)
		if err != nil {
			return
		}
		defer a.Close()
		a.Gorm.WithContext(ctx).Exec("DROP SCHEMA " + schema + " CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	// Its sessions carry the schema's name, so that a test can find its
	// own backends in pg_stat_activity (application_name =
	// current_setting('application_name')) and end only those,
	// never another package's running on the same database.
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return fmt.Sprint(u)
}

// redact drops a password from a database URL before it is logged.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "TEST_DATABASE_URL"
	}
	return u.Redacted()
}

// Count runs a query that answers one number (a COUNT, a balance).
func Count(t testing.TB, db *store.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(sql, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Rows is how many rows each of tables holds: a snapshot for tests that
// check a refused request wrote nothing anywhere, whatever table it could
// have written.
func Rows(t testing.TB, db *store.DB, tables ...string) map[string]int64 {
	t.Helper()
	out := make(map[string]int64, len(tables))
	for _, table := range tables {
		var n int64
		if err := db.Gorm.Table(table).Count(&n).Error; err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

// UnapplyLatest forgets that the latest migration was applied (its row in
// goose's version table), as if this build's newest migration were
// pending; the returned function records it applied again.
func UnapplyLatest(t testing.TB, db *store.DB) (reapply func()) {
	t.Helper()
	var latest int64
	if err := db.Gorm.Raw(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&latest).Error; err != nil {
		t.Fatalf("latest migration: %v", err)
	}
	if err := db.Gorm.Exec(`DELETE FROM goose_db_version WHERE version_id = ?`, latest).Error; err != nil {
		t.Fatalf("unapply migration %d: %v", latest, err)
	}
	return func() {
		t.Helper()
		if err := db.Gorm.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, true)`, latest).Error; err != nil {
			t.Fatalf("reapply migration %d: %v", latest, err)
		}
	}
}
