package resilient

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The request call has its own time-out (one attempt, never retried), not
// the per-attempt time-out of retried calls: a slow but working bank still
// hands out authorities.
func TestRequestTimeout(t *testing.T) {
	const (
		attemptTimeout = 40 * time.Millisecond
		requestTimeout = 3 * time.Second
		budget         = 5 * time.Second
		slack          = time.Second // timers on a loaded machine
	)
	tests := []struct {
		name        string
		op          string
		delay       time.Duration // the bank's answer time
		opts        func(*Options)
		wantOK      bool
		wantCalls   int
		wantOutcome string
		maxElapsed  time.Duration
	}{
		{name: "request slower than an attempt time-out succeeds", op: OpRequest, delay: 600 * time.Millisecond,
			wantOK: true, wantCalls: 1, wantOutcome: OutcomeOK, maxElapsed: requestTimeout},
		{name: "verify as slow times out every attempt", op: OpVerify, delay: 600 * time.Millisecond,
			wantCalls: 3, wantOutcome: OutcomeTimeout, maxElapsed: budget},
		{name: "request slower than its own time-out fails once", op: OpRequest, delay: 10 * time.Second,
			opts:      func(o *Options) { o.RequestTimeout = 300 * time.Millisecond },
			wantCalls: 1, wantOutcome: OutcomeTimeout, maxElapsed: 300*time.Millisecond + slack},
		{name: "request time-out is cut to the budget", op: OpRequest, delay: 10 * time.Second,
			opts:      func(o *Options) { o.Budget, o.RequestTimeout = 150*time.Millisecond, 10*time.Second },
			wantCalls: 1, wantOutcome: OutcomeTimeout, maxElapsed: 150*time.Millisecond + slack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(map[string][]step{tt.op: {{delay: tt.delay, res: okResult(tt.op)}}})
			rec := &MemoryRecorder{}
			o := Options{
				AttemptTimeout: attemptTimeout, RequestTimeout: requestTimeout, Budget: budget,
				MaxAttempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
				Recorder: rec, Logger: discard(), Breaker: BreakerOptions{MinRequests: 1000},
			}
			if tt.opts != nil {
				tt.opts(&o)
			}
			g := New(f, timed(o))
			start := time.Now()
			err := call(g, context.Background(), tt.op)
			elapsed := time.Since(start)
			if (err == nil) != tt.wantOK {
				t.Fatalf("err = %v, want ok=%v", err, tt.wantOK)
			}
			if err != nil && (!isTransient(err) || !errors.Is(err, context.DeadlineExceeded)) {
				t.Errorf("err = %v, want a transient deadline error", err)
			}
			if n := f.count(tt.op); n != tt.wantCalls {
				t.Errorf("inner called %d times, want %d", n, tt.wantCalls)
			}
			calls := rec.Calls()
			if len(calls) != tt.wantCalls || calls[len(calls)-1].Outcome != tt.wantOutcome {
				t.Errorf("recorded %v, want %d attempts ending %s", outcomes(calls), tt.wantCalls, tt.wantOutcome)
			}
			if elapsed > tt.maxElapsed {
				t.Errorf("took %v, want at most %v", elapsed, tt.maxElapsed)
			}
		})
	}
}
