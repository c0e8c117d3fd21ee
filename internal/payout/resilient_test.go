package payout_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/payout"
)

// flaky answers each call with the next error of its list (nil: a
// definite answer), counting calls.
type flaky struct {
	submits, statuses, owners int
	errs                      []error
	next                      int
}

func (f *flaky) err() error {
	if f.next >= len(f.errs) {
		return nil
	}
	e := f.errs[f.next]
	f.next++
	return e
}

func (f *flaky) Name() string { return "flaky" }
func (f *flaky) Submit(context.Context, payout.Order) (payout.Submitted, error) {
	f.submits++
	return payout.Submitted{}, f.err()
}
func (f *flaky) Status(context.Context, string) (payout.Status, error) {
	f.statuses++
	if err := f.err(); err != nil {
		return payout.Status{}, err
	}
	return payout.Status{State: payout.StateTransferred}, nil
}
func (f *flaky) Ops() payout.Ops {
	return payout.Ops{CheckOwner: func(context.Context, string, string) (payout.Ownership, error) {
		f.owners++
		if err := f.err(); err != nil {
			return payout.OwnerUnknown, err
		}
		return payout.OwnerMatch, nil
	}}
}

func caller(rec resilient.Recorder) *resilient.Caller {
	return resilient.NewCaller("flaky", resilient.Options{
		AttemptTimeout: time.Second, Budget: 5 * time.Second, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
		Breaker:  resilient.BreakerOptions{Window: time.Minute, MinRequests: 8, FailureRatio: 0.5, OpenTimeout: time.Hour},
		Recorder: rec, Logger: slog.New(slog.DiscardHandler),
	})
}

func transient() error {
	return &gateway.TransientError{Op: "x", HTTPStatus: 502, Err: errors.New("bad gateway")}
}

// A submit is one attempt whatever happens (a retry could be a second
// payout); a status and the ownership inquiry are reads, retried; a
// refusal is returned as it came, never retried; every attempt is in the
// call log; an open breaker stops calls before they reach the provider
// (NotSent).
func TestResilientRetriesOnlyReads(t *testing.T) {
	rec := &resilient.MemoryRecorder{}
	f := &flaky{errs: []error{transient()}}
	p := payout.Resilient(f, caller(rec), time.Second)
	if _, err := p.Submit(context.Background(), payout.Order{ID: "w"}); err == nil || f.submits != 1 {
		t.Fatalf("submit: %v after %d attempts", err, f.submits)
	}
	f.errs, f.next = []error{transient()}, 0
	if st, err := p.Status(context.Background(), "w"); err != nil || st.State != payout.StateTransferred || f.statuses != 2 {
		t.Fatalf("status: %+v %v after %d attempts", st, err, f.statuses)
	}
	f.errs, f.next = []error{transient()}, 0
	if o, err := p.Ops().CheckOwner(context.Background(), "IR", "0"); err != nil || o != payout.OwnerMatch || f.owners != 2 {
		t.Fatalf("owner: %v %v after %d attempts", o, err, f.owners)
	}
	f.errs, f.next = []error{payout.Refused("payout_submit", true, 11, "balance")}, 0
	_, err := p.Submit(context.Background(), payout.Order{ID: "w2"})
	if r, now := payout.IsRefused(err); !r || !now || f.submits != 2 {
		t.Fatalf("a refusal: %v", err)
	}
	if n := len(rec.Calls()); n != 6 {
		t.Fatalf("%d calls logged, want 6", n)
	}
	// Open the breaker: failed submits until the failures are half the
	// calls of the window.
	f.errs, f.next = []error{transient(), transient(), transient(), transient(), transient()}, 0
	for i := range 5 {
		_, _ = p.Submit(context.Background(), payout.Order{ID: fmt.Sprint("w", i+3)})
	}
	before := f.submits
	_, err = p.Submit(context.Background(), payout.Order{ID: "w5"})
	if !payout.NotSent(err) || f.submits != before || !payout.Down(p) {
		t.Fatalf("breaker open: %v, %d submits reached it", err, f.submits-before)
	}
}
