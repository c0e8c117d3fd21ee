package resilient

import (
	"context"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
)

// Gateway is a resilient gateway.Gateway around an inner driver: every
// operation of the driver, and every optional one it sets in its
// gateway.Ops, runs through the Caller it embeds (its own breaker).
type Gateway struct {
	*Caller
	inner          gateway.Gateway
	requestTimeout time.Duration
	ops            gateway.Ops
}

var _ gateway.Gateway = (*Gateway)(nil)

// New wraps inner. The breaker is named inner.Name(). It panics when a
// required option is not set (a wiring mistake: the configuration always
// sets them).
func New(inner gateway.Gateway, opts Options) *Gateway {
	if m := opts.missing(true); len(m) > 0 {
		panic("resilient.New: required options not set: " + strings.Join(m, ", "))
	}
	o := opts.withDefaults()
	g := &Gateway{Caller: newCaller(inner.Name(), o), inner: inner, requestTimeout: o.RequestTimeout}
	g.ops = g.wrap(inner.Ops())
	return g
}

// wrap runs each optional operation the driver has through the Caller,
// once; the breaker is this caller's (Down).
func (g *Gateway) wrap(in gateway.Ops) gateway.Ops {
	// The form and the callback's check make no call.
	out := gateway.Ops{PayForm: in.PayForm, MatchCallback: in.MatchCallback, Down: g.BreakerOpen}
	if settle := in.Settle; settle != nil {
		// Idempotent at the bank (a second settle answers 45): safe.
		out.Settle = func(ctx context.Context, vin gateway.VerifyInput) (gateway.SettleResult, error) {
			return do(g.Caller, ctx, Op{Name: OpSettle, Safe: true},
				func(ctx context.Context) (gateway.SettleResult, error) { return settle(ctx, vin) },
				func(r gateway.SettleResult) Answer { return Answer{Outcome: string(r.Outcome), Code: r.Code} })
		}
	}
	if inquire := in.InquireSale; inquire != nil {
		// Read-only: safe; recorded as an inquiry.
		out.InquireSale = func(ctx context.Context, vin gateway.VerifyInput) (gateway.InquiryResult, error) {
			return do(g.Caller, ctx, Op{Name: OpInquire, Safe: true},
				func(ctx context.Context) (gateway.InquiryResult, error) { return inquire(ctx, vin) },
				func(r gateway.InquiryResult) Answer { return Answer{Outcome: OutcomeOK, Code: r.Code} })
		}
	}
	if reverse := in.Reverse; reverse != nil {
		// Not known to be idempotent: one attempt.
		out.Reverse = func(ctx context.Context, vin gateway.VerifyInput) error {
			return g.Do(ctx, Op{Name: OpReverse}, func(ctx context.Context) (Answer, error) {
				return Answer{Outcome: OutcomeOK}, reverse(ctx, vin)
			})
		}
	}
	if refund := in.Refund; refund != nil {
		// No idempotency key at any bank: one attempt, bounded as a
		// request is.
		out.Refund = func(ctx context.Context, rin gateway.RefundInput) (gateway.RefundResult, error) {
			return do(g.Caller, ctx, Op{Name: OpRefund, Timeout: g.requestTimeout},
				func(ctx context.Context) (gateway.RefundResult, error) { return refund(ctx, rin) },
				func(r gateway.RefundResult) Answer { return Answer{Outcome: OutcomeOK, Code: r.Code} })
		}
	}
	if status := in.RefundStatus; status != nil {
		// Read-only: safe.
		out.RefundStatus = func(ctx context.Context, rin gateway.RefundInput) (gateway.RefundState, error) {
			return do(g.Caller, ctx, Op{Name: OpRefundStatus, Safe: true},
				func(ctx context.Context) (gateway.RefundState, error) { return status(ctx, rin) },
				func(r gateway.RefundState) Answer { return Answer{Outcome: string(r.Outcome), Code: r.Code} })
		}
	}
	return out
}

// Ops implements gateway.Gateway: the driver's optional operations, each
// through the Caller, and Down from its breaker.
func (g *Gateway) Ops() gateway.Ops { return g.ops }

// PayURL implements gateway.Gateway (no call is made).
func (g *Gateway) PayURL(authority string) string { return g.inner.PayURL(authority) }

// Request implements gateway.Gateway. It is one attempt, never retried (a
// transient error means an authority may or may not have been created),
// bounded by Options.RequestTimeout instead of AttemptTimeout.
func (g *Gateway) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	return do(g.Caller, ctx, Op{Name: OpRequest, Timeout: g.requestTimeout},
		func(ctx context.Context) (gateway.RequestResult, error) { return g.inner.Request(ctx, in) },
		func(r gateway.RequestResult) Answer { return Answer{Outcome: OutcomeOK, Code: r.Code} })
}

// Verify implements gateway.Gateway, retrying transient failures. A retry
// after an attempt whose outcome was unknown may answer
// VerifyAlreadyVerified for a payment this very operation verified.
func (g *Gateway) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	return do(g.Caller, ctx, Op{Name: OpVerify, Safe: true},
		func(ctx context.Context) (gateway.VerifyResult, error) { return g.inner.Verify(ctx, in) },
		func(r gateway.VerifyResult) Answer { return Answer{Outcome: string(r.Outcome), Code: r.Code} })
}

// Inquire implements gateway.Gateway, retrying transient failures.
func (g *Gateway) Inquire(ctx context.Context, authority string) (gateway.InquiryResult, error) {
	return do(g.Caller, ctx, Op{Name: OpInquire, Safe: true},
		func(ctx context.Context) (gateway.InquiryResult, error) { return g.inner.Inquire(ctx, authority) },
		func(r gateway.InquiryResult) Answer { return Answer{Outcome: OutcomeOK, Code: r.Code} })
}

// ListUnverified implements gateway.Gateway, retrying transient failures.
func (g *Gateway) ListUnverified(ctx context.Context) ([]gateway.Unverified, error) {
	return do(g.Caller, ctx, Op{Name: OpListUnverified, Safe: true},
		func(ctx context.Context) ([]gateway.Unverified, error) { return g.inner.ListUnverified(ctx) },
		func([]gateway.Unverified) Answer { return Answer{Outcome: OutcomeOK} })
}

// do runs call through c.Do and returns its typed result: the last
// attempt's with a definite answer (a result, or a
// *gateway.RejectedError), the zero value with any other error.
func do[T any](c *Caller, ctx context.Context, op Op, call func(context.Context) (T, error), describe func(T) Answer) (T, error) {
	var res T
	err := c.Do(ctx, op, func(ctx context.Context) (Answer, error) {
		r, err := call(ctx)
		res = r
		if err != nil {
			return Answer{}, err
		}
		return describe(r), nil
	})
	if err != nil && !gateway.IsRejected(err) {
		var zero T
		return zero, err
	}
	return res, err
}
