package integrity_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
)

// Migration 00056 lets topups.status be reversing and adds the reverse's
// intent (reverse_sent_at): on a database at 00055 whose pool's
// connections have all read the old schema, afterwards every connection
// accepts reversing (SQLite's in-place edit of the CHECK reaches
// connections opened before it) and still refuses a status that does not
// exist; `kifpool check` passes with a reversing top-up. Down sends a
// reversing top-up to review with its event, and refuses reversing again.
func TestMigrationReversing(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db, p := openAt(t, d, 55)
			now := time.Now()
			fillAt(t, db, 55, now)
			x := func(sql string, args ...any) {
				t.Helper()
				if err := db.Gorm.Exec(sql, args...).Error; err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			conns := holdConns(t, db, 4)
			for _, c := range conns {
				if _, err := c.ExecContext(ctx, `UPDATE topups SET status = 'reversing' WHERE id = 5`); err == nil {
					t.Fatal("reversing accepted before 00056")
				}
			}
			release(conns)
			if err := db.Migrate(ctx, nil, store.PerSchemaLock()); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			conns = holdConns(t, db, 4)
			for i, c := range conns {
				if _, err := c.ExecContext(ctx, `UPDATE topups SET status = 'reversing', reverse_sent_at = NULL WHERE id = 5`); err != nil {
					t.Errorf("connection %d refuses reversing after 00056: %v", i, err)
				}
				if _, err := c.ExecContext(ctx, `UPDATE topups SET status = 'reversed' WHERE id = 5`); err == nil {
					t.Errorf("connection %d accepts an unknown status after 00056", i)
				}
			}
			release(conns)
			var from string
			if err := db.Gorm.Raw(`SELECT to_status FROM topup_events WHERE topup_id = 5 ORDER BY id DESC LIMIT 1`).Row().Scan(&from); err != nil {
				t.Fatal(err)
			}
			x(`UPDATE topups SET status = ? WHERE id = 5`, from)
			x(`INSERT INTO topup_events (topup_id, from_status, to_status, actor, reason, created_at) VALUES (5, ?, 'reversing', 'worker', 'amount_mismatch', ?)`,
				from, now.UTC())
			x(`UPDATE topups SET status = 'reversing', status_reason = 'amount_mismatch', reverse_sent_at = ? WHERE id = 5`, now.UTC())
			rep, err := integrity.Check(ctx, db, integrity.Options{Now: now, CreatedDeadline: 5 * time.Minute, OpenDeadline: 3 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Fatalf("check after 00056: %v", rep.Violations())
			}
			if d == store.SQLite {
				var ok string
				if err := db.Gorm.Raw(`PRAGMA integrity_check`).Row().Scan(&ok); err != nil || ok != "ok" {
					t.Errorf("integrity_check after 00056: %q %v", ok, err)
				}
			}
			if _, err := p.DownTo(ctx, 55); err != nil {
				t.Fatalf("down to 55: %v", err)
			}
			var st, reason, last string
			if err := db.Gorm.Raw(`SELECT status, status_reason FROM topups WHERE id = 5`).Row().Scan(&st, &reason); err != nil {
				t.Fatal(err)
			}
			if err := db.Gorm.Raw(`SELECT from_status || ' → ' || to_status FROM topup_events WHERE topup_id = 5 ORDER BY id DESC LIMIT 1`).Row().Scan(&last); err != nil {
				t.Fatal(err)
			}
			// Its reverse was sent: not "window closed" (read as never
			// sent), but unknown, for a person to ask the bank.
			if st != "needs_review" || reason != "unknown_too_long" || last != "reversing → needs_review" {
				t.Errorf("after down: %s %s, last event %s; want needs_review (unknown_too_long) with its event", st, reason, last)
			}
			conns = holdConns(t, db, 4)
			for i, c := range conns {
				if _, err := c.ExecContext(ctx, `UPDATE topups SET status = 'reversing' WHERE id = 5`); err == nil {
					t.Errorf("connection %d accepts reversing after down", i)
				}
			}
			release(conns)
			if _, err := p.UpTo(ctx, 56); err != nil {
				t.Fatalf("up again: %v", err)
			}
		})
	}
}
