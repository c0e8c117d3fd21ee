package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// TestMetricsAfterAScriptedFlow: one top-up credited, one cancelled at the
// bank, one left there; /metrics then reports each series with the right
// value, and answers only to the bearer token in the Authorization header.
func TestMetricsAfterAScriptedFlow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"METRICS_TOKEN": apptest.MetricsToken}})
		user, payURL := app.StartTopUp(t, "metrics@example.com", "20000")
		back, err := app.Server.Bank.Pay(apptest.Authority(payURL))
		if err != nil {
			t.Fatal(err)
		}
		if r := user.Get(back + "&Status=OK"); apptest.TopUpStatus(r.Body) != "credited" {
			t.Fatalf("pay: %q", apptest.TopUpStatus(r.Body))
		}
		csrf, token := user.TopUpForm()
		r := user.PostTopUp(csrf, token, "30000")
		back2, err := app.Server.Bank.Cancel(apptest.Authority(r.Location))
		if err != nil {
			t.Fatal(err)
		}
		if r := user.Get(back2); apptest.TopUpStatus(r.Body) != "failed" {
			t.Fatalf("cancel: %q", apptest.TopUpStatus(r.Body))
		}
		csrf, token = user.TopUpForm()
		user.PostTopUp(csrf, token, "40000") // left at the bank
		user.Get("/no-such-page")

		// Only "Authorization: Bearer <token>".
		get := func(header string) apptest.Response {
			req, _ := http.NewRequest(http.MethodGet, app.URL+routes.Metrics, nil)
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			return user.Do(req)
		}
		for _, h := range []string{"", apptest.MetricsToken, "Basic " + apptest.MetricsToken, "Bearer wrong", "Bearer" + apptest.MetricsToken, "bearer wrong"} {
			if r := get(h); r.Status != http.StatusNotFound {
				t.Errorf("Authorization %q: %d, want 404", h, r.Status)
			}
		}
		if r := user.Get(routes.Metrics + "?token=" + apptest.MetricsToken); r.Status != http.StatusNotFound {
			t.Errorf("token in the URL: %d", r.Status)
		}
		// The scheme is case-insensitive (RFC 9110 §11.1; issue 20,
		// finding 16).
		for _, scheme := range []string{"bearer", "BEARER", "beArer"} {
			if r := get(scheme + " " + apptest.MetricsToken); r.Status != http.StatusOK {
				t.Errorf("Authorization scheme %q: %d, want 200", scheme, r.Status)
			}
		}
		m := get("Bearer " + apptest.MetricsToken)
		if m.Status != http.StatusOK {
			t.Fatalf("metrics: %d", m.Status)
		}
		body := m.Body
		want := map[string]float64{
			`kifpool_topups{status="credited"}`:                1,
			`kifpool_topups{status="failed"}`:                  1,
			`kifpool_topups{status="awaiting_payment"}`:        1,
			`kifpool_topups{status="needs_review"}`:            0,
			`kifpool_credited_rials_total{gateway="zarinpal"}`: 200_000,
			`kifpool_topup_transitions_total{actor="submit",from="created",gateway="zarinpal",to="awaiting_payment"}`:    3,
			`kifpool_topup_transitions_total{actor="callback",from="awaiting_payment",gateway="zarinpal",to="credited"}`: 1,
			`kifpool_topup_transitions_total{actor="callback",from="awaiting_payment",gateway="zarinpal",to="failed"}`:   1,
			`kifpool_gateway_breaker_state{gateway="zarinpal",state="closed"}`:                                           1,
			`kifpool_gateway_breaker_state{gateway="zarinpal",state="open"}`:                                             0,
			`kifpool_gateway_breaker_open{gateway="zarinpal"}`:                                                           0,
			`kifpool_worker_backlog`:                                                0,
			`kifpool_webhook_queue_depth`:                                           0,
			`kifpool_webhook_oldest_pending_age_seconds`:                            0,
			`kifpool_webhook_failing_endpoints`:                                     0,
			`kifpool_reconcile_last_finished_timestamp_seconds{gateway="zarinpal"}`: 0,
			// Born at 0, so that an alert's increase() sees the first
			// failure.
			`kifpool_credit_failures_total{gateway="zarinpal",then="retry"}`:                                                   0,
			`kifpool_credit_failures_total{gateway="zarinpal",then="needs_review"}`:                                            0,
			`kifpool_webhook_outbox_failures_total{gateway="zarinpal"}`:                                                        0,
			`kifpool_gateway_call_duration_seconds_count{gateway="zarinpal",operation="request",outcome="ok"}`:                 3,
			`kifpool_gateway_call_duration_seconds_count{gateway="zarinpal",operation="verify",outcome="paid"}`:                1,
			`kifpool_http_request_duration_seconds_count{method="POST",route="` + routes.TopUp + `",status="303"}`:             3,
			`kifpool_http_request_duration_seconds_count{method="GET",route="` + routes.TopUpReturnPattern + `",status="200"}`: 2,
			`kifpool_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"}`:                         1,
		}
		for series, v := range want {
			if got := apptest.MetricValue(t, body, series); got != v {
				t.Errorf("%s = %v, want %v", series, got, v)
			}
		}
		for _, name := range []string{"kifpool_worker_lag_seconds", "kifpool_gateway_breaker_window_failure_ratio", "kifpool_http_request_duration_seconds_bucket", "go_goroutines"} {
			if !strings.Contains(body, name) {
				t.Errorf("no %s", name)
			}
		}
		// A reconciliation (by any instance) sets the time of the last one.
		before := time.Now().Unix()
		if _, err := app.Server.TopUps.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		body = get("Bearer " + apptest.MetricsToken).Body
		if got := apptest.MetricValue(t, body, `kifpool_reconcile_last_finished_timestamp_seconds{gateway="zarinpal"}`); got < float64(before) || got > float64(time.Now().Unix()+1) {
			t.Errorf("last reconciliation at %v, want about %d", got, before)
		}
		if got := apptest.MetricValue(t, body, `kifpool_reconcile_last_failed{gateway="zarinpal"}`); got != 0 {
			t.Errorf("kifpool_reconcile_last_failed = %v", got)
		}
		// Route patterns, not paths: no payment id in any label.
		if regexp.MustCompile(`route="` + regexp.QuoteMeta(routes.TopUps) + `/[a-z2-7]{24}`).MatchString(body) {
			t.Error("a payment id in a route label")
		}
	})
}
