package payment_test

// Tests of recording gateway attempts (calls.go) with the real resilient
// wrapper and recorder: every attempt of a check is in gateway_calls once
// the check returns, whatever its outcome; a credit writes them in its
// own transaction.

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/payment/paymenttest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

func TestEveryVerifyAttemptIsRecorded(t *testing.T) {
	cases := []struct {
		name         string
		script       func(f *paymenttest.Gateway)
		wantStatus   payment.Status
		wantOutcomes []string // of the verify attempts, oldest first
	}{
		{"paid: written with the credit", func(f *paymenttest.Gateway) { f.VerifyFn = paymenttest.Paid(31337) },
			payment.StatusCredited, []string{resilient.OutcomePaid}},
		{"bank down: each retried attempt", func(f *paymenttest.Gateway) { f.Unknown.Store(true) },
			payment.StatusPendingVerification, []string{resilient.OutcomeTransient, resilient.OutcomeTransient, resilient.OutcomeTransient}},
		{"not paid", func(f *paymenttest.Gateway) {
			f.VerifyFn = paymenttest.VerifyAnswer(gateway.VerifyNotPaid, -51)
			f.InquireFn = paymenttest.Inquiry(gateway.InquiryFailed)
		}, payment.StatusFailed, []string{resilient.OutcomeNotPaid}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db)
				rg := resilient.New(e.gw, resilient.Options{
					AttemptTimeout: time.Second, Budget: 5 * time.Second, MaxAttempts: 3,
					BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
					Breaker:  resilient.BreakerOptions{MinRequests: 1000, FailureRatio: 0.99, Window: time.Minute, OpenTimeout: time.Minute},
					Recorder: payment.NewCallRecorder(db, nil), Now: e.clock.Now,
				})
				e.svc = payment.NewService(db, rg, e.clock.Now, nil, payment.Config{BaseURL: "http://app.test", MinRials: 10000, MaxRials: 1000000000, PollInterval: 5 * time.Millisecond})
				p := e.start(20_000)
				e.gw.Set(tc.script)
				got, _ := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
				if got.Status != tc.wantStatus {
					t.Fatalf("status %s, want %s (%s)", got.Status, tc.wantStatus, dump(got))
				}
				calls, err := e.svc.CallsOf(ctx, p.ID)
				if err != nil {
					t.Fatal(err)
				}
				var verifies []string
				for _, c := range calls {
					if c.Operation == "verify" {
						verifies = append(verifies, c.Outcome)
					}
				}
				if len(verifies) != len(tc.wantOutcomes) {
					t.Fatalf("verify attempts recorded %v, want %v", verifies, tc.wantOutcomes)
				}
				for i := range verifies {
					if verifies[i] != tc.wantOutcomes[i] {
						t.Errorf("attempt %d: %s, want %s", i+1, verifies[i], tc.wantOutcomes[i])
					}
				}
				if tc.wantStatus == payment.StatusCredited {
					e.assertCredited(p, 31337)
				}
				storetest.CheckInvariants(t, db)
			})
		})
	}
}
