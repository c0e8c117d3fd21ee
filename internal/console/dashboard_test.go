package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/console"
	"github.com/kifpool/kifpool/internal/payment/paymenttest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

func TestDashboardAggregates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rows := paymenttest.SeedN(t, db, 48) // created at Base + 0..7 hours
		c := console.New(db)
		ctx := context.Background()
		now := paymenttest.SeedBase.Add(7*time.Hour + 30*time.Minute)
		hours, err := c.TopUpsByHour(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(hours) != 24 || !hours[23].Start.Equal(paymenttest.SeedBase.Add(7*time.Hour)) {
			t.Fatalf("%d hours, last at %v", len(hours), hours[len(hours)-1].Start)
		}
		want := map[time.Time]*console.HourBucket{}
		for _, r := range rows {
			h := r.CreatedAt.Truncate(time.Hour)
			if want[h] == nil {
				want[h] = &console.HourBucket{}
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
				w = &console.HourBucket{}
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
		db.Gorm.Exec(`UPDATE payments SET opened_at = created_at`)
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
	})
}
