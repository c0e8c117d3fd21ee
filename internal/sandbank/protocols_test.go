package sandbank_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/sandbank"
)

// TestSpeaksEveryDriversSandboxProtocol: a driver that declares sandbox
// settings names a protocol this bank imitates (GATEWAY=sandbox would
// refuse to start otherwise).
func TestSpeaksEveryDriversSandboxProtocol(t *testing.T) {
	for _, d := range drivers.All() {
		if d.Sandbox.Settings == nil {
			continue
		}
		if !sandbank.Speaks(d.Sandbox.Protocol) {
			t.Errorf("driver %s: the sandbox bank does not speak %q (it speaks %v)", d.Name, d.Sandbox.Protocol, sandbank.Protocols())
		}
	}
	if sandbank.Speaks("") || sandbank.Speaks("nobank-v1") {
		t.Error("Speaks accepts a protocol it does not speak")
	}
}
