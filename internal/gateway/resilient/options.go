package resilient

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Options configure a Caller, and a resilient Gateway's. The time-outs
// and the breaker's thresholds have no defaults here: they are the
// operator's settings (GATEWAY_* and BREAKER_* in internal/config, the
// one place their defaults are written) and NewCaller and New refuse to
// run without them. The other zero values take the defaults below.
type Options struct {
	// AttemptTimeout bounds one call to the bank (required).
	AttemptTimeout time.Duration
	// Budget bounds a whole operation, retries and back-off included
	// (required). The caller's deadline wins when it is earlier.
	Budget time.Duration
	// RequestTimeout bounds a Gateway's request call, which is one
	// attempt, never retried, in place of AttemptTimeout (required by
	// New, unused by NewCaller; cut to Budget): a bank that takes 4 s to
	// hand out an authority must not fail every top-up at the 3 s meant
	// for one of several verify attempts.
	RequestTimeout time.Duration
	// MaxAttempts bounds the attempts of a safe operation (default 3). An
	// unsafe one (a Gateway's request) is never retried whatever this says.
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the exponential back-off with full
	// jitter: sleep = rand * min(MaxBackoff, BaseBackoff*2^n)
	// (defaults 200ms and 2s).
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// MaxRetryAfter caps a server's Retry-After (default 5s).
	MaxRetryAfter time.Duration

	Breaker BreakerOptions

	// Now is the clock used for budgets and timestamps (default time.Now).
	// The breaker itself always uses the real clock.
	Now func() time.Time
	// Sleep waits d or until ctx ends, returning ctx.Err() early
	// (default: a real timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter (default math/rand/v2).
	// It must be safe for concurrent use.
	Rand func() float64
	// Recorder receives one Call per attempt (default NopRecorder).
	Recorder Recorder
	// Logger logs breaker transitions and retries skipped for lack of
	// budget (default slog.Default()). Attempts go to the Recorder.
	Logger *slog.Logger
}

// BreakerOptions configure the circuit breaker (one per wrapped gateway).
type BreakerOptions struct {
	// Window is the rolling window the failure ratio is computed over
	// (required; in 10 buckets so old results expire gradually).
	Window time.Duration
	// MinRequests is the number of completed, counted attempts in the window
	// below which the breaker never trips (required).
	MinRequests uint32
	// FailureRatio trips the breaker when failures/completed >= it
	// (required, in (0, 1]).
	FailureRatio float64
	// OpenTimeout is how long the breaker stays open before letting a probe
	// through (required).
	OpenTimeout time.Duration
	// HalfOpenProbes is how many probes may run at once when half-open; that
	// many consecutive successes close it (default 1).
	HalfOpenProbes uint32
}

// Defaults.
const (
	DefaultMaxAttempts   = 3
	DefaultBaseBackoff   = 200 * time.Millisecond
	DefaultMaxBackoff    = 2 * time.Second
	DefaultMaxRetryAfter = 5 * time.Second
	windowBuckets        = 10
)

// missing names the required options that are not set; request: a
// Gateway's (RequestTimeout too).
func (o Options) missing(request bool) []string {
	var m []string
	for _, r := range []struct {
		name string
		ok   bool
	}{
		{"AttemptTimeout", o.AttemptTimeout > 0},
		{"Budget", o.Budget > 0},
		{"RequestTimeout", !request || o.RequestTimeout > 0},
		{"Breaker.Window", o.Breaker.Window > 0},
		{"Breaker.MinRequests", o.Breaker.MinRequests > 0},
		{"Breaker.FailureRatio", o.Breaker.FailureRatio > 0 && o.Breaker.FailureRatio <= 1},
		{"Breaker.OpenTimeout", o.Breaker.OpenTimeout > 0},
	} {
		if !r.ok {
			m = append(m, r.name)
		}
	}
	return m
}

func (o Options) withDefaults() Options {
	o.RequestTimeout = min(o.RequestTimeout, o.Budget)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = DefaultBaseBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.BaseBackoff {
		o.MaxBackoff = o.BaseBackoff
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	b := &o.Breaker
	if b.HalfOpenProbes == 0 {
		b.HalfOpenProbes = 1
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Recorder == nil {
		o.Recorder = NopRecorder{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
