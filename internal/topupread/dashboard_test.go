package topupread_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/topupread"
)

func TestDashboardAggregates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rows := topuptest.SeedN(t, db, 48) // created at Base + 0..7 hours
		c := topupread.New(db)
		ctx := context.Background()
		now := topuptest.SeedBase.Add(7*time.Hour + 30*time.Minute)
		hours, err := c.TopUpsByHour(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		// Tehran's hours (+03:30): the last begins at the whole Tehran hour
		// before now, 07:00 UTC is 10:30 in Tehran, in the hour from 10:00.
		tehran := i18n.Tehran()
		last := hours[len(hours)-1].Start
		if len(hours) != 24 || last.After(now) || now.Sub(last) >= time.Hour || last.In(tehran).Minute() != 0 {
			t.Fatalf("%d hours, last at %v (Tehran %v), now %v", len(hours), last, last.In(tehran), now)
		}
		for i, h := range hours {
			if h.Start.In(tehran).Minute() != 0 || h.Start.In(tehran).Second() != 0 || (i > 0 && h.Start.Sub(hours[i-1].Start) != time.Hour) {
				t.Fatalf("hour %d starts at %v in Tehran: not a whole hour after the one before", i, h.Start.In(tehran))
			}
		}
		want := map[time.Time]*topupread.HourBucket{}
		for _, r := range rows {
			local := r.CreatedAt.In(tehran)
			h := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), 0, 0, 0, tehran).UTC()
			if want[h] == nil {
				want[h] = &topupread.HourBucket{}
			}
			want[h].Total++
			if r.Status == "credited" {
				want[h].Credited++
			}
			if r.Status == "failed" {
				want[h].Failed++
			}
		}
		var total int64
		for _, h := range hours {
			w := want[h.Start]
			if w == nil {
				w = &topupread.HourBucket{}
			}
			if h.Total != w.Total || h.Credited != w.Credited || h.Failed != w.Failed {
				t.Errorf("hour %v: %+v, want %+v", h.Start, h, *w)
			}
			total += h.Total
		}
		if total != int64(len(rows)) {
			t.Errorf("%d payments in the day, want %d", total, len(rows))
		}

		// Latency: 100 verify calls of 1..100 ms, 10 request calls of 50 ms.
		for i := 1; i <= 100; i++ {
			db.Gorm.Exec(`INSERT INTO gateway_calls (gateway, operation, attempt, started_at, duration_ms, outcome) VALUES ('zarinpal', 'verify', 1, ?, ?, 'paid')`, now.Add(-time.Duration(i)*time.Minute), i)
		}
		for i := 0; i < 10; i++ {
			db.Gorm.Exec(`INSERT INTO gateway_calls (gateway, operation, attempt, started_at, duration_ms, outcome) VALUES ('zarinpal', 'request', 1, ?, 50, 'ok')`, now.Add(-time.Minute))
		}
		db.Gorm.Exec(`INSERT INTO gateway_calls (gateway, operation, attempt, started_at, duration_ms, outcome) VALUES ('zarinpal', 'request', 1, ?, 9999, 'ok')`, now.Add(-25*time.Hour))
		lat, err := c.BankLatency(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(lat) != 2 || lat[0].Operation != "request" || lat[0].P99 != 50 || lat[0].Calls != 10 ||
			lat[1].Operation != "verify" || lat[1].P50 != 50 || lat[1].P90 != 90 || lat[1].P99 != 99 {
			t.Errorf("latency %+v", lat)
		}

		// Backlog, the worker's rule: pending_verification due now, and
		// awaiting_payment opened an hour or more ago (the grace).
		db.Gorm.Exec(`UPDATE topups SET opened_at = created_at`)
		b, err := c.WorkerBacklog(ctx, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var due int64
		oldest := now
		for _, r := range rows {
			since := r.CreatedAt
			if r.Status == "awaiting_payment" {
				since = since.Add(time.Hour)
			}
			if (r.Status == "awaiting_payment" || r.Status == "pending_verification") && !since.After(now) {
				due++
				if since.Before(oldest) {
					oldest = since
				}
			}
		}
		if b.Due != due || b.Lag != now.Sub(oldest) {
			t.Errorf("backlog %+v, want %d due, lag %v", b, due, now.Sub(oldest))
		}
		// A reversing payment whose check is two days late (its reverse's
		// window long gone): in the backlog, its wait the lag.
		for _, r := range rows {
			if r.Status == "credited" {
				db.Gorm.Exec(`UPDATE topups SET status = 'reversing', next_check_at = ? WHERE id = ?`, now.Add(-48*time.Hour), r.ID)
				break
			}
		}
		if b, err = c.WorkerBacklog(ctx, now, time.Hour); err != nil || b.Due != due+1 || b.Lag != 48*time.Hour {
			t.Errorf("backlog with a reversing payment due %+v %v, want %d due, lag 48h", b, err, due+1)
		}
	})
}

// TestTotals: the dashboard's totals by status are exact up to TotalCap
// per status. Above it, PostgreSQL's estimate is used, marked as one,
// never below TotalCap+1, close to the truth after ANALYZE and rounded to
// three significant digits; SQLite counts exactly. The unresolved
// payments are the open and under-review ones, oldest first.
func TestTotals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rows := topuptest.SeedN(t, db, 120)
		r := topupread.New(db)
		ctx := context.Background()
		want := map[string]int64{}
		for _, row := range rows {
			want[row.Status]++
		}
		d, err := r.Dashboard(ctx, topuptest.SeedBase.Add(8*time.Hour), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Totals) != len(topupread.Statuses) {
			t.Fatalf("%d totals, want %d", len(d.Totals), len(topupread.Statuses))
		}
		for i, tot := range d.Totals {
			if tot.Status != topupread.Statuses[i] || tot.N != want[tot.Status] || tot.Estimate {
				t.Errorf("total %+v, want %s: %d exactly", tot, topupread.Statuses[i], want[tot.Status])
			}
		}
		open := topuptest.InListOrder(rows, true, func(row topuptest.SeedRow) bool {
			return row.Status != "credited" && row.Status != "failed"
		})
		if more := len(open) > topupread.DashboardUnresolved; more {
			open = open[:topupread.DashboardUnresolved]
			if !d.MoreUnresolved {
				t.Error("more unresolved than shown, not said")
			}
		} else if d.MoreUnresolved {
			t.Error("all unresolved shown, more said")
		}
		if len(d.Unresolved) != len(open) {
			t.Fatalf("%d unresolved, want %d", len(d.Unresolved), len(open))
		}
		for i, u := range d.Unresolved {
			if u.PublicID != open[i].PublicID || u.Email != open[i].Email {
				t.Errorf("unresolved #%d: %s (%s), want %s (%s)", i, u.PublicID, u.Email, open[i].PublicID, open[i].Email)
			}
		}

		// Many failed payments: more than the cap.
		const many = topupread.TotalCap + 2_500
		err = db.Gorm.Exec(`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
			INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, status, created_at, updated_at)
			SELECT 'many' || n, ?, ?, 10000, 'zarinpal', 'many' || n, 'failed', ?, ? FROM g`,
			many, rows[0].UserID, rows[0].WalletID, topuptest.SeedBase, topuptest.SeedBase).Error
		if err != nil {
			t.Fatal(err)
		}
		failed := want["failed"] + many
		if db.Dialect == store.Postgres {
			if err := db.Gorm.Exec(`ANALYZE topups`).Error; err != nil {
				t.Fatal(err)
			}
		}
		tots, err := r.Totals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tot := range tots {
			switch {
			case tot.Status != "failed":
				if tot.N != want[tot.Status] || tot.Estimate {
					t.Errorf("total %+v, want %d exactly", tot, want[tot.Status])
				}
			case db.Dialect == store.SQLite:
				if tot.N != failed || tot.Estimate {
					t.Errorf("SQLite: failed %+v, want %d exactly", tot, failed)
				}
			default:
				if !tot.Estimate || tot.N <= topupread.TotalCap || tot.N < failed*9/10 || tot.N > failed*11/10 {
					t.Errorf("PostgreSQL: failed %+v, want an estimate near %d above %d", tot, failed, topupread.TotalCap)
				}
				unit := int64(1) // three significant digits: 3,527 → 3,530
				for tot.N/unit >= 1000 {
					unit *= 10
				}
				if tot.N%unit != 0 || unit == 1 {
					t.Errorf("estimate %d not rounded to three significant digits", tot.N)
				}
			}
		}
	})
}

// TestBankLatencyNearestRank: each percentile is the duration at rank
// ceil(p/100 × n) of the operation's sorted durations, on both databases
// (PostgreSQL ranks with percentile_disc, SQLite with ROW_NUMBER), for
// sizes around the steps of p × n and for a single call; calls older than
// a day do not count.
func TestBankLatencyNearestRank(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		sizes := []int{1, 7, 10, 99, 110, 1000, 1010}
		for _, n := range sizes {
			// Durations 1..n in a scrambled order (n and 7919 share no factor).
			err := db.Gorm.Exec(`WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < ?)
				INSERT INTO gateway_calls (gateway, operation, attempt, started_at, duration_ms, outcome)
				SELECT 'zarinpal', ?, 1, ?, (i * 7919) % ? + 1, 'ok' FROM g`,
				n-1, fmt.Sprintf("op%05d", n), now.Add(-time.Hour), n).Error
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Gorm.Exec(`INSERT INTO gateway_calls (gateway, operation, attempt, started_at, duration_ms, outcome)
			VALUES ('zarinpal', 'op00001', 1, ?, 99999, 'ok')`, now.Add(-25*time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		lat, err := topupread.New(db).BankLatency(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		if len(lat) != len(sizes) {
			t.Fatalf("%d operations, want %d: %+v", len(lat), len(sizes), lat)
		}
		rank := func(p, n int) int64 { return int64((p*n + 99) / 100) } // durations are their own ranks
		for i, n := range sizes {
			l := lat[i]
			if l.Operation != fmt.Sprintf("op%05d", n) || l.Calls != n || l.P50 != rank(50, n) || l.P90 != rank(90, n) || l.P99 != rank(99, n) {
				t.Errorf("n=%d: %+v, want p50 %d p90 %d p99 %d", n, l, rank(50, n), rank(90, n), rank(99, n))
			}
		}
	})
}

// TestDashboardShowsTheOldestUnresolved: the dashboard lists at most
// DashboardUnresolved unresolved top-ups, the oldest, and says when there
// are more; with exactly that many it lists them all and says nothing.
func TestDashboardShowsTheOldestUnresolved(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rows := topuptest.SeedN(t, db, 1)
		r := topupread.New(db)
		ctx := context.Background()
		// Only these are unresolved: the seeded row is made final.
		if err := db.Gorm.Exec(`UPDATE topups SET status = 'failed'`).Error; err != nil {
			t.Fatal(err)
		}
		insert := func(from, to int) {
			t.Helper()
			err := db.Gorm.Exec(`WITH RECURSIVE g(n) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT n + 1 FROM g WHERE n < CAST(? AS INTEGER))
				INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, status, created_at, updated_at)
				SELECT 'open' || n, ?, ?, 10000, 'zarinpal', 'open' || n, 'needs_review', ?, ? FROM g`,
				from, to, rows[0].UserID, rows[0].WalletID, topuptest.SeedBase, topuptest.SeedBase).Error
			if err != nil {
				t.Fatal(err)
			}
		}
		n := topupread.DashboardUnresolved
		insert(1, n)
		d, err := r.Dashboard(ctx, topuptest.SeedBase.Add(time.Hour), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Unresolved) != n || d.MoreUnresolved {
			t.Fatalf("%d unresolved: %d shown, more %v; want all, no more", n, len(d.Unresolved), d.MoreUnresolved)
		}
		insert(n+1, n+1)
		if d, err = r.Dashboard(ctx, topuptest.SeedBase.Add(time.Hour), time.Hour); err != nil {
			t.Fatal(err)
		}
		if len(d.Unresolved) != n || !d.MoreUnresolved {
			t.Fatalf("%d unresolved: %d shown, more %v; want %d and more", n+1, len(d.Unresolved), d.MoreUnresolved, n)
		}
	})
}

// TestDashboardKeepsEndedHoursAndLatencyBriefly: the dashboard keeps its
// counts of the chart up to a minute before it counted for
// topupread.EndedHoursFresh, and the bank's latency for
// topupread.LatencyFresh (a clock the test moves). A top-up created since
// then shows at every load, even one whose insert was in flight when the
// counts were taken; a change in what was counted (an ended hour, or the
// hour in progress before the count) shows once EndedHoursFresh has
// passed, or as soon as another hour has begun; a new call to the bank
// once its minute has passed.
func TestDashboardKeepsEndedHoursAndLatencyBriefly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		topuptest.SeedN(t, db, 48) // created at Base + 0..7 whole UTC hours (:30 on Tehran's clock)
		r := topupread.New(db)
		ctx := context.Background()
		base := topuptest.SeedBase
		// 19:15 UTC: the hour in progress (Tehran's 22:00, from 18:30 UTC)
		// holds the top-ups of Base+7h; Base+0..6h are in ended hours.
		t0 := base.Add(7*time.Hour + 15*time.Minute)
		dash := func(at time.Time) topupread.Dashboard {
			t.Helper()
			d, err := r.Dashboard(ctx, at, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		exact := func(at time.Time) []topupread.HourBucket {
			t.Helper()
			h, err := r.TopUpsByHour(ctx, at)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if res := db.Gorm.Exec(q, args...); res.Error != nil || res.RowsAffected == 0 {
				t.Fatalf("%s: %v, %d rows", q, res.Error, res.RowsAffected)
			}
		}
		same := func(a, b []topupread.HourBucket) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

		// One top-up created on the very minute the first load's counts
		// end (t0 less a minute, on the minute): counted once, live.
		exec(`UPDATE topups SET created_at = ? WHERE public_id = ?`, t0.Add(-time.Minute).Truncate(time.Minute), topuptest.SeedPublicID(6))
		d0 := dash(t0)
		if !same(d0.Hours, exact(t0)) || len(d0.Latency) != 0 {
			t.Fatalf("first load: hours %v, want %v; latency %+v, want none", d0.Hours, exact(t0), d0.Latency)
		}
		// Two ended hours change (a top-up's row moves from one to the
		// other); one top-up moves into the hour in progress, created 20 s
		// before the first load (after the counts' minute: an insert that
		// was in flight); one counted in the hour in progress fails after
		// all; the bank answers a call.
		exec(`UPDATE topups SET created_at = ? WHERE public_id = ?`, base.Add(time.Hour), topuptest.SeedPublicID(3))
		exec(`UPDATE topups SET created_at = ? WHERE public_id = ?`, t0.Add(-20*time.Second), topuptest.SeedPublicID(2))
		var moved string
		if err := db.Gorm.Raw(`SELECT status FROM topups WHERE public_id = ?`, topuptest.SeedPublicID(2)).Scan(&moved).Error; err != nil {
			t.Fatal(err)
		}
		exec(`UPDATE topups SET status = 'failed' WHERE id = (SELECT MIN(id) FROM topups WHERE status <> 'failed' AND created_at >= ? AND created_at < ?)`,
			base.Add(7*time.Hour-45*time.Minute), t0.Add(-2*time.Minute))
		exec(`INSERT INTO gateway_calls (gateway, operation, attempt, started_at, duration_ms, outcome) VALUES ('zarinpal', 'verify', 1, ?, 70, 'paid')`, t0.Add(-time.Minute))

		t1 := t0.Add(30 * time.Second)
		d1, now1 := dash(t1), exact(t1)
		if same(d0.Hours[:23], now1[:23]) || now1[23].Failed != d0.Hours[23].Failed+1 {
			t.Fatal("the changes did not touch the counted hours: the test proves nothing")
		}
		// The hour in progress: the first load's counts, and the new one.
		want := d0.Hours[23]
		want.Total++
		switch moved {
		case "credited":
			want.Credited++
		case "failed":
			want.Failed++
		}
		if !same(d1.Hours[:23], d0.Hours[:23]) || d1.Hours[23] != want {
			t.Errorf("within %v: ended hours %v (want the first load's %v), hour in progress %+v (want %+v)",
				topupread.EndedHoursFresh, d1.Hours[:23], d0.Hours[:23], d1.Hours[23], want)
		}
		if len(d1.Latency) != 0 {
			t.Errorf("within %v: latency %+v, want the first load's (none)", topupread.LatencyFresh, d1.Latency)
		}

		t2 := t0.Add(topupread.EndedHoursFresh + 7*time.Minute) // 19:27, same hour
		d2 := dash(t2)
		if want := exact(t2); !same(d2.Hours, want) {
			t.Errorf("after %v: hours %v, want %v", topupread.EndedHoursFresh, d2.Hours, want)
		}
		if len(d2.Latency) != 1 || d2.Latency[0].Operation != "verify" || d2.Latency[0].P50 != 70 {
			t.Errorf("after %v: latency %+v, want the verify's 70 ms", topupread.LatencyFresh, d2.Latency)
		}

		// Another ended hour changes, and a new hour begins 4 minutes
		// after the last count: the hour just ended is counted, and so
		// is the change.
		exec(`UPDATE topups SET created_at = ? WHERE public_id = ?`, base.Add(time.Hour), topuptest.SeedPublicID(4))
		t3 := t2.Add(4 * time.Minute) // 19:31: Tehran's 23:01
		d3 := dash(t3)
		if want := exact(t3); !same(d3.Hours, want) {
			t.Errorf("in the next hour: hours %v, want %v", d3.Hours, want)
		}
	})
}
