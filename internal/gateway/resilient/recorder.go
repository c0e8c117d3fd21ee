package resilient

import (
	"context"
	"regexp"
	"sync"
	"time"
	"unicode/utf8"
)

// Outcome values of a recorded Call.
const (
	OutcomeOK                = "ok"                  // Request / Inquire / ListUnverified answered
	OutcomePaid              = "paid"                // Verify: gateway.VerifyPaid
	OutcomeAlreadyVerified   = "already_verified"    // Verify: gateway.VerifyAlreadyVerified
	OutcomeNotPaid           = "not_paid"            // Verify: gateway.VerifyNotPaid
	OutcomeAmountMismatch    = "amount_mismatch"     // Verify: gateway.VerifyAmountMismatch
	OutcomeInvalid           = "invalid"             // Verify: gateway.VerifyInvalid
	OutcomeRejected          = "rejected"            // *gateway.RejectedError
	OutcomeTransient         = "transient"           // outcome unknown (network, 408/429/5xx, -52, ...)
	OutcomeRefusedForPayment = "refused_for_payment" // outcome unknown: the bank refused this payment's call for now (-12); not a breaker failure
	OutcomeTimeout           = "timeout"             // the attempt ran out of time
	OutcomeBreakerOpen       = "breaker_open"        // refused by the breaker; the bank was not called
	OutcomeCanceled          = "canceled"            // the caller's context was canceled
)

// Operation names of Gateway's operations, in Call.Operation and in the
// errors this package makes (another Caller names its own in Op.Name).
const (
	OpRequest        = "request"
	OpVerify         = "verify"
	OpInquire        = "inquire" // also a sale's inquiry (gateway.Ops.InquireSale)
	OpListUnverified = "list_unverified"
	OpSettle         = "settle"
	OpReverse        = "reverse"
	OpRefund         = "refund"        // a card refund (gateway.Ops.Refund)
	OpRefundStatus   = "refund_status" // its status (gateway.Ops.RefundStatus)
)

// Call is one attempt at an operation (or one refusal by the breaker).
type Call struct {
	Ref         string // from the context (WithRef), "" if none
	Gateway     string // the Caller's name (a gateway's inner.Name())
	Operation   string // Op.Name: OpRequest, OpVerify, ... for a Gateway
	Attempt     int    // 1-based within the operation
	StartedAt   time.Time
	Duration    time.Duration // 0 for breaker refusals
	HTTPStatus  int           // from a *gateway.TransientError, 0 otherwise
	GatewayCode int           // the gateway's code when known (results, rejections)
	Outcome     string        // one of the Outcome* constants
	Error       string        // scrubbed, at most MaxErrorLen bytes; "" on success
}

// MaxErrorLen caps Call.Error.
const MaxErrorLen = 300

// Recorder receives one Call per attempt. Record is called synchronously on
// the caller's goroutine, after the attempt, with a context that keeps the
// caller's values but is never canceled (context.WithoutCancel), so a
// recorder can still write after the caller gave up. It must be safe for
// concurrent use and should be quick.
type Recorder interface {
	Record(ctx context.Context, c Call)
}

// NopRecorder discards every Call.
type NopRecorder struct{}

// Record implements Recorder.
func (NopRecorder) Record(context.Context, Call) {}

// MemoryRecorder keeps every Call in memory (for tests and diagnostics).
type MemoryRecorder struct {
	mu    sync.Mutex
	calls []Call
}

// Record implements Recorder.
func (m *MemoryRecorder) Record(_ context.Context, c Call) {
	m.mu.Lock()
	m.calls = append(m.calls, c)
	m.mu.Unlock()
}

// Calls returns a copy of the recorded calls, oldest first.
func (m *MemoryRecorder) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Call(nil), m.calls...)
}

// Reset forgets the recorded calls.
func (m *MemoryRecorder) Reset() {
	m.mu.Lock()
	m.calls = nil
	m.mu.Unlock()
}

type refKey struct{}

// WithRef tags ctx with the reference of the item the calls are about (a top-up's public id), copied into every
// Call recorded for operations run with that context.
func WithRef(ctx context.Context, ref string) context.Context {
	return context.WithValue(ctx, refKey{}, ref)
}

// RefFrom returns the reference set by WithRef, or "".
func RefFrom(ctx context.Context) string {
	s, _ := ctx.Value(refKey{}).(string)
	return s
}

// panRun matches 13-19 digits, optionally grouped by single spaces or
// dashes, that stand alone: a card number shape.
var panRun = regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`)

// scrubError masks card-number-shaped digit runs and caps the length.
func scrubError(err error) string {
	if err == nil {
		return ""
	}
	s := panRun.ReplaceAllString(err.Error(), "[redacted]")
	if len(s) <= MaxErrorLen {
		return s
	}
	cut := MaxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
