// Package drivers is the one list of payout providers Kifpool can use:
// the configuration (PAYOUTS), the wiring and the sandbox bank find a
// provider here by its name.
package drivers

import (
	"slices"

	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/payout/jibit"
	"github.com/kifpool/kifpool/internal/payout/zibal"
)

// Sandbox is the PAYOUTS value of the sandbox bank's payout provider.
const Sandbox = "sandbox"

// None is the PAYOUTS value that turns withdrawals off.
const None = "none"

// All lists every driver, in the order PAYOUTS=sandbox offers them: the
// one whose submit may be repeated first.
func All() []payout.Driver { return []payout.Driver{jibit.Driver(), zibal.Driver()} }

// Lookup finds a driver by name.
func Lookup(name string) (payout.Driver, bool) {
	for _, d := range All() {
		if d.Name == name {
			return d, true
		}
	}
	return payout.Driver{}, false
}

// Names lists the drivers' names.
func Names() []string {
	var out []string
	for _, d := range All() {
		out = append(out, d.Name)
	}
	return out
}

// SandboxNames are the providers PAYOUTS=sandbox offers (every driver,
// against the sandbox bank).
func SandboxNames() []string { return slices.Clone(Names()) }
