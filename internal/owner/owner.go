// Package owner holds what every service that gives an account something
// of its own asks of the account's row first: a lock on it, so that the
// counts of its tokens, endpoints or origins cannot both pass in two
// requests at once, and whether its owner confirmed the e-mail address
// (auth's verify.go). An account whose address is not confirmed may be a
// stranger's who signed up with it: it is given nothing that outlasts the
// owner taking the account back, and sends nothing in the address's name.
//
// A confirmation is never undone (the column only goes from NULL to a
// time), so a read of it outside the write that depends on it holds at
// that write.
package owner

import (
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

var (
	// ErrUnconfirmed: the account's e-mail address is not confirmed.
	ErrUnconfirmed = errors.New("the account's e-mail address is not confirmed")
	// ErrNotFound: no user has this id.
	ErrNotFound = errors.New("no such user")
)

// Confirmed reads whether user id's address is confirmed (ErrNotFound: no
// such user), in db or a transaction.
func Confirmed(db *gorm.DB, id int64) (bool, error) {
	return read(db, `SELECT email_verified_at IS NOT NULL FROM users WHERE id = ?`, id)
}

// RequireConfirmed is Confirmed refusing an unconfirmed address
// (ErrUnconfirmed).
func RequireConfirmed(db *gorm.DB, id int64) error {
	ok, err := Confirmed(db, id)
	if err == nil && !ok {
		err = fmt.Errorf("user %d: %w", id, ErrUnconfirmed)
	}
	return err
}

// Lock locks user id's row until tx ends (on PostgreSQL: SQLite's
// transactions are one at a time already) and reports, in the same
// statement, whether its address is confirmed.
func Lock(tx *gorm.DB, dialect store.Dialect, id int64) (confirmed bool, err error) {
	if dialect != store.Postgres {
		return Confirmed(tx, id)
	}
	return read(tx, `SELECT email_verified_at IS NOT NULL FROM users WHERE id = ? FOR UPDATE`, id)
}

// LockConfirmed is Lock refusing an unconfirmed address (ErrUnconfirmed).
func LockConfirmed(tx *gorm.DB, dialect store.Dialect, id int64) error {
	ok, err := Lock(tx, dialect, id)
	if err == nil && !ok {
		err = fmt.Errorf("user %d: %w", id, ErrUnconfirmed)
	}
	return err
}

func read(db *gorm.DB, q string, id int64) (bool, error) {
	var rows []bool
	if err := store.Scan(db.Raw(q, id), &rows); err != nil {
		return false, fmt.Errorf("user %d: %w", id, err)
	}
	if len(rows) == 0 {
		return false, fmt.Errorf("user %d: %w", id, ErrNotFound)
	}
	return rows[0], nil
}
