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

	"github.com/sony/gobreaker/v2"

	"github.com/kifpool/kifpool/internal/gateway"
)

// Caller runs the operations of one remote service (a bank) through one
// circuit breaker, with time-outs, a budget, retries and the call log.
// It knows no service's protocol: what an operation does is the function
// given to Do. Safe for concurrent use.
type Caller struct {
	name string
	opts Options
	cb   *gobreaker.TwoStepCircuitBreaker[struct{}]
	snap atomic.Pointer[stateSnap]
}

// Op describes one operation for Do.
type Op struct {
	// Name is the operation's name in the call log (Call.Operation) and
	// in the errors this package makes ("verify", "payout").
	Name string
	// Safe: the operation can be repeated without doing twice what it
	// does (a read; a verify or settle the bank answers "already done"),
	// so an attempt whose outcome is unknown is retried, up to
	// Options.MaxAttempts and within the budget. An unsafe operation
	// (one that creates something: a transaction, a payout) is one
	// attempt, never retried.
	Safe bool
	// Timeout bounds each attempt in place of Options.AttemptTimeout
	// (cut to Options.Budget); 0: AttemptTimeout. An unsafe operation's
	// one attempt is also its own bound: a caller's deadline that long
	// is ours in effect, and when it passes the service was too slow.
	Timeout time.Duration
}

// Answer is what a definite answer said, for the call log.
type Answer struct {
	// Outcome is the word recorded: OutcomeOK, or the operation's own
	// ("paid", "settled").
	Outcome string
	// Code is the service's own code, when it has one.
	Code int
}

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

// NewCaller returns the Caller of the service called name (its
// breaker's name, and Call.Gateway in the call log). It panics when a
// required option is not set (a wiring mistake: the configuration always
// sets them); Options.RequestTimeout is not one (it is the gateway's
// request's, see New).
func NewCaller(name string, opts Options) *Caller {
	if m := opts.missing(false); len(m) > 0 {
		panic("resilient.NewCaller: required options not set: " + strings.Join(m, ", "))
	}
	return newCaller(name, opts.withDefaults())
}

func newCaller(name string, o Options) *Caller {
	c := &Caller{name: name, opts: o}
	c.snap.Store(&stateSnap{state: gobreaker.StateClosed, since: o.Now()})

	minReq, ratio := o.Breaker.MinRequests, o.Breaker.FailureRatio
	bucket := o.Breaker.Window / windowBuckets
	if bucket <= 0 {
		bucket = o.Breaker.Window
	}
	c.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         c.name,
		MaxRequests:  o.Breaker.HalfOpenProbes,
		Interval:     o.Breaker.Window,
		BucketPeriod: bucket,
		Timeout:      o.Breaker.OpenTimeout,
		ReadyToTrip: func(n gobreaker.Counts) bool {
			done := n.TotalSuccesses + n.TotalFailures // completed, not excluded
			return done >= minReq && float64(n.TotalFailures)/float64(done) >= ratio
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return errors.Is(err, errCountExclude) },
		// Runs with the breaker's mutex held: it must never call c.cb
		// (sony/gobreaker#37). It only publishes a snapshot and logs.
		OnStateChange: c.onStateChange,
	})
	return c
}

// Name is the service's name (the breaker's, Call.Gateway).
func (c *Caller) Name() string { return c.name }

func (c *Caller) onStateChange(name string, from, to gobreaker.State) {
	now := c.opts.Now()
	s := &stateSnap{state: to, since: now}
	if to == gobreaker.StateOpen {
		s.openedAt = now
	}
	c.snap.Store(s)
	level := slog.LevelInfo
	switch to {
	case gobreaker.StateOpen:
		level = slog.LevelError
	case gobreaker.StateHalfOpen:
		level = slog.LevelWarn
	}
	c.opts.Logger.Log(context.Background(), level, "gateway circuit breaker state change",
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
func (c *Caller) BreakerOpen() bool {
	return c.cb.State() == gobreaker.StateOpen
}

// BreakerState reports the breaker. Safe to call at any time, from any
// goroutine. Reading it may move an expired open breaker to half-open.
func (c *Caller) BreakerState() BreakerState {
	c.cb.State() // applies lazy transitions (and rolls the window) first
	n := c.cb.Counts()
	s := c.snap.Load()
	return BreakerState{
		Name:                c.name,
		State:               s.state.String(),
		Requests:            n.Requests,
		Successes:           n.TotalSuccesses,
		Failures:            n.TotalFailures,
		Exclusions:          n.TotalExclusions,
		ConsecutiveFailures: n.ConsecutiveFailures,
		OpenedAt:            s.openedAt,
		Since:               s.since,
	}
}

// attemptResult is how one attempt ended.
type attemptResult int

const (
	definite attemptResult = iota // a result or a rejection: stop
	unknown                       // outcome unknown: may retry
	final                         // outcome unknown, retrying is pointless or wrong
	refused                       // breaker open or half-open busy: stop
)

// Do runs one operation: fn makes one attempt with the context it is
// given (bounded by the attempt's time-out and the operation's budget)
// and says what a definite answer said; its result, when it has one, it
// keeps itself (in a variable of the caller's closure), the last
// attempt's being the one that counts. fn's errors follow
// gateway.Gateway's contract; Do's are the package's (see the package
// doc). Each attempt goes through the breaker and is recorded as one
// Call, with the payment's reference from ctx (WithRef); a safe
// op's attempts whose outcome is unknown are retried after a back-off
// with full jitter, all within one budget (Options.Budget, or the
// caller's earlier deadline).
func (c *Caller) Do(ctx context.Context, op Op, fn func(ctx context.Context) (Answer, error)) error {
	name := op.Name
	if err := ctx.Err(); err != nil {
		return &gateway.TransientError{Op: name, Err: err}
	}
	budget := c.opts.Budget
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	if budget <= 0 {
		return &gateway.TransientError{Op: name, Err: context.DeadlineExceeded}
	}
	attemptTimeout := c.opts.AttemptTimeout
	if op.Timeout > 0 {
		attemptTimeout = min(op.Timeout, c.opts.Budget)
	}
	// Whose deadline is it? A caller's deadline earlier than what we would
	// give the operation on our own binds: when it passes, the caller gave
	// up, and the breaker does not blame the bank. A caller's deadline as
	// long as our own bound (give or take the moments between the caller
	// setting it and this line) is our bound in effect: when it passes,
	// the bank was too slow, and that counts. An unsafe operation's own
	// bound is its one attempt's.
	ownLimit := c.opts.Budget
	if !op.Safe {
		ownLimit = min(attemptTimeout, c.opts.Budget)
	}
	callerBinds := false
	if dl, ok := ctx.Deadline(); ok {
		callerBinds = time.Until(dl) < ownLimit-ownLimit/attributionSlackDiv
	}
	// The context deadline is relative (real timers); the budget arithmetic
	// below uses the injected clock so tests can drive it.
	deadline := c.opts.Now().Add(budget)
	var opCtx context.Context
	var cancel context.CancelFunc
	if _, ok := ctx.Deadline(); ok && budget < c.opts.Budget {
		// The caller's deadline binds: inherit it (no timer of our own), so
		// that when it passes it is the caller's context that ended.
		opCtx, cancel = context.WithCancel(ctx)
	} else {
		opCtx, cancel = context.WithTimeout(ctx, budget)
	}
	defer cancel()

	maxAttempts := 1
	if op.Safe {
		maxAttempts = c.opts.MaxAttempts
	}
	minWindow := attemptTimeout / 10
	for attempt := 1; ; attempt++ {
		timeout := attemptTimeout
		if deadline.Sub(c.opts.Now()) <= timeout {
			timeout = 0 // the budget's end comes first
		}
		err, how := c.attemptOnce(ctx, opCtx, name, attempt, timeout, callerBinds, fn)
		if how == definite || how == refused || how == final {
			return err
		}
		// Outcome unknown.
		if ctx.Err() != nil {
			return callerEnded(ctx, name, err)
		}
		if attempt >= maxAttempts {
			return err
		}
		var te *gateway.TransientError
		errors.As(err, &te)
		sleep := c.backoff(attempt-1, te.RetryAfter)
		if c.opts.Now().Add(sleep + minWindow).After(deadline) {
			c.opts.Logger.Warn("gateway retry skipped: budget exhausted",
				slog.String("gateway", c.name), slog.String("op", name), slog.Int("attempt", attempt),
				slog.Duration("backoff", sleep))
			return err
		}
		if serr := c.opts.Sleep(opCtx, sleep); serr != nil {
			if ctx.Err() != nil {
				return callerEnded(ctx, name, err)
			}
			return err
		}
		if deadline.Sub(c.opts.Now()) <= 0 {
			return err
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
func (c *Caller) backoff(n int, retryAfter time.Duration) time.Duration {
	ceil := c.opts.BaseBackoff
	for i := 0; i < n && ceil < c.opts.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.opts.MaxBackoff)
	r := c.opts.Rand()
	if !(r >= 0) { // also catches NaN
		r = 0
	}
	if r > 1 {
		r = 1
	}
	sleep := time.Duration(r * float64(ceil))
	if retryAfter > 0 {
		sleep = max(sleep, min(retryAfter, c.opts.MaxRetryAfter))
	}
	return sleep
}

// attemptOnce makes one attempt through the breaker and records it.
func (c *Caller) attemptOnce(ctx, opCtx context.Context, op string, attempt int, timeout time.Duration, callerBinds bool,
	fn func(context.Context) (Answer, error)) (err error, how attemptResult) {
	rec := Call{
		Ref:       RefFrom(ctx),
		Gateway:   c.name,
		Operation: op,
		Attempt:   attempt,
		StartedAt: c.opts.Now(),
	}
	recCtx := context.WithoutCancel(ctx)

	done, berr := c.cb.Allow()
	if berr != nil {
		err = &gateway.TransientError{Op: op, Err: fmt.Errorf("%w: circuit breaker %s (%s): %w",
			gateway.ErrUnavailable, c.name, breakerWord(berr), berr)}
		rec.Outcome = OutcomeBreakerOpen
		rec.Error = scrubError(err)
		c.opts.Recorder.Record(recCtx, rec)
		return err, refused
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
	ans, err := fn(attemptCtx)
	verdict, outcome, code, status := classify(ctx, attemptCtx, callerBinds, err, ans)
	reported = true
	done(verdict)

	rec.Duration = c.opts.Now().Sub(rec.StartedAt)
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
			// An untyped error breaks the driver contract (e.c. a local
			// encoding failure): outcome unknown, but retrying won't help.
			how = final
		}
	}
	rec.Error = scrubError(err)
	c.opts.Recorder.Record(recCtx, rec)
	return err, how
}

// classify decides what an attempt means for the breaker and the record.
func classify(ctx, attemptCtx context.Context, callerBinds bool, err error, ans Answer) (verdict error, outcome string, code, status int) {
	if err == nil {
		return nil, ans.Outcome, ans.Code, 0
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
