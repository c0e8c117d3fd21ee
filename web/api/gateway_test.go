package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/web/api"
)

// TestTopUpGateway: the API takes an optional gateway and says which one
// the payment went to; one not offered is refused (422, nothing stored);
// with the chosen gateway down (its breaker open after the bank failed,
// by fault injection) the next healthy one is used and named.
func TestTopUpGateway(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{
			"BREAKER_MIN_REQUESTS": "1", "BREAKER_FAILURE_PERCENT": "50", "BREAKER_OPEN_TIMEOUT": "1h",
		}})
		c, _ := f.user(t, "gw@example.com", apitoken.ScopeTopUp)

		a := c.post(routes.APITopUps, "k1", `{"amount_rials": 500000}`)
		if tu := decode[api.TopUp](t, a); a.Status != http.StatusCreated || tu.Gateway != "zarinpal" {
			t.Fatalf("default: %d %s", a.Status, a.Body)
		}
		a = c.post(routes.APITopUps, "k2", `{"amount_rials": 500000, "gateway": "zibal"}`)
		tu := decode[api.TopUp](t, a)
		if a.Status != http.StatusCreated || tu.Gateway != "zibal" || tu.PaymentURL == nil || !strings.Contains(*tu.PaymentURL, routes.Sandbank+"/start/") {
			t.Fatalf("zibal: %d %s", a.Status, a.Body)
		}
		// Zibal switched off by an admin (its bank slow, say) while the
		// client retries k2 (its answer lost): the retry is the top-up
		// made, not "gateway_unknown" (which says nothing was started).
		boss, err := f.app.Server.Auth.SignUp(context.Background(), "boss@example.com", "correct horse battery", "admin", "en")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.app.Server.TopUps.SwitchGateway(context.Background(), boss.ID, "zibal", true, ""); err != nil {
			t.Fatal(err)
		}
		if again := c.post(routes.APITopUps, "k2", `{"amount_rials": 500000, "gateway": "zibal"}`); again.Status != http.StatusCreated ||
			again.Body != a.Body || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("k2 again with zibal off: %d %s", again.Status, again.Body)
		}
		if a := c.post(routes.APITopUps, "k2b", `{"amount_rials": 500000, "gateway": "zibal"}`); a.Status != http.StatusUnprocessableEntity || a.Code() != "gateway_unknown" {
			t.Fatalf("a new top-up with zibal off: %d %s", a.Status, a.Body)
		}
		if err := f.app.Server.TopUps.SwitchGateway(context.Background(), boss.ID, "zibal", false, ""); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{`{"amount_rials": 500000, "gateway": "paypal"}`, `{"amount_rials": 500000, "gateway": ""}`} {
			if a := c.post(routes.APITopUps, "k3", body); a.Status != http.StatusUnprocessableEntity || a.Code() != "gateway_unknown" {
				t.Errorf("%s: %d %s", body, a.Status, a.Body)
			}
		}

		// Zarinpal down: its request fails once, its breaker opens.
		if err := f.app.Server.Bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"request": {ErrorRate: 1}}}); err != nil {
			t.Fatal(err)
		}
		if a := c.post(routes.APITopUps, "k4", `{"amount_rials": 500000, "gateway": "zarinpal"}`); a.Status != http.StatusBadGateway {
			t.Fatalf("zarinpal failing: %d %s", a.Status, a.Body)
		}
		a = c.post(routes.APITopUps, "k5", `{"amount_rials": 500000, "gateway": "zarinpal"}`)
		tu = decode[api.TopUp](t, a)
		if a.Status != http.StatusCreated || tu.Gateway != "zibal" {
			t.Fatalf("failover: %d %s", a.Status, a.Body)
		}
		if n := topuptest.Count(t, db); n != 4 {
			t.Errorf("%d payments, want 4", n)
		}
	})
}
