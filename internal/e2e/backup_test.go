package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// TestBackupRestoreDrill follows docs/operations.md's backup and restore
// on both databases, with real processes: serve runs on a standalone
// bank; a payment is credited and another is waiting at the bank when the
// backup is taken (SQLite: `kifpool backup` while serve runs; PostgreSQL:
// pg_dump -Fc). After the backup the waiting payment is paid at the bank
// (no callback), and a new payment is started and paid. The database is
// restored (SQLite: the file put in place; PostgreSQL: pg_restore into a
// new database), then: `kifpool check` passes; `kifpool reconcile` finds
// and credits the payment the bank settled after the backup, and reports
// the one the backup never saw as foreign (not ours to credit: its row is
// gone); `serve` starts on the restored database and is ready; the
// balances are what the bank took for the payments the database knows.
func TestBackupRestoreDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) { backupDrill(t, d) })
	}
}

func backupDrill(t *testing.T, d store.Dialect) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := kifpoolBinary(t)
	dir := t.TempDir()
	var dbURL string
	if d == store.SQLite {
		dbURL = "sqlite:" + filepath.Join(dir, "live.db")
	} else {
		needTool(t, "pg_dump", "postgresql-client")
		dbURL = storetest.URL(t, store.Postgres)
	}
	_, bankURL := startBank(t)
	bank := newBankClient(bankURL)
	extra := map[string]string{"WORKER_INTERVAL": "off"} // the live instance leaves the late payment alone
	live, liveURL := newServe(t, "serve-live", dbURL, bankURL, extra)
	if err := live.start(); err != nil {
		t.Fatal(err)
	}
	user := newBrowser(liveURL)
	if err := user.signUp(ctx, "backup@example.com"); err != nil {
		t.Fatal(err)
	}
	pay := func(tomans int64, callback bool) string {
		t.Helper()
		csrf, token, err := user.topUpForm(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Zarinpal: the drill's reconciliation finds the payment the
		// restored database never saw in Zarinpal's list of unverified
		// payments (Zibal has no such list, only a per-payment inquiry).
		r, err := user.submitTopUpAt(ctx, csrf, token, tomans, "zarinpal")
		if err != nil {
			t.Fatal(err)
		}
		authority := authorityOf(bankURL, r.location)
		if authority == "" {
			t.Fatalf("top-up: %d to %q", r.status, r.location)
		}
		if !callback {
			return authority
		}
		back, _, err := bank.finish(ctx, authority, "pay")
		if err != nil {
			t.Fatal(err)
		}
		page, err := user.do(ctx, http.MethodGet, back, nil)
		if err != nil || apptest.TopUpStatus(page.body) != "credited" {
			t.Fatalf("callback: %v %q", err, apptest.TopUpStatus(page.body))
		}
		return authority
	}
	pay(10_000, true)             // credited before the backup
	waiting := pay(20_000, false) // at the bank when the backup is taken

	// The backup, taken while serve runs.
	backupFile := filepath.Join(dir, "kifpool.backup")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "DATA_DIR=" + dir,
		"SESSION_SECRET=" + testSecret, "GATEWAY=zarinpal", "ZARINPAL_MERCHANT_ID=" + testMerchant, "ZARINPAL_BASE_URL=" + bankURL}
	run := func(dbURL string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...) // #nosec G204 -- the test's own binary
		cmd.Env = append(env, "DATABASE_URL="+dbURL)
		return runWithTimeout(cmd, time.Minute)
	}
	var pgBase, schema string
	if d == store.SQLite {
		if out, err := run(dbURL, "backup", "--to", backupFile); err != nil {
			t.Fatalf("kifpool backup: %v\n%s", err, out)
		}
	} else {
		pgBase, schema = splitSchema(t, dbURL)
		out, err := exec.Command("pg_dump", "-Fc", "-n", schema, "-f", backupFile, pgBase).CombinedOutput() // #nosec G204 -- the test's own arguments
		if err != nil {
			t.Fatalf("pg_dump: %v\n%s", err, out)
		}
	}
	// After the backup: the waiting payment is paid (its callback lost),
	// and a new payment is made and paid (its callback lost too).
	if _, st, err := bank.finish(ctx, waiting, "pay"); err != nil || st != http.StatusOK {
		t.Fatalf("pay after the backup: %d %v", st, err)
	}
	unseen := pay(30_000, false)
	if _, st, err := bank.finish(ctx, unseen, "pay"); err != nil || st != http.StatusOK {
		t.Fatalf("pay the unseen payment: %d %v", st, err)
	}
	live.stop()

	// The restore.
	var restored string
	if d == store.SQLite {
		path := filepath.Join(dir, "restored.db")
		copyFile(t, backupFile, path)
		restored = "sqlite:" + path
	} else {
		restored = restorePostgres(t, pgBase, schema, backupFile)
	}
	if out, err := run(restored, "check"); err != nil || !strings.Contains(out, "all rules hold") {
		t.Fatalf("kifpool check after the restore: %v\n%s", err, out)
	}
	// It finds a foreign payment (the unseen one): exit 3, findings for
	// an admin, not a failure.
	out, err := run(restored, "reconcile")
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("kifpool reconcile after the restore: %v (want exit 3: a foreign payment for an admin)\n%s", err, out)
	}
	if !strings.Contains(out, "1 credited now (200000 rials), 1 foreign (300000 rials)") {
		t.Fatalf("reconcile did not credit the payment settled after the backup and report the unseen one:\n%s", out)
	}
	if !strings.Contains(out, unseen) {
		t.Errorf("the report does not name the unseen payment's authority %s:\n%s", unseen, out)
	}
	db := openDB(t, restored)
	if bal := balanceOf(t, db, "backup@example.com"); bal != 300_000 {
		t.Errorf("balance after the restore and reconciliation: %d rials, want 300000 (10,000 + 20,000 tomans)", bal)
	}
	var st string
	db.Gorm.Raw(`SELECT status FROM topups WHERE authority = ?`, waiting).Scan(&st)
	if st != "credited" {
		t.Errorf("the payment settled after the backup is %q", st)
	}
	// serve starts on the restored database, and check still passes.
	after, afterURL := newServe(t, "serve-restored", restored, bankURL, nil)
	if err := after.start(); err != nil {
		t.Fatalf("serve on the restored database: %v", err)
	}
	res, err := http.Get(afterURL + routes.Readyz)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/readyz on the restored database: %v %v", res, err)
	}
	res.Body.Close()
	if out, err := run(restored, "check"); err != nil || !strings.Contains(out, "all rules hold") {
		t.Fatalf("kifpool check after reconciliation: %v\n%s", err, out)
	}
}

// splitSchema separates a test database URL into the plain PostgreSQL URL
// pg_dump takes and the schema of its search_path.
func splitSchema(t *testing.T, dbURL string) (string, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	schema := q.Get("search_path")
	q.Del("search_path")
	u.RawQuery = q.Encode()
	if schema == "" {
		t.Fatalf("no schema in %s", dbURL)
	}
	return u.String(), schema
}

// restorePostgres restores a pg_dump -Fc file into a new database (dropped
// when the test ends) and returns its URL.
func restorePostgres(t *testing.T, base, schema, file string) string {
	t.Helper()
	ctx := context.Background()
	admin, err := store.Open(ctx, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "kifpool_restore_" + hex.EncodeToString(b[:])
	if err := admin.Gorm.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a, err := store.Open(context.Background(), base, nil)
		if err != nil {
			return
		}
		defer a.Close()
		a.Gorm.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	u, _ := url.Parse(base)
	u.Path = "/" + name
	target := u.String()
	// The database-wide extension the migrations create (pg_dump -n dumps
	// one schema, not the extensions in public).
	tdb, err := store.Open(ctx, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tdb.Gorm.Exec(`CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public`).Error
	tdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pg_restore", "--no-owner", "--exit-on-error", "-d", target, file).CombinedOutput() // #nosec G204 -- the test's own arguments
	if err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from) // #nosec G304 -- the test's own file
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) // #nosec G304 -- the test's own file
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
