// Package testclock is the tests' adjustable clock: code under test takes
// its Now as its clock, and the test moves it with Add (tests advance
// time; they do not sleep). Safe for use from several goroutines.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time source that moves only when told to.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New is a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
