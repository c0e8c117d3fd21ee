// Package topuptest is the top-up lifecycle's test support, shared by the
// tests of package topup and of every layer above it: one scriptable fake
// gateway and one controllable clock; the invariants of ARCHITECTURE §2
// checked over a whole database (CheckInvariants, CheckNoneOpenPast);
// ForceStatus, which takes an edge of the transition table as the state
// machine would; and Seed, top-ups of every status written straight into
// the table for the reads' tests. It imports the top-up layer and what
// lies below it, never the web app (ARCHITECTURE §1).
package topuptest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
)

// VerifyFunc scripts a verify answer; n counts verifies from 1.
type VerifyFunc func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error)

// InquireFunc scripts an inquiry answer.
type InquireFunc func(authority string) (gateway.InquiryResult, error)

// Gateway implements gateway.Gateway, its breaker (Ops.Down) open while
// Open is set.
// Request hands out Zarinpal-shaped authorities; Verify and Inquire answer
// from scripts, by default "paid" with a reference per authority; every
// call is counted, in all and per authority. Set the exported fields
// through Set while the gateway is in use.
type Gateway struct {
	mu           sync.Mutex
	RequestDelay time.Duration
	// RequestGate, when set, holds each request until it is closed (or
	// the call's context ends): a bank as slow as the test needs.
	RequestGate chan struct{}
	RequestErr  error
	// AnswerLost: the bank creates the transaction, but its answer to
	// request never reaches us (a time-out).
	AnswerLost  bool
	VerifyDelay time.Duration // before each verify answer (the context can cut it)
	VerifyFn    VerifyFunc    // nil: paid (or unknown while Unknown is set)
	InquireFn   InquireFunc   // nil: PAID
	Unverified  []gateway.Unverified

	// GatewayName is its name ("" : "fake"); set it before use.
	GatewayName string

	// Unknown makes the default verify answer a transient error; Open
	// reports an open breaker.
	Unknown atomic.Bool
	Open    atomic.Bool

	requests, verifies, inquiries int
	RequestInputs                 []gateway.RequestInput
	VerifyInputs                  []gateway.VerifyInput
	Authorities                   []string
	refs                          map[string]int64
	perAuthority                  map[string]int
}

// NewGateway returns an empty scripted gateway.
func NewGateway() *Gateway {
	return &Gateway{refs: map[string]int64{}, perAuthority: map[string]int{}}
}

// Set changes the script under the gateway's lock.
func (g *Gateway) Set(fn func(g *Gateway)) { g.mu.Lock(); defer g.mu.Unlock(); fn(g) }

// Counts returns how many requests, verifies and inquiries were made.
func (g *Gateway) Counts() (requests, verifies, inquiries int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests, g.verifies, g.inquiries
}

// VerifyCounts returns the verifies per authority and in all.
func (g *Gateway) VerifyCounts() (map[string]int, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.perAuthority))
	for a, n := range g.perAuthority {
		out[a] = n
	}
	return out, g.verifies
}

// LastAuthority is the authority the last request handed out.
func (g *Gateway) LastAuthority() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Authorities[len(g.Authorities)-1]
}

// Name implements gateway.Gateway.
func (g *Gateway) Name() string {
	if g.GatewayName != "" {
		return g.GatewayName
	}
	return "fake"
}

// Ops implements gateway.Gateway: none of the optional operations, and
// the breaker open while Open is set.
func (g *Gateway) Ops() gateway.Ops { return gateway.Ops{Down: g.Open.Load} }

// PayURL implements gateway.Gateway.
func (g *Gateway) PayURL(authority string) string {
	return "https://bank.test/pg/StartPay/" + authority
}

// Request implements gateway.Gateway.
func (g *Gateway) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	g.mu.Lock()
	g.requests++
	g.RequestInputs = append(g.RequestInputs, in)
	delay, err, gate := g.RequestDelay, g.RequestErr, g.RequestGate
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return gateway.RequestResult{}, &gateway.TransientError{Op: "request", Err: ctx.Err()}
		}
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return gateway.RequestResult{}, &gateway.TransientError{Op: "request", Err: ctx.Err()}
		}
	}
	if err != nil {
		return gateway.RequestResult{}, err
	}
	a := NewAuthority()
	g.mu.Lock()
	g.Authorities = append(g.Authorities, a)
	g.refs[a] = 900_000 + int64(len(g.Authorities))
	lost := g.AnswerLost
	g.mu.Unlock()
	if lost {
		return gateway.RequestResult{}, &gateway.TransientError{Op: "request", Err: context.DeadlineExceeded}
	}
	return gateway.RequestResult{Authority: a, Code: 100}, nil
}

// Verify implements gateway.Gateway.
func (g *Gateway) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	g.mu.Lock()
	g.verifies++
	g.perAuthority[in.Authority]++
	n, fn, delay, ref := g.verifies, g.VerifyFn, g.VerifyDelay, g.refs[in.Authority]
	g.VerifyInputs = append(g.VerifyInputs, in)
	g.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return gateway.VerifyResult{}, &gateway.TransientError{Op: "verify", Err: ctx.Err()}
		}
	}
	if fn != nil {
		return fn(n, in)
	}
	if g.Unknown.Load() {
		return gateway.VerifyResult{}, Transient("verify")
	}
	return Paid(ref)(n, in)
}

// Inquire implements gateway.Gateway.
func (g *Gateway) Inquire(ctx context.Context, authority string) (gateway.InquiryResult, error) {
	g.mu.Lock()
	g.inquiries++
	fn := g.InquireFn
	g.mu.Unlock()
	if fn == nil {
		return gateway.InquiryResult{Code: 100, Status: gateway.InquiryPaid}, nil
	}
	return fn(authority)
}

// ListUnverified implements gateway.Gateway.
func (g *Gateway) ListUnverified(ctx context.Context) ([]gateway.Unverified, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]gateway.Unverified(nil), g.Unverified...), nil
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewAuthority returns a random Zarinpal-shaped authority.
func NewAuthority() string {
	b := make([]byte, 35)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return "S" + string(b)
}

// Card is the masked card the scripted paid answers carry.
const Card = "603799******1234"

// Paid answers 100 with the reference, the amount verify was asked with
// verified.
func Paid(ref int64) VerifyFunc {
	return func(_ int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
		return gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, RefID: ref, CardPANMasked: Card, AmountRials: in.AmountRials}, nil
	}
}

// PaidAmount answers 100 with the reference and the bank having verified
// another amount than asked (a gateway reporting what was paid).
func PaidAmount(ref, verifiedRials int64) VerifyFunc {
	return func(int, gateway.VerifyInput) (gateway.VerifyResult, error) {
		return gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, RefID: ref, CardPANMasked: Card, AmountRials: verifiedRials}, nil
	}
}

// AlreadyVerified answers 101 with the reference.
func AlreadyVerified(ref int64) VerifyFunc {
	return func(_ int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
		return gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 101, RefID: ref, CardPANMasked: Card, AmountRials: in.AmountRials}, nil
	}
}

// VerifyAnswer answers a definite outcome with a code.
func VerifyAnswer(outcome gateway.VerifyOutcome, code int) VerifyFunc {
	return func(int, gateway.VerifyInput) (gateway.VerifyResult, error) {
		return gateway.VerifyResult{Outcome: outcome, Code: code}, nil
	}
}

// VerifyErr answers with an error.
func VerifyErr(err error) VerifyFunc {
	return func(int, gateway.VerifyInput) (gateway.VerifyResult, error) { return gateway.VerifyResult{}, err }
}

// Inquiry answers a state.
func Inquiry(st gateway.InquiryStatus) InquireFunc {
	return func(string) (gateway.InquiryResult, error) { return gateway.InquiryResult{Code: 100, Status: st}, nil }
}

// Transient is a time-out of op: the outcome is unknown.
func Transient(op string) error {
	return &gateway.TransientError{Op: op, HTTPStatus: 504, Err: errors.New("gateway time-out")}
}

// Clock is a controllable clock: real time moved by an offset (Advance),
// or, once frozen, a fixed instant that moves only when told.
type Clock struct {
	mu     sync.Mutex
	off    time.Duration
	frozen *time.Time
}

// NewClock returns a clock at real time.
func NewClock() *Clock { return &Clock{} }

// NewFrozenClock returns a clock stopped at the current instant.
func NewFrozenClock() *Clock {
	t := time.Now().UTC().Truncate(time.Millisecond)
	return &Clock{frozen: &t}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen != nil {
		return c.frozen.Add(c.off)
	}
	return time.Now().Add(c.off)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// String describes the clock (for test logs).
func (c *Clock) String() string { return fmt.Sprintf("clock(offset %v)", c.off) }
