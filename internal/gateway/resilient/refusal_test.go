package resilient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
)

func perPaymentRefusal() error {
	return &gateway.TransientError{Op: "x", HTTPStatus: 200,
		Err: &gateway.PerPaymentRefusal{Code: -12, Message: "Too many attempts, please try again later."}}
}

func unexpected52() error {
	return &gateway.TransientError{Op: "x", HTTPStatus: 200, Err: errors.New("gateway code -52: Oops")}
}

// A refusal about one payment (-12) is a healthy answer for the breaker,
// is not retried, and reaches the caller as an unknown outcome; the bank's
// own trouble (-52) still counts and is retried.
func TestPerPaymentRefusalNeverCountsTowardTheBreaker(t *testing.T) {
	const calls = 40
	tests := []struct {
		name         string
		err          func() error
		wantAttempts int // per operation (MaxAttempts 3)
		wantOpen     bool
		wantOutcome  string
		wantCode     int
		wantRefusal  bool
	}{
		{"-12 too many attempts", perPaymentRefusal, 1, false, OutcomeRefusedForPayment, -12, true},
		{"-52 unexpected error", unexpected52, 3, true, OutcomeTransient, 0, false},
	}
	for _, tc := range tests {
		for _, op := range []string{OpVerify, OpInquire, OpRequest, OpListUnverified} {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				f := newFake(map[string][]step{op: {{err: tc.err()}}})
				rec := &MemoryRecorder{}
				o := breakerOpts(rec, nil, 10, time.Minute)
				o.MaxAttempts = 3
				g := New(f, o)
				var last error
				for range calls {
					last = call(g, context.Background(), op)
				}
				st := g.BreakerState()
				if (st.State == "open") != tc.wantOpen {
					t.Fatalf("breaker %+v, want open=%v", st, tc.wantOpen)
				}
				if tc.wantOpen {
					if !errors.Is(last, gateway.ErrUnavailable) {
						t.Errorf("last err = %v, want the open breaker's", last)
					}
					return
				}
				if st.Failures != 0 || st.Successes != calls {
					t.Errorf("breaker counted %d failures, %d successes; want 0 and %d", st.Failures, st.Successes, calls)
				}
				want := tc.wantAttempts
				if op == OpRequest {
					want = 1
				}
				if n := f.count(op); n != calls*want {
					t.Errorf("inner called %d times, want %d", n, calls*want)
				}
				// The caller still sees an unknown outcome: never a
				// rejection, never "unavailable".
				if !isTransient(last) || gateway.IsRejected(last) || errors.Is(last, gateway.ErrUnavailable) ||
					gateway.IsPerPaymentRefusal(last) != tc.wantRefusal {
					t.Errorf("err = %v: transient %v rejected %v refusal %v", last, isTransient(last),
						gateway.IsRejected(last), gateway.IsPerPaymentRefusal(last))
				}
				c := rec.Calls()[len(rec.Calls())-1]
				if c.Outcome != tc.wantOutcome || c.GatewayCode != tc.wantCode || c.HTTPStatus != 200 {
					t.Errorf("recorded %+v, want outcome %s code %d", c, tc.wantOutcome, tc.wantCode)
				}
			})
		}
	}
}

// The same through the real Zarinpal driver: a bank answering -12 to every
// verify and inquiry (a callback flood on one payment) leaves the breaker
// closed, and the answer stays "outcome unknown".
func TestZarinpalTooManyAttemptsKeepsBreakerClosed(t *testing.T) {
	bank := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[],"errors":{"code":-12,"message":"Too many attempts, please try again later."}}`)
	}))
	defer bank.Close()
	zp, err := zarinpal.New(zarinpal.Config{MerchantID: "c0ffee00-1234-4abc-9def-0123456789ab", BaseURL: bank.URL})
	if err != nil {
		t.Fatal(err)
	}
	rec := &MemoryRecorder{}
	o := breakerOpts(rec, nil, 5, time.Minute)
	o.MaxAttempts = 3
	g := New(zp, o)
	for range 20 {
		for _, op := range []string{OpVerify, OpInquire} {
			err := call(g, context.Background(), op)
			if !isTransient(err) || gateway.IsRejected(err) || !gateway.IsPerPaymentRefusal(err) {
				t.Fatalf("%s err = %v, want an unknown outcome refused for the payment", op, err)
			}
		}
	}
	if st := g.BreakerState(); st.State != "closed" || st.Failures != 0 || st.Successes != 40 {
		t.Fatalf("breaker %+v, want closed with 40 successes", st)
	}
	for _, c := range rec.Calls() {
		if c.Outcome != OutcomeRefusedForPayment || c.GatewayCode != -12 || c.Attempt != 1 {
			t.Fatalf("recorded %+v", c)
		}
	}
}

// The bank's 429 ("slow down") is retried as its Retry-After says but
// never counts toward the breaker: a flood that the bank throttles (one
// user's top-ups) must not refuse every other payer once it stops.
func TestBankRateLimitKeepsBreakerClosed(t *testing.T) {
	const calls = 40
	f := newFake(map[string][]step{OpRequest: {{err: http429(0)}}})
	o := breakerOpts(&MemoryRecorder{}, nil, 10, time.Minute)
	g := New(f, o)
	var last error
	for range calls {
		last = call(g, context.Background(), OpRequest)
	}
	st := g.BreakerState()
	if st.State != "closed" || st.Failures != 0 {
		t.Fatalf("breaker %+v after %d throttled calls, want closed with no failures", st, calls)
	}
	if !isTransient(last) || errors.Is(last, gateway.ErrUnavailable) {
		t.Fatalf("err = %v, want the bank's transient 429", last)
	}
	if n := f.count(OpRequest); n != calls {
		t.Fatalf("inner called %d times, want %d (each call reached the bank)", n, calls)
	}
	// A 5xx still counts: the breaker opens on the bank's own trouble.
	f5 := newFake(map[string][]step{OpRequest: {{err: &gateway.TransientError{Op: "x", HTTPStatus: 502, Err: errors.New("bad gateway")}}}})
	g5 := New(f5, breakerOpts(&MemoryRecorder{}, nil, 10, time.Minute))
	for range calls {
		_ = call(g5, context.Background(), OpRequest)
	}
	if st := g5.BreakerState(); st.State != "open" {
		t.Fatalf("breaker %+v after %d 502s, want open", st, calls)
	}
}
