package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
)

const checkUsage = `usage: kifpool check [--max-rows N] [--metrics-file PATH]

A read-only audit of the database named by DATABASE_URL: every ledger
transaction balances, each account's balance and held amount equal its
postings and open holds, no wallet below zero, reversed at most once, one
credit per payment, every status change chained in topup_events, every credited payment has the bank's verify on record, no
payment open past the worker's deadlines. It exits non-zero and names each
row that breaks a rule. Safe against production at any time: it runs plain
SELECTs, each rule in a read-only transaction of its own (PostgreSQL: a
REPEATABLE READ READ ONLY snapshot per rule, so two rules may see the
database at different moments), takes no locks that stop writers, and
never migrates.

--metrics-file PATH writes the run's outcome for node_exporter's textfile
collector once every rule has run, broken or not (PATH.tmp in the same
directory, synced, then renamed over PATH; readable by all):
kifpool_check_last_run_timestamp_seconds, kifpool_check_broken_rules,
kifpool_check_violations{rule} for every rule that ran (the rows named, at
most --max-rows; a skipped rule has no series) and
kifpool_check_duration_seconds. A run that fails before its end (the
database out of reach, an old schema) writes nothing, so the timestamp
goes stale. PATH's directory must exist. The output and exit status are
the check's, except that a file it could not write fails a run whose
rules all hold (with broken rules, the failure to write is logged).
`

// openExisting opens the database of DATABASE_URL without creating or
// migrating anything (check, backup): an SQLite file must exist.
func openExisting(ctx context.Context, getenv config.Getenv, log *slog.Logger) (config.Config, *store.DB, error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return cfg, nil, err
	}
	dialect, dsn, err := store.ParseURL(cfg.DatabaseURL)
	if err != nil {
		return cfg, nil, err
	}
	if dialect == store.SQLite {
		if _, err := os.Stat(dsn); err != nil {
			return cfg, nil, fmt.Errorf("database file %s: %w", dsn, err)
		}
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return cfg, nil, err
	}
	return cfg, db, nil
}

// checkDeadlines are how long a payment may stay open by the
// configuration's worker deadlines, plus the worker's own slack (its
// interval, the longest back-off, two bank budgets and a minute), so that a
// payment the worker is about to end is not reported.
func checkDeadlines(cfg config.Config) (created, open time.Duration) {
	slack := cfg.WorkerInterval + cfg.WorkerBackoffMax + 2*cfg.Budget + time.Minute
	return cfg.WorkerStaleCreated + slack, max(cfg.WorkerAuthorityLifetime, cfg.WorkerMaxUnknown) + slack
}

func checkCmd(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	fs := newFlagSet("check", checkUsage, stdout)
	maxRows := fs.Int("max-rows", 100, "rows named per broken rule at most")
	metricsFile := fs.String("metrics-file", "", "write the outcome for node_exporter's textfile collector to this `PATH` (e.g. /var/lib/prometheus/node-exporter/kifpool_check.prom)")
	if help, err := parseFlags(fs, args, checkUsage); help || err != nil {
		return err
	}
	if *metricsFile != "" {
		if err := checkMetricsDir(*metricsFile); err != nil {
			return err
		}
	}
	cfg, db, err := openExisting(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := db.Migrations(ctx)
	if err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if st.Current < st.Latest {
		return fmt.Errorf("the database is at migration %d, this build at %d: run kifpool migrate (or check with the build that runs on it)", st.Current, st.Latest)
	}
	created, open := checkDeadlines(cfg)
	// The deadlines on the database's clock, as the worker's are: a
	// cron host whose clock is off would see top-ups past them that
	// are not, or miss some that are.
	clock := store.NewClock(db, nil, 0, log)
	if err := clock.Sync(ctx); err != nil {
		return fmt.Errorf("read the database's clock: %w", err)
	}
	started := time.Now()
	rep, err := integrity.Check(ctx, db, integrity.Options{Now: clock.Now(), CreatedDeadline: created, OpenDeadline: open, MaxRows: *maxRows})
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	fmt.Fprintf(stdout, "kifpool check: %s at migration %d\n", cfg.DatabaseDescription(), st.Current)
	broken := 0
	for _, res := range rep.Results {
		switch {
		case res.Skipped:
			fmt.Fprintf(stdout, "  skip  %-32s %s\n", res.Rule.Name, res.Rule.What)
		case len(res.Violations) == 0:
			fmt.Fprintf(stdout, "  ok    %-32s %s (%s)\n", res.Rule.Name, res.Rule.What, took(res.Took))
		default:
			broken++
			more := ""
			if res.Truncated {
				more = fmt.Sprintf(" (first %d shown)", len(res.Violations))
			}
			fmt.Fprintf(stdout, "  FAIL  %-32s %s: %d rows%s (%s)\n", res.Rule.Name, res.Rule.What, len(res.Violations), more, took(res.Took))
			for _, v := range res.Violations {
				fmt.Fprintf(stdout, "        %s: %s\n", v.Subject, v.Detail)
			}
		}
	}
	finished := time.Now()
	log.Info("check finished", "broken_rules", broken, "took", finished.Sub(started).Round(time.Millisecond))
	var werr error
	if *metricsFile != "" {
		werr = writeCheckMetrics(*metricsFile, rep, broken, finished, finished.Sub(started))
	}
	if broken > 0 {
		if werr != nil { // the broken rules are the louder news
			log.Error("write the check's metrics", "file", *metricsFile, "err", werr)
		}
		return fmt.Errorf("check: %d rules broken (rows named above)", broken)
	}
	fmt.Fprintf(stdout, "all rules hold (%s)\n", took(finished.Sub(started)))
	return werr
}

// checkMetricsDir refuses a --metrics-file whose directory is missing,
// before anything runs: a typo in the timer's path would otherwise be
// found only after the whole check.
func checkMetricsDir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--metrics-file %s: its directory: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--metrics-file %s: %s is not a directory", path, dir)
	}
	return nil
}

// checkMetrics is the check's outcome in Prometheus's text format: for
// every rule that ran, the rows it named (0 when it holds); a skipped
// rule has no series.
func checkMetrics(rep integrity.Report, broken int, finished time.Time, took time.Duration) []byte {
	var b strings.Builder
	b.WriteString("# HELP kifpool_check_last_run_timestamp_seconds When the last kifpool check that ran every rule ended (unix seconds).\n")
	b.WriteString("# TYPE kifpool_check_last_run_timestamp_seconds gauge\n")
	fmt.Fprintf(&b, "kifpool_check_last_run_timestamp_seconds %d\n", finished.Unix())
	b.WriteString("# HELP kifpool_check_broken_rules Rules of the last kifpool check that named rows breaking them.\n")
	b.WriteString("# TYPE kifpool_check_broken_rules gauge\n")
	fmt.Fprintf(&b, "kifpool_check_broken_rules %d\n", broken)
	b.WriteString("# HELP kifpool_check_violations Rows the last kifpool check named breaking a rule (at most --max-rows); skipped rules are absent.\n")
	b.WriteString("# TYPE kifpool_check_violations gauge\n")
	for _, res := range rep.Results {
		if res.Skipped {
			continue
		}
		fmt.Fprintf(&b, "kifpool_check_violations{rule=%q} %d\n", res.Rule.Name, len(res.Violations))
	}
	b.WriteString("# HELP kifpool_check_duration_seconds How long the last kifpool check's rules took.\n")
	b.WriteString("# TYPE kifpool_check_duration_seconds gauge\n")
	fmt.Fprintf(&b, "kifpool_check_duration_seconds %s\n", strconv.FormatFloat(took.Seconds(), 'f', 3, 64))
	return []byte(b.String())
}

// writeCheckMetrics writes the outcome to path atomically: PATH.tmp in
// the same directory, synced, renamed over path, the directory synced, so
// that node_exporter never reads half a file.
func writeCheckMetrics(path string, rep integrity.Report, broken int, finished time.Time, took time.Duration) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644) // #nosec G302 G304 -- the operator's --metrics-file; node_exporter reads it as another user
	if err != nil {
		return fmt.Errorf("metrics file: %w", err)
	}
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("metrics file %s: %w", tmp, err)
	}
	// Readable by node_exporter's user whatever the umask (the unit's is 0077).
	if err := f.Chmod(0o644); err != nil { // #nosec G302 -- metrics, not secrets
		return fail(err)
	}
	if _, err := f.Write(checkMetrics(rep, broken, finished, took)); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("metrics file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("metrics file: %w", err)
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil { // #nosec G304 -- the operator's --metrics-file
		_ = dir.Sync() // best effort: the file is complete under either name
		_ = dir.Close()
	}
	return nil
}

// took is a rule's or the whole check's time as the operator reads it.
func took(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

const backupUsage = `usage: kifpool backup --to FILE

An online backup of the SQLite database of DATABASE_URL into FILE (which
must not exist yet), safe while serve runs: SQLite's VACUUM INTO copies one
consistent snapshot and writers go on. FILE is written next to itself
first and renamed when complete, readable by its owner only. To restore,
stop serve and put FILE in the place of the database file (removing the
old file's -wal and -shm); see docs/operations.md.

PostgreSQL is backed up with its own tools (pg_dump -Fc, pg_restore); this
command refuses it.
`

func backupCmd(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer, log *slog.Logger) error {
	fs := newFlagSet("backup", backupUsage, stdout)
	to := fs.String("to", "", "the backup file to write (must not exist)")
	if help, err := parseFlags(fs, args, backupUsage); help || err != nil {
		return err
	}
	if *to == "" {
		return errors.New("--to FILE is required")
	}
	dest, err := filepath.Abs(*to)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("%s exists: a backup never overwrites a file", dest)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	if d, _, err := store.ParseURL(cfg.DatabaseURL); err != nil {
		return err
	} else if d == store.Postgres {
		return errors.New("kifpool backup is for SQLite; back up PostgreSQL with pg_dump -Fc (see docs/operations.md)")
	}
	_, db, err := openExisting(ctx, getenv, log)
	if err != nil {
		return err
	}
	defer db.Close()
	tmp := dest + ".partial"
	_ = os.Remove(tmp) // a leftover of an interrupted backup
	// Made empty first, readable by its owner alone: VACUUM INTO writes
	// into an empty file, and one it created itself would be readable by
	// others (the umask) while the whole database is copied into it.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // #nosec G304 -- the operator's own --to path
	if err != nil {
		return fmt.Errorf("backup into %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("backup into %s: %w", tmp, err)
	}
	started := time.Now()
	// VACUUM INTO reads one snapshot (a read transaction: WAL writers go
	// on) and writes a compact copy; its argument is an SQL string literal.
	if err := db.Gorm.WithContext(ctx).Exec("VACUUM INTO '" + strings.ReplaceAll(tmp, "'", "''") + "'").Error; err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("backup into %s: %w", tmp, err)
	}
	if err := finishBackup(tmp, dest); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	fi, err := os.Stat(dest)
	if err != nil {
		return err
	}
	log.Info("backup written", "file", dest, "bytes", fi.Size(), "took", time.Since(started).Round(time.Millisecond))
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes)\n", cfg.DatabaseDescription(), dest, fi.Size())
	return nil
}

// finishBackup makes the written copy private and durable, then gives it
// its name (a crash leaves a .partial file, never a truncated backup).
func finishBackup(tmp, dest string) error {
	f, err := os.OpenFile(tmp, os.O_RDWR, 0) // #nosec G304 -- the operator's --to path
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fmt.Errorf("backup: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Link(tmp, dest); err != nil { // fails if dest appeared meanwhile
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	// The new name on disk before "backup written" is said: a power cut
	// right after must not lose it.
	dir, err := os.Open(filepath.Dir(dest)) // #nosec G304 -- the operator's --to path
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer func() { _ = dir.Close() }() // read-only: its close has nothing to flush
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("backup: %s is written, but its directory could not be synced (a power cut now may lose its name; check it, or move it away and run again): %w", dest, err)
	}
	return nil
}

// instanceLock refuses a serve that cannot work beside the others on its
// database: the built-in sandbox bank keeps its payments in its process's
// memory, so behind a load balancer a payment started on one instance is
// unknown to the next ("transaction not found"). A sandbox serve must
// therefore be alone on the database, and no instance starts beside one.
// Refused rather than warned: the combination never works, and a warning
// in a log is read after the payers met it. On SQLite, a single-process
// database, any second serve of the same file is refused, naming the
// first one's process id and address (its worker would otherwise ask its
// own sandbox bank about the first one's payments and fail them).
func instanceLock(ctx context.Context, cfg config.Config, db *store.DB) (func(), error) {
	sandbox := cfg.Gateway == config.GatewaySandbox
	release, err := db.InstanceLock(ctx, sandbox, cfg.ListenAddr)
	var named *store.InstanceConflictError
	if errors.As(err, &named) {
		return nil, fmt.Errorf("%w. SQLite serves one process: stop that serve, or give this one another DATABASE_URL (several instances need PostgreSQL)", named)
	}
	if errors.Is(err, store.ErrInstanceConflict) {
		if sandbox {
			return nil, errors.New("another kifpool serve runs on this database: the built-in sandbox bank (GATEWAY=sandbox) lives in one process's memory, " +
				"so payments started on one instance are unknown to the others. Run one instance, or start `kifpool sandbank` and set GATEWAYS=zarinpal " +
				"and ZARINPAL_BASE_URL to it on every instance (docs/operations.md)")
		}
		return nil, errors.New("a kifpool serve with the built-in sandbox bank (GATEWAY=sandbox) runs on this database and must be alone there: " +
			"stop it, or move every instance to a standalone `kifpool sandbank` (docs/operations.md)")
	}
	return release, err
}
