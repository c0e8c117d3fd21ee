package server

import (
	"reflect"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/topup"
)

// The payment service and the worker are tuned by the configuration
// alone: its table's defaults, or the environment's values.
func TestTopUpAndWorkerConfig(t *testing.T) {
	zarinpal, _ := drivers.Lookup("zarinpal")
	for _, tc := range []struct {
		name   string
		env    map[string]string
		pay    topup.Config
		worker topup.WorkerConfig
	}{
		{name: "defaults", env: nil,
			pay: topup.Config{BaseURL: "http://127.0.0.1:1", MinRials: 10_000, MaxRials: 1_000_000_000,
				RequestTimeout: 10 * time.Second, VerifyTimeout: 12 * time.Second, RecheckDelay: 20 * time.Second, CreditedCacheSize: 10_000},
			worker: topup.WorkerConfig{Interval: 2 * time.Second, Concurrency: 4, AbandonedAfter: 2 * time.Minute,
				AuthorityLifetime: 20 * time.Minute, MaxUnknown: 2 * time.Hour, StaleCreated: time.Minute,
				BaseBackoff: 10 * time.Second, MaxBackoff: 2 * time.Minute}},
		{name: "set", env: map[string]string{"GATEWAY_BUDGET": "4s", "GATEWAY_ATTEMPT_TIMEOUT": "1s", "PENDING_RECHECK_AFTER": "300ms",
			"CREDITED_CACHE_SIZE": "0", "TOPUP_MIN_RIALS": "20000", "WORKER_INTERVAL": "off", "WORKER_CONCURRENCY": "2"},
			pay: topup.Config{BaseURL: "http://127.0.0.1:1", MinRials: 20_000, MaxRials: 1_000_000_000,
				RequestTimeout: 4 * time.Second, VerifyTimeout: 4 * time.Second, RecheckDelay: 300 * time.Millisecond},
			worker: topup.WorkerConfig{Interval: 0, Concurrency: 2, AbandonedAfter: 2 * time.Minute,
				AuthorityLifetime: 20 * time.Minute, MaxUnknown: 2 * time.Hour, StaleCreated: time.Minute,
				BaseBackoff: 10 * time.Second, MaxBackoff: 2 * time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, tc.env)
			pc := topUpConfig(cfg, []gateway.Driver{zarinpal})
			if rules, ok := pc.Gateways["zarinpal"]; !ok || len(pc.Gateways) != 1 || !reflect.DeepEqual(rules, topup.RulesOf(zarinpal.Capabilities)) {
				t.Errorf("gateway rules %+v, want zarinpal's", pc.Gateways)
			}
			pc.Gateways = nil
			if !reflect.DeepEqual(pc, tc.pay) {
				t.Errorf("payment config\n %+v, want\n %+v", pc, tc.pay)
			}
			if wc := workerConfig(cfg); !reflect.DeepEqual(wc, tc.worker) {
				t.Errorf("worker config\n %+v, want\n %+v", wc, tc.worker)
			}
		})
	}
}
