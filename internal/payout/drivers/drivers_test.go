package drivers_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/payout/drivers"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
)

// TestEveryPayoutDriverIsComplete: every registry entry has every
// capability set, builds from its sandbox settings, has a unique
// lower-case name, and the sandbox bank speaks its protocol.
func TestEveryPayoutDriverIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range drivers.All() {
		if err := d.Check(); err != nil {
			t.Errorf("%v", err)
		}
		if seen[d.Name] || d.Name == drivers.Sandbox || d.Name == drivers.None || d.Name != strings.ToLower(d.Name) {
			t.Errorf("driver name %q", d.Name)
		}
		seen[d.Name] = true
		p, err := d.New(d.Sandbox.Settings("http://127.0.0.1:1/sandbank"), payout.Deps{})
		if err != nil || p.Name() != d.Name {
			t.Errorf("%s against the sandbox bank: %v", d.Name, err)
		}
		if !slices.Contains(payouts.Protocols(), d.Sandbox.Protocol) {
			t.Errorf("%s: the sandbox bank does not speak %q", d.Name, d.Sandbox.Protocol)
		}
		if got, ok := drivers.Lookup(d.Name); !ok || got.Name != d.Name {
			t.Errorf("Lookup(%s)", d.Name)
		}
	}
	if len(drivers.SandboxNames()) != len(drivers.All()) {
		t.Error("the sandbox offers every driver")
	}
	// At least one provider whose submit may be repeated, and one with the
	// ownership inquiry: the lifecycle's two ways are both exercised.
	idem, owner := false, false
	for _, d := range drivers.All() {
		idem = idem || d.Capabilities.IdempotentSubmit
		p, _ := d.New(d.Sandbox.Settings("http://127.0.0.1:1"), payout.Deps{})
		owner = owner || p.Ops().CheckOwner != nil
	}
	if !idem || !owner {
		t.Errorf("idempotent submit %v, ownership inquiry %v", idem, owner)
	}
}

func TestCheckFindsWhatIsMissing(t *testing.T) {
	full, _ := drivers.Lookup("jibit")
	for name, spoil := range map[string]func(d *payout.Driver){
		"name":      func(d *payout.Driver) { d.Label = "" },
		"new":       func(d *payout.Driver) { d.New = nil },
		"rails":     func(d *payout.Driver) { d.Capabilities.Rails = nil },
		"a rail":    func(d *payout.Driver) { d.Capabilities.Rails = append(d.Capabilities.Rails, "bitcoin") },
		"reconcile": func(d *payout.Driver) { d.Capabilities.Reconcile = 0 },
		"unit":      func(d *payout.Driver) { d.Capabilities.Unit = 0 },
		"minimum":   func(d *payout.Driver) { d.Capabilities.MinAmountRials = 0 },
		"sandbox":   func(d *payout.Driver) { d.Sandbox.Protocol = "" },
		"setting": func(d *payout.Driver) {
			d.Settings = append(d.Settings[:0:0], d.Settings...)
			d.Settings[0].Check = nil
		},
	} {
		d := full
		spoil(&d)
		if d.Check() == nil {
			t.Errorf("%s: Check passed", name)
		}
	}
	if full.Check() != nil {
		t.Fatal("spoiled the registry's own value")
	}
}
