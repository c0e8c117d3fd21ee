package api_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
	"github.com/kifpool/kifpool/web/api"
)

// /metrics counts a real charge flow's committed moves and their money:
// created, confirmed (automatic and manual), captured, canceled, expired
// and refunded, and never a replay.
func TestChargeMetrics(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		f := start(t, db, apptest.Options{Env: map[string]string{"METRICS_TOKEN": apptest.MetricsToken}, Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		shop, _ := f.merchant(t, "shop@example.com")
		_, payerID := f.user(t, "payer@example.com", apitoken.ScopeRead)
		f.fund(t, payerID, 1_000_000)
		create := func(key, order, capture string, rials int64) api.Charge {
			t.Helper()
			a := shop.post(routes.APICharges, key, chargeBody(rials, order, capture))
			if a.Status != http.StatusCreated {
				t.Fatalf("create %s: %d %s", key, a.Status, a.Body)
			}
			return decode[api.Charge](t, a)
		}
		auto := create("c-1", "o-1", "automatic", 300_000)
		create("c-1", "o-1", "automatic", 300_000) // a replay: not a move
		if _, err := f.app.Server.Charges.Confirm(ctx, payerID, auto.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.app.Server.Charges.Confirm(ctx, payerID, auto.ID); err != nil { // a replay
			t.Fatal(err)
		}
		for _, r := range []struct {
			key   string
			rials string
		}{{"r-1", "100000"}, {"r-1", "100000"}, {"r-2", "50000"}} {
			if a := shop.post(routes.APIChargeRefunds(auto.ID), r.key, `{"amount_rials": `+r.rials+`}`); a.Status != http.StatusCreated {
				t.Fatalf("refund %s: %d %s", r.key, a.Status, a.Body)
			}
		}
		man := create("c-2", "o-2", "manual", 400_000)
		if _, err := f.app.Server.Charges.Confirm(ctx, payerID, man.ID); err != nil {
			t.Fatal(err)
		}
		if a := shop.post(routes.APIChargeCapture(man.ID), "cap-1", `{"amount_rials": 250000}`); a.Status != http.StatusOK {
			t.Fatalf("capture: %d %s", a.Status, a.Body)
		}
		canceled := create("c-3", "o-3", "manual", 1_000)
		if a := shop.post(routes.APIChargeCancel(canceled.ID), "", ""); a.Status != http.StatusOK {
			t.Fatalf("cancel: %d %s", a.Status, a.Body)
		}
		create("c-4", "o-4", "automatic", 2_000)
		clock.Advance(31 * time.Minute)
		if n, err := f.app.Server.Charges.ExpireDue(ctx, 10); err != nil || n != 1 {
			t.Fatalf("expired %d, %v", n, err)
		}

		req, _ := http.NewRequest(http.MethodGet, f.app.URL+routes.Metrics, nil)
		req.Header.Set("Authorization", "Bearer "+apptest.MetricsToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		body := string(raw)
		for series, want := range map[string]float64{
			`kifpool_charge_moves_total{actor="merchant",move="created"}`:  4,
			`kifpool_charge_moves_total{actor="payer",move="confirmed"}`:   2,
			`kifpool_charge_moves_total{actor="merchant",move="captured"}`: 1,
			`kifpool_charge_moves_total{actor="merchant",move="canceled"}`: 1,
			`kifpool_charge_moves_total{actor="worker",move="expired"}`:    1,
			`kifpool_charge_moves_total{actor="merchant",move="refunded"}`: 2,
			`kifpool_charge_paid_rials_total`:                              550_000,
			`kifpool_charge_refunded_rials_total`:                          150_000,
			`kifpool_charge_refund_amount_rials_count`:                     2,
			`kifpool_charge_refund_amount_rials_bucket{le="100000"}`:       2,
			`kifpool_charge_refund_amount_rials_bucket{le="10000"}`:        0,
		} {
			if got := apptest.MetricValue(t, body, series); got != want {
				t.Errorf("%s = %v, want %v", series, got, want)
			}
		}
	})
}

// API_CHARGES_PER_MINUTE limits new charges per merchant token: above it,
// 429 rate_limited with Retry-After, nothing written and nothing stored
// (the same key goes through once the minute has passed); another token
// of the same merchant has its own allowance.
func TestChargeRateLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		f := start(t, db, apptest.Options{Env: map[string]string{"API_CHARGES_PER_MINUTE": "2"}, Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		shop, shopID := f.merchant(t, "shop@example.com")
		for i, key := range []string{"c-1", "c-2"} {
			if a := shop.post(routes.APICharges, key, chargeBody(1_000, key, "automatic")); a.Status != http.StatusCreated {
				t.Fatalf("charge %d: %d %s", i, a.Status, a.Body)
			}
		}
		over := shop.post(routes.APICharges, "c-3", chargeBody(1_000, "c-3", "automatic"))
		if over.Status != http.StatusTooManyRequests || over.Code() != "rate_limited" || over.Header.Get("Retry-After") == "" ||
			over.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("over the limit: %d %s %v", over.Status, over.Body, over.Header)
		}
		if cs, _, err := f.app.Server.Charges.List(ctx, charge.Filter{MerchantUserID: shopID, Limit: 10}); err != nil || len(cs) != 2 {
			t.Fatalf("%d charges written, want 2 (%v)", len(cs), err)
		}
		// Another token of the same merchant counts apart.
		other := f.token(t, shopID, apitoken.ScopeCharges)
		if a := other.post(routes.APICharges, "o-1", chargeBody(1_000, "o-1", "automatic")); a.Status != http.StatusCreated {
			t.Fatalf("another token: %d %s", a.Status, a.Body)
		}
		// A minute on, the refused key goes through: its 429 was not stored.
		clock.Advance(time.Minute + time.Second)
		if a := shop.post(routes.APICharges, "c-3", chargeBody(1_000, "c-3", "automatic")); a.Status != http.StatusCreated {
			t.Fatalf("after the minute: %d %s", a.Status, a.Body)
		}
	})
}
