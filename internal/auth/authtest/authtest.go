// Package authtest reads and writes what internal/auth keeps (users,
// sessions, password reset links, the throttles, the admins' recovery
// codes) for tests above it: the web app's tests ask for a user by e-mail
// or count the sessions through these typed helpers, never by SQL, so
// that a change of auth's tables touches auth and this package only.
// Each helper fails the test on a database error.
package authtest

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/store"
)

// User is the user with that e-mail address (as stored).
func User(t testing.TB, db *store.DB, email string) auth.User {
	t.Helper()
	var us []auth.User
	if err := db.Gorm.Table("users").Where("email = ?", email).Limit(1).Find(&us).Error; err != nil {
		t.Fatalf("read user %s: %v", email, err)
	}
	if len(us) == 0 {
		t.Fatalf("no user %s", email)
	}
	return us[0]
}

// UserID is the id of the user with that e-mail address.
func UserID(t testing.TB, db *store.DB, email string) int64 {
	t.Helper()
	return User(t, db, email).ID
}

// Users is every user, oldest first.
func Users(t testing.TB, db *store.DB) []auth.User {
	t.Helper()
	var us []auth.User
	if err := db.Gorm.Table("users").Order("id").Find(&us).Error; err != nil {
		t.Fatalf("read users: %v", err)
	}
	return us
}

// CountUsers is how many users keep keeps (every user with nil).
func CountUsers(t testing.TB, db *store.DB, keep func(auth.User) bool) int64 {
	t.Helper()
	var n int64
	for _, u := range Users(t, db) {
		if keep == nil || keep(u) {
			n++
		}
	}
	return n
}

// SetEmail changes a user's stored address past the sign-up's checks: a
// lookalike address an older version let in.
func SetEmail(t testing.TB, db *store.DB, from, to string) {
	t.Helper()
	if err := db.Gorm.Table("users").Where("email = ?", from).Update("email", to).Error; err != nil {
		t.Fatalf("set the address of %s: %v", from, err)
	}
	auth.SessionChanged(db, 0) // the instances' cached sessions
}

// Sessions is every session, of every user, oldest first.
func Sessions(t testing.TB, db *store.DB) []auth.Session {
	t.Helper()
	var ss []auth.Session
	if err := db.Gorm.Table("sessions").Order("id").Find(&ss).Error; err != nil {
		t.Fatalf("read sessions: %v", err)
	}
	return ss
}

// CountSessions is how many sessions there are, of every user.
func CountSessions(t testing.TB, db *store.DB) int64 {
	t.Helper()
	return int64(len(Sessions(t, db)))
}

// Reset is a password reset link as stored: the hash of its token only.
type Reset struct {
	ID        int64
	UserID    int64
	TokenHash string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// Resets is every reset link, oldest first.
func Resets(t testing.TB, db *store.DB) []Reset {
	t.Helper()
	var rs []Reset
	if err := db.Gorm.Table("password_resets").Order("id").Find(&rs).Error; err != nil {
		t.Fatalf("read password resets: %v", err)
	}
	return rs
}

// Throttles is how many throttle keys start with prefix (a whole key
// counts as its own prefix).
func Throttles(t testing.TB, db *store.DB, prefix string) int64 {
	t.Helper()
	var keys []string
	if err := db.Gorm.Table("auth_throttles").Pluck("key", &keys).Error; err != nil {
		t.Fatalf("read throttles: %v", err)
	}
	var n int64
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// RecoveryCode is an admin's recovery code as stored: its hash only.
type RecoveryCode struct {
	ID       int64
	UserID   int64
	CodeHash string
	UsedAt   *time.Time
}

// RecoveryCodes is every recovery code, of every admin.
func RecoveryCodes(t testing.TB, db *store.DB) []RecoveryCode {
	t.Helper()
	var rs []RecoveryCode
	if err := db.Gorm.Table("recovery_codes").Order("id").Find(&rs).Error; err != nil {
		t.Fatalf("read recovery codes: %v", err)
	}
	return rs
}

// AddReset stores a reset link of the user with that e-mail address, by
// the hash of its token, as auth stores one (a fixture that needs a live
// link whose token it knows).
func AddReset(t testing.TB, db *store.DB, email, tokenHash string, created, expires time.Time) {
	t.Helper()
	if err := db.Gorm.Exec(`INSERT INTO password_resets (user_id, token_hash, created_at, expires_at)
		SELECT id, ?, ?, ? FROM users WHERE email = ?`, tokenHash, created, expires, email).Error; err != nil {
		t.Fatalf("add a reset link for %s: %v", email, err)
	}
}

// PassSecondFactor marks every session of the user with that e-mail
// address that has not passed the second factor as passed at at (a
// fixture on a fixed clock, where the authenticator's next code never
// comes; the page itself is tested elsewhere).
func PassSecondFactor(t testing.TB, db *store.DB, email string, at time.Time) {
	t.Helper()
	if err := db.Gorm.Exec(`UPDATE sessions SET second_factor_at = ? WHERE second_factor_at IS NULL
		AND user_id = (SELECT id FROM users WHERE lower(email) = lower(?))`, at.UTC(), email).Error; err != nil {
		t.Fatalf("pass the second factor of %s: %v", email, err)
	}
	auth.SessionChanged(db, 0) // the instances' cached sessions
}

// DistinctUserIDs makes the users this test signs up from now on take ids
// no other test's users have (on PostgreSQL; nothing on SQLite). Every
// test's schema shares the database's NOTIFY channels, which name users
// by id, and every schema's ids start at 1: a test that counts what its
// instance's caches serve hears other tests' users' changes as its own
// otherwise.
func DistinctUserIDs(t testing.TB, db *store.DB) {
	t.Helper()
	if db.Dialect != store.Postgres {
		return
	}
	start := 1_000_000_000 + rand.Int64N(1_000_000_000_000) // #nosec G404 -- spreads tests' ids apart, no secret
	if err := db.Gorm.Exec(`SELECT setval('users_id_seq', ?)`, start).Error; err != nil {
		t.Fatalf("restart the users' ids: %v", err)
	}
}

// ConfirmEmail marks the address of the user with that e-mail address as
// confirmed, as its owner's use of the mailed link does (a fixture for
// tests about something else; the link itself is tested in auth and
// web/account).
func ConfirmEmail(t testing.TB, db *store.DB, email string) {
	t.Helper()
	res := db.Gorm.Exec(`UPDATE users SET email_verified_at = ? WHERE lower(email) = lower(?) AND email_verified_at IS NULL`, time.Now().UTC(), email)
	if res.Error != nil {
		t.Fatalf("confirm the address of %s: %v", email, res.Error)
	}
	// Sessions read before forget it, as after the link.
	auth.SessionChanged(db, UserID(t, db, email))
}

// UnconfirmEmail marks the address of the user with that e-mail address
// as not confirmed: an account as it stands when something it was given
// before a rule (an API token) meets the rule. Nothing in the app ever
// does this: a confirmation is never undone.
func UnconfirmEmail(t testing.TB, db *store.DB, email string) {
	t.Helper()
	res := db.Gorm.Exec(`UPDATE users SET email_verified_at = NULL WHERE lower(email) = lower(?)`, email)
	if res.Error != nil || res.RowsAffected != 1 {
		t.Fatalf("unconfirm the address of %s: %v (%d rows)", email, res.Error, res.RowsAffected)
	}
	auth.SessionChanged(db, UserID(t, db, email))
}

// Register signs a user up as the site does (auth.Service.Register): the
// address not confirmed, the confirmation mail dropped.
func Register(t testing.TB, db *store.DB, email string) auth.User {
	t.Helper()
	users := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost,
		VerifyMailer: func(*gorm.DB, auth.User, string, time.Time) error { return nil }})
	u, err := users.Register(context.Background(), email, "correct horse battery", "fa")
	if err != nil {
		t.Fatalf("register %s: %v", email, err)
	}
	return u
}
