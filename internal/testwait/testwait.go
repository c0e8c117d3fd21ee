// Package testwait is the tests' one way to wait for something another
// goroutine or process does: poll a condition until it holds, within a
// bound the caller states. Waiting for time itself to pass (a pacing
// window, a countdown, a deadline) is not polling: those tests advance a
// fake clock instead (server.Options.Now, topuptest.Clock).
package testwait

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The polling interval starts at minInterval and doubles up to
// maxInterval: a condition that holds soon is seen soon, and a long wait
// does not hammer what it polls (an HTTP page, a database).
const (
	minInterval = 5 * time.Millisecond
	maxInterval = 100 * time.Millisecond
)

// Eventually polls cond until it returns true, and fails the test when
// bound passes first, saying what it waited for. cond runs on the calling
// goroutine, so it may call t.Fatal itself (a process that ended, a query
// that failed).
func Eventually(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Until(bound, what, cond); err != nil {
		t.Fatal(err)
	}
}

// Until is Eventually for code without a test at hand (a goroutine, a
// helper that returns an error): nil once cond holds, an error naming
// what and the bound when bound passes first. cond is asked one last time
// at the bound, so a slow poll never loses a condition that holds.
func Until(bound time.Duration, what string, cond func() bool) error {
	return UntilContext(context.Background(), bound, what, cond)
}

// UntilContext is Until that also gives up when ctx ends (a test's
// overall deadline, a run being stopped), returning ctx's error.
func UntilContext(ctx context.Context, bound time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(bound)
	interval := minInterval
	for {
		if cond() {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("timed out after %v waiting for %s", bound, what)
		}
		// real time: polling another goroutine or process is this package's job
		wait := time.NewTimer(min(interval, left))
		select {
		case <-ctx.Done():
			wait.Stop()
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-wait.C:
		}
		interval = min(2*interval, maxInterval)
	}
}
