package integrity_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/integrity"
)

// A reversing top-up is judged against the longest reverse window of any
// gateway: none may be longer, or the check would report healthy
// reversing payments as past their deadline.
func TestReverseWindowMaxCoversEveryGateway(t *testing.T) {
	seen := 0
	for _, d := range drivers.All() {
		w := d.Capabilities.ReverseWindow
		if w.Kind != gateway.WindowWithin {
			continue
		}
		seen++
		if w.Within > integrity.ReverseWindowMax {
			t.Errorf("%s reverses within %s, past integrity.ReverseWindowMax (%s)", d.Name, w.Within, integrity.ReverseWindowMax)
		}
	}
	if seen == 0 {
		t.Fatal("no gateway has a reverse window: the test checks nothing")
	}
}
