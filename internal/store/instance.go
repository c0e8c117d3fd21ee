package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"
)

// ErrInstanceConflict: the instance lock could not be taken (see
// InstanceLock).
var ErrInstanceConflict = errors.New("instance lock held by another instance")

// InstanceConflictError is a conflict with a serve that says who it is:
// the process id and listen address its SQLite lock file holds (0 and ""
// when it had not written them yet). It is an ErrInstanceConflict.
type InstanceConflictError struct {
	PID  int
	Addr string
	File string // the lock file
}

func (e *InstanceConflictError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	if e.Addr != "" {
		who += " listening on " + e.Addr
	}
	return fmt.Sprintf("another kifpool serve runs on this SQLite database: %s holds %s", who, e.File)
}

// Is makes the error an ErrInstanceConflict.
func (e *InstanceConflictError) Is(target error) bool { return target == ErrInstanceConflict }

// InstanceLock marks this process as a serve instance of the database
// until release is called (or the process ends): on PostgreSQL a
// session-level advisory lock of the database and schema, held on a
// connection of its own. Every instance takes it shared; an instance that
// must be alone on the database (exclusive: the built-in sandbox bank,
// whose payments live in its memory) takes it exclusively. A conflict
// either way returns ErrInstanceConflict at once. The connection is one
// more than the pool's size (set the pool first).
//
// SQLite serves one process: every serve takes an exclusive lock of the
// file's serve lock (`<file>.serve.lock`, beside it, mode 0600; an OS
// file lock, so it ends with the process however it ends) and writes its
// process id and addr (its listen address) there; a second serve is
// refused with an *InstanceConflictError naming both. An in-memory
// database takes nothing.
func (db *DB) InstanceLock(ctx context.Context, exclusive bool, addr string) (release func(), err error) {
	if db.Dialect != Postgres {
		if db.path == "" {
			return func() {}, nil
		}
		return lockFile(db.path+".serve.lock", addr)
	}
	// The lock's connection is one more than the pool's size, so that a
	// small DATABASE_MAX_CONNS is not one short for the app's own work.
	if n := db.SQL().Stats().MaxOpenConnections; n > 0 {
		db.SQL().SetMaxOpenConns(n + 1)
	}
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	var names struct{ DB, Schema string }
	if err := conn.QueryRowContext(ctx, `SELECT current_database(), COALESCE(current_schema(), '')`).Scan(&names.DB, &names.Schema); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("kifpool instance\x00" + names.DB + "\x00" + names.Schema))
	id := int64(h.Sum64()) // #nosec G115 -- a hash: any 64 bits make an advisory lock id
	lockSQL, unlockSQL := `SELECT pg_try_advisory_lock_shared($1)`, `SELECT pg_advisory_unlock_shared($1)`
	if exclusive {
		lockSQL, unlockSQL = `SELECT pg_try_advisory_lock($1)`, `SELECT pg_advisory_unlock($1)`
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, lockSQL, id).Scan(&ok); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("instance lock: %w", err)
	}
	if !ok {
		_ = conn.Close()
		return nil, ErrInstanceConflict
	}
	// The connection goes back to the pool on Close, its session alive:
	// unlock first. (Should the process die, the session and the lock end
	// with it.)
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(ctx, unlockSQL, id)
		_ = conn.Close()
	}, nil
}
