//go:build !kifpool_testhooks

package testhook

import (
	"testing"
	"time"
)

// A normal build ignores the test hooks' environment.
func TestNormalBuildHasNoHooks(t *testing.T) {
	t.Setenv(EnvCrashAt, AfterVerify)
	t.Setenv(EnvClockSkew, "10m")
	At(AfterVerify) // still alive
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now, err := Clock(func() time.Time { return fixed })
	if err != nil || !now().Equal(fixed) || Enabled {
		t.Errorf("clock %s, %v, enabled %v: want the base clock unchanged", now(), err, Enabled)
	}
}
