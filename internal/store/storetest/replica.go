package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// Snapshot is a stand-in for a read replica of a PostgreSQL test database
// (SnapshotReplica): a schema of its own holding a copy of every table of
// the test's schema, read by a role that may only SELECT it. Pages that
// read it show the data as of the last Refresh; a write sent to it fails.
type Snapshot struct {
	// URL is the snapshot's connection string (DATABASE_READ_URL);
	// PrimaryURL the test schema's own (DATABASE_URL).
	URL, PrimaryURL string

	t      testing.TB
	db     *store.DB
	role   string
	schema string
	source string
	tables []string
}

// SnapshotReplica copies db's schema (a PostgreSQL test database of New)
// into a new schema that a new login role may only read, and returns it:
// its URL for DATABASE_READ_URL, the primary's for DATABASE_URL. Both go
// when the test ends.
func SnapshotReplica(t testing.TB, db *store.DB) *Snapshot {
	t.Helper()
	if db.Dialect != store.Postgres {
		t.Fatal("SnapshotReplica needs a PostgreSQL test database")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b [4]byte
	_, _ = rand.Read(b[:])
	s := &Snapshot{t: t, db: db}
	if err := db.SQL().QueryRowContext(ctx, `SELECT current_schema()`).Scan(&s.source); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	s.schema = s.source + "_r" + hex.EncodeToString(b[:])
	s.role = "reader_" + s.schema
	rows, err := db.SQL().QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`, s.source)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		s.tables = append(s.tables, name)
	}
	if err := rows.Close(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	password := hex.EncodeToString(b[:]) + "-read-only"
	stmts := []string{
		`CREATE SCHEMA ` + s.schema,
		`CREATE ROLE ` + s.role + ` LOGIN PASSWORD '` + password + `'`,
		`GRANT USAGE ON SCHEMA ` + s.schema + ` TO ` + s.role,
	}
	for _, tb := range s.tables {
		// Indexes too, so that its plans are a replica's.
		stmts = append(stmts, `CREATE TABLE `+s.schema+`.`+tb+` (LIKE `+s.source+`.`+tb+` INCLUDING INDEXES)`)
	}
	stmts = append(stmts, `GRANT SELECT ON ALL TABLES IN SCHEMA `+s.schema+` TO `+s.role)
	for _, q := range stmts {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatalf("snapshot: %s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a, err := store.Open(ctx, os.Getenv("TEST_DATABASE_URL"), nil)
		if err != nil {
			return
		}
		defer a.Close()
		_, _ = a.SQL().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, s.role)
		_, _ = a.SQL().ExecContext(ctx, `DROP SCHEMA `+s.schema+` CASCADE`)
		_, _ = a.SQL().ExecContext(ctx, `DROP OWNED BY `+s.role)
		_, _ = a.SQL().ExecContext(ctx, `DROP ROLE `+s.role)
	})
	u, err := url.Parse(os.Getenv("TEST_DATABASE_URL"))
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", s.source)
	u.RawQuery = q.Encode()
	s.PrimaryURL = u.String()
	q.Set("search_path", s.schema)
	u.RawQuery = q.Encode()
	u.User = url.UserPassword(s.role, password)
	s.URL = u.String()
	s.Refresh()
	return s
}

// Refresh copies every table again: the snapshot "replays" the primary up
// to now.
func (s *Snapshot) Refresh() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := s.db.SQL().BeginTx(ctx, nil)
	if err != nil {
		s.t.Fatalf("snapshot refresh: %v", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, tb := range s.tables {
		for _, q := range []string{`TRUNCATE ` + s.schema + `.` + tb,
			`INSERT INTO ` + s.schema + `.` + tb + ` SELECT * FROM ` + s.source + `.` + tb} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				s.t.Fatalf("snapshot refresh: %s: %v", q, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		s.t.Fatalf("snapshot refresh: %v", err)
	}
}

// Stop makes the snapshot unreachable, as a replica that went down: its
// role may no longer log in, and its open sessions are ended. Start
// undoes it.
func (s *Snapshot) Stop() { s.setLogin(false) }

// Start lets the snapshot's role log in again.
func (s *Snapshot) Start() { s.setLogin(true) }

func (s *Snapshot) setLogin(on bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	login := "NOLOGIN"
	if on {
		login = "LOGIN"
	}
	if _, err := s.db.SQL().ExecContext(ctx, `ALTER ROLE `+s.role+` `+login); err != nil {
		s.t.Fatalf("snapshot %s: %v", login, err)
	}
	if !on {
		if _, err := s.db.SQL().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, s.role); err != nil {
			s.t.Fatalf("snapshot stop: %v", err)
		}
	}
}
