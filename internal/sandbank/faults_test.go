package sandbank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/testwait"
)

// rawResult is an HTTP exchange that may have failed at the transport.
type rawResult struct {
	status  int
	header  http.Header
	body    string
	err     error
	elapsed time.Duration
}

// faultClient is a client with its own connections (so one test's dropped
// or reused connections never affect another) that does not follow
// redirects.
func faultClient(t *testing.T, timeout time.Duration) *http.Client {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// send does one request; body is sent as JSON unless it is a string or nil.
func send(t *testing.T, c *http.Client, method, u string, body any) rawResult {
	t.Helper()
	return sendCtx(t, context.Background(), c, method, u, body)
}

// sendCtx is send with a context (the client gives up when it ends).
func sendCtx(t *testing.T, ctx context.Context, c *http.Client, method, u string, body any) rawResult {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return rawResult{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return rawResult{status: resp.StatusCode, header: resp.Header, body: string(out), err: err, elapsed: time.Since(start)}
}

// isDrop reports whether err is what a client sees of a dropped connection.
func isDrop(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func setFaults(t *testing.T, b *Bank, f Faults) {
	t.Helper()
	if err := b.SetFaults(f); err != nil {
		t.Fatal(err)
	}
}

// opFixture prepares a bank for one operation and says how to call it and
// whether the call was performed.
type opFixture struct {
	name string
	// prepare sets the bank up (before faults are set) and returns the
	// call and a probe reporting whether the operation was performed
	// (nil for read-only operations, which leave no trace).
	prepare func(t *testing.T, b *Bank, srv *httptest.Server) (method, path string, body any, performed func() bool)
}

func opFixtures() []opFixture {
	paid := func(t *testing.T, b *Bank, srv *httptest.Server) string {
		t.Helper()
		a := newPayment(t, srv, 50_000)
		if _, err := b.Pay(a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	return []opFixture{
		{"request", func(t *testing.T, b *Bank, srv *httptest.Server) (string, string, any, func() bool) {
			return http.MethodPost, "/pg/v4/payment/request.json", newRequestBody(int64(20_000)),
				func() bool { return len(b.Payments()) == 1 }
		}},
		{"verify", func(t *testing.T, b *Bank, srv *httptest.Server) (string, string, any, func() bool) {
			a := paid(t, b, srv)
			return http.MethodPost, "/pg/v4/payment/verify.json",
				map[string]any{"merchant_id": merchant, "amount": 50_000, "authority": a},
				func() bool {
					p, _ := b.Payment(a)
					return p.State == StateVerified || p.VerifyCount != 0
				}
		}},
		{"inquiry", func(t *testing.T, b *Bank, srv *httptest.Server) (string, string, any, func() bool) {
			a := paid(t, b, srv)
			return http.MethodPost, "/pg/v4/payment/inquiry.json", map[string]any{"merchant_id": merchant, "authority": a}, nil
		}},
		{"unverified", func(t *testing.T, b *Bank, srv *httptest.Server) (string, string, any, func() bool) {
			paid(t, b, srv)
			return http.MethodPost, "/pg/v4/payment/unVerified.json", map[string]any{"merchant_id": merchant}, nil
		}},
		{"startpay page", func(t *testing.T, b *Bank, srv *httptest.Server) (string, string, any, func() bool) {
			a := newPayment(t, srv, 50_000)
			return http.MethodGet, "/pg/StartPay/" + a, nil, func() bool {
				// A served page records where the payer came from, which
				// shows once the payment is paid.
				if _, err := b.Pay(a); err != nil {
					t.Fatal(err)
				}
				p, _ := b.Payment(a)
				return p.Referer != ""
			}
		}},
		{"startpay button", func(t *testing.T, b *Bank, srv *httptest.Server) (string, string, any, func() bool) {
			a := newPayment(t, srv, 50_000)
			return http.MethodPost, "/pg/StartPay/" + a + "/pay", "", func() bool {
				p, _ := b.Payment(a)
				return p.State == StatePaid
			}
		}},
	}
}

func TestFaultKinds(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		name    string
		rule    OpFaults
		perform bool
		check   func(t *testing.T, res rawResult, st OpStats)
	}{
		{"no fault", OpFaults{}, true, func(t *testing.T, res rawResult, st OpStats) {
			if res.err != nil || res.status >= 500 || res.status == http.StatusTooManyRequests {
				t.Errorf("answer: %d %v", res.status, res.err)
			}
			if st.OK != 1 {
				t.Errorf("stats %+v, want ok 1", st)
			}
		}},
		{"5xx default status", OpFaults{ErrorRate: 1}, false, func(t *testing.T, res rawResult, st OpStats) {
			if res.err != nil || res.status != http.StatusServiceUnavailable ||
				!strings.HasPrefix(res.header.Get("Content-Type"), "text/html") ||
				!strings.Contains(res.body, "<h1>503 Service Unavailable</h1>") {
				t.Errorf("answer: %d %v %q %q", res.status, res.err, res.header.Get("Content-Type"), res.body)
			}
			if st.Injected5xx != 1 {
				t.Errorf("stats %+v, want injected_5xx 1", st)
			}
		}},
		{"5xx set status", OpFaults{ErrorRate: 1, ErrorStatus: 502}, false, func(t *testing.T, res rawResult, st OpStats) {
			if res.err != nil || res.status != http.StatusBadGateway || !strings.Contains(res.body, "502 Bad Gateway") {
				t.Errorf("answer: %d %v %q", res.status, res.err, res.body)
			}
			if st.Injected5xx != 1 {
				t.Errorf("stats %+v, want injected_5xx 1", st)
			}
		}},
		{"drop", OpFaults{DropRate: 1}, false, func(t *testing.T, res rawResult, st OpStats) {
			if res.err == nil || !isDrop(res.err) {
				t.Errorf("want a dropped connection (EOF or reset), got %d %v", res.status, res.err)
			}
			if st.Dropped != 1 {
				t.Errorf("stats %+v, want dropped 1", st)
			}
		}},
		{"refuse", OpFaults{RefuseRate: 1}, false, func(t *testing.T, res rawResult, st OpStats) {
			if res.err != nil || res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") != "1" {
				t.Errorf("answer: %d %v Retry-After %q", res.status, res.err, res.header.Get("Retry-After"))
			}
			if st.Refused != 1 {
				t.Errorf("stats %+v, want refused 1", st)
			}
		}},
		// Performed, answer lost: the operation happened, the client
		// never hears of it.
		{"answer lost", OpFaults{AnswerLostRate: 1, HangMS: 1}, true, func(t *testing.T, res rawResult, st OpStats) {
			if res.err == nil || !isDrop(res.err) {
				t.Errorf("want a dropped connection (EOF or reset), got %d %v %.100s", res.status, res.err, res.body)
			}
			if st.Lost != 1 || st.OK != 0 || st.Dropped != 0 {
				t.Errorf("stats %+v, want lost 1 and nothing else", st)
			}
		}},
	}
	for _, op := range opFixtures() {
		for _, k := range kinds {
			t.Run(op.name+"/"+k.name, func(t *testing.T) {
				b, srv := newTestBank(t, Options{})
				method, path, body, performed := op.prepare(t, b, srv)
				key := strings.Fields(op.name)[0]
				setFaults(t, b, Faults{Seed: 1, Ops: map[string]OpFaults{key: k.rule}})
				b.ResetStats()

				res := send(t, faultClient(t, 5*time.Second), method, srv.URL+path, body)
				st := b.Stats()[key]
				if st.Calls != 1 {
					t.Errorf("stats %+v, want calls 1", st)
				}
				k.check(t, res, st)
				if !k.perform && st.OK != 0 {
					t.Errorf("stats %+v: a faulted call counted ok", st)
				}
				if performed != nil && performed() != k.perform {
					t.Errorf("operation performed = %v, want %v", !k.perform, k.perform)
				}
				if key != opStartPay && res.err == nil && res.status == http.StatusTooManyRequests {
					// The JSON API refuses with Zarinpal's envelope and -12.
					if r := decodeEnvelope(t, res.status, []byte(res.body)); r.Code(t) != codeTooManyAttempts {
						t.Errorf("refusal body %s", res.body)
					}
				}
			})
		}
	}
}

func TestCommitThenHang(t *testing.T) {
	t.Parallel()
	b, srv := newTestBank(t, Options{})
	a := newPayment(t, srv, 80_000)
	if _, err := b.Pay(a); err != nil {
		t.Fatal(err)
	}
	paidRef := listPayments(t, srv)[0].RefID
	setFaults(t, b, Faults{Ops: map[string]OpFaults{"verify": {CommitThenHang: true, HangMS: 80}}})
	c := faultClient(t, 5*time.Second)
	body := map[string]any{"merchant_id": merchant, "amount": 80_000, "authority": a}

	res := send(t, c, http.MethodPost, srv.URL+"/pg/v4/payment/verify.json", body)
	if res.err == nil || !isDrop(res.err) {
		t.Fatalf("hung verify: want a dropped connection, got %d %v %s", res.status, res.err, res.body)
	}
	if res.elapsed < 80*time.Millisecond {
		t.Errorf("answer dropped after %v, before hang_ms", res.elapsed)
	}
	ps := listPayments(t, srv)
	if ps[0].State != StateVerified || ps[0].RefID != paidRef || ps[0].VerifyCount != 1 || ps[0].VerifiedAt.IsZero() {
		t.Errorf("after the hung verify: %+v", ps[0])
	}

	// The retry (faults still on) answers 101 with the same ref_id at once.
	res = send(t, c, http.MethodPost, srv.URL+"/pg/v4/payment/verify.json", body)
	if res.err != nil {
		t.Fatal(res.err)
	}
	r := decodeEnvelope(t, res.status, []byte(res.body))
	if r.Code(t) != 101 || r.int(t, "ref_id") != paidRef {
		t.Errorf("retry: %s, want 101 with ref_id %d", res.body, paidRef)
	}
	if st := b.Stats()["verify"]; st.Calls != 2 || st.Hung != 1 || st.OK != 1 || st.Dropped != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestCommitThenHangClientGivesUp(t *testing.T) {
	t.Parallel()
	b := New(Options{Seed: 3})
	srv := httptest.NewServer(b.Handler())
	closed := false
	t.Cleanup(func() {
		if !closed {
			srv.Close()
		}
	})
	a := newPayment(t, srv, 80_000)
	if _, err := b.Pay(a); err != nil {
		t.Fatal(err)
	}
	const hang = time.Minute
	setFaults(t, b, Faults{Ops: map[string]OpFaults{"verify": {CommitThenHang: true, HangMS: hang.Milliseconds()}}})

	// The client gives up once the bank has committed (a bounded poll),
	// not after a fixed time: on a loaded machine a short time-out could
	// end the request before the bank even saw it.
	committed := make(chan bool, 1)
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	go func() {
		defer leave()
		committed <- testwait.Until(30*time.Second, "the bank to commit the verify", func() bool {
			p, _ := b.Payment(a)
			return p.State == StateVerified
		}) == nil
	}()
	res := sendCtx(t, ctx, faultClient(t, 0), http.MethodPost, srv.URL+"/pg/v4/payment/verify.json",
		map[string]any{"merchant_id": merchant, "amount": 80_000, "authority": a})
	if !<-committed {
		t.Fatalf("the bank did not commit the verify within 30s (answer: %d %v)", res.status, res.err)
	}
	if res.err == nil || res.elapsed >= hang {
		t.Fatalf("want no answer (the client gave up after the commit): %d %v after %v", res.status, res.err, res.elapsed)
	}
	// The hung handler is freed by the client leaving: the server closes
	// long before hang_ms (a minute) — 10s covers a loaded machine.
	start := time.Now()
	srv.Close()
	closed = true
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("closing the server took %v: the hung handler was not freed", d)
	}
	if st := b.Stats()["verify"]; st.Hung != 1 {
		t.Errorf("stats %+v", st)
	}
}

// "Request performed, answer lost": the bank creates the authority and
// then hangs past the client's time-out; the client never learns the
// authority, the bank holds it unpaid.
func TestRequestAnswerLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		rule          OpFaults
		clientTimeout time.Duration
		wantLost      int64
		wantPayments  int
	}{
		{"hangs past the client's time-out", OpFaults{AnswerLostRate: 1, HangMS: 60_000}, time.Second, 1, 1},
		{"drops the connection at once", OpFaults{AnswerLostRate: 1, HangMS: 1}, 5 * time.Second, 1, 1},
		{"no such fault: answered", OpFaults{LatencyMS: 1}, 5 * time.Second, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, srv := newTestBank(t, Options{})
			setFaults(t, b, Faults{Seed: 1, Ops: map[string]OpFaults{"request": tt.rule}})
			res := send(t, faultClient(t, tt.clientTimeout), http.MethodPost, srv.URL+"/pg/v4/payment/request.json", newRequestBody(int64(20_000)))
			if lost := tt.wantLost > 0; lost != (res.err != nil) {
				t.Fatalf("answer: %d %v %.200s; want lost=%v", res.status, res.err, res.body, lost)
			}
			if tt.wantLost > 0 && res.elapsed > 3*time.Second {
				t.Errorf("the client waited %v", res.elapsed)
			}
			ps := b.Payments()
			if len(ps) != tt.wantPayments {
				t.Fatalf("bank holds %d payments, want %d", len(ps), tt.wantPayments)
			}
			if p := ps[0]; p.State != StateInBank || p.Authority == "" || p.Amount != 20_000 {
				t.Errorf("bank payment %+v, want an unpaid authority of 20000 rials", p)
			}
			if st := b.Stats()["request"]; st.Lost != tt.wantLost || st.Calls != 1 || st.OK != 1-tt.wantLost {
				t.Errorf("stats %+v, want lost %d", st, tt.wantLost)
			}
		})
	}
}

func TestCommitHangRate(t *testing.T) {
	t.Parallel()
	// With rate 0.5 some committing verifies hang and the others answer 100.
	b, srv := newTestBank(t, Options{})
	var auths []string
	for range 20 {
		a := newPayment(t, srv, 10_000)
		if _, err := b.Pay(a); err != nil {
			t.Fatal(err)
		}
		auths = append(auths, a)
	}
	setFaults(t, b, Faults{Seed: 5, Ops: map[string]OpFaults{"verify": {CommitThenHang: true, CommitHangRate: 0.5, HangMS: 1}}})
	c := faultClient(t, 5*time.Second)
	for _, a := range auths {
		send(t, c, http.MethodPost, srv.URL+"/pg/v4/payment/verify.json", map[string]any{"merchant_id": merchant, "amount": 10_000, "authority": a})
	}
	st := b.Stats()["verify"]
	if st.Hung == 0 || st.OK == 0 || st.Hung+st.OK != 20 {
		t.Errorf("stats %+v, want a mix of hung and ok", st)
	}
	for _, p := range b.Payments() {
		if p.State != StateVerified {
			t.Errorf("%s is %s, want VERIFIED (hung or not)", p.Authority, p.State)
		}
	}
}

func TestFaultLatency(t *testing.T) {
	t.Parallel()
	b, srv := newTestBank(t, Options{})
	a := newPayment(t, srv, 30_000)
	if _, err := b.Pay(a); err != nil {
		t.Fatal(err)
	}
	setFaults(t, b, Faults{Ops: map[string]OpFaults{
		"inquiry":  {LatencyMS: 40, JitterMS: 20},
		"startpay": {LatencyMS: 40},
	}})
	c := faultClient(t, 5*time.Second)
	res := send(t, c, http.MethodPost, srv.URL+"/pg/v4/payment/inquiry.json", map[string]any{"merchant_id": merchant, "authority": a})
	if res.err != nil || res.elapsed < 40*time.Millisecond {
		t.Fatalf("inquiry: %v after %v, want an answer after >= 40ms", res.err, res.elapsed)
	}
	if r := decodeEnvelope(t, res.status, []byte(res.body)); r.Code(t) != 100 || r.str("status") != "PAID" {
		t.Errorf("delayed inquiry: %s", res.body)
	}
	if res = send(t, c, http.MethodGet, srv.URL+"/pg/StartPay/"+a, nil); res.err != nil || res.elapsed < 40*time.Millisecond {
		t.Errorf("startpay: %v after %v", res.err, res.elapsed)
	}
	st := b.Stats()
	if st["inquiry"].Delayed != 1 || st["inquiry"].OK != 1 || st["startpay"].Delayed != 1 || st["request"].Delayed != 0 {
		t.Errorf("stats %+v", st)
	}

	// Jitter: the delays spread uniformly over [latency, latency+jitter].
	setFaults(t, b, Faults{Seed: 11, Ops: map[string]OpFaults{"verify": {LatencyMS: 40, JitterMS: 20}}})
	lo, hi := time.Hour, time.Duration(0)
	for range 200 {
		d := b.faults.plan(opVerify).delay
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 40*time.Millisecond || hi > 60*time.Millisecond || hi-lo < 15*time.Millisecond {
		t.Errorf("jittered delays in [%v, %v], want spread over [40ms, 60ms]", lo, hi)
	}
}

func TestFaultLatencyClientGivesUp(t *testing.T) {
	t.Parallel()
	b := New(Options{Seed: 3})
	srv := httptest.NewServer(b.Handler())
	closed := false
	t.Cleanup(func() {
		if !closed {
			srv.Close()
		}
	})
	a := newPayment(t, srv, 30_000)
	if _, err := b.Pay(a); err != nil {
		t.Fatal(err)
	}
	setFaults(t, b, Faults{Ops: map[string]OpFaults{"verify": {LatencyMS: 60_000}}})
	// The client waits long enough for the bank to have begun the call on
	// a loaded machine, and gives up long before the bank's minute.
	res := send(t, faultClient(t, 2*time.Second), http.MethodPost, srv.URL+"/pg/v4/payment/verify.json",
		map[string]any{"merchant_id": merchant, "amount": 30_000, "authority": a})
	if res.err == nil || res.elapsed > 20*time.Second {
		t.Fatalf("want the client to give up after 2s: %d %v after %v", res.status, res.err, res.elapsed)
	}
	start := time.Now()
	srv.Close() // waits for the handler: it must leave its sleep at once
	closed = true
	if d := time.Since(start); d > time.Second {
		t.Errorf("closing the server took %v: the delayed handler was not freed", d)
	}
	if st := b.Stats()["verify"]; st.Abandoned != 1 || st.OK != 0 || st.Delayed != 1 {
		t.Errorf("stats %+v", st)
	}
	if p, _ := b.Payment(a); p.State != StatePaid || p.VerifyCount != 0 {
		t.Errorf("an abandoned verify was performed: %+v", p)
	}
}

// countErrors sends n inquiries from several goroutines and counts 5xx.
func countErrors(t *testing.T, srv *httptest.Server, n int) int {
	t.Helper()
	c := faultClient(t, 5*time.Second)
	body, _ := json.Marshal(map[string]any{"merchant_id": merchant, "authority": "S" + strings.Repeat("0", 35)})
	const workers = 8
	var mu sync.Mutex
	errs, fails := 0, 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				resp, err := c.Post(srv.URL+"/pg/v4/payment/inquiry.json", "application/json", bytes.NewReader(body))
				if err != nil {
					mu.Lock()
					fails++
					mu.Unlock()
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					mu.Lock()
					errs++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if fails > 0 {
		t.Fatalf("%d calls failed at the transport", fails)
	}
	return errs
}

func TestErrorRateIsSeeded(t *testing.T) {
	t.Parallel()
	f := Faults{Seed: 2024, Ops: map[string]OpFaults{"inquiry": {ErrorRate: 0.3}}}
	b, srv := newTestBank(t, Options{Faults: &f})
	first := countErrors(t, srv, 1000)
	if first < 240 || first > 360 {
		t.Errorf("error_rate 0.3 over 1000 calls gave %d 5xx, want 300±60", first)
	}
	if st := b.Stats()["inquiry"]; st.Calls != 1000 || st.Injected5xx != int64(first) || st.OK != int64(1000-first) {
		t.Errorf("stats %+v, want %d 5xx", st, first)
	}

	// Setting the same faults again reseeds: the same count again.
	setFaults(t, b, f)
	if second := countErrors(t, srv, 1000); second != first {
		t.Errorf("second run with the same seed gave %d 5xx, first %d", second, first)
	}
}

func TestFaultSequenceIsSeeded(t *testing.T) {
	t.Parallel()
	// Same seed and same calls: the very same faults, call by call.
	run := func(seed uint64) string {
		b, srv := newTestBank(t, Options{Faults: &Faults{Seed: seed, Ops: map[string]OpFaults{
			"unverified": {ErrorRate: 0.3, DropRate: 0.2, RefuseRate: 0.2},
		}}})
		c := faultClient(t, 5*time.Second)
		var sb strings.Builder
		for range 40 {
			res := send(t, c, http.MethodPost, srv.URL+"/pg/v4/payment/unVerified.json", map[string]any{"merchant_id": merchant})
			switch {
			case res.err != nil:
				sb.WriteByte('x')
			case res.status >= 500:
				sb.WriteByte('5')
			case res.status == http.StatusTooManyRequests:
				sb.WriteByte('r')
			default:
				sb.WriteByte('.')
			}
		}
		st := b.Stats()["unverified"]
		if got := st.OK + st.Injected5xx + st.Dropped + st.Refused; got != 40 || st.Calls != 40 {
			t.Errorf("stats %+v do not add up to 40 calls", st)
		}
		return sb.String()
	}
	a, again, other := run(77), run(77), run(78)
	if a != again {
		t.Errorf("same seed, different faults:\n%s\n%s", a, again)
	}
	if a == other {
		t.Errorf("different seeds, same faults: %s", a)
	}
	for _, kind := range []string{"x", "5", "r", "."} {
		if !strings.Contains(a, kind) {
			t.Errorf("no %q in %s", kind, a)
		}
	}
}

func TestDown(t *testing.T) {
	t.Parallel()
	b, srv := newTestBank(t, Options{})
	a := newPayment(t, srv, 40_000)
	// Down wins over (and skips) every per-operation fault, latency included.
	setFaults(t, b, Faults{Down: true, Ops: map[string]OpFaults{"verify": {LatencyMS: 60_000}, "request": {RefuseRate: 1}}})
	c := faultClient(t, 30*time.Second)
	calls := []struct{ method, path string }{
		{http.MethodPost, "/pg/v4/payment/request.json"},
		{http.MethodPost, "/pg/v4/payment/verify.json"},
		{http.MethodPost, "/pg/v4/payment/inquiry.json"},
		{http.MethodPost, "/pg/v4/payment/unVerified.json"},
		{http.MethodGet, "/pg/StartPay/" + a},
		{http.MethodPost, "/pg/StartPay/" + a + "/cancel"},
	}
	for _, call := range calls {
		var body any = map[string]any{"merchant_id": merchant}
		if call.method == http.MethodGet {
			body = nil
		}
		res := send(t, c, call.method, srv.URL+call.path, body)
		// Far short of the minute's latency that Down skips.
		if res.err == nil || !isDrop(res.err) || res.elapsed > 5*time.Second {
			t.Errorf("down %s %s: %d %v after %v, want a drop at once", call.method, call.path, res.status, res.err, res.elapsed)
		}
	}
	// The control API still works: list, act as the payer, read faults.
	if ps := listPayments(t, srv); len(ps) != 1 || ps[0].State != StateInBank {
		t.Errorf("payments while down: %+v", ps)
	}
	if status, _ := control(t, srv, a, "pay"); status != http.StatusOK {
		t.Errorf("control pay while down: %d", status)
	}
	if res := send(t, c, http.MethodGet, srv.URL+"/_sandbank/faults", nil); res.status != http.StatusOK {
		t.Errorf("GET faults while down: %d", res.status)
	}
	if res := send(t, c, http.MethodGet, srv.URL+"/pg/assets/bank.css", nil); res.status != http.StatusOK {
		t.Errorf("stylesheet while down: %d", res.status)
	}
	st := b.Stats()
	if st["startpay"].Dropped != 2 || st["verify"].Dropped != 1 || st["verify"].Delayed != 0 || st["request"].Refused != 0 {
		t.Errorf("stats %+v", st)
	}

	// Down with a status answers it instead.
	setFaults(t, b, Faults{Down: true, DownStatus: 503})
	res := send(t, c, http.MethodPost, srv.URL+"/pg/v4/payment/verify.json", map[string]any{"merchant_id": merchant, "amount": 40_000, "authority": a})
	if res.err != nil || res.status != http.StatusServiceUnavailable || !strings.Contains(res.body, "503") {
		t.Errorf("down_status 503: %d %v %s", res.status, res.err, res.body)
	}
	if p, _ := b.Payment(a); p.State != StatePaid || p.VerifyCount != 0 {
		t.Errorf("a verify was performed while down: %+v", p)
	}

	// Back up.
	b.ClearFaults()
	if r := verify(t, srv, merchant, a, 40_000); r.Code(t) != 100 {
		t.Errorf("verify after clearing: %s", r.Raw)
	}
}

func TestFaultsControlAPI(t *testing.T) {
	t.Parallel()
	b, srv := newTestBank(t, Options{})
	c := faultClient(t, 5*time.Second)
	const setting = `{"seed": 42, "ops": {"verify": {"latency_ms": 200, "jitter_ms": 100, "error_rate": 0.3,
		"error_status": 503, "drop_rate": 0.1, "refuse_rate": 0.1, "commit_then_hang": true, "hang_ms": 30000}},
		"down": false}`
	want := Faults{Seed: 42, Ops: map[string]OpFaults{"verify": {
		LatencyMS: 200, JitterMS: 100, ErrorRate: 0.3, ErrorStatus: 503, DropRate: 0.1, RefuseRate: 0.1,
		CommitThenHang: true, HangMS: 30000,
	}}}
	decode := func(res rawResult) Faults {
		t.Helper()
		var f Faults
		if err := json.Unmarshal([]byte(res.body), &f); err != nil {
			t.Fatalf("decode %q: %v", res.body, err)
		}
		return f
	}

	res := send(t, c, http.MethodPost, srv.URL+"/_sandbank/faults", setting)
	if res.status != http.StatusOK || !reflect.DeepEqual(decode(res), want) {
		t.Fatalf("POST: %d %s", res.status, res.body)
	}
	if res = send(t, c, http.MethodGet, srv.URL+"/_sandbank/faults", nil); res.status != http.StatusOK || !reflect.DeepEqual(decode(res), want) {
		t.Errorf("GET: %d %s", res.status, res.body)
	}
	if got := b.Faults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Faults() = %+v", got)
	}
	// Faults returns a copy.
	b.Faults().Ops["verify"] = OpFaults{}
	if got := b.Faults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Faults() shares its map: %+v", got)
	}

	bad := []struct{ name, body, want string }{
		{"not JSON", `down`, "decode faults"},
		{"trailing data", `{} {}`, "trailing"},
		{"unknown field", `{"ops": {"verify": {"latency": 200}}}`, "unknown field"},
		{"unknown op", `{"ops": {"reverse": {"error_rate": 0.1}}}`, `unknown operation "reverse"`},
		{"rate above 1", `{"ops": {"verify": {"error_rate": 1.5}}}`, "ops.verify.error_rate 1.5"},
		{"negative rate", `{"ops": {"inquiry": {"drop_rate": -0.1}}}`, "ops.inquiry.drop_rate -0.1"},
		{"rates above 1 together", `{"ops": {"verify": {"error_rate": 0.6, "drop_rate": 0.5}}}`, "must not exceed 1"},
		{"negative latency", `{"ops": {"verify": {"latency_ms": -1}}}`, "ops.verify.latency_ms -1"},
		{"negative hang", `{"ops": {"verify": {"hang_ms": -5}}}`, "ops.verify.hang_ms -5"},
		{"latency too long", `{"ops": {"verify": {"latency_ms": 3600001}}}`, "latency_ms 3600001"},
		{"fractional latency", `{"ops": {"verify": {"latency_ms": 1.5}}}`, "decode faults"},
		{"error status not 5xx", `{"ops": {"verify": {"error_rate": 1, "error_status": 404}}}`, "error_status 404"},
		{"down status not 5xx", `{"down": true, "down_status": 200}`, "down_status 200"},
		{"commit then hang off verify", `{"ops": {"inquiry": {"commit_then_hang": true}}}`, "the operations that commit"},
		{"hang off verify without answer lost", `{"ops": {"request": {"hang_ms": 100}}}`, "hang_ms applies to verify, or with answer_lost_rate"},
		{"answer lost rate above 1", `{"ops": {"request": {"answer_lost_rate": 1.5}}}`, "ops.request.answer_lost_rate 1.5"},
		{"answer lost with drops above 1", `{"ops": {"request": {"answer_lost_rate": 0.5, "drop_rate": 0.6}}}`, "must not exceed 1"},
		{"commit hang rate", `{"ops": {"verify": {"commit_then_hang": true, "commit_hang_rate": 2}}}`, "commit_hang_rate 2"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			res := send(t, c, http.MethodPost, srv.URL+"/_sandbank/faults", tc.body)
			var ans struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(res.body), &ans); err != nil || res.status != http.StatusBadRequest ||
				!strings.Contains(ans.Error, tc.want) || !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
				t.Errorf("%d %s, want 400 with an error containing %q", res.status, res.body, tc.want)
			}
			if got := b.Faults(); !reflect.DeepEqual(got, want) {
				t.Errorf("a refused setting changed the faults: %+v", got)
			}
		})
	}
	if err := b.SetFaults(Faults{Ops: map[string]OpFaults{"verify": {ErrorRate: 2}}}); !errors.Is(err, ErrInvalidFaults) {
		t.Errorf("SetFaults(invalid) = %v", err)
	}

	if res = send(t, c, http.MethodPut, srv.URL+"/_sandbank/faults", setting); res.status != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", res.status)
	}
	if res = send(t, c, http.MethodDelete, srv.URL+"/_sandbank/faults", nil); res.status != http.StatusOK || !reflect.DeepEqual(decode(res), Faults{}) {
		t.Errorf("DELETE: %d %s", res.status, res.body)
	}
	if res = send(t, c, http.MethodGet, srv.URL+"/_sandbank/faults", nil); strings.TrimSpace(res.body) != `{"seed":0,"down":false}` {
		t.Errorf("GET after DELETE: %s", res.body)
	}

	// Stats over HTTP: every operation, with counts.
	newPayment(t, srv, 10_000)
	res = send(t, c, http.MethodGet, srv.URL+"/_sandbank/stats", nil)
	var stats map[string]OpStats
	if err := json.Unmarshal([]byte(res.body), &stats); err != nil || res.status != http.StatusOK {
		t.Fatalf("GET stats: %d %s", res.status, res.body)
	}
	if len(stats) != len(FaultOps()) || stats["request"].Calls != 1 || stats["request"].OK != 1 {
		t.Errorf("stats %s", res.body)
	}
	for _, key := range []string{`"calls"`, `"ok"`, `"injected_5xx"`, `"dropped"`, `"refused"`, `"hung"`, `"lost"`, `"delayed"`} {
		if !strings.Contains(res.body, key) {
			t.Errorf("stats lack %s: %s", key, res.body)
		}
	}
	if res = send(t, c, http.MethodDelete, srv.URL+"/_sandbank/stats", nil); res.status != http.StatusOK || b.Stats()["request"].Calls != 0 {
		t.Errorf("DELETE stats: %d %s", res.status, res.body)
	}
}

func TestOptionsFaults(t *testing.T) {
	t.Parallel()
	f := Faults{Down: true}
	b := New(Options{Faults: &f})
	if !b.Faults().Down {
		t.Errorf("Options.Faults not applied: %+v", b.Faults())
	}
	defer func() {
		if recover() == nil {
			t.Error("New with invalid Options.Faults did not panic")
		}
	}()
	New(Options{Faults: &Faults{Ops: map[string]OpFaults{"nope": {}}}})
}

func TestMountedFaults(t *testing.T) {
	t.Parallel()
	// Under a prefix, the faults apply the same way (StripPrefix keeps the
	// connection hijackable).
	b := New(Options{Seed: 1, Faults: &Faults{Ops: map[string]OpFaults{"request": {DropRate: 1}}}})
	mux := http.NewServeMux()
	mux.Handle(routes.Sandbank+"/", http.StripPrefix(routes.Sandbank, b.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	res := send(t, faultClient(t, 5*time.Second), http.MethodPost, srv.URL+routes.Sandbank+"/pg/v4/payment/request.json", newRequestBody(int64(10_000)))
	if !isDrop(res.err) {
		t.Errorf("mounted drop: %d %v", res.status, res.err)
	}
}

func TestDropWithoutHijacker(t *testing.T) {
	t.Parallel()
	// A ResponseWriter that cannot be hijacked gets the abort panic.
	b := New(Options{Seed: 1, Faults: &Faults{Ops: map[string]OpFaults{"inquiry": {DropRate: 1}}}})
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/pg/v4/payment/inquiry.json", strings.NewReader(`{}`))
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	b.Handler().ServeHTTP(rec, req)
}

func TestParseFaultFlags(t *testing.T) {
	t.Parallel()
	good := []struct {
		name string
		args []string
		want *Faults
	}{
		{"no flags", nil, nil},
		{"other flags only", []string{"-addr", ":1"}, nil},
		{"the full set", []string{
			"--seed", "42", "--latency", "verify=200ms,request=50ms", "--jitter", "verify=100ms",
			"--error-rate", "verify=0.2", "--drop-rate", "verify=0.1", "--refuse-rate", "inquiry=0.1",
			"--commit-then-hang", "--hang", "30s",
		}, &Faults{Seed: 42, Ops: map[string]OpFaults{
			"verify":  {LatencyMS: 200, JitterMS: 100, ErrorRate: 0.2, DropRate: 0.1, CommitThenHang: true, HangMS: 30_000},
			"request": {LatencyMS: 50},
			"inquiry": {RefuseRate: 0.1},
		}}},
		{"repeated flags, later wins", []string{"-latency", "verify=1s", "-latency", "verify=1.5s, startpay=5ms"},
			&Faults{Ops: map[string]OpFaults{"verify": {LatencyMS: 1500}, "startpay": {LatencyMS: 5}}}},
		{"all operations", []string{"-error-rate", "all=0.1", "-error-status", "all=502"}, &Faults{Ops: func() map[string]OpFaults {
			// every operation of every protocol
			m := map[string]OpFaults{}
			for _, op := range FaultOps() {
				m[op] = OpFaults{ErrorRate: 0.1, ErrorStatus: 502}
			}
			if len(m) < 16 || m["verify"] != m["mellat-settle"] {
				panic("FaultOps lacks an operation")
			}
			return m
		}()}},
		{"down", []string{"-down"}, &Faults{Down: true}},
		{"down with a status", []string{"-down", "-down-status", "502"}, &Faults{Down: true, DownStatus: 502}},
		{"seed alone", []string{"-seed", "7"}, &Faults{Seed: 7}},
		{"commit hang rate", []string{"-commit-then-hang", "-commit-hang-rate", "0.5", "-hang", "250ms"},
			&Faults{Ops: map[string]OpFaults{"verify": {CommitThenHang: true, CommitHangRate: 0.5, HangMS: 250}}}},
		{"request performed, answer lost", []string{"-answer-lost-rate", "request=1,startpay=0.5", "-hang", "200ms"},
			&Faults{Ops: map[string]OpFaults{"request": {AnswerLostRate: 1, HangMS: 200}, "startpay": {AnswerLostRate: 0.5, HangMS: 200},
				"verify": {HangMS: 200}}}},
		{"answer lost at rate 0 with a hang", []string{"-answer-lost-rate", "request=0", "-hang", "1s"},
			&Faults{Ops: map[string]OpFaults{"request": {}, "verify": {HangMS: 1000}}}},
		{"zero values", []string{"-latency", "verify=0s", "-error-rate", "verify=0"},
			&Faults{Ops: map[string]OpFaults{"verify": {}}}},
	}
	parse := func(args []string) (*Faults, error) {
		fs := flag.NewFlagSet("sandbank", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("addr", "", "")
		build := ParseFaultFlags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return build()
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.args)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"no operation", []string{"-latency", "200ms"}, "want OP=VALUE"},
		{"unknown operation", []string{"-latency", "reverse=200ms"}, "unknown operation"},
		{"empty item", []string{"-latency", "verify=1s,"}, "want OP=VALUE"},
		{"duration without unit", []string{"-latency", "verify=200"}, "duration"},
		{"negative duration", []string{"-jitter", "verify=-1s"}, "negative"},
		{"sub-millisecond duration", []string{"-latency", "verify=1500us"}, "whole number of milliseconds"},
		{"duration too long", []string{"-latency", "verify=2h"}, "at most 1h"},
		{"rate above 1", []string{"-error-rate", "verify=1.2"}, "between 0 and 1"},
		{"negative rate", []string{"-drop-rate", "verify=-0.1"}, "between 0 and 1"},
		{"rate not a number", []string{"-refuse-rate", "inquiry=often"}, "between 0 and 1"},
		{"rates above 1 together", []string{"-error-rate", "verify=0.6", "-drop-rate", "verify=0.6"}, "must not exceed 1"},
		{"status not 5xx", []string{"-error-status", "verify=404"}, "500-599"},
		{"down status not 5xx", []string{"-down-status", "200"}, "500-599"},
		{"bad hang", []string{"-hang", "-1s"}, "negative"},
		{"bad commit hang rate", []string{"-commit-hang-rate", "2"}, "between 0 and 1"},
		{"bad answer lost rate", []string{"-answer-lost-rate", "request=2"}, "between 0 and 1"},
		{"answer lost and drops above 1", []string{"-answer-lost-rate", "request=0.5", "-drop-rate", "request=0.6"}, "must not exceed 1"},
		{"bad seed", []string{"-seed", "-1"}, "invalid value"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %+v, %v; want an error containing %q", got, err, tc.want)
			}
		})
	}

	// The help documents the syntax.
	fs := flag.NewFlagSet("sandbank", flag.ContinueOnError)
	ParseFaultFlags(fs)
	var help bytes.Buffer
	fs.SetOutput(&help)
	fs.PrintDefaults()
	for _, s := range []string{"-latency OP=DURATION[,...]", "verify=200ms,request=50ms", "-error-rate OP=RATE[,...]", "-hang DURATION", "unverified",
		"-answer-lost-rate OP=RATE[,...]", "request performed, answer lost",
		// Every gateway's operations, not Zarinpal's alone.
		"sep-verify", "sep-inquiry", "mellat-settle", "mellat-verify", "zibal-request", "zibal-verify"} {
		if !strings.Contains(help.String(), s) {
			t.Errorf("help lacks %q:\n%s", s, help.String())
		}
	}
}
