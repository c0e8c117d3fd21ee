// Package apitokentest writes API tokens past the service's rules, for
// tests above it that need a token the service no longer makes: a name
// stored before the rules on names, a token that has expired or was
// revoked at a given moment. Tests write them through these typed helpers,
// never by SQL, so that a change of the table touches apitoken and this
// package only. Each helper fails the test on a database error.
package apitokentest

import (
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/store"
)

// SetName renames every token of the user to name, unchecked (a name an
// older version let in).
func SetName(t testing.TB, db *store.DB, userID int64, name string) {
	t.Helper()
	set(t, db, "user_id = ?", userID, map[string]any{"name": name})
}

// Expire makes the token with that secret expire at (in the past: an
// expired token).
func Expire(t testing.TB, db *store.DB, secret string, at time.Time) {
	t.Helper()
	set(t, db, "token_hash = ?", apitoken.Hash(secret), map[string]any{"expires_at": at.UTC()})
}

// RevokeAtCreation revokes the token with that secret as of the moment
// it was made.
func RevokeAtCreation(t testing.TB, db *store.DB, secret string) {
	t.Helper()
	var tk apitoken.Token
	if err := db.Gorm.Where("token_hash = ?", apitoken.Hash(secret)).Take(&tk).Error; err != nil {
		t.Fatalf("read token: %v", err)
	}
	set(t, db, "id = ?", tk.ID, map[string]any{"revoked_at": tk.CreatedAt})
}

func set(t testing.TB, db *store.DB, where string, arg any, cols map[string]any) {
	t.Helper()
	if err := db.Gorm.Model(&apitoken.Token{}).Where(where, arg).Updates(cols).Error; err != nil {
		t.Fatalf("write token (%s %v): %v", where, arg, err)
	}
	// Every instance of this process forgets its cached tokens.
	apitoken.Changed(db, 0)
}
