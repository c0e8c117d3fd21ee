package integrity_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// Migration 00045: an open card refund's hold, made for 180 days before
// it, is made for a hundred years from when it was made, as new ones are
// (cardrefund.HoldLife); a card refund's hold that ended and another
// reason's open hold keep their time. The new time reads back as a time
// on both databases.
func TestMigrationCardRefundHoldsOutliveReview(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db, _ := openAt(t, d, 44)
			made := time.Now().Add(-10 * 24 * time.Hour).UTC().Truncate(time.Millisecond)
			old := made.Add(180 * 24 * time.Hour)
			var account int64
			if err := db.Gorm.Raw(`SELECT id FROM ledger_accounts WHERE code = 'suspense'`).Scan(&account).Error; err != nil || account == 0 {
				t.Fatalf("an account to hold on: %d %v", account, err)
			}
			for _, h := range []struct {
				reason, reference, status string
			}{
				{"card_refund", "cr_open", "open"},
				{"card_refund", "cr_released", "released"},
				{"charge", "ch_open", "open"},
			} {
				var ended any
				if h.status != "open" {
					ended = made.Add(time.Hour)
				}
				if err := db.Gorm.Exec(`INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, expires_at, created_at, ended_at)
					VALUES (?, 1000, ?, ?, ?, ?, ?, ?)`, account, h.reason, h.reference, h.status, old, made, ended).Error; err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Migrate(ctx, nil, store.PerSchemaLock()); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			expires := func(ref string) time.Time {
				t.Helper()
				var h struct{ ExpiresAt time.Time }
				if err := db.Gorm.Raw(`SELECT expires_at FROM ledger_holds WHERE reference = ?`, ref).Scan(&h).Error; err != nil {
					t.Fatal(err)
				}
				return h.ExpiresAt
			}
			if got, want := expires("cr_open"), made.Add(36500*24*time.Hour); !got.Equal(want) {
				t.Errorf("the open card refund's hold expires at %s, want %s", got, want)
			}
			for _, ref := range []string{"cr_released", "ch_open"} {
				if got := expires(ref); !got.Equal(old) {
					t.Errorf("%s expires at %s after the migration, want %s as before", ref, got, old)
				}
			}
			// The ledger's own read of a due hold still compares times.
			var due int64
			if err := db.Gorm.Raw(`SELECT COUNT(*) FROM ledger_holds WHERE status = 'open' AND expires_at <= ?`,
				made.Add(200*24*time.Hour)).Scan(&due).Error; err != nil || due != 1 {
				t.Errorf("%d holds due 200 days on (want the charge's alone): %v", due, err)
			}
		})
	}
}
