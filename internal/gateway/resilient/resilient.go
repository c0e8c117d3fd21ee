// Package resilient wraps a gateway.Gateway with per-attempt time-outs, a
// total budget per operation, retries of the idempotent operations with
// exponential back-off and full jitter, and one circuit breaker per gateway
// (sony/gobreaker v2). Every attempt is reported to a Recorder.
//
// Error contract (on top of gateway.Gateway's):
//   - a definite answer (a result, a VerifyResult of any outcome, a
//     *gateway.RejectedError) is returned as soon as it arrives, never
//     retried and never replaced by an error;
//   - every other error is a *gateway.TransientError (outcome unknown);
//   - a refusal about one payment (gateway.IsPerPaymentRefusal, Zarinpal
//     -12) is such an error too, but it counts as a success for the
//     breaker (the bank answered) and is not retried within the operation;
//   - when the breaker refuses, the error is a *gateway.TransientError whose
//     Err wraps gateway.ErrUnavailable, so errors.Is(err,
//     gateway.ErrUnavailable) holds and gateway.IsRejected(err) does not. The
//     refused attempt did not reach the bank; for Request (never retried)
//     that means the bank was not called at all by this operation.
package resilient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/sony/gobreaker/v2"
)

// Gateway is a resilient gateway.Gateway around an inner driver.
type Gateway struct {
	inner gateway.Gateway
	name  string
	opts  Options
	cb    *gobreaker.TwoStepCircuitBreaker[struct{}]
	snap  atomic.Pointer[stateSnap]
}

var _ gateway.Gateway = (*Gateway)(nil)

// stateSnap is what OnStateChange publishes (it must not call the breaker).
type stateSnap struct {
	state    gobreaker.State
	since    time.Time
	openedAt time.Time
}

// attributionSlackDiv: a caller's deadline within 1/20 of our own bound
// for the operation counts as ours (see run).
const attributionSlackDiv = 20

// Verdicts reported to the breaker: nil is a success.
var (
	errCountFailure = errors.New("resilient: counted failure")
	errCountExclude = errors.New("resilient: excluded")
)

// New wraps inner. The breaker is named inner.Name(). It panics when a
// required option is not set (a wiring mistake: the configuration always
// sets them).
func New(inner gateway.Gateway, opts Options) *Gateway {
	if m := opts.missing(); len(m) > 0 {
		panic("resilient.New: required options not set: " + strings.Join(m, ", "))
	}
	o := opts.withDefaults()
	g := &Gateway{inner: inner, name: inner.Name(), opts: o}
	g.snap.Store(&stateSnap{state: gobreaker.StateClosed, since: o.Now()})

	minReq, ratio := o.Breaker.MinRequests, o.Breaker.FailureRatio
	bucket := o.Breaker.Window / windowBuckets
	if bucket <= 0 {
		bucket = o.Breaker.Window
	}
	g.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         g.name,
		MaxRequests:  o.Breaker.HalfOpenProbes,
		Interval:     o.Breaker.Window,
		BucketPeriod: bucket,
		Timeout:      o.Breaker.OpenTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			done := c.TotalSuccesses + c.TotalFailures // completed, not excluded
			return done >= minReq && float64(c.TotalFailures)/float64(done) >= ratio
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return errors.Is(err, errCountExclude) },
		// Runs with the breaker's mutex held: it must never call g.cb
		// (sony/gobreaker#37). It only publishes a snapshot and logs.
		OnStateChange: g.onStateChange,
	})
	return g
}

func (g *Gateway) onStateChange(name string, from, to gobreaker.State) {
	now := g.opts.Now()
	s := &stateSnap{state: to, since: now}
	if to == gobreaker.StateOpen {
		s.openedAt = now
	}
	g.snap.Store(s)
	level := slog.LevelInfo
	switch to {
	case gobreaker.StateOpen:
		level = slog.LevelError
	case gobreaker.StateHalfOpen:
		level = slog.LevelWarn
	}
	g.opts.Logger.Log(context.Background(), level, "gateway circuit breaker state change",
		slog.String("gateway", name), slog.String("from", from.String()), slog.String("to", to.String()))
}

// BreakerState is a snapshot of the breaker for admins and metrics.
type BreakerState struct {
	Name  string
	State string // "closed", "open", "half-open"
	// Counts in the current window (closed) or since the last change; they
	// are cleared on every state change. Requests includes attempts still in
	// flight and excluded ones (caller cancellations).
	Requests            uint32
	Successes           uint32
	Failures            uint32
	Exclusions          uint32
	ConsecutiveFailures uint32
	OpenedAt            time.Time // zero unless open
	Since               time.Time // last state change (or creation)
}

// BreakerOpen reports whether calls are refused right now (open). The
// payment worker postpones its checks then instead of spending them.
func (g *Gateway) BreakerOpen() bool {
	return g.cb.State() == gobreaker.StateOpen
}

// BreakerState reports the breaker. Safe to call at any time, from any
// goroutine. Reading it may move an expired open breaker to half-open.
func (g *Gateway) BreakerState() BreakerState {
	g.cb.State() // applies lazy transitions (and rolls the window) first
	c := g.cb.Counts()
	s := g.snap.Load()
	return BreakerState{
		Name:                g.name,
		State:               s.state.String(),
		Requests:            c.Requests,
		Successes:           c.TotalSuccesses,
		Failures:            c.TotalFailures,
		Exclusions:          c.TotalExclusions,
		ConsecutiveFailures: c.ConsecutiveFailures,
		OpenedAt:            s.openedAt,
		Since:               s.since,
	}
}

// Name implements gateway.Gateway.
func (g *Gateway) Name() string { return g.name }

// PayURL implements gateway.Gateway (no call is made).
func (g *Gateway) PayURL(authority string) string { return g.inner.PayURL(authority) }

// Request implements gateway.Gateway. It is one attempt, never retried (a
// transient error means an authority may or may not have been created),
// bounded by Options.RequestTimeout instead of AttemptTimeout.
func (g *Gateway) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	return run(g, ctx, OpRequest, false,
		func(ctx context.Context) (gateway.RequestResult, error) { return g.inner.Request(ctx, in) },
		func(r gateway.RequestResult) (string, int) { return OutcomeOK, r.Code })
}

// Verify implements gateway.Gateway, retrying transient failures. A retry
// after an attempt whose outcome was unknown may answer
// VerifyAlreadyVerified for a payment this very operation verified.
func (g *Gateway) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	return run(g, ctx, OpVerify, true,
		func(ctx context.Context) (gateway.VerifyResult, error) { return g.inner.Verify(ctx, in) },
		func(r gateway.VerifyResult) (string, int) { return string(r.Outcome), r.Code })
}

// Inquire implements gateway.Gateway, retrying transient failures.
func (g *Gateway) Inquire(ctx context.Context, authority string) (gateway.InquiryResult, error) {
	return run(g, ctx, OpInquire, true,
		func(ctx context.Context) (gateway.InquiryResult, error) { return g.inner.Inquire(ctx, authority) },
		func(r gateway.InquiryResult) (string, int) { return OutcomeOK, r.Code })
}

// ListUnverified implements gateway.Gateway, retrying transient failures.
func (g *Gateway) ListUnverified(ctx context.Context) ([]gateway.Unverified, error) {
	return run(g, ctx, OpListUnverified, true,
		func(ctx context.Context) ([]gateway.Unverified, error) { return g.inner.ListUnverified(ctx) },
		func([]gateway.Unverified) (string, int) { return OutcomeOK, 0 })
}

// Settle implements gateway.Settler for a gateway that settles (Mellat),
// retrying transient failures: settle is idempotent at the bank (a second
// settle answers "already settled"). A gateway without settle refuses it
// (NeedsSettle says which).
func (g *Gateway) Settle(ctx context.Context, in gateway.VerifyInput) (gateway.SettleResult, error) {
	st, ok := g.inner.(gateway.Settler)
	if !ok {
		return gateway.SettleResult{}, &gateway.RejectedError{Op: OpSettle, Message: g.name + " has no settle"}
	}
	return run(g, ctx, OpSettle, true,
		func(ctx context.Context) (gateway.SettleResult, error) { return st.Settle(ctx, in) },
		func(r gateway.SettleResult) (string, int) { return string(r.Outcome), r.Code })
}

// NeedsSettle reports whether the wrapped gateway settles verified
// payments (implements gateway.Settler).
func (g *Gateway) NeedsSettle() bool {
	_, ok := g.inner.(gateway.Settler)
	return ok
}

// InquireSale implements gateway.SaleInquirer for a gateway asked about
// a sale with the callback's data (Mellat), retrying transient failures.
// A gateway without it refuses (SaleInquiry says which).
func (g *Gateway) InquireSale(ctx context.Context, in gateway.VerifyInput) (gateway.InquiryResult, error) {
	si, ok := g.inner.(gateway.SaleInquirer)
	if !ok {
		return gateway.InquiryResult{}, &gateway.RejectedError{Op: OpInquire, Message: g.name + " has no inquiry of a sale"}
	}
	return run(g, ctx, OpInquire, true,
		func(ctx context.Context) (gateway.InquiryResult, error) { return si.InquireSale(ctx, in) },
		func(r gateway.InquiryResult) (string, int) { return OutcomeOK, r.Code })
}

// SaleInquiry reports whether the wrapped gateway is asked about a sale
// with the callback's data (implements gateway.SaleInquirer).
func (g *Gateway) SaleInquiry() bool {
	_, ok := g.inner.(gateway.SaleInquirer)
	return ok
}

// PayForm implements gateway.FormPayer for a gateway whose payer is sent
// by POST (no call is made); ok is false for the others.
func (g *Gateway) PayForm(authority string) (gateway.PayForm, bool) {
	fp, ok := g.inner.(gateway.FormPayer)
	if !ok {
		return gateway.PayForm{}, false
	}
	return fp.PayForm(authority), true
}

// attemptResult is how one attempt ended.
type attemptResult int

const (
	definite attemptResult = iota // a result or a rejection: stop
	unknown                       // outcome unknown: may retry
	final                         // outcome unknown, retrying is pointless or wrong
	refused                       // breaker open or half-open busy: stop
)

// run drives one operation: budget, attempts, back-off.
func run[T any](g *Gateway, ctx context.Context, op string, retryable bool,
	call func(context.Context) (T, error), describe func(T) (string, int)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, &gateway.TransientError{Op: op, Err: err}
	}
	budget := g.opts.Budget
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	if budget <= 0 {
		return zero, &gateway.TransientError{Op: op, Err: context.DeadlineExceeded}
	}
	// Whose deadline is it? A caller's deadline earlier than what we would
	// give the operation on our own binds: when it passes, the caller gave
	// up, and the breaker does not blame the bank. A caller's deadline as
	// long as our own bound (give or take the moments between the caller
	// setting it and this line) is our bound in effect: when it passes,
	// the bank was too slow, and that counts.
	ownLimit := g.opts.Budget
	if op == OpRequest {
		ownLimit = min(g.opts.RequestTimeout, g.opts.Budget)
	}
	callerBinds := false
	if dl, ok := ctx.Deadline(); ok {
		callerBinds = time.Until(dl) < ownLimit-ownLimit/attributionSlackDiv
	}
	// The context deadline is relative (real timers); the budget arithmetic
	// below uses the injected clock so tests can drive it.
	deadline := g.opts.Now().Add(budget)
	var opCtx context.Context
	var cancel context.CancelFunc
	if _, ok := ctx.Deadline(); ok && budget < g.opts.Budget {
		// The caller's deadline binds: inherit it (no timer of our own), so
		// that when it passes it is the caller's context that ended.
		opCtx, cancel = context.WithCancel(ctx)
	} else {
		opCtx, cancel = context.WithTimeout(ctx, budget)
	}
	defer cancel()

	maxAttempts := 1
	if retryable {
		maxAttempts = g.opts.MaxAttempts
	}
	attemptTimeout := g.opts.AttemptTimeout
	if op == OpRequest {
		attemptTimeout = g.opts.RequestTimeout
	}
	minWindow := attemptTimeout / 10
	for attempt := 1; ; attempt++ {
		timeout := attemptTimeout
		if deadline.Sub(g.opts.Now()) <= timeout {
			timeout = 0 // the budget's end comes first
		}
		res, err, how := attemptOnce(g, ctx, opCtx, op, attempt, timeout, callerBinds, call, describe)
		if how == definite {
			return res, err
		}
		if how == refused || how == final {
			return zero, err
		}
		// Outcome unknown.
		if ctx.Err() != nil {
			return zero, callerEnded(ctx, op, err)
		}
		if attempt >= maxAttempts {
			return zero, err
		}
		var te *gateway.TransientError
		errors.As(err, &te)
		sleep := g.backoff(attempt-1, te.RetryAfter)
		if g.opts.Now().Add(sleep + minWindow).After(deadline) {
			g.opts.Logger.Warn("gateway retry skipped: budget exhausted",
				slog.String("gateway", g.name), slog.String("op", op), slog.Int("attempt", attempt),
				slog.Duration("backoff", sleep))
			return zero, err
		}
		if serr := g.opts.Sleep(opCtx, sleep); serr != nil {
			if ctx.Err() != nil {
				return zero, callerEnded(ctx, op, err)
			}
			return zero, err
		}
		if deadline.Sub(g.opts.Now()) <= 0 {
			return zero, err
		}
	}
}

// callerEnded is the error when the caller's context ended after an
// attempt with an unknown outcome: a *gateway.TransientError that wraps
// both the context's error and the last attempt's error.
func callerEnded(ctx context.Context, op string, last error) error {
	cerr := ctx.Err()
	if errors.Is(last, cerr) {
		return last
	}
	var te *gateway.TransientError
	status := 0
	if errors.As(last, &te) {
		status = te.HTTPStatus
	}
	return &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("%w; last attempt: %w", cerr, last)}
}

// backoff is the sleep before retry n (0-based): full jitter over
// min(MaxBackoff, BaseBackoff*2^n), at least the capped Retry-After.
func (g *Gateway) backoff(n int, retryAfter time.Duration) time.Duration {
	ceil := g.opts.BaseBackoff
	for i := 0; i < n && ceil < g.opts.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, g.opts.MaxBackoff)
	r := g.opts.Rand()
	if !(r >= 0) { // also catches NaN
		r = 0
	}
	if r > 1 {
		r = 1
	}
	sleep := time.Duration(r * float64(ceil))
	if retryAfter > 0 {
		sleep = max(sleep, min(retryAfter, g.opts.MaxRetryAfter))
	}
	return sleep
}

// attemptOnce makes one attempt through the breaker and records it.
func attemptOnce[T any](g *Gateway, ctx, opCtx context.Context, op string, attempt int, timeout time.Duration, callerBinds bool,
	call func(context.Context) (T, error), describe func(T) (string, int)) (res T, err error, how attemptResult) {
	rec := Call{
		PaymentRef: PaymentRefFrom(ctx),
		Gateway:    g.name,
		Operation:  op,
		Attempt:    attempt,
		StartedAt:  g.opts.Now(),
	}
	recCtx := context.WithoutCancel(ctx)

	done, berr := g.cb.Allow()
	if berr != nil {
		err = &gateway.TransientError{Op: op, Err: fmt.Errorf("%w: circuit breaker %s (%s): %w",
			gateway.ErrUnavailable, g.name, breakerWord(berr), berr)}
		rec.Outcome = OutcomeBreakerOpen
		rec.Error = scrubError(err)
		g.opts.Recorder.Record(recCtx, rec)
		return res, err, refused
	}

	// timeout 0: the attempt may use the rest of the budget, so it runs on
	// the budget's context itself and its end is attributed exactly (ours
	// or the caller's).
	attemptCtx := opCtx
	if timeout > 0 {
		var cancel context.CancelFunc
		attemptCtx, cancel = context.WithTimeout(opCtx, timeout)
		defer cancel()
	}
	reported := false
	defer func() {
		if !reported { // the inner call panicked: count it, let the panic go on
			done(errCountFailure)
		}
	}()
	res, err = call(attemptCtx)
	verdict, outcome, code, status := classify(ctx, attemptCtx, callerBinds, err, res, describe)
	reported = true
	done(verdict)

	rec.Duration = g.opts.Now().Sub(rec.StartedAt)
	rec.Outcome, rec.GatewayCode, rec.HTTPStatus = outcome, code, status
	switch {
	case err == nil || gateway.IsRejected(err):
		how = definite
	default:
		var te *gateway.TransientError
		switch {
		case gateway.IsPerPaymentRefusal(err):
			// Outcome unknown, but asking again at once is what the bank
			// just refused: the payment's own pacing asks later.
			how = final
		case errors.As(err, &te):
			how = unknown
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			err = &gateway.TransientError{Op: op, Err: err}
			how = unknown
		default:
			// An untyped error breaks the driver contract (e.g. a local
			// encoding failure): outcome unknown, but retrying won't help.
			how = final
		}
	}
	rec.Error = scrubError(err)
	g.opts.Recorder.Record(recCtx, rec)
	return res, err, how
}

// classify decides what an attempt means for the breaker and the record.
func classify[T any](ctx, attemptCtx context.Context, callerBinds bool, err error, res T, describe func(T) (string, int)) (verdict error, outcome string, code, status int) {
	if err == nil {
		outcome, code = describe(res)
		return nil, outcome, code, 0
	}
	var rej *gateway.RejectedError
	if errors.As(err, &rej) {
		return nil, OutcomeRejected, rej.Code, 0 // a definite answer: the bank is up
	}
	var te *gateway.TransientError
	if errors.As(err, &te) {
		status = te.HTTPStatus
	}
	var ppr *gateway.PerPaymentRefusal
	if errors.As(err, &ppr) {
		// A refusal about one payment (-12): the bank is up and answering.
		// Counting it would let one payer's callback flood open the
		// breaker for everyone.
		return nil, OutcomeRefusedForPayment, ppr.Code, status
	}
	if status == http.StatusTooManyRequests {
		// The bank answered "slow down" (429): it is up, and retries honour
		// its Retry-After. Neither success nor failure: a flood of one
		// user's top-ups that the bank throttles must not open the breaker
		// and refuse everyone for the open time-out after the bank has
		// stopped throttling.
		return errCountExclude, OutcomeTransient, 0, status
	}
	if status != 0 {
		// An answer arrived (408/5xx, -52, undecodable): it counts,
		// whatever happened to the contexts meanwhile.
		return errCountFailure, OutcomeTransient, 0, status
	}
	if cerr := ctx.Err(); cerr != nil {
		// The caller gave up (or its own, earlier deadline passed): not the
		// bank's fault, so neither success nor failure.
		if errors.Is(cerr, context.Canceled) {
			return errCountExclude, OutcomeCanceled, 0, 0
		}
		if callerBinds {
			return errCountExclude, OutcomeTimeout, 0, 0
		}
		// The caller's deadline was our own bound in effect: the bank
		// took all the time we would have given it.
		return errCountFailure, OutcomeTimeout, 0, 0
	}
	if errors.Is(attemptCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		// Our per-attempt time-out or our budget: the bank was too slow.
		return errCountFailure, OutcomeTimeout, 0, 0
	}
	return errCountFailure, OutcomeTransient, 0, 0
}

func breakerWord(err error) string {
	if errors.Is(err, gobreaker.ErrTooManyRequests) {
		return "half-open, probe in flight"
	}
	return "open"
}
