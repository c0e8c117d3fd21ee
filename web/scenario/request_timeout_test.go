package scenario_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// A bank that takes 4 s to hand out an authority still starts the payment
// with the default settings: the request call has its own time-out
// (GATEWAY_REQUEST_TIMEOUT, 10 s), not the 3 s of one verify attempt.
func TestSlowBankRequestStartsTopUpWithDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 4 s per database")
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		// The defaults of GATEWAY_ATTEMPT_TIMEOUT, GATEWAY_BUDGET and
		// GATEWAY_REQUEST_TIMEOUT, not rsApp's small budgets.
		app := rsApp(t, db, bankURL, map[string]string{
			"GATEWAY_ATTEMPT_TIMEOUT": "", "GATEWAY_BUDGET": "", "GATEWAY_REQUEST_TIMEOUT": "",
		}, apptest.Options{})
		if cfg := app.Server.Config; cfg.AttemptTimeout != 3*time.Second || cfg.Budget != 12*time.Second || cfg.RequestTimeout != 10*time.Second {
			t.Fatalf("not the defaults: attempt %v budget %v request %v", cfg.AttemptTimeout, cfg.Budget, cfg.RequestTimeout)
		}
		c := app.NewClient(t)
		c.SignUp("slow-request@example.com")
		rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"request": {LatencyMS: 4_000}}})

		csrf, token := c.TopUpForm()
		start := time.Now()
		r := c.PostTopUp(csrf, token, "10000")
		took := time.Since(start)
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, bankURL+"/pg/StartPay/S") {
			t.Fatalf("top-up against a 4 s bank: status %d location %q body %.300s", r.Status, r.Location, r.Body)
		}
		if took < 4*time.Second || took > 10*time.Second {
			t.Errorf("answered in %v, want the bank's 4 s and less than the request time-out", took)
		}
		authority := apptest.Authority(r.Location)
		p := topuptest.ByAuthority(t, db, authority)
		if p.Status != topup.StatusAwaitingPayment {
			t.Errorf("payment status %s, want %s", p.Status, topup.StatusAwaitingPayment)
		}
		if st := bank.Stats()["request"]; st.OK != 1 || st.Abandoned != 0 {
			t.Errorf("bank request stats %+v, want one performed and none abandoned", st)
		}
		if n := topuptest.CountCalls(t, db, "request", "ok"); n != 1 {
			t.Errorf("%d successful request calls recorded, want 1", n)
		}
		if n := topuptest.CountCalls(t, db, "request") - topuptest.CountCalls(t, db, "request", "ok"); n != 0 {
			t.Errorf("%d failed request calls recorded, want 0", n)
		}
		apptest.CheckInvariants(t, db)
	})
}

// A bank that hangs on every request is a bank in trouble: each top-up's
// request time-out counts toward the breaker (even though the payment
// service's own deadline for the call is the same length), so after
// BREAKER_MIN_REQUESTS of them the breaker opens and the next top-up is
// refused at once instead of waiting on a dead bank.
func TestBankHangingOnRequestOpensBreaker(t *testing.T) {
	tests := []struct {
		name string
		rule sandbank.OpFaults
	}{
		{"never performed (latency)", sandbank.OpFaults{LatencyMS: 30_000}},
		{"performed, answer lost", sandbank.OpFaults{AnswerLostRate: 1, HangMS: 30_000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				bank, bankURL := rsBank(t)
				app := rsApp(t, db, bankURL, map[string]string{
					"BREAKER_MIN_REQUESTS": "2", "BREAKER_OPEN_TIMEOUT": "1m",
				}, apptest.Options{})
				if cfg := app.Server.Config; cfg.RequestTimeout != rsBudget {
					t.Fatalf("request time-out %v, want the budget %v", cfg.RequestTimeout, rsBudget)
				}
				c := app.NewClient(t)
				c.SignUp("hang-breaker@example.com")
				rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"request": tt.rule}})
				for i := range 2 {
					csrf, token := c.TopUpForm()
					if r := c.PostTopUp(csrf, token, "10000"); r.Status != http.StatusServiceUnavailable {
						t.Fatalf("top-up %d against a hanging bank: status %d", i, r.Status)
					}
				}
				if st := app.Server.Resilient.BreakerState(); st.State != "open" || st.Failures+st.ConsecutiveFailures == 0 && st.OpenedAt.IsZero() {
					t.Fatalf("breaker after 2 request time-outs: %+v, want open", st)
				}
				calls := bank.Stats()["request"].Calls
				csrf, token := c.TopUpForm()
				start := time.Now()
				r := c.PostTopUp(csrf, token, "10000")
				// That no call reached the bank (below) is the proof; the
				// time only guards against waiting on the hanging bank (a
				// loaded machine has taken longer than the budget to answer
				// anything at all).
				if took := time.Since(start); r.Status != http.StatusServiceUnavailable || took > rsBudget+rsMargin {
					t.Errorf("top-up with the breaker open: status %d after %v, want a refusal", r.Status, took)
				}
				if got := bank.Stats()["request"].Calls; got != calls {
					t.Errorf("the open breaker let a request through (%d, then %d)", calls, got)
				}
				if n := topuptest.CountCalls(t, db, "request", "timeout"); n != 2 {
					t.Errorf("%d request time-outs recorded, want 2", n)
				}
				// The refusal came before anything was written: only the
				// two timed-out top-ups are failed payments.
				if n := rsStatusCount(t, db, topup.StatusFailed); n != 2 {
					t.Errorf("%d failed payments, want 2", n)
				}
				apptest.CheckInvariants(t, db)
			})
		})
	}
}
