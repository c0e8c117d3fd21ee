package payout

import (
	"context"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
)

// Operation names in the call log (payout_calls.operation).
const (
	OpSubmit     = "payout_submit"
	OpStatus     = "payout_status"
	OpCheckOwner = "owner_inquiry"
	OpList       = "payout_list"
	OpBalance    = "payout_balance"
)

// Resilient runs provider p through c (its own breaker, the call log):
// Submit as one attempt bounded by submitTimeout, never retried (a second
// payout is what a retry could make); Status, the inquiry, the list and
// the balance are reads, retried within the caller's budget. Ops.Down is
// c's open breaker. Errors follow Provider's contract, and Do's: a call
// the breaker refused never reached the provider (NotSent).
func Resilient(p Provider, c *resilient.Caller, submitTimeout time.Duration) Provider {
	r := &resilientProvider{inner: p, c: c, submitTimeout: submitTimeout}
	in := p.Ops()
	ops := Ops{Down: c.BreakerOpen}
	if in.CheckOwner != nil {
		ops.CheckOwner = func(ctx context.Context, sheba, nationalCode string) (Ownership, error) {
			var out Ownership
			err := c.Do(ctx, resilient.Op{Name: OpCheckOwner, Safe: true}, func(ctx context.Context) (resilient.Answer, error) {
				o, err := in.CheckOwner(ctx, sheba, nationalCode)
				out = o
				return resilient.Answer{Outcome: o.String()}, err
			})
			return out, err
		}
	}
	if in.List != nil {
		ops.List = func(ctx context.Context, from, to time.Time) ([]Listed, error) {
			var out []Listed
			err := c.Do(ctx, resilient.Op{Name: OpList, Safe: true}, func(ctx context.Context) (resilient.Answer, error) {
				l, err := in.List(ctx, from, to)
				out = l
				return resilient.Answer{Outcome: resilient.OutcomeOK}, err
			})
			return out, err
		}
	}
	if in.Balance != nil {
		ops.Balance = func(ctx context.Context) (int64, error) {
			var out int64
			err := c.Do(ctx, resilient.Op{Name: OpBalance, Safe: true}, func(ctx context.Context) (resilient.Answer, error) {
				b, err := in.Balance(ctx)
				out = b
				return resilient.Answer{Outcome: resilient.OutcomeOK}, err
			})
			return out, err
		}
	}
	r.ops = ops
	return r
}

type resilientProvider struct {
	inner         Provider
	c             *resilient.Caller
	submitTimeout time.Duration
	ops           Ops
}

func (r *resilientProvider) Name() string { return r.inner.Name() }
func (r *resilientProvider) Ops() Ops     { return r.ops }

func (r *resilientProvider) Submit(ctx context.Context, o Order) (Submitted, error) {
	var out Submitted
	err := r.c.Do(ctx, resilient.Op{Name: OpSubmit, Safe: false, Timeout: r.submitTimeout}, func(ctx context.Context) (resilient.Answer, error) {
		s, err := r.inner.Submit(ctx, o)
		out = s
		outcome := "accepted"
		if s.Duplicate {
			outcome = "duplicate"
		}
		return resilient.Answer{Outcome: outcome}, err
	})
	return out, err
}

func (r *resilientProvider) Status(ctx context.Context, id string) (Status, error) {
	var out Status
	err := r.c.Do(ctx, resilient.Op{Name: OpStatus, Safe: true}, func(ctx context.Context) (resilient.Answer, error) {
		s, err := r.inner.Status(ctx, id)
		out = s
		return resilient.Answer{Outcome: string(s.State)}, err
	})
	return out, err
}

// Down reports whether p is known to be down (Ops.Down).
func Down(p Provider) bool {
	d := p.Ops().Down
	return d != nil && d()
}
