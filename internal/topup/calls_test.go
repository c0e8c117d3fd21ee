package topup_test

// Tests of recording gateway attempts (calls.go) with the real resilient
// wrapper and recorder: every attempt of a check is in gateway_calls once
// the check returns, whatever its outcome; a credit writes them in its
// own transaction.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

func TestEveryVerifyAttemptIsRecorded(t *testing.T) {
	cases := []struct {
		name         string
		script       func(f *topuptest.Gateway)
		wantStatus   topup.Status
		wantOutcomes []string // of the verify attempts, oldest first
	}{
		{"paid: written with the credit", func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(31337) },
			topup.StatusCredited, []string{resilient.OutcomePaid}},
		{"bank down: each retried attempt", func(f *topuptest.Gateway) { f.Unknown.Store(true) },
			topup.StatusPendingVerification, []string{resilient.OutcomeTransient, resilient.OutcomeTransient, resilient.OutcomeTransient}},
		{"not paid", func(f *topuptest.Gateway) {
			f.VerifyFn = topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51)
			f.InquireFn = topuptest.Inquiry(gateway.InquiryFailed)
		}, topup.StatusFailed, []string{resilient.OutcomeNotPaid}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db)
				rg := resilient.New(e.gw, resilient.Options{
					AttemptTimeout: time.Second, Budget: 5 * time.Second, RequestTimeout: 5 * time.Second, MaxAttempts: 3,
					BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
					Breaker:  resilient.BreakerOptions{MinRequests: 1000, FailureRatio: 0.99, Window: time.Minute, OpenTimeout: time.Minute},
					Recorder: topup.NewCallRecorder(sqlstore.New(db), nil), Now: e.clock.Now,
				})
				e.svc = topup.NewService(sqlstore.New(db), gateway.Set{rg}, e.clock.Now, nil, topuptest.Config())
				p := e.start(20_000)
				e.gw.Set(tc.script)
				got, _ := e.back(ctx, p.PublicID, p.AuthorityString())
				if got.Status != tc.wantStatus {
					t.Fatalf("status %s, want %s (%s)", got.Status, tc.wantStatus, dump(got))
				}
				calls, err := topuptest.Calls(ctx, e.db, p.ID)
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
				if tc.wantStatus == topup.StatusCredited {
					e.assertCredited(p, 31337)
				}
				topuptest.CheckInvariants(t, db)
			})
		})
	}
}

// A bank's garbled answer quoted in an attempt's error (invalid UTF-8, a
// NUL, Persian text cut mid-character) is stored cleaned: the row, and the
// credit it is written with, never fail for it.
func TestGarbledCallErrorsDoNotBlockTheCredit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(20_000)
		garbled := "bank said \x00\xff\xfe " + strings.Repeat("پرداخت ناموفق ", 60)
		rec := topup.NewCallRecorder(sqlstore.New(db), nil)
		// Recorded alone (a breaker refusal, say) …
		rec.Record(ctx, resilient.Call{Ref: p.PublicID, Gateway: "zarinpal", Operation: "verify", Attempt: 1,
			StartedAt: e.clock.Now(), Outcome: resilient.OutcomeTransient, Error: garbled})
		// … and with a credit, in its transaction.
		rg := resilient.New(garbledGateway{e.gw, garbled}, resilient.Options{
			AttemptTimeout: time.Second, Budget: 5 * time.Second, RequestTimeout: 5 * time.Second, MaxAttempts: 3,
			BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
			Breaker:  resilient.BreakerOptions{MinRequests: 1000, FailureRatio: 0.99, Window: time.Minute, OpenTimeout: time.Minute},
			Recorder: rec, Now: e.clock.Now,
		})
		e.svc = topup.NewService(sqlstore.New(db), gateway.Set{rg}, e.clock.Now, nil, topuptest.Config())
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(777) })
		if got, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("Return = %s, %v; want credited", dump(got), err)
		}
		e.assertCredited(p, 777)
		calls, err := topuptest.Calls(ctx, e.db, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var garbledRows int
		for _, c := range calls {
			if !utf8.ValidString(c.Error) || strings.ContainsRune(c.Error, 0) || len(c.Error) > 500 {
				t.Errorf("stored error %q is not clean text of at most 500 bytes", c.Error)
			}
			if strings.Contains(c.Error, "bank said") {
				garbledRows++
			}
		}
		if garbledRows != 2 {
			t.Errorf("%d rows with the garbled error, want 2 (alone, and the failed attempt before the credit): %+v", garbledRows, calls)
		}
	})
}

// garbledGateway fails the first verify with a garbled error, then answers
// as the wrapped gateway does.
type garbledGateway struct {
	*topuptest.Gateway
	msg string
}

func (g garbledGateway) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	if _, n, _ := g.Gateway.Counts(); n == 0 {
		_, _ = g.Gateway.Verify(ctx, in) // counted, answer dropped
		return gateway.VerifyResult{}, &gateway.TransientError{Op: "verify", Err: errors.New(g.msg)}
	}
	return g.Gateway.Verify(ctx, in)
}

// TestCallerDoWritesCallLogRows: a service that is no payment gateway (a
// payout provider) running its calls through its own resilient.Caller
// writes each attempt as a gateway_calls row, tied to the payment its
// context names, as the gateways' attempts are.
func TestCallerDoWritesCallLogRows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(20_000)
		c := resilient.NewCaller("payoutbank", resilient.Options{
			AttemptTimeout: time.Second, Budget: 5 * time.Second, MaxAttempts: 3,
			BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
			Sleep:    func(context.Context, time.Duration) error { return nil },
			Breaker:  resilient.BreakerOptions{MinRequests: 1000, FailureRatio: 0.99, Window: time.Minute, OpenTimeout: time.Minute},
			Recorder: topup.NewCallRecorder(sqlstore.New(db), nil), Now: e.clock.Now,
		})
		n := 0
		err := c.Do(resilient.WithRef(ctx, p.PublicID), resilient.Op{Name: "payout", Safe: true},
			func(context.Context) (resilient.Answer, error) {
				if n++; n == 1 {
					return resilient.Answer{}, &gateway.TransientError{Op: "payout", HTTPStatus: 502, Err: errors.New("bad gateway")}
				}
				return resilient.Answer{Outcome: "paid_out", Code: 7}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		calls, err := topuptest.Calls(ctx, e.db, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var rows []topup.GatewayCall
		for _, row := range calls {
			if row.Gateway == "payoutbank" {
				rows = append(rows, row)
			}
		}
		if len(rows) != 2 || rows[0].Operation != "payout" || rows[0].Attempt != 1 || rows[0].Outcome != resilient.OutcomeTransient ||
			rows[0].HTTPStatus != 502 || !strings.Contains(rows[0].Error, "bad gateway") ||
			rows[1].Attempt != 2 || rows[1].Outcome != "paid_out" || rows[1].GatewayCode != 7 || rows[1].Error != "" {
			t.Fatalf("gateway_calls rows %+v", rows)
		}
	})
}
