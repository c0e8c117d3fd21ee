package integrity_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
)

// Migration 00018 lets payments.status be settling: on a database at 00017
// whose pool's connections have all read the old schema, the upgrade turns
// a verified payment whose settle was unknown (pending_verification,
// settle_unknown, unheld) into settling with its event, leaves one held by
// an actor as it is, and afterwards every connection of the pool accepts
// settling (SQLite's in-place edit of the CHECK reaches connections opened
// before it) and still refuses a status that does not exist. Down turns
// settling back into the old spelling, and refuses settling again.
func TestMigrationSettling(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db, p := openAt(t, d, 17)
			now := time.Now()
			fillAt(t, db, 17, now)
			x := func(sql string, args ...any) {
				t.Helper()
				if err := db.Gorm.Exec(sql, args...).Error; err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			// TopUps 6 (unheld) and 7 (held right now): verified, settle
			// unknown, as the release before 00018 kept them.
			for _, id := range []int64{6, 7} {
				x(`INSERT INTO payments (id, public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, receipt,
					status, status_reason, created_at, updated_at, opened_at) VALUES (?, ?, 1, 1, 40000, 'mellat', ?, ?, ?,
					'pending_verification', 'settle_unknown', ?, ?, ?)`, id, "pubS"+string(rune('0'+id)), "formS"+string(rune('0'+id)),
					"RS"+string(rune('0'+id)), "SR"+string(rune('0'+id)), now.Add(-10*time.Minute).UTC(), now.Add(-9*time.Minute).UTC(), now.Add(-10*time.Minute).UTC())
				for _, e := range [][2]string{{"created", "awaiting_payment"}, {"awaiting_payment", "pending_verification"}} {
					x(`INSERT INTO payment_events (payment_id, from_status, to_status, actor, created_at) VALUES (?, ?, ?, 'callback', ?)`,
						id, e[0], e[1], now.Add(-9*time.Minute).UTC())
				}
			}
			x(`UPDATE payments SET lease_owner = 'w1', lease_until = ? WHERE id = 7`, now.Add(time.Minute).UTC())

			// Every connection of the pool reads the old schema first.
			conns := holdConns(t, db, 4)
			for _, c := range conns {
				if _, err := c.ExecContext(ctx, `UPDATE payments SET status = 'settling' WHERE id = 5`); err == nil {
					t.Fatal("settling accepted before 00018")
				}
			}
			release(conns)

			if err := db.Migrate(ctx, nil, store.PerSchemaLock()); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			// The table's name: topups at the latest (00023), payments again
			// after the way down below.
			table := "topups"
			status := func(id int64) (s, reason string) {
				t.Helper()
				if err := db.Gorm.Raw(`SELECT status, status_reason FROM `+table+` WHERE id = ?`, id).Row().Scan(&s, &reason); err != nil {
					t.Fatal(err)
				}
				return s, reason
			}
			if s, _ := status(6); s != "settling" {
				t.Errorf("unheld settle_unknown payment: %s, want settling", s)
			}
			if s, r := status(7); s != "pending_verification" || r != "settle_unknown" {
				t.Errorf("held settle_unknown payment: %s %s, want left as it was", s, r)
			}
			var ev struct{ From, To, Actor string }
			if err := db.Gorm.Raw(`SELECT from_status, to_status, actor FROM topup_events WHERE topup_id = 6 ORDER BY id DESC LIMIT 1`).
				Row().Scan(&ev.From, &ev.To, &ev.Actor); err != nil || ev.From != "pending_verification" || ev.To != "settling" {
				t.Errorf("payment 6's last event %+v %v, want pending_verification → settling", ev, err)
			}
			x(`UPDATE topups SET lease_owner = '', lease_until = NULL WHERE id = 7`)
			rep, err := integrity.Check(ctx, db, integrity.Options{Now: now, CreatedDeadline: 5 * time.Minute, OpenDeadline: 3 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Fatalf("check after 00018: %v", rep.Violations())
			}

			conns = holdConns(t, db, 4)
			for i, c := range conns {
				if _, err := c.ExecContext(ctx, `UPDATE topups SET status = 'settling' WHERE id = 5`); err != nil {
					t.Errorf("connection %d refuses settling after 00018: %v", i, err)
				}
				if _, err := c.ExecContext(ctx, `UPDATE topups SET status = 'paid' WHERE id = 5`); err == nil {
					t.Errorf("connection %d accepts an unknown status after 00018", i)
				}
			}
			release(conns)
			x(`UPDATE topups SET status = 'awaiting_payment' WHERE id = 5`)
			if d == store.SQLite {
				var ok string
				if err := db.Gorm.Raw(`PRAGMA integrity_check`).Row().Scan(&ok); err != nil || ok != "ok" {
					t.Errorf("integrity_check after 00018: %q %v", ok, err)
				}
			}

			if _, err := p.DownTo(ctx, 17); err != nil {
				t.Fatalf("down to 17: %v", err)
			}
			table = "payments"
			if s, r := status(6); s != "pending_verification" || r != "settle_unknown" {
				t.Errorf("after down: %s %s, want pending_verification settle_unknown", s, r)
			}
			conns = holdConns(t, db, 4)
			for i, c := range conns {
				if _, err := c.ExecContext(ctx, `UPDATE payments SET status = 'settling' WHERE id = 5`); err == nil {
					t.Errorf("connection %d accepts settling after down", i)
				}
			}
			release(conns)
		})
	}
}

// holdConns takes n distinct connections of db's pool at once, so that a
// statement run on each runs on n connections, each with the schema it
// read before.
func holdConns(t *testing.T, db *store.DB, n int) []*sql.Conn {
	t.Helper()
	out := make([]*sql.Conn, 0, n)
	for range n {
		c, err := db.SQL().Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func release(cs []*sql.Conn) {
	for _, c := range cs {
		_ = c.Close()
	}
}
