package gateway

import (
	"context"
	"fmt"
)

// Set is the gateways an instance talks to, in the operator's order
// (GATEWAYS): the first is the one offered first. A payment is always
// handled by the gateway it was started at, found by its stored name.
type Set []Gateway

// Get finds a gateway by the name payments store.
func (s Set) Get(name string) (Gateway, bool) {
	for _, g := range s {
		if g.Name() == name {
			return g, true
		}
	}
	return nil, false
}

// For is the gateway of a stored name, or, when the instance no longer
// talks to it (removed from GATEWAYS), a stand-in that answers every call
// with ErrUnavailable: the outcome of such a payment stays unknown, never
// failed, until the gateway is configured again or a person looks.
func (s Set) For(name string) Gateway {
	if g, ok := s.Get(name); ok {
		return g
	}
	return absent(name)
}

// Names are the gateways' names, in order.
func (s Set) Names() []string {
	out := make([]string, len(s))
	for i, g := range s {
		out[i] = g.Name()
	}
	return out
}

// absent is a gateway this instance does not talk to.
type absent string

func (a absent) err(op string) error {
	return fmt.Errorf("%s: gateway %q is not configured (GATEWAYS): %w", op, string(a), ErrUnavailable)
}

func (a absent) Name() string         { return string(a) }
func (a absent) PayURL(string) string { return "" }

// Ops: none, and always down.
func (a absent) Ops() Ops { return Ops{Down: func() bool { return true }} }
func (a absent) Request(context.Context, RequestInput) (RequestResult, error) {
	return RequestResult{}, a.err("request")
}
func (a absent) Verify(context.Context, VerifyInput) (VerifyResult, error) {
	return VerifyResult{}, a.err("verify")
}
func (a absent) Inquire(context.Context, string) (InquiryResult, error) {
	return InquiryResult{}, a.err("inquiry")
}
func (a absent) ListUnverified(context.Context) ([]Unverified, error) {
	return nil, a.err("unverified list")
}
