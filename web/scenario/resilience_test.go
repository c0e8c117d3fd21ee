package scenario_test

// Fault-injection scenarios against the real router, with a standalone
// sandbox bank on a real socket (faults are only faithful there): a bank
// that hangs, is down, commits then hangs, payers who close the window,
// callbacks racing the worker, deadlines, reconciliation and the audit of
// gateway calls. Every scenario runs on SQLite and PostgreSQL and ends with
// the invariants of ARCHITECTURE §2 plus its own outcome assertions.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/topupread"
)

const rsMerchant = "0f0e0d0c-0b0a-4908-8706-050403020100"

// Budgets of the bank calls in these tests (GATEWAY_ATTEMPT_TIMEOUT,
// GATEWAY_BUDGET).
const (
	rsAttempt = 200 * time.Millisecond
	rsBudget  = 600 * time.Millisecond
	// rsMargin is what an answer may take beyond its budget (database
	// writes, rendering, a shared 2-core machine running -race and other
	// test binaries). Typical is 10-50ms, but a loaded machine has taken
	// over a second; the bank's hangs in these tests last 10-30s, so an
	// answer within budget+margin was bounded by the budget, not by the
	// bank.
	rsMargin = 3 * time.Second
	// rsOutcome bounds a wait for an outcome that background work reaches
	// (the worker, a breaker's timer): polled, so a quiet machine does
	// not wait for it; generous, so a loaded one does not fail.
	rsOutcome = 30 * time.Second
)

// rsRelaxed are gateway budgets for scenarios whose point is not a
// time-out: a healthy bank's answer must not time out on a loaded
// machine and turn a definite answer into an unknown one.
func rsRelaxed(env map[string]string) map[string]string {
	e := map[string]string{"GATEWAY_ATTEMPT_TIMEOUT": "2s", "GATEWAY_BUDGET": "6s", "BREAKER_MIN_REQUESTS": "1000"}
	maps.Copy(e, env)
	return e
}

// rsBank starts a standalone sandbox bank on a real socket for one test.
func rsBank(t *testing.T) (*sandbank.Bank, string) {
	t.Helper()
	bank := sandbank.New(sandbank.Options{})
	return bank, apptest.Serve(t, bank.Handler())
}

// rsApp starts the app against the standalone bank, with small budgets;
// env overrides the defaults.
func rsApp(t *testing.T, db *store.DB, bankURL string, env map[string]string, o apptest.Options) *apptest.App {
	t.Helper()
	e := map[string]string{
		"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": rsMerchant, "ZARINPAL_BASE_URL": bankURL,
		"GATEWAY_ATTEMPT_TIMEOUT": rsAttempt.String(), "GATEWAY_BUDGET": rsBudget.String(),
		"WORKER_INTERVAL": "50ms", "WORKER_ABANDONED_AFTER": "300ms", "RECONCILE_INTERVAL": "off",
	}
	maps.Copy(e, env)
	o.Env = e
	return apptest.Start(t, db, o)
}

func rsSetFaults(t *testing.T, bank *sandbank.Bank, f sandbank.Faults) {
	t.Helper()
	if err := bank.SetFaults(f); err != nil {
		t.Fatal(err)
	}
}

// rsTopUp submits a fresh top-up form that must reach the bank page, and
// returns the authority and our payment's public id.
func rsTopUp(t *testing.T, db *store.DB, c *apptest.Client, bankURL, tomans string) (authority, publicID string) {
	t.Helper()
	csrf, token := c.TopUpForm()
	r := c.PostTopUp(csrf, token, tomans)
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, bankURL+"/pg/StartPay/S") {
		t.Fatalf("top-up: status %d location %q body %.300s", r.Status, r.Location, r.Body)
	}
	authority = apptest.Authority(r.Location)
	return authority, topuptest.ByAuthority(t, db, authority).PublicID
}

func rsRow(t *testing.T, db *store.DB, publicID string) topup.TopUp {
	t.Helper()
	return topuptest.ByPublicID(t, db, publicID)
}

func rsBankPayment(t *testing.T, bank *sandbank.Bank, authority string) sandbank.Payment {
	t.Helper()
	p, ok := bank.Payment(authority)
	if !ok {
		t.Fatalf("bank has no payment %s", authority)
	}
	return p
}

// rsWaitStatus waits for a payment to reach a status.
func rsWaitStatus(t *testing.T, db *store.DB, publicID string, want topup.Status, timeout time.Duration) topup.TopUp {
	t.Helper()
	var p topup.TopUp
	testwait.Eventually(t, timeout, fmt.Sprintf("payment %s to be %s", publicID, want), func() bool {
		p = rsRow(t, db, publicID)
		return p.Status == want
	})
	return p
}

func rsLedgerRows(t *testing.T, db *store.DB, topUpID int64) int64 {
	t.Helper()
	return int64(len(ledgertest.CreditsOf(t, db, topUpID)))
}

// rsAssertCreditedOnce checks a payment credited exactly once with the
// bank's reference.
func rsAssertCreditedOnce(t *testing.T, db *store.DB, bank *sandbank.Bank, publicID string) topup.TopUp {
	t.Helper()
	p := rsRow(t, db, publicID)
	bp := rsBankPayment(t, bank, p.AuthorityString())
	if p.Status != topup.StatusCredited || p.RefID == nil || *p.RefID != bp.RefID || bp.State != sandbank.StateVerified {
		t.Errorf("payment %s: status %s ref %d; bank state %s ref %d", publicID, p.Status, p.RefIDValue(), bp.State, bp.RefID)
	}
	if n := rsLedgerRows(t, db, p.ID); n != 1 {
		t.Errorf("payment %s has %d ledger rows, want 1", publicID, n)
	}
	rsAssertVerifies(t, db, bp, p.ID)
	return p
}

// rsAssertVerifies holds our record of a payment's verifies against the
// bank's: exactly one answer said the money is ours (one actor verifies at
// a time and nobody after the credit), and the bank performed every verify
// we heard answered plus at most those whose answer was lost (an attempt
// that timed out may have been performed: its retry then hears 101).
func rsAssertVerifies(t *testing.T, db *store.DB, bp sandbank.Payment, topUpID int64) {
	t.Helper()
	count := func(outcomes ...string) int64 {
		return topuptest.CountCallsOf(t, db, topUpID, "verify", outcomes...)
	}
	settled := count("paid", "already_verified")
	answered := settled + count("not_paid", "amount_mismatch", "invalid")
	unknown := count("timeout", "transient", "canceled")
	if settled != 1 || int64(bp.VerifyCount) < answered || int64(bp.VerifyCount) > answered+unknown {
		t.Errorf("verifies of payment %d: %d settled and %d answered (want 1 settled), %d unknown; the bank performed %d",
			topUpID, settled, answered, unknown, bp.VerifyCount)
	}
}

// rsCallback is one bank callback from a browser without a session,
// safe to run on any goroutine; a POST is followed by its redirect
// (Post/Redirect/Get). It returns the final status and the page's
// payment status.
func rsCallback(hc *http.Client, back string, post bool) (int, string, error) {
	do := func(method, u string) (*http.Response, string, error) {
		req, err := http.NewRequest(method, u, nil)
		if err != nil {
			return nil, "", err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}
	if post {
		resp, _, err := do(http.MethodPost, back)
		if err != nil {
			return 0, "", err
		}
		if resp.StatusCode != http.StatusSeeOther {
			return resp.StatusCode, "", fmt.Errorf("POST callback: status %d", resp.StatusCode)
		}
		u, err := url.Parse(back)
		if err != nil {
			return 0, "", err
		}
		loc, err := u.Parse(resp.Header.Get("Location"))
		if err != nil {
			return 0, "", err
		}
		back = loc.String()
	}
	resp, body, err := do(http.MethodGet, back)
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, apptest.TopUpStatus(body), nil
}

type rsCallbackResult struct {
	status     int
	pageStatus string
	err        error
}

// rsNoRedirectClient is a client without cookies that does not follow
// redirects. Keep-alives are off: a connection dialed for a burst but never
// used would hold the app's graceful shutdown for seconds (servers count
// a new connection as idle only after 5s).
func rsNoRedirectClient() *http.Client {
	return &http.Client{
		Transport:     &http.Transport{DisableKeepAlives: true},
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// rsBurst sends n concurrent callbacks (every other one a POST).
func rsBurst(back string, n int) []rsCallbackResult {
	hc := rsNoRedirectClient()
	defer hc.CloseIdleConnections()
	out := make([]rsCallbackResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, ps, err := rsCallback(hc, back, i%2 == 1)
			out[i] = rsCallbackResult{s, ps, err}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// rsRunWorker runs a worker of the app's payment service (a second
// instance, with its own tuning) until stop or the end of the test.
func rsRunWorker(t *testing.T, app *apptest.App, cfg topup.WorkerConfig) (stop func()) {
	t.Helper()
	w := app.Server.TopUps.NewWorker(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func rsStatusCount(t *testing.T, db *store.DB, status topup.Status) int64 {
	t.Helper()
	return topuptest.Count(t, db, status)
}

// ---- 1. the bank hangs on request: request performed, answer lost ----

// The bank creates the authority, then its answer never arrives (it hangs
// past our time-out). Our side never learned the authority: the payment is
// failed with none, the payer is never sent to that bank page, and the bank
// holds an authority nobody will pay.
func TestResilienceBankHangsOnRequest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		app := rsApp(t, db, bankURL, nil, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("hang@example.com")
		rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"request": {AnswerLostRate: 1, HangMS: 30_000}}})

		csrf, token := c.TopUpForm()
		start := time.Now()
		r := c.PostTopUp(csrf, token, "10000")
		took := time.Since(start)
		t.Logf("POST /wallet/topup against a hanging bank answered in %v (budget %v)", took, rsBudget)
		if took > rsBudget+rsMargin {
			t.Errorf("answer took %v, want within the budget %v plus a small margin", took, rsBudget)
		}
		if r.Status != http.StatusServiceUnavailable || apptest.Parse(r.Body).TestID("gateway-failed") == nil ||
			apptest.Parse(r.Body).TestID("topup-form") == nil {
			t.Fatalf("status %d, want 503 with the gateway-failed page and a form; body %.300s", r.Status, r.Body)
		}
		fresh := apptest.Input(r.Body, "token")
		if fresh == "" || fresh == token {
			t.Fatalf("the page must offer a fresh form (token %q)", fresh)
		}
		if n := rsStatusCount(t, db, topup.StatusFailed); n != 1 {
			t.Errorf("%d failed payments, want 1", n)
		}
		if n := rsStatusCount(t, db, topup.StatusCreated); n != 0 {
			t.Errorf("%d payments left created", n)
		}
		reason := topuptest.First(t, db).StatusReason
		if reason != string(topup.ReasonRequestFailed) {
			t.Errorf("status reason %q, want %q", reason, topup.ReasonRequestFailed)
		}
		withAuthority := 0
		for _, p := range topuptest.All(t, db) {
			if p.Authority != nil {
				withAuthority++
			}
		}
		if n := withAuthority; n != 0 {
			t.Errorf("%d payments hold an authority, want none", n)
		}
		// The bank performed the request: it holds an authority that our
		// side never learned, so nobody will ever be sent to pay it.
		if st := bank.Stats()["request"]; st.Lost != 1 || st.OK != 0 || st.Abandoned != 0 {
			t.Errorf("bank request stats %+v, want one performed with its answer lost", st)
		}
		bankPayments := bank.Payments()
		if len(bankPayments) != 1 || bankPayments[0].State != sandbank.StateInBank || bankPayments[0].Authority == "" {
			t.Fatalf("bank holds %+v, want one unpaid authority", bankPayments)
		}
		lost := bankPayments[0].Authority
		if strings.Contains(r.Body, lost) || strings.Contains(r.Body, "/pg/StartPay/") || r.Location != "" {
			t.Errorf("the payer was shown the lost authority's bank page: location %q body %.300s", r.Location, r.Body)
		}
		for _, p := range topuptest.All(t, db) {
			if p.AuthorityString() == lost {
				t.Errorf("the lost authority is on payment %s", p.PublicID)
			}
		}
		if n := topuptest.CountCalls(t, db, "request", "timeout"); n != 1 {
			t.Errorf("%d request time-outs recorded, want 1", n)
		}

		// The bank recovers: the fresh form works.
		bank.ClearFaults()
		r = c.PostTopUp(apptest.Input(r.Body, "_csrf"), fresh, "10000")
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, bankURL+"/pg/StartPay/S") {
			t.Fatalf("fresh form after recovery: %d %q", r.Status, r.Location)
		}
		if n := rsStatusCount(t, db, topup.StatusAwaitingPayment); n != 1 {
			t.Errorf("%d awaiting payments, want 1", n)
		}
		if apptest.Authority(r.Location) == lost {
			t.Errorf("the fresh payment was given the lost authority %s", lost)
		}
		if c.Balance() != 0 {
			t.Errorf("balance %d, want 0", c.Balance())
		}
		if p, _ := bank.Payment(lost); p.State != sandbank.StateInBank {
			t.Errorf("the lost authority is %s at the bank, want still IN_BANK (nobody pays it)", p.State)
		}
		rsCheckAll(t, db, bank)
	})
}

// ---- 2. the bank is down: the breaker opens, refuses fast, recovers ----

// rsMetricsToken opens /metrics (as strong as config requires).
const rsMetricsToken = "metrics-secret-0123456789-abcdefghij"

func TestResilienceBankDownOpensBreaker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		// Long enough that the checks made while it is open (a few
		// requests) end before it half-opens, even on a loaded machine;
		// the wait for half-open below is a poll.
		const openTimeout = 5 * time.Second
		counted, cnt := storetest.Counting(t, db)
		app := rsApp(t, counted, bankURL, map[string]string{
			"BREAKER_MIN_REQUESTS": "4", "BREAKER_OPEN_TIMEOUT": openTimeout.String(), "METRICS_TOKEN": rsMetricsToken,
		}, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("down@example.com")
		rsSetFaults(t, bank, sandbank.Faults{Down: true})

		gatewayFailed := func(r apptest.Response) bool {
			return r.Status == http.StatusServiceUnavailable && apptest.Parse(r.Body).TestID("gateway-failed") != nil &&
				apptest.Parse(r.Body).TestID("topup-form") != nil
		}
		for i := range 4 {
			if st := app.Server.Resilient.BreakerState().State; st != "closed" {
				t.Fatalf("breaker %s after %d failures, want closed", st, i)
			}
			csrf, token := c.TopUpForm()
			if r := c.PostTopUp(csrf, token, "10000"); !gatewayFailed(r) {
				t.Fatalf("top-up %d against a down bank: status %d", i, r.Status)
			}
		}
		if st := app.Server.Resilient.BreakerState(); st.State != "open" || st.OpenedAt.IsZero() {
			t.Fatalf("breaker after 4 failures: %+v, want open", st)
		}
		metrics := func() string {
			req, _ := http.NewRequest(http.MethodGet, app.URL+routes.Metrics, nil)
			req.Header.Set("Authorization", "Bearer "+rsMetricsToken)
			return c.Do(req).Body
		}
		if m := metrics(); !strings.Contains(m, `kifpool_gateway_breaker_open{gateway="zarinpal"} 1`) {
			t.Errorf("metrics do not show the open breaker:\n%s", m)
		}
		calls := bank.Stats()["request"].Calls
		if calls != 4 {
			t.Errorf("bank saw %d requests, want 4", calls)
		}

		// Open: refused at once, and the bank is not called.
		csrf, token := c.TopUpForm()
		cnt.Reset()
		start := time.Now()
		r := c.PostTopUp(csrf, token, "10000")
		took := time.Since(start)
		stmts, txs := cnt.Take()
		// A refusal writes nothing and reads only what it must: the
		// session, the operator's switches (once, for the check and the
		// fresh form) and whether this form was submitted before.
		if want := "SELECT FROM sessions; SELECT FROM gateway_switches; SELECT FROM topups"; strings.Join(stmts, "; ") != want || txs != 0 {
			t.Errorf("the refusal ran %d statements in %d transactions:\n  %s\nwant, in none:\n  %s", len(stmts), txs,
				strings.Join(stmts, "\n  "), want)
		}
		t.Logf("top-up refused by the open breaker in %v", took)
		if !gatewayFailed(r) {
			t.Fatalf("top-up with the breaker open: status %d", r.Status)
		}
		// What makes it a refusal is that the bank was not called (below);
		// the time only guards against waiting for anything at all.
		if took > rsMargin {
			t.Errorf("refusal took %v, want well under %v", took, rsMargin)
		}
		// With the switches kept in memory, as serve keeps them, a
		// refusal reads only the session and the form (the fresh form's
		// page read the switches and kept them). Another test's switch
		// in the same database may drop the copy: a later try is clean.
		app.KeepSwitches(t)
		if err := testwait.Until(rsMargin, "a refusal without a read of the switches", func() bool {
			csrf, token := c.TopUpForm()
			cnt.Reset()
			r := c.PostTopUp(csrf, token, "10000")
			stmts, txs = cnt.Take()
			return gatewayFailed(r) && strings.Join(stmts, "; ") == "SELECT FROM sessions; SELECT FROM topups" && txs == 0
		}); err != nil {
			t.Errorf("%v: the refusal with the switches kept ran %d statements in %d transactions:\n  %s", err, len(stmts), txs,
				strings.Join(stmts, "\n  "))
		}
		if got := bank.Stats()["request"].Calls; got != calls {
			t.Errorf("the open breaker let a call through: bank saw %d requests, want %d", got, calls)
		}
		if st := app.Server.Resilient.BreakerState().State; st != "open" {
			t.Fatalf("breaker %s before its open time-out (%v) ended: the checks above ran too slowly to mean anything", st, openTimeout)
		}
		// Known before anything is written: no payment, no gateway call.
		if n := topuptest.CountCalls(t, db, "request", "breaker_open"); n != 0 {
			t.Errorf("%d breaker refusals recorded, want none (refused before the call)", n)
		}
		if n := rsStatusCount(t, db, topup.StatusFailed); n != 4 {
			t.Errorf("%d failed payments, want 4 (the refused top-up writes no payment)", n)
		}
		if n := topuptest.Count(t, db); n != 4 {
			t.Errorf("%d payments, want 4", n)
		}

		// The bank comes back; after the open time-out one probe closes it.
		bank.ClearFaults()
		testwait.Eventually(t, openTimeout+rsOutcome, "the breaker to half-open", func() bool {
			return app.Server.Resilient.BreakerState().State == "half-open"
		})
		authority, publicID := rsTopUp(t, db, c, bankURL, "10000")
		if st := app.Server.Resilient.BreakerState().State; st != "closed" {
			t.Fatalf("breaker %s after a successful probe, want closed", st)
		}
		if m := metrics(); !strings.Contains(m, `kifpool_gateway_breaker_open{gateway="zarinpal"} 0`) {
			t.Errorf("metrics do not show the closed breaker:\n%s", m)
		}
		back, err := bank.Pay(authority)
		if err != nil {
			t.Fatal(err)
		}
		res := c.Get(back)
		if res.Status != http.StatusOK || apptest.TopUpStatus(res.Body) != "credited" || apptest.Parse(res.Body).TestID("result-received") == nil {
			t.Fatalf("return after recovery: %d %q", res.Status, apptest.TopUpStatus(res.Body))
		}
		if got := c.Balance(); got != 100_000 {
			t.Errorf("balance %d, want 100000", got)
		}
		rsAssertCreditedOnce(t, db, bank, publicID)
		if n := rsStatusCount(t, db, topup.StatusCreated); n != 0 {
			t.Errorf("%d payments left created", n)
		}
		rsCheckAll(t, db, bank)
	})
}

// ---- 3 and 8. verify commits, then hangs ----

// The bank verifies (commits) but its answer never arrives. With one
// attempt per budget the return page says "confirming"; the worker asks
// again, the bank answers 101 (already verified) and, since we never
// credited, that credits, exactly once. The attempts are audited in
// gateway_calls without card numbers.
func TestResilienceVerifyCommitsThenHangs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		// One attempt per operation: no retry inside the return. A second
		// is enough for the worker's later verify (101, at once) to be
		// heard on a loaded machine; the bank hangs for 10.
		const budget = time.Second
		app := rsApp(t, db, bankURL, map[string]string{
			"GATEWAY_ATTEMPT_TIMEOUT": budget.String(), "GATEWAY_BUDGET": budget.String(),
			// Time-outs of the worker's verify (a loaded machine) must not
			// open the breaker and postpone the check: not this test's point.
			"BREAKER_MIN_REQUESTS": "1000",
			// The payer comes back at once; the worker only acts on the
			// unknown outcome.
			"WORKER_ABANDONED_AFTER": "1m",
			"PENDING_RECHECK_AFTER":  "300ms",
		}, apptest.Options{Background: true})
		c := app.NewClient(t)
		c.SignUp("hung@example.com")
		authority, publicID := rsTopUp(t, db, c, bankURL, "10000")
		back, err := bank.Pay(authority)
		if err != nil {
			t.Fatal(err)
		}
		rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"verify": {CommitThenHang: true, HangMS: 10_000}}})

		start := time.Now()
		res := c.Get(back)
		took := time.Since(start)
		t.Logf("return page with a hung verify answered in %v (budget %v)", took, budget)
		if res.Status != http.StatusOK || apptest.TopUpStatus(res.Body) != "pending_verification" || !strings.Contains(res.Body, `http-equiv="refresh"`) {
			t.Fatalf("return: %d %q, want the pending page", res.Status, apptest.TopUpStatus(res.Body))
		}
		if took > budget+rsMargin {
			t.Errorf("return took %v, want within the budget %v plus a small margin", took, budget)
		}
		// The bank committed although we never heard it.
		bp := rsBankPayment(t, bank, authority)
		if bp.State != sandbank.StateVerified || bp.RefID == 0 {
			t.Fatalf("bank record %+v, want VERIFIED", bp)
		}
		if st := bank.Stats()["verify"]; st.Hung != 1 {
			t.Errorf("bank verify stats %+v, want one hung verify", st)
		}

		p := rsWaitStatus(t, db, publicID, topup.StatusCredited, rsOutcome)
		if p.StatusReason != "already_verified" || p.RefIDValue() != bp.RefID {
			t.Errorf("credited with reason %q ref %d, want already_verified ref %d", p.StatusReason, p.RefIDValue(), bp.RefID)
		}
		res = c.Get(back)
		if apptest.TopUpStatus(res.Body) != "credited" || apptest.Parse(res.Body).TestID("result-received") == nil {
			t.Fatalf("reload: %q", apptest.TopUpStatus(res.Body))
		}
		if got := c.Balance(); got != 100_000 {
			t.Errorf("balance %d, want 100000", got)
		}
		rsAssertCreditedOnce(t, db, bank, publicID)
		if n := ledgertest.Credits(t, db); n != 1 {
			t.Errorf("%d ledger rows, want 1", n)
		}
		if got := rsBankPayment(t, bank, authority).VerifyCount; got < 2 {
			t.Errorf("bank verified %d times, want the hung one and the 101", got)
		}

		// 8. gateway_calls: both verify attempts, their outcomes, no card numbers.
		var calls []topup.GatewayCall
		var outcomes []string
		for _, gc := range topuptest.CallsOf(t, db, p.ID) {
			if gc.Operation == "verify" {
				calls, outcomes = append(calls, gc), append(outcomes, gc.Outcome)
			}
		}
		// [timeout already_verified(101)]; on a loaded machine a 101 may
		// time out too and be asked again. The 100 was never heard.
		if len(calls) < 2 || calls[0].Outcome != "timeout" || calls[len(calls)-1].Outcome != "already_verified" ||
			calls[len(calls)-1].GatewayCode != 101 || slices.Contains(outcomes, "paid") {
			t.Errorf("verify calls recorded: %v, want [timeout already_verified(101)]", outcomes)
		}
		// It waited for its time-out (the budget, counted from a moment
		// before the attempt started: on a loaded machine tens of ms
		// before), not an early failure.
		if len(calls) > 0 && (calls[0].Error == "" || calls[0].DurationMS < budget.Milliseconds()/2) {
			t.Errorf("the hung attempt is recorded as %+v", calls[0])
		}
		checkNoCardNumbers(t, db)
		if !regexp.MustCompile(`^\d{6}\*+\d{4}$`).MatchString(p.CardPANMasked) {
			t.Errorf("card on the payment %q is not masked", p.CardPANMasked)
		}
		rsCheckAll(t, db, bank)
	})
}

// With retries inside the budget, the retry of a hung verify answers 101
// in the same operation: the return page credits at once, once.
func TestResilienceVerifyCommitsThenHangsRetried(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		// The retry must be heard within its attempt: a second each (the
		// bank hangs for 30), within a budget of three.
		const attempt, budget = time.Second, 3 * time.Second
		app := rsApp(t, db, bankURL, map[string]string{
			"GATEWAY_ATTEMPT_TIMEOUT": attempt.String(), "GATEWAY_BUDGET": budget.String(), "BREAKER_MIN_REQUESTS": "1000",
		}, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("retried@example.com")
		authority, publicID := rsTopUp(t, db, c, bankURL, "25000")
		back, err := bank.Pay(authority)
		if err != nil {
			t.Fatal(err)
		}
		rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"verify": {CommitThenHang: true, HangMS: 30_000}}})
		start := time.Now()
		res := c.Get(back)
		took := time.Since(start)
		t.Logf("return page with a hung then retried verify answered in %v", took)
		if res.Status != http.StatusOK || apptest.TopUpStatus(res.Body) != "credited" {
			t.Fatalf("return: %d %q, want credited", res.Status, apptest.TopUpStatus(res.Body))
		}
		if took > budget+rsMargin {
			t.Errorf("return took %v, want within the budget %v plus a small margin", took, budget)
		}
		p := rsAssertCreditedOnce(t, db, bank, publicID)
		if c.Balance() != 250_000 {
			t.Errorf("balance %d, want 250000", c.Balance())
		}
		var outcomes []string
		for _, gc := range topuptest.CallsOf(t, db, p.ID) {
			if gc.Operation == "verify" {
				outcomes = append(outcomes, gc.Outcome)
			}
		}
		if len(outcomes) < 2 || outcomes[0] != "timeout" || outcomes[len(outcomes)-1] != "already_verified" || slices.Contains(outcomes, "paid") {
			t.Errorf("verify attempts %v, want [timeout already_verified]", outcomes)
		}
		checkNoCardNumbers(t, db)
		rsCheckAll(t, db, bank)
	})
}

// The bank hangs on verify without committing: the return page answers
// within the budget (retries included) with "confirming", the bank
// performed nothing, and a reload after the re-check delay credits once
// the bank is back.
func TestResilienceVerifyHangsReturnWithinBudget(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		const recheck = 300 * time.Millisecond
		app := rsApp(t, db, bankURL, map[string]string{"PENDING_RECHECK_AFTER": recheck.String()}, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("slowverify@example.com")
		authority, publicID := rsTopUp(t, db, c, bankURL, "40000")
		back, err := bank.Pay(authority)
		if err != nil {
			t.Fatal(err)
		}
		rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"verify": {LatencyMS: 30_000}}})
		start := time.Now()
		res := c.Get(back)
		took := time.Since(start)
		t.Logf("return page with a hanging verify answered in %v (budget %v)", took, rsBudget)
		if res.Status != http.StatusOK || apptest.TopUpStatus(res.Body) != "pending_verification" {
			t.Fatalf("return: %d %q, want pending_verification", res.Status, apptest.TopUpStatus(res.Body))
		}
		if took > rsBudget+rsMargin {
			t.Errorf("return took %v, want within the budget %v plus a small margin", took, rsBudget)
		}
		p := rsRow(t, db, publicID)
		if p.Status != topup.StatusPendingVerification || p.Attempts != 1 || rsLedgerRows(t, db, p.ID) != 0 {
			t.Fatalf("after the hung verify: %s attempts %d", p.Status, p.Attempts)
		}
		// Every verify sent was abandoned (a retry fits the budget on a
		// quiet machine; a slow one may leave time for one attempt only).
		testwait.Eventually(t, rsOutcome, "the bank to notice the abandoned verifies", func() bool {
			st := bank.Stats()["verify"]
			return st.Abandoned == st.Calls && st.Calls >= 1
		})
		if bp := rsBankPayment(t, bank, authority); bp.State != sandbank.StatePaid || bp.VerifyCount != 0 {
			t.Errorf("bank record %s verified %d times, want PAID and never verified", bp.State, bp.VerifyCount)
		}

		bank.ClearFaults()
		testwait.Eventually(t, rsOutcome, "the return page to show the credit", func() bool {
			return apptest.TopUpStatus(c.Get(back).Body) == "credited"
		})
		rsAssertCreditedOnce(t, db, bank, publicID)
		if c.Balance() != 400_000 {
			t.Errorf("balance %d, want 400000", c.Balance())
		}
		rsCheckAll(t, db, bank)
	})
}

// checkNoCardNumbers: nothing card-number-shaped in the gateway audit.
func checkNoCardNumbers(t *testing.T, db *store.DB) {
	t.Helper()
	rows := topuptest.AllCalls(t, db)
	pan := regexp.MustCompile(`\d(?:[ -]?\d){11,18}`)
	for _, r := range rows {
		if s := fmt.Sprintf("%s|%s|%s|%s", r.Gateway, r.Operation, r.Outcome, r.Error); pan.MatchString(s) || strings.Contains(s, "card") {
			t.Errorf("gateway call %d holds a card number or card data: %q", r.ID, s)
		}
	}
}

// ---- 4. paid, then the window closed: no callback ever comes ----

func TestResiliencePaidWindowClosedCreditedByWorker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		app := rsApp(t, db, bankURL, nil, apptest.Options{Background: true})

		// One payer pays and the browser dies (the bank's control API)...
		c1 := app.NewClient(t)
		c1.SignUp("closed1@example.com")
		a1, id1 := rsTopUp(t, db, c1, bankURL, "10000")
		if _, err := bank.Pay(a1); err != nil {
			t.Fatal(err)
		}
		// ...another presses "pay and close the window" on the bank's page.
		c2 := app.NewClient(t)
		c2.SignUp("closed2@example.com")
		a2, id2 := rsTopUp(t, db, c2, bankURL, "30000")
		payURL := bankURL + "/pg/StartPay/" + a2
		if page := c2.Get(payURL); page.Status != http.StatusOK {
			t.Fatalf("bank page: %d", page.Status)
		}
		closed := c2.Post(payURL+"/pay-close", url.Values{})
		if closed.Status != http.StatusOK || apptest.Parse(closed.Body).TestID("bank-closed") == nil {
			t.Fatalf("pay-close: %d %.200s", closed.Status, closed.Body)
		}

		start := time.Now()
		rsWaitStatus(t, db, id1, topup.StatusCredited, 5*time.Second)
		rsWaitStatus(t, db, id2, topup.StatusCredited, 5*time.Second)
		t.Logf("both credited by the worker %v after payment", time.Since(start))
		rsAssertCreditedOnce(t, db, bank, id1)
		rsAssertCreditedOnce(t, db, bank, id2)
		if c1.Balance() != 100_000 || c2.Balance() != 300_000 {
			t.Errorf("balances %d and %d, want 100000 and 300000", c1.Balance(), c2.Balance())
		}
		// The owner's receipt shows it, though no callback ever came.
		if r := c2.Get(routes.TopUpPage(id2)); r.Status != http.StatusOK || apptest.TopUpStatus(r.Body) != "credited" {
			t.Errorf("receipt: %d %q", r.Status, apptest.TopUpStatus(r.Body))
		}
		rsCheckAll(t, db, bank)
	})
}

// ---- 5. callbacks racing each other and the worker ----

func TestResilienceCallbacksRaceWorker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		const recheck = time.Second
		app := rsApp(t, db, bankURL, map[string]string{"BREAKER_MIN_REQUESTS": "1000", "PENDING_RECHECK_AFTER": recheck.String()},
			apptest.Options{})
		fastWorker := app.Server.WorkerConfig // the app's tuning, then faster
		fastWorker.Interval, fastWorker.AbandonedAfter = 5*time.Millisecond, time.Millisecond
		fastWorker.BaseBackoff, fastWorker.MaxBackoff = 20*time.Millisecond, 100*time.Millisecond

		// a) Paid; 20 callbacks and a worker with a tiny interval at once.
		c := app.NewClient(t)
		c.SignUp("race@example.com")
		a1, id1 := rsTopUp(t, db, c, bankURL, "100000")
		back1, err := bank.Pay(a1)
		if err != nil {
			t.Fatal(err)
		}
		stop := rsRunWorker(t, app, fastWorker)
		for i, r := range rsBurst(back1, 20) {
			// Each callback shows the outcome, or — when the actor holding
			// the payment (the worker, another callback) has not finished
			// within the budget, as on a loaded machine — "confirming",
			// whose page refreshes itself. None fails, none waits longer.
			if r.err != nil || r.status != http.StatusOK || (r.pageStatus != "credited" && r.pageStatus != "pending_verification") {
				t.Errorf("callback %d: %d %q %v, want credited or confirming", i, r.status, r.pageStatus, r.err)
			}
		}
		stop()
		rsWaitStatus(t, db, id1, topup.StatusCredited, 5*time.Second)
		if _, ps, err := rsCallback(rsNoRedirectClient(), back1, false); err != nil || ps != "credited" {
			t.Errorf("the page's refresh after the credit: %q %v", ps, err)
		}
		// One actor at a time: one settled verify (rsAssertVerifies).
		rsAssertCreditedOnce(t, db, bank, id1)

		// b) Paid, but verify fails: 50 duplicate callbacks all see
		// "confirming", and do not hammer the bank.
		c2 := app.NewClient(t)
		c2.SignUp("dupes@example.com")
		a2, id2 := rsTopUp(t, db, c2, bankURL, "50000")
		back2, err := bank.Pay(a2)
		if err != nil {
			t.Fatal(err)
		}
		rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"verify": {ErrorRate: 1}}})
		start := time.Now()
		for i, r := range rsBurst(back2, 50) {
			if r.err != nil || r.status != http.StatusOK || r.pageStatus != "pending_verification" {
				t.Errorf("faulted callback %d: %d %q %v, want pending_verification", i, r.status, r.pageStatus, r.err)
			}
		}
		burst := time.Since(start)
		t.Logf("50 duplicate callbacks while pending took %v", burst)
		p2 := rsRow(t, db, id2)
		if p2.Status != topup.StatusPendingVerification || rsLedgerRows(t, db, p2.ID) != 0 || c2.Balance() != 0 {
			t.Fatalf("while the bank fails: %s, balance %d", p2.Status, c2.Balance())
		}
		var ops int64
		for _, gc := range topuptest.CallsOf(t, db, p2.ID) {
			if gc.Operation == "verify" && gc.Attempt == 1 {
				ops++
			}
		}
		if burst < recheck && ops != 1 {
			t.Errorf("%d verify operations for 50 callbacks within the re-check delay, want 1", ops)
		}
		if bp := rsBankPayment(t, bank, a2); bp.State != sandbank.StatePaid || bp.VerifyCount != 0 {
			t.Errorf("bank record %s verified %d times, want PAID and never verified", bp.State, bp.VerifyCount)
		}

		// The bank recovers; more duplicates race a worker once the re-check
		// is due.
		bank.ClearFaults()
		testwait.Eventually(t, 5*time.Second, "the re-check to be due", func() bool {
			p := rsRow(t, db, id2)
			return p.NextCheckAt != nil && time.Now().After(*p.NextCheckAt)
		})
		rsRunWorker(t, app, fastWorker)
		for i, r := range rsBurst(back2, 50) {
			// A callback that reads the row just after the worker claimed
			// it is told to wait ("confirming"); none may fail.
			if r.err != nil || r.status != http.StatusOK || (r.pageStatus != "credited" && r.pageStatus != "pending_verification") {
				t.Errorf("callback %d after recovery: %d %q %v", i, r.status, r.pageStatus, r.err)
			}
		}
		rsWaitStatus(t, db, id2, topup.StatusCredited, 5*time.Second)
		if _, ps, err := rsCallback(rsNoRedirectClient(), back2, false); err != nil || ps != "credited" {
			t.Errorf("reload after credit: %q %v", ps, err)
		}
		rsAssertCreditedOnce(t, db, bank, id2)
		if c.Balance() != 1_000_000 || c2.Balance() != 500_000 {
			t.Errorf("balances %d and %d", c.Balance(), c2.Balance())
		}
		if n := ledgertest.Credits(t, db); n != 2 {
			t.Errorf("%d ledger rows, want 2", n)
		}
		rsCheckAll(t, db, bank)
	})
}

// ---- 6. deadlines ----

func TestResilienceDeadlines(t *testing.T) {
	// Cancelled at the bank and never called back: the worker fails it.
	t.Run("cancelled", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, db *store.DB) {
			bank, bankURL := rsBank(t)
			// A check that times out on a loaded machine is asked again
			// soon (not after the default 20s) and the worker's verify
			// gets relaxed budgets: the bank's "cancelled" is what fails it.
			app := rsApp(t, db, bankURL, rsRelaxed(map[string]string{"WORKER_ABANDONED_AFTER": "200ms", "PENDING_RECHECK_AFTER": "300ms"}),
				apptest.Options{Background: true})
			c := app.NewClient(t)
			c.SignUp("cancel@example.com")
			authority, publicID := rsTopUp(t, db, c, bankURL, "10000")
			if _, err := bank.Cancel(authority); err != nil {
				t.Fatal(err)
			}
			p := rsWaitStatus(t, db, publicID, topup.StatusFailed, rsOutcome)
			if p.StatusReason != string(topup.ReasonBankCancelled) || p.ResolvedAt == nil || rsLedgerRows(t, db, p.ID) != 0 {
				t.Errorf("failed payment: reason %q resolved %v", p.StatusReason, p.ResolvedAt)
			}
			if bp := rsBankPayment(t, bank, authority); bp.State != sandbank.StateFailed || bp.FailReason != sandbank.FailCancelled {
				t.Errorf("bank record %s %s", bp.State, bp.FailReason)
			}
			if c.Balance() != 0 {
				t.Errorf("balance %d", c.Balance())
			}
			rsCheckAll(t, db, bank)
		})
	})

	// Never paid (the payer is still at the bank) past the authority's
	// lifetime: failed, and not before.
	t.Run("never paid", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, db *store.DB) {
			bank, bankURL := rsBank(t)
			// A frozen clock: the lifetime passes when the test says so,
			// not when a loaded machine has spent two seconds.
			clock := topuptest.NewFrozenClock()
			app := rsApp(t, db, bankURL, rsRelaxed(map[string]string{
				"WORKER_ABANDONED_AFTER": "200ms", "WORKER_AUTHORITY_LIFETIME": "2s",
			}), apptest.Options{Server: server.Options{Now: clock.Now}})
			ctx := context.Background()
			c := app.NewClient(t)
			c.SignUp("inbank@example.com")
			authority, publicID := rsTopUp(t, db, c, bankURL, "10000")

			// Checked once abandoned, within the lifetime: still open.
			clock.Advance(300 * time.Millisecond)
			if rr, err := app.Server.Worker.RunOnce(ctx); err != nil || rr.Claimed != 1 {
				t.Fatalf("first round: %+v %v", rr, err)
			}
			p := rsRow(t, db, publicID)
			if p.Status != topup.StatusAwaitingPayment || p.NextCheckAt == nil || !p.NextCheckAt.After(clock.Now()) || p.LeaseUntil != nil {
				t.Fatalf("within the lifetime: %s next %v lease %v, want awaiting_payment rescheduled", p.Status, p.NextCheckAt, p.LeaseUntil)
			}
			// Past the lifetime (and the back-off): failed.
			clock.Advance(p.NextCheckAt.Sub(clock.Now()) + time.Second)
			if rr, err := app.Server.Worker.RunOnce(ctx); err != nil || rr.Claimed != 1 || rr.Resolved != 1 {
				t.Fatalf("second round: %+v %v", rr, err)
			}
			p = rsRow(t, db, publicID)
			if p.Status != topup.StatusFailed || !strings.Contains(p.StatusReason, "lifetime") {
				t.Fatalf("past the lifetime: %s %q, want failed", p.Status, p.StatusReason)
			}
			topuptest.CheckNoneOpenPast(t, db, clock.Now(), 20*time.Minute)
			if bp := rsBankPayment(t, bank, authority); bp.State != sandbank.StateInBank || bp.VerifyCount < 2 {
				t.Errorf("bank record %s verified %d times", bp.State, bp.VerifyCount)
			}
			// The payer pays after all: the bank holds the money unverified.
			// Reconciliation finds it, verifies it and credits it (the
			// money is the payer's; a failed row must not keep it from them).
			if _, err := bank.Pay(authority); err != nil {
				t.Fatal(err)
			}
			rep, err := app.Server.TopUps.Reconcile(ctx)
			if err != nil || rep.Ours != 1 || rep.Credited != 1 || rep.CreditedRials != 100_000 {
				t.Fatalf("reconcile: %+v %v", rep, err)
			}
			if items := rep.Items(); len(items) != 1 || items[0].Kind != "credited" || items[0].Detail != "was failed here" {
				t.Errorf("reconcile items %+v, want credited (was failed here)", items)
			}
			if p := rsRow(t, db, publicID); p.Status != topup.StatusCredited || rsLedgerRows(t, db, p.ID) != 1 || c.Balance() != 100_000 {
				t.Errorf("after the late payment: %s, balance %d", p.Status, c.Balance())
			}
			if bp := rsBankPayment(t, bank, authority); bp.State != sandbank.StateVerified {
				t.Errorf("bank record %s, want VERIFIED", bp.State)
			}
			rsCheckAll(t, db, bank)
		})
	})

	// Paid, but verify keeps failing past WORKER_MAX_UNKNOWN: needs_review,
	// never credited, and the worker leaves it to a person.
	t.Run("unknown too long", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, db *store.DB) {
			bank, bankURL := rsBank(t)
			clock := topuptest.NewClock()
			app := rsApp(t, db, bankURL, rsRelaxed(map[string]string{
				"WORKER_ABANDONED_AFTER": "200ms", "WORKER_MAX_UNKNOWN": "1m",
			}), apptest.Options{Server: server.Options{Now: clock.Now}})
			ctx := context.Background()
			c := app.NewClient(t)
			c.SignUp("review@example.com")
			authority, publicID := rsTopUp(t, db, c, bankURL, "10000")
			back, err := bank.Pay(authority)
			if err != nil {
				t.Fatal(err)
			}
			rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"verify": {ErrorRate: 1}}})
			if r := c.Get(back); apptest.TopUpStatus(r.Body) != "pending_verification" {
				t.Fatalf("return: %q", apptest.TopUpStatus(r.Body))
			}
			p := rsRow(t, db, publicID)
			// Still within MAX_UNKNOWN: pending, rescheduled.
			clock.Advance(p.NextCheckAt.Sub(clock.Now()) + time.Second)
			if rr, err := app.Server.Worker.RunOnce(ctx); err != nil || rr.Claimed != 1 {
				t.Fatalf("first round: %+v %v", rr, err)
			}
			if p = rsRow(t, db, publicID); p.Status != topup.StatusPendingVerification || p.Attempts != 2 {
				t.Fatalf("within MAX_UNKNOWN: %s attempts %d", p.Status, p.Attempts)
			}
			// Past it: needs_review.
			clock.Advance(time.Minute)
			if rr, err := app.Server.Worker.RunOnce(ctx); err != nil || rr.Claimed != 1 || rr.Resolved != 1 {
				t.Fatalf("second round: %+v %v", rr, err)
			}
			p = rsRow(t, db, publicID)
			if p.Status != topup.StatusNeedsReview || !strings.Contains(p.StatusReason, "unknown") || p.RefID != nil {
				t.Fatalf("past MAX_UNKNOWN: %s %q", p.Status, p.StatusReason)
			}
			topuptest.CheckNoneOpenPast(t, db, clock.Now(), time.Minute)
			// A person sees it.
			rows, err := topupread.New(db).Unresolved(ctx, 10)
			if err != nil || len(rows) != 1 || rows[0].PublicID != publicID || rows[0].Status != topup.StatusNeedsReview {
				t.Errorf("unresolved list %+v %v", rows, err)
			}
			// The bank recovers: the worker leaves a payment under review
			// alone, but the payer's own callback (a reload of the page)
			// reopens it and asks the bank, which says paid: credited once.
			bank.ClearFaults()
			clock.Advance(10 * time.Minute)
			if rr, err := app.Server.Worker.RunOnce(ctx); err != nil || rr.Claimed != 0 {
				t.Errorf("round after review: %+v %v", rr, err)
			}
			if r := c.Get(back); apptest.TopUpStatus(r.Body) != "credited" {
				t.Errorf("return after review: %q", apptest.TopUpStatus(r.Body))
			}
			if p = rsRow(t, db, publicID); p.Status != topup.StatusCredited || rsLedgerRows(t, db, p.ID) != 1 || c.Balance() != 100_000 {
				t.Errorf("after review: %s balance %d", p.Status, c.Balance())
			}
			if bp := rsBankPayment(t, bank, authority); bp.State != sandbank.StateVerified || bp.VerifyCount != 1 {
				t.Errorf("bank record %s verified %d times, want VERIFIED once", bp.State, bp.VerifyCount)
			}
			if st := bank.Stats()["verify"]; st.Injected5xx < 2 || st.OK != 1 {
				t.Errorf("bank verify stats %+v", st)
			}
			rsCheckAll(t, db, bank)
		})
	})
}

// ---- 7. reconciliation ----

func TestResilienceReconcile(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		app := rsApp(t, db, bankURL, nil, apptest.Options{})
		ctx := context.Background()
		c := app.NewClient(t)
		c.SignUp("lost@example.com")
		ours, publicID := rsTopUp(t, db, c, bankURL, "20000")
		if _, err := bank.Pay(ours); err != nil { // the callback is lost
			t.Fatal(err)
		}

		// Another shop on the same terminal: requested and paid at the bank.
		body := fmt.Sprintf(`{"merchant_id":%q,"amount":70000,"currency":"IRR","description":"another shop","callback_url":"https://shop.example/cb"}`, rsMerchant)
		resp, err := http.Post(bankURL+"/pg/v4/payment/request.json", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var reqAnswer struct {
			Data struct {
				Code      int    `json:"code"`
				Authority string `json:"authority"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&reqAnswer)
		resp.Body.Close()
		if err != nil || reqAnswer.Data.Code != 100 {
			t.Fatalf("foreign request: %+v %v", reqAnswer, err)
		}
		foreign := reqAnswer.Data.Authority
		resp, err = http.Post(bankURL+"/_sandbank/payments/"+foreign+"/pay", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("control pay: %d", resp.StatusCode)
		}

		rep, err := app.Server.TopUps.Reconcile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Listed != 2 || rep.Ours != 1 || rep.Credited != 1 || rep.CreditedRials != 200_000 ||
			rep.ForeignCount != 1 || rep.ForeignRials != 70_000 || rep.Mismatches != 0 || rep.Error != "" {
			t.Errorf("report %+v", rep)
		}
		kinds := map[string]string{}
		for _, it := range rep.Items() {
			kinds[it.Authority] = it.Kind
		}
		if kinds[ours] != "credited" || kinds[foreign] != "foreign" {
			t.Errorf("report items %+v", rep.Items())
		}
		rsAssertCreditedOnce(t, db, bank, publicID)
		if c.Balance() != 200_000 {
			t.Errorf("balance %d, want 200000", c.Balance())
		}
		// The foreign payment is left alone: not verified, no wallet moved.
		if bp := rsBankPayment(t, bank, foreign); bp.State != sandbank.StatePaid || bp.VerifyCount != 0 {
			t.Errorf("foreign payment at the bank: %s verified %d times", bp.State, bp.VerifyCount)
		}
		if n := ledgertest.WalletsTotal(t, db); n != 200_000 {
			t.Errorf("all wallets hold %d rials, want 200000", n)
		}
		if n := ledgertest.Credits(t, db); n != 1 {
			t.Errorf("%d ledger rows, want 1", n)
		}
		n := 0
		for _, rep := range topuptest.Reconciles(t, db) {
			if rep.Ours == 1 && rep.Credited == 1 && rep.ForeignCount == 1 {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d stored reports, want 1", n)
		}

		// A second run: ours is settled, the foreign one is still listed.
		rep2, err := app.Server.TopUps.Reconcile(ctx)
		if err != nil || rep2.Listed != 1 || rep2.Ours != 0 || rep2.Credited != 0 || rep2.ForeignCount != 1 {
			t.Errorf("second report %+v %v", rep2, err)
		}
		if c.Balance() != 200_000 {
			t.Errorf("balance after the second run %d", c.Balance())
		}

		// Admins see the reports; others do not see the page at all.
		if _, err := app.Server.Auth.SignUp(ctx, "admin@example.com", "correct horse battery", "admin", "fa"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignInAdmin("admin@example.com", "correct horse battery")
		page := admin.Get(routes.Admin)
		doc := apptest.Parse(page.Body)
		var shown []string
		for _, it := range doc.TestIDs("reconcile-item") {
			shown = append(shown, it.Attr("data-kind"))
		}
		if page.Status != http.StatusOK || len(doc.TestIDs("reconcile-report")) != 2 ||
			!slices.Contains(shown, "foreign") || !slices.Contains(shown, "credited") ||
			!strings.Contains(page.Body, foreign) || doc.TestID("breaker").Attr("data-state") != "closed" {
			t.Errorf("admin page: %d %.500s", page.Status, page.Body)
		}
		if r := c.Get(routes.Admin); r.Status != http.StatusNotFound {
			t.Errorf("a user opened /admin: %d", r.Status)
		}
		rsCheckAll(t, db, bank)
	})
}

// rsCheckAll asserts the invariants of ARCHITECTURE §2 and that the
// bank's paid set equals our credited set.
func rsCheckAll(t *testing.T, db *store.DB, bank *sandbank.Bank) {
	t.Helper()
	apptest.CheckInvariants(t, db)
	apptest.CheckBankAgrees(t, db, bank)
}
