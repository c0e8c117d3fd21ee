package resilient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
)

// service is a fake remote service that is no payment gateway (a payout
// provider, say): each call answers the next scripted error (the last
// repeats; nil: a definite answer) and may move the fake clock.
type service struct {
	clk     *fakeClock
	errs    []error
	advance time.Duration // the fake clock moves this much per call
	calls   int
	ctxs    []context.Context // each attempt's context
}

func (s *service) call(ctx context.Context) (Answer, error) {
	s.ctxs = append(s.ctxs, ctx)
	err := s.errs[min(s.calls, len(s.errs)-1)]
	s.calls++
	if s.advance > 0 {
		s.clk.mu.Lock()
		s.clk.now = s.clk.now.Add(s.advance)
		s.clk.mu.Unlock()
	}
	if err != nil {
		return Answer{}, err
	}
	return Answer{Outcome: "paid_out", Code: 7}, nil
}

// TestCallerRetriesOnlySafeOps: an attempt whose outcome is unknown is
// repeated only for a safe operation, after a jittered back-off on the
// fake clock; a definite answer (a result, a rejection) and a refusal
// about one payment are never repeated.
func TestCallerRetriesOnlySafeOps(t *testing.T) {
	refusal := &gateway.TransientError{Op: "x", Err: &gateway.PerPaymentRefusal{Code: -12, Message: "too many"}}
	for _, tc := range []struct {
		name       string
		safe       bool
		errs       []error
		wantCalls  int
		wantSleeps []time.Duration // BaseBackoff 200ms, MaxBackoff 2s, jitter 0.5
		wantErr    func(error) bool
	}{
		{"safe: unknown, retried until an answer", true, []error{http503(), http503(), nil}, 3,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, func(err error) bool { return err == nil }},
		{"safe: unknown every time, MaxAttempts", true, []error{http503()}, 3,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, isTransient},
		{"unsafe: unknown, one attempt", false, []error{http503(), nil}, 1, nil, isTransient},
		{"safe: a rejection is definite", true, []error{rejected(), nil}, 1, nil, gateway.IsRejected},
		{"safe: a refusal about one payment is not asked again", true, []error{refusal, nil}, 1, nil, gateway.IsPerPaymentRefusal},
		{"safe: an untyped error is not retried", true, []error{errors.New("encode body"), nil}, 1, nil,
			func(err error) bool { return err != nil && !isTransient(err) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			c := NewCaller("payoutbank", fastOpts(clk, nil))
			s := &service{clk: clk, errs: tc.errs}
			err := c.Do(context.Background(), Op{Name: "payout", Safe: tc.safe}, s.call)
			if !tc.wantErr(err) || s.calls != tc.wantCalls {
				t.Fatalf("Do = %v after %d calls, want %d calls", err, s.calls, tc.wantCalls)
			}
			if got := clk.Sleeps(); fmt.Sprint(got) != fmt.Sprint(tc.wantSleeps) {
				t.Errorf("slept %v, want %v", got, tc.wantSleeps)
			}
		})
	}
}

// TestCallerOpensItsBreaker: failures of the service open its breaker,
// and then Do refuses at once, without calling it, with an error that is
// unknown (transient) and unavailable, recorded as breaker_open; another
// Caller's breaker is its own.
func TestCallerOpensItsBreaker(t *testing.T) {
	clk := newClock()
	rec := &MemoryRecorder{}
	o := fastOpts(clk, rec)
	o.Breaker = BreakerOptions{Window: time.Minute, MinRequests: 3, FailureRatio: 0.5, OpenTimeout: time.Hour}
	c := NewCaller("payoutbank", o)
	other := NewCaller("otherbank", o)
	s := &service{clk: clk, errs: []error{http503()}}
	if err := c.Do(context.Background(), Op{Name: "payout", Safe: true}, s.call); !isTransient(err) || errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("first Do = %v", err)
	}
	if st := c.BreakerState(); st.State != "open" || st.OpenedAt.IsZero() || !c.BreakerOpen() || s.calls != 3 {
		t.Fatalf("after %d failures of %d: %+v", s.calls, s.calls, st)
	}
	rec.Reset()
	calls := s.calls
	err := c.Do(context.Background(), Op{Name: "payout", Safe: true}, s.call)
	if !isTransient(err) || !errors.Is(err, gateway.ErrUnavailable) || gateway.IsRejected(err) || s.calls != calls {
		t.Fatalf("Do with the breaker open = %v, %d calls (want none)", err, s.calls-calls)
	}
	if got := rec.Calls(); len(got) != 1 || got[0].Outcome != OutcomeBreakerOpen || got[0].Gateway != "payoutbank" || got[0].Duration != 0 {
		t.Fatalf("recorded %+v", got)
	}
	if other.BreakerOpen() {
		t.Fatal("another service's breaker opened too")
	}
	if err := other.Do(context.Background(), Op{Name: "payout"}, (&service{errs: []error{nil}}).call); err != nil {
		t.Fatalf("another service: %v", err)
	}
}

// TestCallerDeadlines: every attempt runs under its time-out (the op's
// own, else AttemptTimeout), within the budget; a retry that would not
// fit in what is left of the budget (on the fake clock) is not made; a
// caller whose context has ended, or has no time left, calls nothing.
func TestCallerDeadlines(t *testing.T) {
	t.Run("attempt time-out", func(t *testing.T) {
		for _, tc := range []struct {
			op   Op
			want time.Duration
		}{
			{Op{Name: "payout"}, 3 * time.Second},                                  // AttemptTimeout
			{Op{Name: "payout", Timeout: time.Second}, time.Second},                // its own
			{Op{Name: "payout", Timeout: time.Hour, Safe: true}, 12 * time.Second}, // cut to the budget
		} {
			clk := newClock()
			s := &service{clk: clk, errs: []error{nil}}
			if err := NewCaller("payoutbank", fastOpts(clk, nil)).Do(context.Background(), tc.op, s.call); err != nil {
				t.Fatal(err)
			}
			dl, ok := s.ctxs[0].Deadline()
			if left := time.Until(dl); !ok || left > tc.want || left < tc.want-time.Second {
				t.Errorf("%+v: the attempt had %v (deadline %v), want %v", tc.op, left, ok, tc.want)
			}
		}
	})
	t.Run("no retry past the budget", func(t *testing.T) {
		clk := newClock()
		rec := &MemoryRecorder{}
		// 11.8s of a 12s budget: the back-off (100ms) and the least worth
		// trying (a tenth of the 3s attempt time-out) do not fit.
		s := &service{clk: clk, errs: []error{http503()}, advance: 11800 * time.Millisecond}
		c := NewCaller("payoutbank", fastOpts(clk, rec))
		if err := c.Do(context.Background(), Op{Name: "payout", Safe: true}, s.call); !isTransient(err) || s.calls != 1 {
			t.Fatalf("Do = %v after %d calls, want 1", err, s.calls)
		}
		if len(clk.Sleeps()) != 0 {
			t.Fatalf("slept %v", clk.Sleeps())
		}
		if got := rec.Calls(); len(got) != 1 || got[0].Duration != 11800*time.Millisecond {
			t.Fatalf("recorded %+v", got)
		}
	})
	t.Run("the caller's context", func(t *testing.T) {
		clk := newClock()
		c := NewCaller("payoutbank", fastOpts(clk, nil))
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel2()
		for name, ctx := range map[string]context.Context{"canceled": ended, "past its deadline": past} {
			s := &service{clk: clk, errs: []error{nil}}
			if err := c.Do(ctx, Op{Name: "payout", Safe: true}, s.call); !isTransient(err) || s.calls != 0 {
				t.Errorf("%s: Do = %v after %d calls, want none", name, err, s.calls)
			}
		}
	})
}

// TestCallerRecordsEachAttempt: every attempt is one Call for the call
// log (gateway_calls): the service's name, the op's, the payment's
// reference from the context, the attempt's number, its start and length
// on the fake clock, and what it said (the Answer, or the error's).
func TestCallerRecordsEachAttempt(t *testing.T) {
	clk := newClock()
	start := clk.Now()
	rec := &MemoryRecorder{}
	c := NewCaller("payoutbank", fastOpts(clk, rec))
	s := &service{clk: clk, errs: []error{http503(), nil}, advance: 2 * time.Second}
	ctx := WithRef(context.Background(), "po_1")
	if err := c.Do(ctx, Op{Name: "payout", Safe: true}, s.call); err != nil {
		t.Fatal(err)
	}
	want := []Call{
		{Ref: "po_1", Gateway: "payoutbank", Operation: "payout", Attempt: 1, StartedAt: start,
			Duration: 2 * time.Second, HTTPStatus: 503, Outcome: OutcomeTransient, Error: http503().Error()},
		{Ref: "po_1", Gateway: "payoutbank", Operation: "payout", Attempt: 2,
			StartedAt: start.Add(2*time.Second + 100*time.Millisecond), Duration: 2 * time.Second, GatewayCode: 7, Outcome: "paid_out"},
	}
	if got := rec.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("recorded\n%+v\nwant\n%+v", got, want)
	}
	rec.Reset()
	s = &service{clk: clk, errs: []error{rejected()}}
	if err := c.Do(ctx, Op{Name: "payout"}, s.call); !gateway.IsRejected(err) {
		t.Fatal(err)
	}
	if got := rec.Calls(); len(got) != 1 || got[0].Outcome != OutcomeRejected || got[0].GatewayCode != -9 || !strings.Contains(got[0].Error, "validation error") {
		t.Fatalf("a rejection recorded as %+v", got)
	}
}

// TestNewCallerNeedsNoRequestTimeout: the request's time-out is a
// gateway's; a Caller needs only the time-outs and breaker settings.
func TestNewCallerNeedsNoRequestTimeout(t *testing.T) {
	o := timed(Options{})
	o.RequestTimeout = 0
	NewCaller("payoutbank", o) // does not panic
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "not set: Budget") {
			t.Fatalf("NewCaller panicked with %v", r)
		}
	}()
	o.Budget = 0
	NewCaller("payoutbank", o)
}

// optsFake is a fake driver with every optional operation.
type optsFake struct {
	*fakeGW
	form gateway.PayForm
}

func (f optsFake) Ops() gateway.Ops {
	return gateway.Ops{
		PayForm: func(string) gateway.PayForm { return f.form },
		Settle: func(ctx context.Context, _ gateway.VerifyInput) (gateway.SettleResult, error) {
			r, err := f.run(ctx, OpSettle)
			v, _ := r.(gateway.SettleResult)
			return v, err
		},
		Reverse: func(ctx context.Context, _ gateway.VerifyInput) error {
			_, err := f.run(ctx, OpReverse)
			return err
		},
		MatchCallback: func(id string, _ int64, _ callback.Params) error {
			if id != "ours" {
				return errors.New("another sale")
			}
			return nil
		},
		Down: func() bool { return true }, // the caller's breaker says, not the driver
	}
}

// TestGatewayWrapsEachOptionalOp: the resilient gateway runs each
// optional operation the driver has through its Caller (settle retried
// as a safe operation and recorded as settle; reverse one attempt), passes
// the form through (no call), and says Down from its own breaker.
func TestGatewayWrapsEachOptionalOp(t *testing.T) {
	done := gateway.SettleResult{Outcome: gateway.SettleDone}
	f := optsFake{fakeGW: newFake(map[string][]step{OpSettle: {{err: http503()}, {res: done}}, OpReverse: {{err: http503()}, {}}}),
		form: gateway.PayForm{Action: "https://bank.example/pay"}}
	rec := &MemoryRecorder{}
	g := New(f, fastOpts(newClock(), rec))
	ops := g.Ops()
	if ops.Down == nil || ops.Down() || ops.InquireSale != nil {
		t.Fatalf("ops: down %v, a sale's inquiry the driver has not", ops.Down != nil && ops.Down())
	}
	if form := ops.PayForm("A1"); form.Action != f.form.Action || f.total() != 0 {
		t.Fatalf("form %+v after %d calls", form, f.total())
	}
	if ops.MatchCallback == nil || ops.MatchCallback("ours", 1, callback.Params{}) != nil || ops.MatchCallback("theirs", 1, callback.Params{}) == nil {
		t.Fatal("the callback's check is not the driver's")
	}
	if res, err := ops.Settle(context.Background(), gateway.VerifyInput{}); err != nil || res != done || f.count(OpSettle) != 2 {
		t.Fatalf("Settle = %+v, %v after %d calls", res, err, f.count(OpSettle))
	}
	if err := ops.Reverse(context.Background(), gateway.VerifyInput{}); !isTransient(err) || f.count(OpReverse) != 1 {
		t.Fatalf("Reverse = %v after %d calls, want 1", err, f.count(OpReverse))
	}
	if got := outcomes(rec.Calls()); fmt.Sprint(got) != fmt.Sprint([]string{OutcomeTransient, "settled", OutcomeTransient}) {
		t.Fatalf("recorded %v", got)
	}
	for i, op := range []string{OpSettle, OpSettle, OpReverse} {
		if c := rec.Calls()[i]; c.Operation != op || c.Gateway != "fakebank" {
			t.Errorf("call %d: %+v, want %s", i, c, op)
		}
	}
}

// refundFake is a fake driver with the card refund.
type refundFake struct{ *fakeGW }

func (f refundFake) Ops() gateway.Ops {
	return gateway.Ops{
		Refund: func(ctx context.Context, _ gateway.RefundInput) (gateway.RefundResult, error) {
			_, err := f.run(ctx, OpRefund)
			return gateway.RefundResult{}, err
		},
		RefundStatus: func(ctx context.Context, _ gateway.RefundInput) (gateway.RefundState, error) {
			r, err := f.run(ctx, OpRefundStatus)
			v, _ := r.(gateway.RefundState)
			return v, err
		},
	}
}

// TestRefundIsOneAttempt: a card refund is never retried (no bank takes
// an idempotency key for it: a repeat could refund twice), its status
// is (a read).
func TestRefundIsOneAttempt(t *testing.T) {
	done := gateway.RefundState{Outcome: gateway.RefundDone}
	f := refundFake{newFake(map[string][]step{OpRefund: {{err: http503()}, {}}, OpRefundStatus: {{err: http503()}, {res: done}}})}
	rec := &MemoryRecorder{}
	ops := New(f, fastOpts(newClock(), rec)).Ops()
	if _, err := ops.Refund(context.Background(), gateway.RefundInput{}); !isTransient(err) || f.count(OpRefund) != 1 {
		t.Fatalf("Refund = %v after %d calls, want 1", err, f.count(OpRefund))
	}
	if st, err := ops.RefundStatus(context.Background(), gateway.RefundInput{}); err != nil || st != done || f.count(OpRefundStatus) != 2 {
		t.Fatalf("RefundStatus = %+v, %v after %d calls", st, err, f.count(OpRefundStatus))
	}
	if got := outcomes(rec.Calls()); fmt.Sprint(got) != fmt.Sprint([]string{OutcomeTransient, OutcomeTransient, "refunded"}) {
		t.Fatalf("recorded %v", got)
	}
}
