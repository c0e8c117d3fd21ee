// Package drivers is the registry of gateway drivers: the one list the
// configuration (GATEWAY), the wiring (internal/server), the admin
// console's labels and the built-in sandbox bank consult.
//
// Adding a gateway is its own package under internal/gateway (its client,
// its callback parser, its capability record: a gateway.Driver), one line
// in All, and its protocol in the sandbox bank (internal/sandbank).
package drivers

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/mellat"
	"github.com/kifpool/kifpool/internal/gateway/sep"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
	"github.com/kifpool/kifpool/internal/gateway/zibal"
)

// All lists every driver, in the order people see them.
func All() []gateway.Driver {
	return []gateway.Driver{
		zarinpal.Driver(),
		zibal.Driver(),
		sep.Driver(),
		mellat.Driver(),
	}
}

// Sandbox is the GATEWAYS value that runs the built-in sandbox bank,
// imitating every driver that has sandbox settings (SandboxNames).
const Sandbox = "sandbox"

// SandboxDriver is the first driver GATEWAYS=sandbox offers.
const SandboxDriver = "zarinpal"

// SandboxNames are the drivers GATEWAYS=sandbox offers, in order: those
// the built-in sandbox bank can stand in for (Driver.Sandbox.Settings).
func SandboxNames() []string {
	var out []string
	for _, d := range All() {
		if d.Sandbox.Settings != nil {
			out = append(out, d.Name)
		}
	}
	return out
}

// Lookup finds a driver by its name.
func Lookup(name string) (gateway.Driver, bool) {
	for _, d := range All() {
		if d.Name == name {
			return d, true
		}
	}
	return gateway.Driver{}, false
}

// Names are the drivers' names (the GATEWAY values besides Sandbox).
func Names() []string {
	var out []string
	for _, d := range All() {
		out = append(out, d.Name)
	}
	return out
}

// Labeler names a stored gateway for people: "sandbox" for payments of
// the built-in sandbox bank (they store the driver's name: the bank
// speaks its protocol), the driver's label for a registered driver, the
// stored name itself for anything else (a gateway since removed).
func Labeler(sandbox bool) func(stored string) string {
	return func(stored string) string {
		if d, ok := Lookup(stored); ok {
			if sandbox && d.Sandbox.Settings != nil {
				return d.Label + " (" + Sandbox + ")"
			}
			return d.Label
		}
		return stored
	}
}

// GatewayValues are the accepted GATEWAY values.
func GatewayValues() []string { return slices.Concat([]string{Sandbox}, Names()) }

// Supported reports what of a driver's capabilities the payment flow
// cannot serve, so that such a gateway fails at start instead of failing
// payers. The flow serves both redirects (a GET redirect to PayURL, or a
// page auto-posting the form of gateway.Ops.PayForm) and verify with the
// callback's receipt (kept on the payment); a POST-form driver must set
// Ops.PayForm and a settling one Ops.Settle (checked by the registry's
// tests).
func Supported(d gateway.Driver) error {
	var errs []error
	if d.Capabilities.Redirect != gateway.RedirectGET && d.Capabilities.Redirect != gateway.RedirectPOSTForm {
		errs = append(errs, fmt.Errorf("gateway %s: unknown redirect", d.Name))
	}
	return errors.Join(errs...)
}
