package store_test

import (
	"reflect"
	"testing"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// store.Scan fills what GORM's Scan fills, on both dialects: every row
// into a slice, the first into a struct or a value, nothing (and no
// error) when there is no row, a write's RETURNING; a bad statement is an
// error. It traces the statement once, as GORM's Scan does.
func TestScanIsGormsScan(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		g := db.Gorm
		if err := g.Exec(`CREATE TABLE scan_probe (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n BIGINT)`).Error; err != nil {
			t.Fatal(err)
		}
		if err := g.Exec(`INSERT INTO scan_probe (id, name, n) VALUES (1, 'a', 10), (2, 'b', NULL), (3, 'c', 30)`).Error; err != nil {
			t.Fatal(err)
		}
		type row struct {
			ID   int64
			Name string
			N    *int64
		}
		cases := []struct {
			name string
			q    func(*gorm.DB) *gorm.DB
			dest func() any
		}{
			{"rows into a slice", func(g *gorm.DB) *gorm.DB { return g.Raw(`SELECT id, name, n FROM scan_probe ORDER BY id`) }, func() any { return &[]row{} }},
			{"no rows into a slice", func(g *gorm.DB) *gorm.DB { return g.Raw(`SELECT id, name, n FROM scan_probe WHERE id > ?`, 9) }, func() any { return &[]row{} }},
			{"first row into a struct", func(g *gorm.DB) *gorm.DB { return g.Raw(`SELECT id, name, n FROM scan_probe ORDER BY id DESC`) }, func() any { return &row{} }},
			{"no row leaves a struct", func(g *gorm.DB) *gorm.DB { return g.Raw(`SELECT id, name, n FROM scan_probe WHERE id < 0`) }, func() any { return &row{ID: 7, Name: "kept"} }},
			{"a count", func(g *gorm.DB) *gorm.DB { return g.Raw(`SELECT COUNT(*) FROM scan_probe WHERE n IS NOT NULL`) }, func() any { return new(int64) }},
			{"a built query", func(g *gorm.DB) *gorm.DB {
				return g.Table("scan_probe").Select("name").Where("id IN ?", []int{1, 3}).Order("id")
			}, func() any { return &[]string{} }},
			{"a write's RETURNING", func(g *gorm.DB) *gorm.DB {
				return g.Raw(`UPDATE scan_probe SET name = name WHERE id >= ? RETURNING id, name`, 2)
			}, func() any { return &[]row{} }},
		}
		cdb, counter := storetest.Counting(t, db)
		for _, c := range cases {
			run := func(scan func(q *gorm.DB, dest any) error) (any, int, error) {
				t.Helper()
				dest := c.dest()
				counter.Reset()
				err := scan(c.q(cdb.Gorm), dest)
				stmts, _ := counter.Take()
				return dest, len(stmts), err
			}
			want, _, wantErr := run(func(q *gorm.DB, dest any) error { return q.Scan(dest).Error })
			got, n, err := run(store.Scan)
			if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %+v (%v), GORM's Scan %+v (%v)", c.name, reflect.ValueOf(got).Elem(), err, reflect.ValueOf(want).Elem(), wantErr)
			}
			if n != 1 {
				t.Errorf("%s: traced %d statements, want 1", c.name, n)
			}
		}
		var n int64
		if err := store.Scan(g.Raw(`SELECT nope FROM scan_probe`), &n); err == nil {
			t.Error("a bad statement scanned without an error")
		}
		// A duplicate key in a write's RETURNING is a unique violation,
		// as GORM's Scan reports it (SQLite reports it at the first row,
		// not at the query, and GORM translates it there).
		for _, scan := range []func(q *gorm.DB, dest any) error{func(q *gorm.DB, dest any) error { return q.Scan(dest).Error }, store.Scan} {
			var ids []int64
			err := scan(g.Raw(`INSERT INTO scan_probe (id, name) VALUES (1, 'again') RETURNING id`), &ids)
			if !store.IsUniqueViolation(err) {
				t.Errorf("a duplicate key: %v, want a unique violation", err)
			}
		}
	})
}
