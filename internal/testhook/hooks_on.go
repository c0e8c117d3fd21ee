//go:build kifpool_testhooks

package testhook

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Enabled reports whether this build has the test hooks (it has).
const Enabled = true

// At SIGKILLs the process when point is one of KIFPOOL_TEST_CRASH_AT's
// points: no deferred function, no shutdown, like a power cut.
func At(point string) {
	if !slices.Contains(strings.Split(os.Getenv(EnvCrashAt), ","), point) {
		return
	}
	fmt.Fprintf(os.Stderr, "testhook: SIGKILL at %s\n", point)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {} // the signal is on its way
}

// Clock returns base moved by KIFPOOL_TEST_CLOCK_SKEW (a Go duration such
// as 10m or -10m), or base when it is unset.
func Clock(base func() time.Time) (func() time.Time, error) {
	v := os.Getenv(EnvClockSkew)
	if v == "" {
		return base, nil
	}
	skew, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvClockSkew, err)
	}
	return func() time.Time { return base().Add(skew) }, nil
}
