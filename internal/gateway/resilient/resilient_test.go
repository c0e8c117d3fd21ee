package resilient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
)

// ---- scripted fake gateway ----

// step is what one call to the fake does.
type step struct {
	res   any           // the op's result type; ignored when err != nil
	err   error         // returned as is
	delay time.Duration // real delay before answering, cut short by ctx like a driver
	block chan struct{} // wait for close (or ctx) before answering
	panic bool
}

type fakeGW struct {
	mu      sync.Mutex
	scripts map[string][]step // by op; the last step repeats
	calls   map[string]int
	started chan string // if set, receives the op when a call starts
}

func newFake(scripts map[string][]step) *fakeGW {
	if scripts == nil {
		scripts = map[string][]step{}
	}
	return &fakeGW{scripts: scripts, calls: map[string]int{}}
}

func (f *fakeGW) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeGW) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

func (f *fakeGW) setScript(op string, s ...step) {
	f.mu.Lock()
	f.scripts[op] = s
	f.mu.Unlock()
}

func (f *fakeGW) run(ctx context.Context, op string) (any, error) {
	f.mu.Lock()
	n := f.calls[op]
	f.calls[op]++
	s := f.scripts[op]
	st := step{}
	if len(s) > 0 {
		st = s[min(n, len(s)-1)]
	}
	started := f.started
	f.mu.Unlock()
	if started != nil {
		started <- op
	}
	if st.panic {
		panic("fake gateway panic")
	}
	if st.delay > 0 {
		t := time.NewTimer(st.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, &gateway.TransientError{Op: op, Err: ctx.Err()}
		}
	}
	if st.block != nil {
		select {
		case <-st.block:
		case <-ctx.Done():
			return nil, &gateway.TransientError{Op: op, Err: ctx.Err()}
		}
	}
	return st.res, st.err
}

func (f *fakeGW) Name() string           { return "fakebank" }
func (f *fakeGW) PayURL(a string) string { return "https://bank.example/pay/" + a }
func (f *fakeGW) Ops() gateway.Ops       { return gateway.Ops{} }

func (f *fakeGW) Request(ctx context.Context, _ gateway.RequestInput) (gateway.RequestResult, error) {
	r, err := f.run(ctx, OpRequest)
	if err != nil {
		return gateway.RequestResult{}, err
	}
	v, _ := r.(gateway.RequestResult)
	return v, nil
}

func (f *fakeGW) Verify(ctx context.Context, _ gateway.VerifyInput) (gateway.VerifyResult, error) {
	r, err := f.run(ctx, OpVerify)
	if err != nil {
		return gateway.VerifyResult{}, err
	}
	v, _ := r.(gateway.VerifyResult)
	return v, nil
}

func (f *fakeGW) Inquire(ctx context.Context, _ string) (gateway.InquiryResult, error) {
	r, err := f.run(ctx, OpInquire)
	if err != nil {
		return gateway.InquiryResult{}, err
	}
	v, _ := r.(gateway.InquiryResult)
	return v, nil
}

func (f *fakeGW) ListUnverified(ctx context.Context) ([]gateway.Unverified, error) {
	r, err := f.run(ctx, OpListUnverified)
	if err != nil {
		return nil, err
	}
	v, _ := r.([]gateway.Unverified)
	return v, nil
}

// ---- fixtures ----

func http503() error {
	return &gateway.TransientError{Op: "x", HTTPStatus: 503, Err: errors.New("HTTP 503 Service Unavailable")}
}

func http429(after time.Duration) error {
	return &gateway.TransientError{Op: "x", HTTPStatus: 429, RetryAfter: after, Err: errors.New("HTTP 429 Too Many Requests")}
}

func rejected() error {
	return &gateway.RejectedError{Op: "x", Code: -9, Message: "validation error"}
}

var (
	paid    = gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, RefID: 12345}
	notPaid = gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51}
)

// fakeClock advances only when slept on, and records the sleeps.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// fastOpts: fake clock and sleep, fixed jitter, a breaker that won't trip.
func fastOpts(clk *fakeClock, rec Recorder) Options {
	return timed(Options{
		Now:      clk.Now,
		Sleep:    clk.Sleep,
		Rand:     func() float64 { return 0.5 },
		Recorder: rec,
		Logger:   discard(),
		Breaker:  BreakerOptions{MinRequests: 1000},
	})
}

// call runs op on g and returns the error only.
func call(g *Gateway, ctx context.Context, op string) error {
	var err error
	switch op {
	case OpRequest:
		_, err = g.Request(ctx, gateway.RequestInput{AmountRials: 100000})
	case OpVerify:
		_, err = g.Verify(ctx, gateway.VerifyInput{Authority: "A1", AmountRials: 100000})
	case OpInquire:
		_, err = g.Inquire(ctx, "A1")
	case OpListUnverified:
		_, err = g.ListUnverified(ctx)
	default:
		panic(op)
	}
	return err
}

func okResult(op string) any {
	switch op {
	case OpRequest:
		return gateway.RequestResult{Authority: "A1", Code: 100}
	case OpVerify:
		return paid
	case OpInquire:
		return gateway.InquiryResult{Code: 100, Status: gateway.InquiryPaid}
	default:
		return []gateway.Unverified{{Authority: "A1", AmountRials: 100000}}
	}
}

func outcomes(calls []Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Outcome
	}
	return out
}

func isTransient(err error) bool {
	var te *gateway.TransientError
	return errors.As(err, &te)
}

// ---- retries ----

func TestRetries(t *testing.T) {
	untyped := errors.New("encode body: boom")
	tests := []struct {
		name      string
		op        string
		script    func(op string) []step
		wantCalls int
		wantErr   func(error) bool // nil: want success
		wantOut   []string
	}{
		{
			name:      "request is never retried on a transient error",
			op:        OpRequest,
			script:    func(op string) []step { return []step{{err: http503()}, {res: okResult(op)}} },
			wantCalls: 1, wantErr: isTransient, wantOut: []string{"transient"},
		},
		{
			name:      "request succeeds first time",
			op:        OpRequest,
			script:    func(op string) []step { return []step{{res: okResult(op)}} },
			wantCalls: 1, wantOut: []string{"ok"},
		},
		{
			name:      "verify: 503, 503, paid -> three calls, success",
			op:        OpVerify,
			script:    func(op string) []step { return []step{{err: http503()}, {err: http503()}, {res: paid}} },
			wantCalls: 3, wantOut: []string{"transient", "transient", "paid"},
		},
		{
			name:      "verify: 503 forever -> gives up after three calls",
			op:        OpVerify,
			script:    func(op string) []step { return []step{{err: http503()}} },
			wantCalls: 3, wantErr: isTransient, wantOut: []string{"transient", "transient", "transient"},
		},
		{
			name:      "inquire: 503 forever -> three calls",
			op:        OpInquire,
			script:    func(op string) []step { return []step{{err: http503()}} },
			wantCalls: 3, wantErr: isTransient, wantOut: []string{"transient", "transient", "transient"},
		},
		{
			name:      "list: 503 then ok",
			op:        OpListUnverified,
			script:    func(op string) []step { return []step{{err: http503()}, {res: okResult(op)}} },
			wantCalls: 2, wantOut: []string{"transient", "ok"},
		},
		{
			name:      "verify: rejection is not retried",
			op:        OpVerify,
			script:    func(op string) []step { return []step{{err: rejected()}, {res: paid}} },
			wantCalls: 1, wantErr: gateway.IsRejected, wantOut: []string{"rejected"},
		},
		{
			name:      "inquire: rejection is not retried",
			op:        OpInquire,
			script:    func(op string) []step { return []step{{err: rejected()}, {res: okResult(op)}} },
			wantCalls: 1, wantErr: gateway.IsRejected, wantOut: []string{"rejected"},
		},
		{
			name:      "verify: not paid is a definite answer, not retried",
			op:        OpVerify,
			script:    func(op string) []step { return []step{{res: notPaid}, {res: paid}} },
			wantCalls: 1, wantOut: []string{"not_paid"},
		},
		{
			name: "verify: 503 then amount mismatch stops there",
			op:   OpVerify,
			script: func(op string) []step {
				return []step{{err: http503()}, {res: gateway.VerifyResult{Outcome: gateway.VerifyAmountMismatch, Code: -50}}, {res: paid}}
			},
			wantCalls: 2, wantOut: []string{"transient", "amount_mismatch"},
		},
		{
			name:      "verify: 503 then rejection stops there",
			op:        OpVerify,
			script:    func(op string) []step { return []step{{err: http503()}, {err: rejected()}, {res: paid}} },
			wantCalls: 2, wantErr: gateway.IsRejected, wantOut: []string{"transient", "rejected"},
		},
		{
			name:      "verify: an untyped driver error is returned as is, not retried",
			op:        OpVerify,
			script:    func(op string) []step { return []step{{err: untyped}, {res: paid}} },
			wantCalls: 1,
			wantErr:   func(err error) bool { return errors.Is(err, untyped) && !gateway.IsRejected(err) },
			wantOut:   []string{"transient"},
		},
		{
			name: "verify: a raw context error from the driver is normalised and retried",
			op:   OpVerify,
			script: func(op string) []step {
				return []step{{err: fmt.Errorf("post: %w", context.DeadlineExceeded)}, {res: paid}}
			},
			wantCalls: 2, wantOut: []string{"timeout", "paid"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(map[string][]step{tc.op: tc.script(tc.op)})
			clk := newClock()
			rec := &MemoryRecorder{}
			g := New(f, fastOpts(clk, rec))
			err := call(g, context.Background(), tc.op)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if tc.wantErr != nil && (err == nil || !tc.wantErr(err)) {
				t.Fatalf("err = %#v (%v), not the wanted kind", err, err)
			}
			if got := f.count(tc.op); got != tc.wantCalls {
				t.Fatalf("inner calls = %d, want %d", got, tc.wantCalls)
			}
			if got := outcomes(rec.Calls()); strings.Join(got, ",") != strings.Join(tc.wantOut, ",") {
				t.Fatalf("recorded outcomes = %v, want %v", got, tc.wantOut)
			}
			if got, want := len(clk.Sleeps()), max(tc.wantCalls-1, 0); tc.wantErr == nil && got != want {
				t.Fatalf("sleeps = %d, want %d", got, want)
			}
		})
	}
}

func TestDefiniteResultIsReturnedIntact(t *testing.T) {
	f := newFake(map[string][]step{OpVerify: {{err: http503()}, {res: paid}}})
	g := New(f, fastOpts(newClock(), nil))
	res, err := g.Verify(context.Background(), gateway.VerifyInput{Authority: "A1", AmountRials: 1})
	if err != nil || res != paid {
		t.Fatalf("Verify = %+v, %v; want %+v", res, err, paid)
	}
	if g.Name() != "fakebank" || g.PayURL("A9") != "https://bank.example/pay/A9" {
		t.Fatalf("Name/PayURL not passed through")
	}
}

// ---- back-off, Retry-After, jitter ----

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter time.Duration
		rand       float64
		want       []time.Duration
	}{
		{"honoured when above the jitter", 1 * time.Second, 0, []time.Duration{time.Second, time.Second}},
		{"capped at MaxRetryAfter", time.Hour, 0, []time.Duration{5 * time.Second, 5 * time.Second}},
		// jitter 0.75 * 200ms = 150ms > 100ms Retry-After; then 0.75 * 400ms.
		{"jitter wins when larger", 100 * time.Millisecond, 0.75, []time.Duration{150 * time.Millisecond, 300 * time.Millisecond}},
		{"no Retry-After: plain jitter", 0, 0.5, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(map[string][]step{OpVerify: {{err: http429(tc.retryAfter)}}})
			clk := newClock()
			o := fastOpts(clk, nil)
			o.Rand = func() float64 { return tc.rand }
			g := New(f, o)
			err := call(g, context.Background(), OpVerify)
			var te *gateway.TransientError
			if !errors.As(err, &te) || te.HTTPStatus != 429 {
				t.Fatalf("err = %v, want the 429", err)
			}
			if got := clk.Sleeps(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("sleeps = %v, want %v", got, tc.want)
			}
			if f.count(OpVerify) != 3 {
				t.Fatalf("calls = %d, want 3", f.count(OpVerify))
			}
		})
	}
}

func TestRetryAfterBeyondBudgetIsNotSlept(t *testing.T) {
	// Budget 12s: attempt, sleep 5s, attempt, sleep 5s would end at 10s and
	// leave 2s > AttemptTimeout/10, so both run. With a 6s budget the second
	// sleep would end past it: stop after two attempts, one sleep.
	f := newFake(map[string][]step{OpVerify: {{err: http429(time.Hour)}}})
	clk := newClock()
	o := fastOpts(clk, nil)
	o.Budget = 6 * time.Second
	g := New(f, o)
	if err := call(g, context.Background(), OpVerify); !isTransient(err) {
		t.Fatalf("err = %v", err)
	}
	if got := clk.Sleeps(); len(got) != 1 || got[0] != 5*time.Second {
		t.Fatalf("sleeps = %v, want [5s]", got)
	}
	if f.count(OpVerify) != 2 {
		t.Fatalf("calls = %d, want 2", f.count(OpVerify))
	}
}

func TestFullJitterBounds(t *testing.T) {
	o := Options{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}.withDefaults()
	ceil := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i := range ceil {
		ceil[i] *= time.Millisecond
	}
	t.Run("exact values", func(t *testing.T) {
		for _, r := range []float64{0, 0.25, 0.5, 0.999, 1, 7, -1} {
			o := o
			o.Rand = func() float64 { return r }
			cl := &Caller{opts: o}
			for n, c := range ceil {
				got := cl.backoff(n, 0)
				want := time.Duration(min(max(r, 0), 1) * float64(c))
				if got != want {
					t.Fatalf("rand %v, retry %d: sleep %v, want %v", r, n, got, want)
				}
			}
		}
	})
	t.Run("random within [0, cap]", func(t *testing.T) {
		src := rand.New(rand.NewPCG(1, 2))
		o := o
		o.Rand = src.Float64
		c := &Caller{opts: o}
		seen := map[bool]int{}
		for i := 0; i < 5000; i++ {
			n := i % len(ceil)
			got := c.backoff(n, 0)
			if got < 0 || got > ceil[n] {
				t.Fatalf("retry %d: sleep %v outside [0, %v]", n, got, ceil[n])
			}
			seen[got < ceil[n]/2]++
		}
		if seen[true] < 1000 || seen[false] < 1000 {
			t.Fatalf("jitter not spread: %v", seen)
		}
	})
	t.Run("huge retry number does not overflow", func(t *testing.T) {
		o := o
		o.Rand = func() float64 { return 1 }
		c := &Caller{opts: o}
		if got := c.backoff(200, 0); got != time.Second {
			t.Fatalf("sleep = %v, want 1s", got)
		}
	})
	t.Run("through the gateway", func(t *testing.T) {
		f := newFake(map[string][]step{OpInquire: {{err: http503()}}})
		clk := newClock()
		src := rand.New(rand.NewPCG(3, 4))
		var mu sync.Mutex
		opts := fastOpts(clk, nil)
		opts.MaxAttempts = 6
		opts.BaseBackoff, opts.MaxBackoff = 100*time.Millisecond, time.Second
		opts.Budget = time.Minute
		opts.Rand = func() float64 { mu.Lock(); defer mu.Unlock(); return src.Float64() }
		g := New(f, opts)
		_ = call(g, context.Background(), OpInquire)
		sl := clk.Sleeps()
		if len(sl) != 5 {
			t.Fatalf("sleeps = %v, want 5", sl)
		}
		for i, d := range sl {
			if d < 0 || d > ceil[i] {
				t.Fatalf("sleep %d = %v outside [0, %v]", i, d, ceil[i])
			}
		}
	})
}

// ---- budget and time-outs (real clock) ----

// The budget bounds an operation against a bank that hangs (real timers):
// every attempt ends at its time-out, the operation at the budget, long
// before the bank would answer; no back-off sleeps past the budget.
func TestBudgetWithSlowBank(t *testing.T) {
	const (
		attemptTimeout = 200 * time.Millisecond
		budget         = 600 * time.Millisecond
		bankDelay      = 30 * time.Second // cut short by the time-outs
		// slack is timer and scheduling noise under -race on a loaded
		// 2-core machine. Without the budget, MaxAttempts (10) attempts of
		// 200ms would take 2s+, and without the attempt time-out one
		// attempt would take the budget: both beyond it.
		slack = time.Second
	)
	f := newFake(map[string][]step{OpVerify: {{delay: bankDelay}}})
	rec := &MemoryRecorder{}
	type sleepRec struct {
		start, deadline time.Time
		d               time.Duration
	}
	var mu sync.Mutex
	var sleeps []sleepRec
	g := New(f, timed(Options{
		AttemptTimeout: attemptTimeout,
		Budget:         budget,
		MaxAttempts:    10,
		BaseBackoff:    time.Millisecond,
		MaxBackoff:     5 * time.Millisecond,
		Rand:           func() float64 { return 1 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			// The operation's own deadline (the budget's end) is on ctx.
			dl, _ := ctx.Deadline()
			mu.Lock()
			sleeps = append(sleeps, sleepRec{time.Now(), dl, d})
			mu.Unlock()
			return sleepCtx(ctx, d)
		},
		Recorder: rec,
		Logger:   discard(),
		Breaker:  BreakerOptions{MinRequests: 1000},
	}))
	start := time.Now()
	err := call(g, context.Background(), OpVerify)
	elapsed := time.Since(start)

	if !isTransient(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a transient deadline error", err)
	}
	if elapsed > budget+slack {
		t.Fatalf("operation took %v, budget %v", elapsed, budget)
	}
	calls := rec.Calls()
	// Normally 3 attempts; fewer only when timers run late under load.
	if len(calls) < 2 || len(calls) != f.count(OpVerify) {
		t.Fatalf("attempts = %d (inner %d), want >= 2 and equal", len(calls), f.count(OpVerify))
	}
	for i, c := range calls {
		if c.Duration > attemptTimeout+slack {
			t.Errorf("attempt %d took %v, attempt timeout %v", c.Attempt, c.Duration, attemptTimeout)
		}
		if c.Outcome != OutcomeTimeout || c.Attempt != i+1 {
			t.Errorf("call %d = %+v, want timeout attempt %d", i, c, i+1)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sleeps) > len(calls) {
		t.Errorf("%d sleeps for %d attempts", len(sleeps), len(calls))
	}
	for _, s := range sleeps {
		// A sleep starts only when it and a tenth of an attempt fit before
		// the budget's end (measured by the operation's own deadline, not
		// this test's start, which comes earlier).
		if s.deadline.IsZero() || s.start.Add(s.d).After(s.deadline) {
			t.Errorf("a %v sleep started at +%v ends past the budget (deadline +%v)", s.d, s.start.Sub(start), s.deadline.Sub(start))
		}
	}
	// Our own time-outs are failures for the breaker.
	if st := g.BreakerState(); st.Failures != uint32(len(calls)) || st.Exclusions != 0 {
		t.Fatalf("breaker = %+v, want %d failures", st, len(calls))
	}
}

// Which deadline ended an attempt decides whether the breaker counts it:
// ours (attempt time-out, budget) is a failure, the caller's is excluded.
func TestTimeoutAttribution(t *testing.T) {
	tests := []struct {
		name           string
		op             string // default OpVerify
		attemptTimeout time.Duration
		budget         time.Duration
		callerTimeout  time.Duration // 0: no caller deadline
		wantFailures   uint32
		wantExclusions uint32
		requestTimeout time.Duration
	}{
		{name: "our attempt time-out is a failure", attemptTimeout: 20 * time.Millisecond, budget: time.Second, wantFailures: 1},
		{name: "our budget is a failure", attemptTimeout: time.Second, budget: 20 * time.Millisecond, wantFailures: 1},
		{name: "a caller deadline later than our budget: ours, a failure", attemptTimeout: time.Second, budget: 20 * time.Millisecond,
			callerTimeout: time.Second, wantFailures: 1},
		{name: "the caller's earlier deadline is excluded", attemptTimeout: time.Second, budget: time.Second,
			callerTimeout: 20 * time.Millisecond, wantExclusions: 1},
		// A caller that bounds the call by the very budget we would use
		// (the payment service does) does not hide a slow bank. A whole
		// second each: the slack that tells "as long as ours" is 1/20 of
		// the bound, and with 100 ms (5 ms of slack) a loaded machine's
		// scheduling between the test's WithTimeout and the caller's check
		// made the caller's deadline look earlier (seen in CI).
		{name: "a caller deadline as long as our budget: ours, a failure", attemptTimeout: time.Second, budget: time.Second,
			callerTimeout: time.Second, wantFailures: 1},
		{name: "request: a caller deadline as long as the request time-out: ours, a failure", op: OpRequest,
			attemptTimeout: 20 * time.Millisecond, budget: 2 * time.Second, requestTimeout: time.Second,
			callerTimeout: time.Second, wantFailures: 1},
		{name: "request: our request time-out is a failure", op: OpRequest,
			attemptTimeout: 20 * time.Millisecond, budget: time.Second, requestTimeout: 50 * time.Millisecond, wantFailures: 1},
		{name: "request: the caller's earlier deadline is excluded", op: OpRequest,
			attemptTimeout: 20 * time.Millisecond, budget: time.Second, requestTimeout: 500 * time.Millisecond,
			callerTimeout: 50 * time.Millisecond, wantExclusions: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			if op == "" {
				op = OpVerify
			}
			f := newFake(map[string][]step{op: {{delay: 10 * time.Second}}})
			rec := &MemoryRecorder{}
			g := New(f, timed(Options{
				AttemptTimeout: tc.attemptTimeout,
				RequestTimeout: tc.requestTimeout,
				Budget:         tc.budget,
				MaxAttempts:    1,
				Recorder:       rec,
				Logger:         discard(),
			}))
			ctx := context.Background()
			if tc.callerTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.callerTimeout)
				defer cancel()
			}
			start := time.Now()
			err := call(g, ctx, op)
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Fatalf("took %v", elapsed)
			}
			if !isTransient(err) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v", err)
			}
			calls := rec.Calls()
			if len(calls) != 1 || calls[0].Outcome != OutcomeTimeout {
				t.Fatalf("calls = %+v", calls)
			}
			if st := g.BreakerState(); st.Failures != tc.wantFailures || st.Exclusions != tc.wantExclusions {
				t.Fatalf("breaker = %+v, want %d failures, %d exclusions", st, tc.wantFailures, tc.wantExclusions)
			}
		})
	}
}

func TestCallerCanceled(t *testing.T) {
	t.Run("mid back-off: returns promptly, no further attempt", func(t *testing.T) {
		f := newFake(map[string][]step{OpVerify: {{err: http503()}}})
		rec := &MemoryRecorder{}
		g := New(f, timed(Options{
			BaseBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second, Budget: time.Minute,
			Rand: func() float64 { return 1 }, Recorder: rec, Logger: discard(),
			Breaker: BreakerOptions{MinRequests: 1000},
		}))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		err := call(g, ctx, OpVerify)
		// Far short of what a call that ignored the cancel would wait
		// out: the 10 s back-off, or 3 s attempts until the budget.
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Fatalf("took %v after cancel", elapsed)
		}
		var te *gateway.TransientError
		if !errors.As(err, &te) || !errors.Is(err, context.Canceled) || te.HTTPStatus != 503 {
			t.Fatalf("err = %#v (%v), want transient wrapping Canceled and the 503", err, err)
		}
		if f.count(OpVerify) != 1 {
			t.Fatalf("calls = %d, want 1", f.count(OpVerify))
		}
		if st := g.BreakerState(); st.Failures != 1 || st.Exclusions != 0 {
			t.Fatalf("breaker = %+v: only the 503 counts", st)
		}
	})
	t.Run("mid attempt: excluded from the breaker, recorded canceled", func(t *testing.T) {
		f := newFake(map[string][]step{OpVerify: {{delay: 30 * time.Second}}})
		rec := &MemoryRecorder{}
		g := New(f, timed(Options{Recorder: rec, Logger: discard()}))
		ctx, cancel := context.WithCancel(WithRef(context.Background(), "pay_1"))
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		err := call(g, ctx, OpVerify)
		// Far short of what a call that ignored the cancel would wait
		// out: the 10 s back-off, or 3 s attempts until the budget.
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Fatalf("took %v after cancel", elapsed)
		}
		if !isTransient(err) || !errors.Is(err, context.Canceled) || gateway.IsRejected(err) {
			t.Fatalf("err = %v", err)
		}
		calls := rec.Calls()
		if len(calls) != 1 || calls[0].Outcome != OutcomeCanceled || calls[0].Ref != "pay_1" {
			t.Fatalf("calls = %+v", calls)
		}
		if st := g.BreakerState(); st.Failures != 0 || st.Exclusions != 1 || st.State != "closed" {
			t.Fatalf("breaker = %+v", st)
		}
	})
	t.Run("already canceled: the bank is not called", func(t *testing.T) {
		f := newFake(nil)
		g := New(f, timed(Options{Logger: discard()}))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, op := range []string{OpRequest, OpVerify, OpInquire, OpListUnverified} {
			if err := call(g, ctx, op); !isTransient(err) || !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: err = %v", op, err)
			}
		}
		if f.total() != 0 {
			t.Fatalf("inner called %d times", f.total())
		}
	})
}

// ---- circuit breaker ----

type logCapture struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCapture) WithGroup(string) slog.Handler            { return l }
func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	var from, to string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "from":
			from = a.Value.String()
		case "to":
			to = a.Value.String()
		}
		return true
	})
	if to != "" {
		l.mu.Lock()
		l.msgs = append(l.msgs, from+">"+to)
		l.mu.Unlock()
	}
	return nil
}

func (l *logCapture) transitions() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.msgs, " ")
}

func breakerOpts(rec Recorder, log slog.Handler, minReq uint32, openTimeout time.Duration) Options {
	if log == nil {
		log = slog.DiscardHandler
	}
	return timed(Options{
		MaxAttempts: 1,
		Sleep:       func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Recorder:    rec,
		Logger:      slog.New(log),
		Breaker:     BreakerOptions{MinRequests: minReq, FailureRatio: 0.5, OpenTimeout: openTimeout},
	})
}

// timed sets the options the package requires and a test leaves unset,
// to the values a deployment gets by default (GATEWAY_*, BREAKER_*).
func timed(o Options) Options {
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = 3 * time.Second
	}
	if o.Budget == 0 {
		o.Budget = 12 * time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 10 * time.Second
	}
	b := &o.Breaker
	if b.Window == 0 {
		b.Window = 30 * time.Second
	}
	if b.MinRequests == 0 {
		b.MinRequests = 10
	}
	if b.FailureRatio == 0 {
		b.FailureRatio = 0.5
	}
	if b.OpenTimeout == 0 {
		b.OpenTimeout = 20 * time.Second
	}
	return o
}

func TestBreakerTripRule(t *testing.T) {
	ok, bad := "ok", "503"
	tests := []struct {
		name     string
		minReq   uint32
		seq      []string
		wantOpen bool
	}{
		{"below min requests never trips, even at 100%", 4, []string{bad, bad, bad}, false},
		{"min requests all failing trips", 4, []string{bad, bad, bad, bad}, true},
		{"ratio 2/5 below 0.5 stays closed", 4, []string{ok, ok, ok, bad, bad}, false},
		{"ratio 3/6 reaches 0.5 and trips", 4, []string{ok, ok, ok, bad, bad, bad}, true},
		{"successes dilute failures", 4, []string{bad, ok, bad, ok, ok, ok, bad}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(nil)
			g := New(f, breakerOpts(nil, nil, tc.minReq, time.Minute))
			for _, s := range tc.seq {
				if s == ok {
					f.setScript(OpInquire, step{res: okResult(OpInquire)})
				} else {
					f.setScript(OpInquire, step{err: http503()})
				}
				_ = call(g, context.Background(), OpInquire)
			}
			st := g.BreakerState()
			if (st.State == "open") != tc.wantOpen {
				t.Fatalf("state = %+v, want open=%v", st, tc.wantOpen)
			}
			if f.count(OpInquire) != len(tc.seq) {
				t.Fatalf("inner calls = %d", f.count(OpInquire))
			}
		})
	}
}

func TestBreakerOpenRefusesInstantly(t *testing.T) {
	f := newFake(map[string][]step{OpVerify: {{err: http503()}}, OpRequest: {{res: okResult(OpRequest)}}})
	rec := &MemoryRecorder{}
	o := breakerOpts(rec, nil, 3, time.Minute)
	o.MaxAttempts = 3
	g := New(f, o)

	// One verify: its three attempts all count, so it trips the breaker.
	if err := call(g, context.Background(), OpVerify); !isTransient(err) || errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("first verify err = %v", err)
	}
	if f.count(OpVerify) != 3 {
		t.Fatalf("calls = %d, want 3", f.count(OpVerify))
	}
	st := g.BreakerState()
	if st.State != "open" || st.OpenedAt.IsZero() || st.Name != "fakebank" {
		t.Fatalf("state = %+v, want open", st)
	}
	// Latency: the best of a few refusals, so that a descheduled goroutine
	// on a loaded machine does not fail the test; any real wait would.
	for _, op := range []string{OpRequest, OpVerify, OpInquire, OpListUnverified} {
		best := time.Hour
		for i := 0; i < 10; i++ {
			start := time.Now()
			_ = call(g, context.Background(), op)
			best = min(best, time.Since(start))
		}
		if best > 5*time.Millisecond {
			t.Errorf("%s refused in %v, want < 5ms", op, best)
		}
	}
	rec.Reset()
	for _, op := range []string{OpRequest, OpVerify, OpInquire, OpListUnverified} {
		ctx := WithRef(context.Background(), "pay_"+op)
		err := call(g, ctx, op)
		var te *gateway.TransientError
		if !errors.Is(err, gateway.ErrUnavailable) || !errors.As(err, &te) || te.HTTPStatus != 0 || gateway.IsRejected(err) {
			t.Fatalf("%s: err = %#v (%v)", op, err, err)
		}
	}
	if f.count(OpVerify) != 3 || f.count(OpRequest) != 0 || f.total() != 3 {
		t.Fatalf("inner was called while open: %v", f.calls)
	}
	calls := rec.Calls()
	if len(calls) != 4 {
		t.Fatalf("recorded %d, want 4", len(calls))
	}
	for _, c := range calls {
		if c.Outcome != OutcomeBreakerOpen || c.Attempt != 1 || c.Ref != "pay_"+c.Operation ||
			c.Duration != 0 || !strings.Contains(c.Error, "gateway unavailable") {
			t.Fatalf("call = %+v", c)
		}
	}
}

func TestBreakerOpensMidRetry(t *testing.T) {
	f := newFake(map[string][]step{OpVerify: {{err: http503()}}})
	rec := &MemoryRecorder{}
	o := breakerOpts(rec, nil, 2, time.Minute)
	o.MaxAttempts = 3
	g := New(f, o)
	err := call(g, context.Background(), OpVerify)
	if !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable from the refused third attempt", err)
	}
	if f.count(OpVerify) != 2 {
		t.Fatalf("calls = %d, want 2", f.count(OpVerify))
	}
	calls := rec.Calls()
	if got := fmt.Sprint(outcomes(calls)); got != "[transient transient breaker_open]" || calls[2].Attempt != 3 {
		t.Fatalf("recorded %+v", calls)
	}
}

func TestDefiniteAnswersNeverTrip(t *testing.T) {
	f := newFake(map[string][]step{
		OpVerify:  {{res: notPaid}, {res: gateway.VerifyResult{Outcome: gateway.VerifyInvalid, Code: -11}}, {err: rejected()}},
		OpRequest: {{err: rejected()}},
	})
	g := New(f, breakerOpts(nil, nil, 2, time.Minute))
	for i := 0; i < 30; i++ {
		_ = call(g, context.Background(), OpVerify)
		_ = call(g, context.Background(), OpRequest)
	}
	st := g.BreakerState()
	if st.State != "closed" || st.Failures != 0 || st.Successes != 60 {
		t.Fatalf("state = %+v", st)
	}
}

func TestBreakerWindowForgetsOldFailures(t *testing.T) {
	f := newFake(map[string][]step{OpInquire: {{err: http503()}}})
	o := breakerOpts(nil, nil, 2, time.Minute)
	// A window of a second: the second and third calls below must fall
	// in one window however loaded the machine (with 200 ms, a stall
	// between them could expire the second failure).
	o.Breaker.Window = time.Second
	g := New(f, o)
	_ = call(g, context.Background(), OpInquire)
	time.Sleep(1500 * time.Millisecond) // real time: gobreaker's window runs on the wall clock (it takes no clock)
	_ = call(g, context.Background(), OpInquire)
	if st := g.BreakerState(); st.State != "closed" || st.Failures != 1 {
		t.Fatalf("state = %+v, the first failure should have expired", st)
	}
	_ = call(g, context.Background(), OpInquire)
	if st := g.BreakerState(); st.State != "open" {
		t.Fatalf("state = %+v, two failures in the window should trip", st)
	}
}

// trip opens g's breaker with Inquire failures (MinRequests failures).
func trip(t *testing.T, g *Gateway, f *fakeGW, n int) {
	t.Helper()
	f.setScript(OpInquire, step{err: http503()})
	for i := 0; i < n; i++ {
		_ = call(g, context.Background(), OpInquire)
	}
	if st := g.BreakerState(); st.State != "open" {
		t.Fatalf("not open after %d failures: %+v", n, st)
	}
}

func TestHalfOpenProbe(t *testing.T) {
	const openTimeout = 50 * time.Millisecond
	t.Run("success closes", func(t *testing.T) {
		f := newFake(nil)
		logs := &logCapture{}
		rec := &MemoryRecorder{}
		g := New(f, breakerOpts(rec, logs, 2, openTimeout))
		trip(t, g, f, 2)
		time.Sleep(openTimeout + 20*time.Millisecond) // real time: gobreaker's open timeout runs on the wall clock
		if st := g.BreakerState(); st.State != "half-open" || !st.OpenedAt.IsZero() {
			t.Fatalf("state = %+v, want half-open", st)
		}
		f.setScript(OpVerify, step{res: notPaid}) // a definite answer is a success
		if err := call(g, context.Background(), OpVerify); err != nil {
			t.Fatalf("probe err = %v", err)
		}
		if st := g.BreakerState(); st.State != "closed" {
			t.Fatalf("state = %+v, want closed", st)
		}
		if got := logs.transitions(); got != "closed>open open>half-open half-open>closed" {
			t.Fatalf("transitions = %q", got)
		}
	})
	t.Run("failure re-opens", func(t *testing.T) {
		f := newFake(nil)
		g := New(f, breakerOpts(nil, nil, 2, openTimeout))
		trip(t, g, f, 2)
		first := g.BreakerState().OpenedAt
		time.Sleep(openTimeout + 20*time.Millisecond) // real time: gobreaker's open timeout runs on the wall clock
		if err := call(g, context.Background(), OpInquire); !isTransient(err) || errors.Is(err, gateway.ErrUnavailable) {
			t.Fatalf("probe err = %v, want the 503", err)
		}
		st := g.BreakerState()
		if st.State != "open" || !st.OpenedAt.After(first) {
			t.Fatalf("state = %+v, want re-opened after %v", st, first)
		}
		if f.count(OpInquire) != 3 {
			t.Fatalf("calls = %d, want 3", f.count(OpInquire))
		}
	})
	t.Run("only one probe at a time", func(t *testing.T) {
		f := newFake(nil)
		f.started = make(chan string, 10)
		rec := &MemoryRecorder{}
		g := New(f, breakerOpts(rec, nil, 2, openTimeout))
		trip(t, g, f, 2)
		for len(f.started) > 0 {
			<-f.started
		}
		time.Sleep(openTimeout + 20*time.Millisecond) // real time: gobreaker's open timeout runs on the wall clock

		release := make(chan struct{})
		f.setScript(OpVerify, step{res: paid, block: release})
		probeErr := make(chan error, 1)
		go func() { probeErr <- call(g, context.Background(), OpVerify) }()
		<-f.started // the probe is in flight

		// Refused at once, not after the probe: the probe is held until
		// release, so a call that waited for it would take as long as
		// the test runs. The bound is far above a loaded machine's
		// scheduling delays (10 ms were seen on CI).
		for i := 0; i < 5; i++ {
			start := time.Now()
			err := call(g, context.Background(), OpVerify)
			if !errors.Is(err, gateway.ErrUnavailable) || time.Since(start) > time.Second {
				t.Fatalf("concurrent call during probe: err = %v after %v", err, time.Since(start))
			}
		}
		if st := g.BreakerState(); st.State != "half-open" {
			t.Fatalf("state = %+v", st)
		}
		close(release)
		if err := <-probeErr; err != nil {
			t.Fatalf("probe err = %v", err)
		}
		if f.count(OpVerify) != 1 {
			t.Fatalf("verify calls = %d, want only the probe", f.count(OpVerify))
		}
		if st := g.BreakerState(); st.State != "closed" {
			t.Fatalf("state = %+v, want closed", st)
		}
	})
	t.Run("a canceled probe frees the slot", func(t *testing.T) {
		f := newFake(nil)
		g := New(f, breakerOpts(nil, nil, 2, openTimeout))
		trip(t, g, f, 2)
		time.Sleep(openTimeout + 20*time.Millisecond) // real time: gobreaker's open timeout runs on the wall clock
		f.setScript(OpVerify, step{delay: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_ = call(g, ctx, OpVerify) // caller deadline: excluded
		if st := g.BreakerState(); st.State != "half-open" {
			t.Fatalf("state = %+v, want still half-open", st)
		}
		f.setScript(OpVerify, step{res: paid})
		if err := call(g, context.Background(), OpVerify); err != nil {
			t.Fatalf("second probe err = %v", err)
		}
		if st := g.BreakerState(); st.State != "closed" {
			t.Fatalf("state = %+v", st)
		}
	})
	t.Run("a panicking probe counts as a failure and does not wedge the breaker", func(t *testing.T) {
		f := newFake(nil)
		g := New(f, breakerOpts(nil, nil, 2, openTimeout))
		trip(t, g, f, 2)
		time.Sleep(openTimeout + 20*time.Millisecond) // real time: gobreaker's open timeout runs on the wall clock
		f.setScript(OpVerify, step{panic: true})
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("panic was swallowed")
				}
			}()
			_ = call(g, context.Background(), OpVerify)
		}()
		if st := g.BreakerState(); st.State != "open" {
			t.Fatalf("state = %+v, want re-opened", st)
		}
	})
}

// BreakerState is hammered from other goroutines while the breaker goes
// through its transitions: OnStateChange must not call into the breaker.
func TestStateChangeDoesNotDeadlock(t *testing.T) {
	const openTimeout = 30 * time.Millisecond
	f := newFake(nil)
	logs := &logCapture{}
	g := New(f, breakerOpts(nil, logs, 2, openTimeout))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	seen := make([]map[string]bool, 4)
	for i := range seen {
		seen[i] = map[string]bool{}
		wg.Add(1)
		go func(m map[string]bool) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st := g.BreakerState()
				m[st.State] = true
				if st.State == "open" && st.OpenedAt.IsZero() {
					panic("open without OpenedAt")
				}
			}
		}(seen[i])
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		for cycle := 0; cycle < 5; cycle++ {
			f.setScript(OpInquire, step{err: http503()})
			for g.BreakerState().State == "closed" { // may already be half-open under load
				_ = call(g, context.Background(), OpInquire)
			}
			time.Sleep(openTimeout + 5*time.Millisecond) // real time: gobreaker's open timeout runs on the wall clock
			f.setScript(OpInquire, step{res: okResult(OpInquire)})
			for g.BreakerState().State != "closed" {
				_ = call(g, context.Background(), OpInquire)
				time.Sleep(time.Millisecond) // real time: let the readers see this state of the wall-clock breaker
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock: transitions did not finish")
	}
	close(stop)
	wg.Wait()
	want := strings.Repeat("closed>open open>half-open half-open>closed ", 5)
	if got := logs.transitions(); got != strings.TrimSpace(want) {
		t.Fatalf("transitions = %q", got)
	}
	union := map[string]bool{}
	for _, m := range seen {
		for k := range m {
			union[k] = true
		}
	}
	if !union["open"] || !union["closed"] {
		t.Fatalf("readers saw %v", union)
	}
	if st := g.BreakerState(); st.Since.IsZero() || st.State != "closed" {
		t.Fatalf("state = %+v", st)
	}
}

func TestConcurrentUse(t *testing.T) {
	f := newFake(map[string][]step{
		OpVerify:  {{err: http503()}, {res: paid}, {res: notPaid}, {err: rejected()}},
		OpInquire: {{res: okResult(OpInquire)}, {err: http503()}},
	})
	rec := &MemoryRecorder{}
	g := New(f, timed(Options{
		Sleep:    func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Recorder: rec, Logger: discard(),
		Breaker: BreakerOptions{MinRequests: 5, OpenTimeout: 5 * time.Millisecond},
	}))
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx := WithRef(context.Background(), fmt.Sprintf("pay_%d", i))
			for j := 0; j < 50; j++ {
				_ = call(g, ctx, []string{OpVerify, OpInquire, OpListUnverified, OpRequest}[(i+j)%4])
				_ = g.BreakerState()
			}
		}(i)
	}
	wg.Wait()
	for _, c := range rec.Calls() {
		if !strings.HasPrefix(c.Ref, "pay_") || c.Gateway != "fakebank" || c.Attempt < 1 || c.Attempt > 3 {
			t.Fatalf("bad call %+v", c)
		}
	}
}

// ---- recorder ----

func TestRecorderCalls(t *testing.T) {
	f := newFake(map[string][]step{OpVerify: {
		{err: http503()},
		{delay: time.Second}, // cut by the attempt time-out
		{res: paid},
	}})
	rec := &MemoryRecorder{}
	clk := newClock()
	o := fastOpts(clk, rec)
	o.AttemptTimeout = 20 * time.Millisecond
	g := New(f, o)
	ctx := WithRef(context.Background(), "pay_42")
	res, err := g.Verify(ctx, gateway.VerifyInput{Authority: "A1", AmountRials: 10})
	if err != nil || !res.Settled() {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
	calls := rec.Calls()
	want := []struct {
		outcome string
		status  int
		code    int
		hasErr  bool
	}{
		{OutcomeTransient, 503, 0, true},
		{OutcomeTimeout, 0, 0, true},
		{OutcomePaid, 0, 100, false},
	}
	if len(calls) != len(want) {
		t.Fatalf("calls = %+v", calls)
	}
	for i, w := range want {
		c := calls[i]
		if c.Ref != "pay_42" || c.Gateway != "fakebank" || c.Operation != OpVerify || c.Attempt != i+1 ||
			c.Outcome != w.outcome || c.HTTPStatus != w.status || c.GatewayCode != w.code ||
			(c.Error != "") != w.hasErr || c.StartedAt.IsZero() {
			t.Fatalf("call %d = %+v, want %+v", i, c, w)
		}
	}
	if !calls[1].StartedAt.After(calls[0].StartedAt) {
		t.Fatalf("StartedAt not from the clock: %v, %v", calls[0].StartedAt, calls[1].StartedAt)
	}
}

func TestRecorderOutcomesForResults(t *testing.T) {
	tests := []struct {
		op     string
		st     step
		want   string
		code   int
		errSub string
	}{
		{OpRequest, step{res: gateway.RequestResult{Authority: "A1", Code: 100}}, OutcomeOK, 100, ""},
		{OpInquire, step{res: gateway.InquiryResult{Code: 100, Status: gateway.InquiryVerified}}, OutcomeOK, 100, ""},
		{OpListUnverified, step{res: []gateway.Unverified{}}, OutcomeOK, 0, ""},
		{OpVerify, step{res: gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 101}}, OutcomeAlreadyVerified, 101, ""},
		{OpVerify, step{res: notPaid}, OutcomeNotPaid, -51, ""},
		{OpVerify, step{res: gateway.VerifyResult{Outcome: gateway.VerifyAmountMismatch, Code: -50}}, OutcomeAmountMismatch, -50, ""},
		{OpVerify, step{res: gateway.VerifyResult{Outcome: gateway.VerifyInvalid, Code: -11}}, OutcomeInvalid, -11, ""},
		{OpRequest, step{err: rejected()}, OutcomeRejected, -9, "validation error"},
	}
	for _, tc := range tests {
		t.Run(tc.op+"/"+tc.want, func(t *testing.T) {
			rec := &MemoryRecorder{}
			g := New(newFake(map[string][]step{tc.op: {tc.st}}), fastOpts(newClock(), rec))
			_ = call(g, context.Background(), tc.op)
			calls := rec.Calls()
			if len(calls) != 1 || calls[0].Outcome != tc.want || calls[0].GatewayCode != tc.code ||
				!strings.Contains(calls[0].Error, tc.errSub) || (tc.errSub == "") != (calls[0].Error == "") {
				t.Fatalf("calls = %+v", calls)
			}
		})
	}
}

func TestErrorScrubbing(t *testing.T) {
	long := strings.Repeat("خطا ", 200) // multi-byte runes
	tests := []struct {
		in      string
		notHave []string
		have    []string
	}{
		{"card 6037991234567890 declined", []string{"6037991234567890"}, []string{"[redacted]", "declined"}},
		{"card 6037-9912-3456-7890 declined", []string{"3456"}, []string{"[redacted]"}},
		{"card 6037 9912 3456 7890", []string{"9912"}, []string{"[redacted]"}},
		{"authority A000000000000000000000000000123456789 ref 123456789", nil, []string{"A000000000000000000000000000123456789", "ref 123456789"}},
		{"masked 603799******7890 ok", nil, []string{"603799******7890"}},
	}
	for _, tc := range tests {
		got := scrubError(errors.New(tc.in))
		for _, s := range tc.notHave {
			if strings.Contains(got, s) {
				t.Errorf("scrub(%q) = %q still has %q", tc.in, got, s)
			}
		}
		for _, s := range tc.have {
			if !strings.Contains(got, s) {
				t.Errorf("scrub(%q) = %q lost %q", tc.in, got, s)
			}
		}
	}
	got := scrubError(errors.New(long))
	if len(got) > MaxErrorLen || !strings.HasPrefix(long, got) || len(got) < MaxErrorLen-4 {
		t.Fatalf("capped to %d bytes, prefix %v", len(got), strings.HasPrefix(long, got))
	}
	if scrubError(nil) != "" {
		t.Fatal("nil error should record empty")
	}

	// Through the gateway: a driver error with a PAN and a huge body.
	rec := &MemoryRecorder{}
	bad := &gateway.TransientError{Op: OpVerify, HTTPStatus: 502, Err: errors.New("pan 6219861034529007 " + long)}
	g := New(newFake(map[string][]step{OpVerify: {{err: bad}}}), fastOpts(newClock(), rec))
	_ = call(g, context.Background(), OpVerify)
	for _, c := range rec.Calls() {
		if strings.Contains(c.Error, "6219861034529007") || len(c.Error) > MaxErrorLen {
			t.Fatalf("unscrubbed error recorded: %q", c.Error)
		}
	}
}

func TestRefContext(t *testing.T) {
	if got := RefFrom(context.Background()); got != "" {
		t.Fatalf("empty ctx ref = %q", got)
	}
	ctx := WithRef(context.Background(), "pay_7")
	if got := RefFrom(ctx); got != "pay_7" {
		t.Fatalf("ref = %q", got)
	}
	// A plain string key with the same text must not collide.
	type otherKey string
	ctx2 := context.WithValue(context.Background(), otherKey("paymentRef"), "x")
	if RefFrom(ctx2) != "" {
		t.Fatal("collided with a foreign key")
	}
	var _ Recorder = NopRecorder{}
	var _ Recorder = (*MemoryRecorder)(nil)
	NopRecorder{}.Record(ctx, Call{})
}

// The package's own knobs have defaults; the operator's settings (time-outs,
// breaker thresholds) have none here: New refuses to run without them.
func TestDefaults(t *testing.T) {
	o := timed(Options{Budget: 4 * time.Second}).withDefaults()
	if o.RequestTimeout != 4*time.Second || o.MaxAttempts != 3 ||
		o.BaseBackoff != 200*time.Millisecond || o.MaxBackoff != 2*time.Second || o.MaxRetryAfter != 5*time.Second ||
		o.Breaker.HalfOpenProbes != 1 ||
		o.Now == nil || o.Sleep == nil || o.Rand == nil || o.Recorder == nil || o.Logger == nil {
		t.Fatalf("defaults = %+v", o)
	}
	for _, tc := range []struct {
		name  string
		o     Options
		wants string
	}{
		{"nothing set", Options{}, "AttemptTimeout, Budget, RequestTimeout, Breaker.Window, Breaker.MinRequests, Breaker.FailureRatio, Breaker.OpenTimeout"},
		{"ratio above 1", func() Options { o := timed(Options{}); o.Breaker.FailureRatio = 3; return o }(), "Breaker.FailureRatio"},
		{"no budget", func() Options { o := timed(Options{}); o.Budget = 0; return o }(), "not set: Budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.wants) {
					t.Fatalf("New panicked with %v, want %q", r, tc.wants)
				}
			}()
			New(newFake(nil), tc.o)
		})
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := sleepCtx(ctx, time.Minute); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("sleepCtx = %v after %v", err, time.Since(start))
	}
	if err := sleepCtx(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// saleFake is a fake gateway asked about a sale with the callback's data
// (as Mellat's bpInquiryRequest is).
type saleFake struct{ *fakeGW }

func (f saleFake) Ops() gateway.Ops { return gateway.Ops{InquireSale: f.inquireSale} }

func (f saleFake) inquireSale(ctx context.Context, _ gateway.VerifyInput) (gateway.InquiryResult, error) {
	r, err := f.run(ctx, "inquire_sale")
	if err != nil {
		return gateway.InquiryResult{}, err
	}
	v, _ := r.(gateway.InquiryResult)
	return v, nil
}

// TestInquireSale: the caller passes a sale's inquiry through to a
// gateway that has one, as a safe operation (a transient failure is
// retried, every attempt recorded as an inquiry), and says which
// gateways have one; one without it has none to call.
func TestInquireSale(t *testing.T) {
	verified := gateway.InquiryResult{Code: 0, Status: gateway.InquiryVerified}
	f := saleFake{newFake(map[string][]step{"inquire_sale": {{err: http503()}, {res: verified}}})}
	rec := &MemoryRecorder{}
	g := New(f, fastOpts(newClock(), rec))
	inquire := g.Ops().InquireSale
	if inquire == nil {
		t.Fatal("the caller lost the driver's inquiry of a sale")
	}
	res, err := inquire(context.Background(), gateway.VerifyInput{Authority: "R1", Receipt: "123456789", OrderID: "p1"})
	if err != nil || res != verified {
		t.Fatalf("InquireSale = %+v, %v", res, err)
	}
	calls := rec.Calls()
	if f.count("inquire_sale") != 2 || len(calls) != 2 || calls[0].Operation != OpInquire || calls[1].Operation != OpInquire {
		t.Fatalf("%d inner calls, recorded %+v", f.count("inquire_sale"), calls)
	}
	plain := newFake(nil)
	g = New(plain, fastOpts(newClock(), nil))
	if ops := g.Ops(); ops.InquireSale != nil || ops.Settle != nil || ops.Reverse != nil || ops.PayForm != nil || plain.total() != 0 {
		t.Fatalf("a gateway without optional operations: %+v, %d calls", ops, plain.total())
	}
}
