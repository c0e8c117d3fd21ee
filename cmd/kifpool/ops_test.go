package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// kifpool check on both databases: a healthy database passes; a broken
// one fails, naming the row; a database behind this build's migrations is
// refused (check judges the schema it knows and never migrates).
func TestCheckCommand(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"DATABASE_URL": storetest.URL(t, d), "DATA_DIR": dir}
			log := slog.New(slog.DiscardHandler)
			ctx := context.Background()
			var out bytes.Buffer
			if err := run(ctx, []string{"user", "create", "--email", "sara@example.com"}, envOf(env), strings.NewReader("a long enough password\n"), &out, log); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			if err := run(ctx, []string{"check"}, envOf(env), strings.NewReader(""), &out, log); err != nil {
				t.Fatalf("check of a healthy database: %v\n%s", err, out.String())
			}
			for _, want := range []string{"ok    account_posted_equals_postings", "ok    credited_verify_on_record", "ok    none_open_past_deadline", "all rules hold"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			db, err := store.Open(ctx, env["DATABASE_URL"], nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Gorm.Exec(`UPDATE ledger_accounts SET posted_rials = 5000 WHERE kind = 'wallet'`).Error; err != nil {
				t.Fatal(err)
			}
			var id int64
			db.Gorm.Raw(`SELECT id FROM wallets`).Scan(&id)
			// The balance moved without its postings: named by the
			// account's code, the wallet's id in it.
			out.Reset()
			err = run(ctx, []string{"check"}, envOf(env), strings.NewReader(""), &out, log)
			if err == nil || !strings.Contains(err.Error(), "1 rules broken") {
				t.Fatalf("check of a broken database: %v\n%s", err, out.String())
			}
			if want := "account wallet:" + strconv.FormatInt(id, 10) + ": posted 5000 rials, postings sum to 0 rials"; !strings.Contains(out.String(), want) {
				t.Errorf("output does not name %q:\n%s", want, out.String())
			}
			if !strings.Contains(out.String(), "FAIL  account_posted_equals_postings") {
				t.Errorf("output does not name the rule:\n%s", out.String())
			}
			// Behind this build's migrations: refused, and nothing migrated.
			if err := db.Gorm.Exec(`DELETE FROM goose_db_version WHERE version_id = (SELECT MAX(version_id) FROM goose_db_version)`).Error; err != nil {
				t.Fatal(err)
			}
			err = run(ctx, []string{"check"}, envOf(env), strings.NewReader(""), &out, log)
			if err == nil || !strings.Contains(err.Error(), "run kifpool migrate") {
				t.Fatalf("check of an old schema: %v", err)
			}
		})
	}
	// A missing SQLite file is an error, not a new empty database.
	dir := t.TempDir()
	missing := filepath.Join(dir, "nothing.db")
	err := run(context.Background(), []string{"check"}, envOf(map[string]string{"DATABASE_URL": "sqlite:" + missing, "DATA_DIR": dir}),
		strings.NewReader(""), &bytes.Buffer{}, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("check of a missing file passed")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("check created the database file")
	}
}

// kifpool backup copies the SQLite database while writers go on; the copy
// is a complete database that passes check; an existing file is never
// overwritten; PostgreSQL is refused with the pg_dump pointer.
func TestBackupCommand(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"user", "create", "--email", "sara@example.com"}, envOf(env), strings.NewReader("a long enough password\n"), &out, log); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A writer runs through the backup (as serve would): it never waits
	// longer than its busy timeout, and the backup holds what was
	// committed before it started.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes int
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Gorm.Exec(`INSERT INTO sessions (token_hash, user_id, created_at, expires_at) SELECT ?, id, ?, ? FROM users`,
				"t"+strconv.Itoa(writes), time.Now().UTC(), time.Now().Add(time.Hour).UTC()).Error; err != nil {
				writeErr = err
				return
			}
			writes++
		}
	}()
	backup := filepath.Join(dir, "backups", "k-backup.db")
	if err := os.MkdirAll(filepath.Dir(backup), 0o700); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // real time: let the writer be mid-stream when the backup starts
	out.Reset()
	if err := run(ctx, []string{"backup", "--to", backup}, envOf(env), strings.NewReader(""), &out, log); err != nil {
		t.Fatalf("backup: %v", err)
	}
	close(stop)
	wg.Wait()
	if writeErr != nil || writes == 0 {
		t.Fatalf("the writer beside the backup: %d writes, %v", writes, writeErr)
	}
	if !strings.Contains(out.String(), "written to "+backup) {
		t.Errorf("output %q", out.String())
	}
	fi, err := os.Stat(backup)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", fi, err)
	}
	if _, err := os.Stat(backup + ".partial"); err == nil {
		t.Fatal("the partial file is left behind")
	}
	benv := map[string]string{"DATABASE_URL": "sqlite:" + backup, "DATA_DIR": dir}
	out.Reset()
	if err := run(ctx, []string{"check"}, envOf(benv), strings.NewReader(""), &out, log); err != nil {
		t.Fatalf("check of the backup: %v\n%s", err, out.String())
	}
	bdb, err := store.Open(ctx, benv["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	var users int64
	bdb.Gorm.Raw(`SELECT COUNT(*) FROM users WHERE email = 'sara@example.com'`).Scan(&users)
	bdb.Close()
	if users != 1 {
		t.Fatalf("the backup holds %d of the user", users)
	}
	// Never over an existing file.
	if err := run(ctx, []string{"backup", "--to", backup}, envOf(env), strings.NewReader(""), &out, log); err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Fatalf("backup over an existing file: %v", err)
	}
	if err := run(ctx, []string{"backup"}, envOf(env), strings.NewReader(""), &out, log); err == nil || !strings.Contains(err.Error(), "--to") {
		t.Fatalf("backup without --to: %v", err)
	}
	pg := map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/x", "DATA_DIR": dir}
	if err := run(ctx, []string{"backup", "--to", filepath.Join(dir, "pg.db")}, envOf(pg), strings.NewReader(""), &out, log); err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("backup of PostgreSQL: %v", err)
	}
}
