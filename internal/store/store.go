// Package store opens the database (PostgreSQL, or an embedded SQLite file),
// runs the schema migrations and hides the differences between the two
// dialects. Every dialect quirk lives here and nowhere else.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"

	"github.com/kifpool/kifpool/internal/dburl"
	"github.com/kifpool/kifpool/migrations"
)

// Dialect names the database engine (see package dburl).
type Dialect = dburl.Dialect

const (
	Postgres = dburl.Postgres
	SQLite   = dburl.SQLite
)

// DB is an open database with its dialect.
type DB struct {
	Gorm    *gorm.DB
	Dialect Dialect
	// path is the SQLite file ("" in memory and on PostgreSQL): its serve
	// lock lives beside it (InstanceLock).
	path string
	// dsn is PostgreSQL's connection string, for Listen's own connection.
	dsn string
	// sig fans Signal out to this process's subscribers.
	sig *signals
}

// DefaultSQLitePath is the zero-setup database file.
const DefaultSQLitePath = dburl.DefaultSQLitePath

// ParseURL splits DATABASE_URL into a dialect and a driver DSN (dburl.Parse).
func ParseURL(url string) (Dialect, string, error) { return dburl.Parse(url) }

// naming maps Go names to SQL names as GORM's default does, except that
// the top-up's Go name is one word in SQL: topup.TopUp is the table
// topups, a TopUpID field the column topup_id (not top_ups, top_up_id).
func naming() schema.NamingStrategy {
	return schema.NamingStrategy{NameReplacer: strings.NewReplacer("TopUp", "Topup")}
}

// Open connects to the database named by url (see ParseURL).
func Open(ctx context.Context, url string, log *slog.Logger) (*DB, error) {
	dialect, dsn, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	db, err := open(dialect, dsn)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.SQL().PingContext(pctx); err != nil {
		_ = db.Close() // the ping's error is the one to report
		return nil, fmt.Errorf("connect to %s database: %w", dialect, err)
	}
	return db, nil
}

// OpenReplica opens the pages' read database (DATABASE_READ_URL, a
// PostgreSQL URL) without waiting for it to answer: a replica that is down
// at start sends the reads to the primary (ReadPool.Check) until it is
// back. Its sessions are read-only (default_transaction_read_only), so
// that a write sent there by mistake fails instead of landing beside the
// primary.
func OpenReplica(url string) (*DB, error) {
	dialect, dsn, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	if dialect != Postgres {
		return nil, errors.New("a read database is PostgreSQL (postgres://…)")
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return open(dialect, dsn+sep+"default_transaction_read_only=on")
}

// Reopen opens a second connection pool to db's database that shares
// nothing in this process with db, as another instance's would (its
// signals included); not for an in-memory SQLite database.
func Reopen(db *DB) (*DB, error) {
	switch {
	case db.Dialect == Postgres:
		return open(Postgres, db.dsn)
	case db.path != "":
		return open(SQLite, db.path)
	}
	return nil, errors.New("reopen: an in-memory database has no second pool")
}

// open makes the connection pool of a database without connecting yet.
func open(dialect Dialect, dsn string) (*DB, error) {
	var err error
	cfg := &gorm.Config{
		TranslateError: true,
		Logger:         logger.Discard,
		NowFunc:        func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
		NamingStrategy: naming(),
		// Open pings on its own (with a deadline); a replica may be down.
		DisableAutomaticPing: true,
	}
	var gdb *gorm.DB
	switch dialect {
	case SQLite:
		if dsn != ":memory:" {
			if err := createPrivateFile(dsn); err != nil {
				return nil, err
			}
		}
		// WAL lets readers run beside the writer; busy_timeout makes writers
		// queue instead of failing; _txlock=immediate takes the write lock at
		// BEGIN so read-then-write transactions cannot hit SQLITE_BUSY_SNAPSHOT.
		full := dsn + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
		gdb, err = gorm.Open(sqlite.Open(full), cfg)
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", dsn, err)
		}
		sqlDB, err := gdb.DB()
		if err != nil {
			return nil, err
		}
		// One writer at a time is SQLite's rule; a small pool keeps readers
		// from starving while writers queue on busy_timeout.
		sqlDB.SetMaxOpenConns(4)
	case Postgres:
		sessions := withParam(withoutJIT(dsn), "idle_in_transaction_session_timeout", strconv.FormatInt(IdleInTransactionTimeout.Milliseconds(), 10))
		gdb, err = gorm.Open(postgres.New(postgres.Config{DSN: sessions}), cfg)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		literalLimits(gdb)
		sqlDB, err := gdb.DB()
		if err != nil {
			return nil, err
		}
		n := DefaultPoolSize()
		sqlDB.SetMaxOpenConns(n)
		// As many idle as open: under load a connection released beyond
		// the idle limit is closed and another one opened at once (a new
		// PostgreSQL backend per request at worst).
		sqlDB.SetMaxIdleConns(n)
		// Connections left idle after a burst are closed after a while.
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
		sqlDB.SetConnMaxLifetime(30 * time.Minute)
	}
	db := &DB{Gorm: gdb, Dialect: dialect, sig: &signals{subs: map[int]subscriber{}}}
	if dialect == Postgres {
		db.dsn = dsn
	}
	if dialect == SQLite && dsn != ":memory:" {
		db.path = dsn
	}
	return db, nil
}

// withoutJIT turns PostgreSQL's JIT compilation off for the pool's
// sessions (the startup parameter jit=off), unless the URL sets jit
// itself. Every statement Kifpool issues is a bounded index read or a
// short write, but the planner's cost of a statement it only estimates
// (the dashboard's EXPLAIN of the credited top-ups: 7.3M rows) or of a
// capped count crosses jit_above_cost at scale: a session's first such
// plan then loaded LLVM (65 ms on the 10M database, against 0.9 ms with
// jit off), and each execution compiled its expressions (8 ms) for a
// statement that reads a few thousand index entries. The dashboard's p95
// at 10M was those loads (docs/benchmarks.md).
func withoutJIT(dsn string) string { return withParam(dsn, "jit", "off") }

// IdleInTransactionTimeout ends a session that holds a transaction open
// and does nothing for this long (PostgreSQL's
// idle_in_transaction_session_timeout, a startup parameter of every
// session unless the URL sets it): no transaction of Kifpool waits on
// anything but the database (no bank is asked inside one), so only a
// process that froze or lost its peer mid-transaction (a stopped VM, a
// half-open connection) stays idle in one, and its row locks (a wallet's,
// a top-up's) would otherwise stop every credit to them until TCP gave up.
const IdleInTransactionTimeout = time.Minute

// withParam sets the startup parameter key of the pool's sessions to
// value, unless the URL (or keyword/value string) sets it already.
func withParam(dsn, key, value string) string {
	if i := strings.Index(dsn, "?"); i >= 0 {
		for _, kv := range strings.Split(dsn[i+1:], "&") {
			if k, _, _ := strings.Cut(kv, "="); k == key {
				return dsn
			}
		}
		return dsn + "&" + key + "=" + value
	}
	if strings.Contains(dsn, "://") {
		return dsn + "?" + key + "=" + value
	}
	// A keyword/value connection string.
	for _, kv := range strings.Fields(dsn) {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return dsn
		}
	}
	return dsn + " " + key + "=" + value
}

// DefaultPoolSize is the PostgreSQL pool of one instance without
// DATABASE_MAX_CONNS: four connections per CPU the process may use, at
// least 8 and at most 20. No transaction is open while the bank is asked
// (§4 of ARCHITECTURE.md), so a connection is held for database work only
// and a few per core keep the database busy without queueing in it; the
// cap keeps several instances, a reconcile run and a migration within
// PostgreSQL's default max_connections (100).
func DefaultPoolSize() int {
	return min(20, max(8, 4*runtime.GOMAXPROCS(0)))
}

// SetPoolSize sets how many connections to PostgreSQL the instance opens
// at most (and keeps idle); SQLite keeps its own small pool.
func (db *DB) SetPoolSize(n int) error {
	if db.Dialect != Postgres || n <= 0 {
		return nil
	}
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		return fmt.Errorf("pool size: %w", err)
	}
	sqlDB.SetMaxOpenConns(n)
	sqlDB.SetMaxIdleConns(n)
	return nil
}

// DropIdleConns closes the pool's idle connections (PostgreSQL); the
// next queries open new ones. For a database known to have ended them
// (a read database back after it was down): the first query on each dead
// one would fail instead.
func (db *DB) DropIdleConns() {
	if db.Dialect != Postgres {
		return
	}
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		return
	}
	n := sqlDB.Stats().MaxOpenConnections // idle is kept equal to open (open, SetPoolSize)
	sqlDB.SetMaxIdleConns(-1)             // closes every idle connection
	sqlDB.SetMaxIdleConns(n)
}

// createPrivateFile creates the SQLite database file (and its folder)
// readable by the owner only, before SQLite opens it: SQLite gives the
// -wal and -shm files it creates later the database file's permissions.
// An existing file is left as it is.
func createPrivateFile(path string) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create database folder: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600) // #nosec G304 -- the path is DATABASE_URL from the operator's configuration
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fmt.Errorf("create database file: %w", err)
	}
	return f.Close()
}

// SQL returns the underlying database/sql handle.
func (db *DB) SQL() *sql.DB {
	s, _ := db.Gorm.DB()
	return s
}

// Close closes the connection pool.
func (db *DB) Close() error {
	if s, err := db.Gorm.DB(); err == nil {
		return s.Close()
	}
	return nil
}

// MigrateOption changes how Migrate runs.
type MigrateOption func(*migrateOptions)

type migrateOptions struct{ perSchemaLock bool }

// PerSchemaLock makes Migrate on PostgreSQL take an advisory lock of its
// own schema (an id derived from the database's and the schema's names)
// instead of goose's one id for the whole database, so that migrations of
// different schemas do not wait for each other. It is for the tests, which
// give every test a schema of its own. Production (migrate, serve) keeps
// goose's id: every version of kifpool locks the same id, so instances
// starting together — old and new binaries during an upgrade included —
// never migrate at once.
func PerSchemaLock() MigrateOption {
	return func(o *migrateOptions) { o.perSchemaLock = true }
}

// Migrate brings the schema up to date. On PostgreSQL an advisory lock
// keeps several instances from migrating at once (goose's one id, or the
// schema's own with PerSchemaLock); each waits for the lock up to two
// minutes, then fails.
func (db *DB) Migrate(ctx context.Context, log *slog.Logger, options ...MigrateOption) error {
	var mo migrateOptions
	for _, o := range options {
		o(&mo)
	}
	fsys, err := migrations.FS(string(db.Dialect))
	if err != nil {
		return err
	}
	gd := goose.DialectSQLite3
	// Migrations written on parallel branches may land out of order (00007
	// before 00005): a database that already has the later one still gets
	// the earlier one, instead of refusing to start.
	opts := []goose.ProviderOption{goose.WithAllowOutofOrder(true)}
	if db.Dialect == Postgres {
		gd = goose.DialectPostgres
		// Retry the advisory lock every second for up to two minutes (the
		// default is every 5 s), so instances starting together wait briefly.
		lockOpts := []lock.SessionLockerOption{lock.WithLockTimeout(1, 120)}
		if mo.perSchemaLock {
			id, err := db.schemaLockID(ctx)
			if err != nil {
				return fmt.Errorf("migration lock: %w", err)
			}
			lockOpts = append(lockOpts, lock.WithLockID(id))
		}
		locker, err := lock.NewPostgresSessionLocker(lockOpts...)
		if err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(gd, db.SQL(), fsys, opts...)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	for _, r := range results {
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
	}
	return nil
}

// schemaLockID is the advisory lock id of PerSchemaLock: a hash of the
// database's and the current schema's names (never goose's own id).
func (db *DB) schemaLockID(ctx context.Context) (int64, error) {
	var names struct{ DB, Schema string }
	err := db.SQL().QueryRowContext(ctx, `SELECT current_database(), COALESCE(current_schema(), '')`).Scan(&names.DB, &names.Schema)
	if err != nil {
		return 0, fmt.Errorf("schema name: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("kifpool migrations\x00" + names.DB + "\x00" + names.Schema))
	id := int64(h.Sum64()) // #nosec G115 -- a hash: any 64 bits make an advisory lock id
	if id == lock.DefaultLockID {
		id++
	}
	return id, nil
}

// MigrationState is where the schema stands against this build's
// migrations.
type MigrationState struct {
	Current, Latest int64
	// Pending: some migration of this build is not applied (also one
	// older than Current, applied out of order).
	Pending bool
}

// Migrations reports the schema's state (readiness: nothing pending). It
// takes no lock.
func (db *DB) Migrations(ctx context.Context) (MigrationState, error) {
	var st MigrationState
	fsys, err := migrations.FS(string(db.Dialect))
	if err != nil {
		return st, err
	}
	gd := goose.DialectSQLite3
	if db.Dialect == Postgres {
		gd = goose.DialectPostgres
	}
	p, err := goose.NewProvider(gd, db.SQL(), fsys)
	if err != nil {
		return st, fmt.Errorf("migrations: %w", err)
	}
	if st.Current, st.Latest, err = p.GetVersions(ctx); err != nil {
		return st, fmt.Errorf("migration versions: %w", err)
	}
	if st.Pending, err = p.HasPending(ctx); err != nil {
		return st, fmt.Errorf("pending migrations: %w", err)
	}
	st.Pending = st.Pending || st.Current < st.Latest
	return st, nil
}

// IsUniqueViolation reports whether err is a unique-constraint violation.
// GORM translates the errors of its own statement builders; a Raw
// statement's error comes as PostgreSQL's own (SQLSTATE 23505).
func IsUniqueViolation(err error) bool {
	return errors.Is(err, gorm.ErrDuplicatedKey) || pgCode(err) == "23505"
}

// pgCode is the SQLSTATE of a PostgreSQL error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// IsCheckViolation reports whether err is a CHECK-constraint violation
// (PostgreSQL translates it; SQLite reports "CHECK constraint failed").
func IsCheckViolation(err error) bool {
	if errors.Is(err, gorm.ErrCheckConstraintViolated) || pgCode(err) == "23514" {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "CHECK constraint failed")
}

// Tx runs fn in a transaction on ctx.
func (db *DB) Tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return db.Gorm.WithContext(ctx).Transaction(fn)
}

// TrigramSearchable reports whether a search for text anywhere in a
// column (LIKE '%text%') can be served by a trigram index (pg_trgm, as on
// users' e-mail addresses): the text must hold three letters or digits
// in a row. pg_trgm takes its trigrams from runs of letters and digits;
// from "ab" or "a.b" it takes none, and such a search reads every row.
func TrigramSearchable(text string) bool {
	run := 0
	for _, c := range text {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			run = 0
			continue
		}
		if run++; run == 3 {
			return true
		}
	}
	return false
}

// RightChars is the SQL expression of the last n characters of expr
// (PostgreSQL's right(); SQLite's negative substr), spelled as the
// dialect's expression indexes are.
func (db *DB) RightChars(expr string, n int) string {
	if db.Dialect == Postgres {
		return fmt.Sprintf("right(%s, %d)", expr, n)
	}
	return fmt.Sprintf("substr(%s, -%d)", expr, n)
}

// LocalHourNumber is HourNumber on a clock offsetSeconds ahead of UTC
// (Tehran's +03:30 is 12600): the hours of that clock since the epoch, so
// that groups begin on its whole hours. Timestamps are after 1970, so
// integer division is the floor.
func (db *DB) LocalHourNumber(col string, offsetSeconds int) string {
	if db.Dialect == Postgres {
		return fmt.Sprintf("CAST(floor((extract(epoch FROM %s) + %d) / 3600) AS BIGINT)", col, offsetSeconds)
	}
	return fmt.Sprintf("(CAST(strftime('%%s', %s) AS INTEGER) + %d) / 3600", col, offsetSeconds)
}

// HourNumber is the SQL expression of the whole hours since the Unix epoch
// of a timestamp column (to group by hour).
func (db *DB) HourNumber(col string) string {
	if db.Dialect == Postgres {
		return fmt.Sprintf("CAST(floor(extract(epoch FROM %s) / 3600) AS BIGINT)", col)
	}
	return fmt.Sprintf("CAST(strftime('%%s', %s) AS INTEGER) / 3600", col)
}

// SkipLocked returns the locking clause for claiming rows in a work queue:
// FOR UPDATE SKIP LOCKED on PostgreSQL. SQLite has no row locks (the clause
// is dropped); there the immediate transaction serialises claimers.
func (db *DB) SkipLocked(tx *gorm.DB) *gorm.DB {
	if db.Dialect == Postgres {
		return tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked})
	}
	return tx
}

// ForUpdate locks the rows a query reads until the transaction ends (FOR
// UPDATE on PostgreSQL). SQLite has no row locks: its immediate
// transactions already serialise writers.
func (db *DB) ForUpdate(tx *gorm.DB) *gorm.DB {
	if db.Dialect == Postgres {
		return tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	return tx
}
