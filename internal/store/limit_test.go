package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// TestLimitsAreLiterals: GORM writes LIMIT and OFFSET numbers into the SQL
// on both dialects (no parameter: PostgreSQL's cached generic plans are
// costed with them), and they still select the right rows.
func TestLimitsAreLiterals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		for i := range 7 {
			if err := db.Gorm.Exec(`INSERT INTO users (email, password_hash, role, locale, created_at) VALUES (?, 'x', 'user', 'fa', ?)`,
				"u"+string(rune('a'+i))+"@example.com", now).Error; err != nil {
				t.Fatal(err)
			}
		}
		var all []int64
		if err := db.Gorm.Table("users").Order("id").Pluck("id", &all).Error; err != nil || len(all) != 7 {
			t.Fatalf("ids %v, %v", all, err)
		}
		type user struct{ ID int64 }
		tests := []struct {
			name     string
			q        func(*gorm.DB) *gorm.DB
			want     []int64
			sqlParts []string // as written, per dialect spelling aside
		}{
			{"limit", func(tx *gorm.DB) *gorm.DB { return tx.Limit(3) }, all[:3], []string{"LIMIT 3"}},
			{"limit and offset", func(tx *gorm.DB) *gorm.DB { return tx.Limit(2).Offset(4) }, all[4:6], []string{"LIMIT 2 OFFSET 4"}},
			{"offset alone", func(tx *gorm.DB) *gorm.DB { return tx.Offset(5) }, all[5:], []string{"OFFSET 5"}},
			{"limit 0 reads nothing", func(tx *gorm.DB) *gorm.DB { return tx.Limit(0) }, nil, []string{"LIMIT 0"}},
			{"no limit", func(tx *gorm.DB) *gorm.DB { return tx.Limit(-1) }, all, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				stmt := tc.q(db.Gorm.Session(&gorm.Session{DryRun: true}).WithContext(ctx).Table("users").Select("id").Order("id")).Find(&[]user{}).Statement
				sql := stmt.SQL.String()
				for _, p := range tc.sqlParts {
					if !strings.Contains(sql, p) {
						t.Errorf("%s: %q does not contain %q", db.Dialect, sql, p)
					}
				}
				if len(stmt.Vars) != 0 {
					t.Errorf("%s: %q binds %v", db.Dialect, sql, stmt.Vars)
				}
				var got []user
				if err := tc.q(db.Gorm.WithContext(ctx).Table("users").Select("id").Order("id")).Find(&got).Error; err != nil {
					t.Fatal(err)
				}
				ids := make([]int64, len(got))
				for i, u := range got {
					ids[i] = u.ID
				}
				if !slices.Equal(ids, tc.want) && !(len(ids) == 0 && len(tc.want) == 0) {
					t.Errorf("got %v, want %v", ids, tc.want)
				}
			})
		}
	})
}
