package owner_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Each way of asking answers the row's state: confirmed, not confirmed,
// no such user; Lock answers it inside a transaction (on PostgreSQL with
// the row locked: a second transaction's lock waits for the first).
func TestOwnerRow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		var confirmed, unconfirmed int64
		if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, created_at, email_verified_at) VALUES ('yes@example.com', 'x', ?, ?) RETURNING id`, now, now).
			Scan(&confirmed).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, created_at) VALUES ('no@example.com', 'x', ?) RETURNING id`, now).
			Scan(&unconfirmed).Error; err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name    string
			id      int64
			want    bool
			require error
		}{
			{"confirmed", confirmed, true, nil},
			{"not confirmed", unconfirmed, false, owner.ErrUnconfirmed},
			{"no such user", unconfirmed + 100, false, owner.ErrNotFound},
		} {
			got, err := owner.Confirmed(db.Gorm, tc.id)
			if got != tc.want || (err != nil) != (tc.require == owner.ErrNotFound) {
				t.Errorf("%s: Confirmed = %v, %v", tc.name, got, err)
			}
			if err := owner.RequireConfirmed(db.Gorm, tc.id); !errors.Is(err, tc.require) || (tc.require == nil) != (err == nil) {
				t.Errorf("%s: RequireConfirmed = %v, want %v", tc.name, err, tc.require)
			}
			err = db.Tx(t.Context(), func(tx *gorm.DB) error {
				got, err := owner.Lock(tx, db.Dialect, tc.id)
				if got != tc.want || (err != nil) != (tc.require == owner.ErrNotFound) {
					t.Errorf("%s: Lock = %v, %v", tc.name, got, err)
				}
				return owner.LockConfirmed(tx, db.Dialect, tc.id)
			})
			if !errors.Is(err, tc.require) || (tc.require == nil) != (err == nil) {
				t.Errorf("%s: LockConfirmed = %v, want %v", tc.name, err, tc.require)
			}
		}
		if db.Dialect != store.Postgres {
			return
		}
		// The lock holds until the transaction ends: a second one's
		// NOWAIT lock of the same row is refused meanwhile.
		err := db.Tx(t.Context(), func(tx *gorm.DB) error {
			if _, err := owner.Lock(tx, db.Dialect, confirmed); err != nil {
				return err
			}
			err := db.Gorm.Exec(`SELECT id FROM users WHERE id = ? FOR UPDATE NOWAIT`, confirmed).Error
			if pg := (*pgconn.PgError)(nil); !errors.As(err, &pg) || pg.Code != "55P03" {
				t.Errorf("the row was not locked: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
