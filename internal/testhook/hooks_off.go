//go:build !kifpool_testhooks

package testhook

import "time"

// Enabled reports whether this build has the test hooks (it has not).
const Enabled = false

// At does nothing in a normal build.
func At(string) {}

// Clock returns base: a normal build has no clock skew.
func Clock(base func() time.Time) (func() time.Time, error) { return base, nil }
