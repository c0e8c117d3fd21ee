package topupread_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/topupread"
)

// TestOpenForUser: the wallet page's payments in progress are the user's
// awaiting_payment, pending_verification and needs_review payments (not
// created, credited or failed ones, not another user's), newest first,
// up to the limit. Its index use on PostgreSQL is checked by
// TestOpenForUserUsesItsPartialIndex.
func TestOpenForUser(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rows := topuptest.SeedN(t, db, 120) // every status, three users
		svc := topupread.New(db)
		users := map[int64]bool{}
		for _, r := range rows {
			users[r.UserID] = true
		}
		open := map[string]bool{"awaiting_payment": true, "pending_verification": true, "needs_review": true}
		for _, limit := range []int{1, 7, 10, 100} {
			for uid := range users {
				var want []int64
				for _, r := range rows {
					if r.UserID == uid && open[r.Status] {
						want = append(want, r.ID)
					}
				}
				sort.Slice(want, func(i, j int) bool { return want[i] > want[j] })
				if len(want) > limit {
					want = want[:limit]
				}
				got, err := svc.OpenForUser(context.Background(), uid, limit)
				if err != nil {
					t.Fatal(err)
				}
				ids := make([]int64, len(got))
				for i, p := range got {
					ids[i] = p.ID
					if !open[string(p.Status)] || p.UserID != uid {
						t.Errorf("user %d: payment %d of user %d in status %s listed as open", uid, p.ID, p.UserID, p.Status)
					}
				}
				if !slices.Equal(ids, want) {
					t.Errorf("user %d, limit %d: got %v, want %v", uid, limit, ids, want)
				}
			}
		}
	})
}

// On SQLite too the wallet page's open payments come from the partial
// index: SQLite uses one only when the query names its condition as the
// index does (migration 00008 and OpenForUser must agree).
func TestOpenForUserUsesItsPartialIndexOnSQLite(t *testing.T) {
	db := storetest.New(t, store.SQLite)
	topuptest.SeedN(t, db, 50)
	var sql string
	if err := db.Gorm.Callback().Query().After("gorm:query").Register("open_test:capture", func(tx *gorm.DB) {
		sql = tx.Dialector.Explain(tx.Statement.SQL.String(), tx.Statement.Vars...)
	}); err != nil {
		t.Fatal(err)
	}
	svc := topupread.New(db)
	if _, err := svc.OpenForUser(context.Background(), 1, 10); err != nil {
		t.Fatal(err)
	}
	if sql == "" {
		t.Fatal("no statement captured")
	}
	var plan []struct {
		ID, Parent, Notused int
		Detail              string
	}
	if err := db.Gorm.Raw("EXPLAIN QUERY PLAN " + sql).Scan(&plan).Error; err != nil {
		t.Fatal(err)
	}
	var details []string
	for _, p := range plan {
		details = append(details, p.Detail)
	}
	if d := strings.Join(details, "; "); !strings.Contains(d, "topups_user_open_idx") {
		t.Errorf("OpenForUser on SQLite does not use topups_user_open_idx: %s\n%s", d, sql)
	}
}
