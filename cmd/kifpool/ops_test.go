package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/integrity"
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

// promSample is one sample line of a Prometheus text file.
type promSample struct {
	name, labels string
	value        float64
}

// parseProm reads a Prometheus text file the way node_exporter's
// textfile collector needs it: every sample's family has its HELP and
// TYPE before it, each sample is `name{labels} value`, and the file ends
// with a newline.
func parseProm(t *testing.T, text string) map[string]promSample {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("metrics file does not end with a newline:\n%s", text)
	}
	help, typ := map[string]bool{}, map[string]bool{}
	samples := map[string]promSample{}
	line := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-z_]+="[^"\\]*"\})? (\S+)$`)
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && f[0] == "#" && f[1] == "HELP" {
			help[f[2]] = true
			continue
		}
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			if f[3] != "gauge" {
				t.Errorf("%s: type %s, want gauge", f[2], f[3])
			}
			typ[f[2]] = true
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a sample line: %q", l)
		}
		if !help[m[1]] || !typ[m[1]] {
			t.Errorf("%s has no HELP and TYPE before it", m[1])
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if _, dup := samples[m[1]+m[2]]; dup {
			t.Errorf("%s%s twice", m[1], m[2])
		}
		samples[m[1]+m[2]] = promSample{m[1], m[2], v}
	}
	return samples
}

// kifpool check --metrics-file writes the run's outcome for node_exporter
// atomically, broken rules or not (the check's output and exit status as
// without it); a run that does not reach its end leaves the file as it
// was, so that its timestamp goes stale; a missing directory is refused
// before anything runs.
func TestCheckMetricsFile(t *testing.T) {
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
			prom := filepath.Join(t.TempDir(), "kifpool_check.prom")
			read := func() map[string]promSample {
				t.Helper()
				b, err := os.ReadFile(prom) // #nosec G304 -- the test's own file
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(prom + ".tmp"); err == nil {
					t.Error(prom + ".tmp left behind")
				}
				return parseProm(t, string(b))
			}
			rules := integrity.Rules()

			// A healthy database: every rule at 0.
			out.Reset()
			before := time.Now().Unix()
			if err := run(ctx, []string{"check", "--metrics-file", prom}, envOf(env), strings.NewReader(""), &out, log); err != nil {
				t.Fatalf("check of a healthy database: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "all rules hold") {
				t.Errorf("output:\n%s", out.String())
			}
			fi, err := os.Stat(prom)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm()&0o044 != 0o044 {
				t.Errorf("metrics file mode %v: node_exporter cannot read it", fi.Mode())
			}
			s := read()
			if ts := s["kifpool_check_last_run_timestamp_seconds"].value; ts < float64(before) || ts > float64(time.Now().Unix()) {
				t.Errorf("last run timestamp %v, want between %d and now", ts, before)
			}
			if v, ok := s["kifpool_check_broken_rules"]; !ok || v.value != 0 {
				t.Errorf("broken rules %v (%v), want 0", v.value, ok)
			}
			if v, ok := s["kifpool_check_duration_seconds"]; !ok || v.value < 0 {
				t.Errorf("duration %v (%v)", v.value, ok)
			}
			for _, r := range rules {
				if v, ok := s[`kifpool_check_violations{rule="`+r.Name+`"}`]; !ok || v.value != 0 {
					t.Errorf("violations of %s: %v (%v), want 0", r.Name, v.value, ok)
				}
			}
			if len(s) != 3+len(rules) {
				t.Errorf("%d samples, want %d", len(s), 3+len(rules))
			}

			// A file it cannot write (a non-empty directory in its
			// place) fails a run whose rules hold, and leaves no .tmp.
			blocked := filepath.Join(t.TempDir(), "blocked.prom")
			if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			err = run(ctx, []string{"check", "--metrics-file", blocked}, envOf(env), strings.NewReader(""), &out, log)
			if err == nil || !strings.Contains(err.Error(), "metrics file") || !strings.Contains(out.String(), "all rules hold") {
				t.Errorf("check with an unwritable metrics file: %v\n%s", err, out.String())
			}
			if _, err := os.Stat(blocked + ".tmp"); err == nil {
				t.Error(blocked + ".tmp left behind")
			}

			// Two wallets' balances moved without postings: one rule
			// broken, two rows; the exit status and output as without
			// the file.
			if err := run(ctx, []string{"user", "create", "--email", "omid@example.com"}, envOf(env), strings.NewReader("a long enough password\n"), &out, log); err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(ctx, env["DATABASE_URL"], nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Gorm.Exec(`UPDATE ledger_accounts SET posted_rials = 5000 WHERE kind = 'wallet'`).Error; err != nil {
				t.Fatal(err)
			}
			out.Reset()
			err = run(ctx, []string{"check", "--metrics-file", prom}, envOf(env), strings.NewReader(""), &out, log)
			if err == nil || !strings.Contains(err.Error(), "1 rules broken") {
				t.Fatalf("check of a broken database: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "FAIL  account_posted_equals_postings") {
				t.Errorf("output:\n%s", out.String())
			}
			s = read()
			if v := s["kifpool_check_broken_rules"]; v.value != 1 {
				t.Errorf("broken rules %v, want 1", v.value)
			}
			for _, r := range rules {
				want := 0.0
				if r.Name == "account_posted_equals_postings" {
					want = 2
				}
				if v, ok := s[`kifpool_check_violations{rule="`+r.Name+`"}`]; !ok || v.value != want {
					t.Errorf("violations of %s: %v (%v), want %v", r.Name, v.value, ok, want)
				}
			}

			// A run that stops before its end (a schema behind this
			// build) leaves the file untouched.
			const old = "# the previous run's file\n"
			if err := os.WriteFile(prom, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := db.Gorm.Exec(`DELETE FROM goose_db_version WHERE version_id = (SELECT MAX(version_id) FROM goose_db_version)`).Error; err != nil {
				t.Fatal(err)
			}
			if err := run(ctx, []string{"check", "--metrics-file", prom}, envOf(env), strings.NewReader(""), &out, log); err == nil || !strings.Contains(err.Error(), "run kifpool migrate") {
				t.Fatalf("check of an old schema: %v", err)
			}
			if b, err := os.ReadFile(prom); err != nil || string(b) != old { // #nosec G304 -- the test's own file
				t.Errorf("a failed run changed the metrics file: %q, %v", b, err)
			}
		})
	}

	// A database out of reach: nothing written.
	dir := t.TempDir()
	prom := filepath.Join(dir, "kifpool_check.prom")
	const old = "# the previous run's file\n"
	if err := os.WriteFile(prom, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "nothing.db"), "DATA_DIR": dir}
	if err := run(context.Background(), []string{"check", "--metrics-file", prom}, envOf(env), strings.NewReader(""), &bytes.Buffer{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("check of a missing database passed")
	}
	if b, err := os.ReadFile(prom); err != nil || string(b) != old { // #nosec G304 -- the test's own file
		t.Errorf("a failed run changed the metrics file: %q, %v", b, err)
	}

	// A directory that does not exist: refused before the database is
	// opened (the database here is missing too, and is not the error).
	err := run(context.Background(), []string{"check", "--metrics-file", filepath.Join(dir, "no-such-dir", "kifpool_check.prom")}, envOf(env),
		strings.NewReader(""), &bytes.Buffer{}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--metrics-file") || !strings.Contains(err.Error(), "no-such-dir") {
		t.Fatalf("a missing metrics directory: %v", err)
	}
}
