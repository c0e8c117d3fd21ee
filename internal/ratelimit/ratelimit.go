// Package ratelimit counts acts per key in a sliding window, in memory,
// for limits that several entry points share (a user's top-ups through
// the form and through the API count against one allowance).
package ratelimit

import (
	"sync"
	"time"
)

// Window allows at most Max acts per key in any span of Per.
type Window struct {
	max int
	per time.Duration
	now func() time.Time

	mu   sync.Mutex
	hits map[string][]time.Time // per key, oldest first, at most max
}

// New returns a window allowing max acts per key in any span of per;
// now is the clock (time.Now when nil).
func New(max int, per time.Duration, now func() time.Time) *Window {
	if now == nil {
		now = time.Now
	}
	return &Window{max: max, per: per, now: now, hits: map[string][]time.Time{}}
}

// Max is the number of acts allowed per window.
func (w *Window) Max() int { return w.max }

// Take counts one act for key if the key has allowance left and returns
// true; otherwise it counts nothing and returns false with how long until
// the oldest act leaves the window.
func (w *Window) Take(key string) (bool, time.Duration) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.live(w.hits[key], now)
	if len(h) >= w.max {
		w.hits[key] = h
		return false, h[0].Add(w.per).Sub(now)
	}
	w.hits[key] = append(h, now)
	if len(w.hits) > 4096 {
		w.sweep(now)
	}
	return true, 0
}

// Allowed reports whether key has allowance left, counting nothing, and
// when it has none how long until the oldest act leaves the window: for
// a limit on what a request turns out to be (a transfer to an address
// with no account), checked before the request and taken after it.
func (w *Window) Allowed(key string) (bool, time.Duration) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	h, seen := w.hits[key]
	if !seen {
		return true, 0 // nothing kept for a key never counted
	}
	h = w.live(h, now)
	if len(h) == 0 {
		delete(w.hits, key)
		return true, 0
	}
	w.hits[key] = h
	if len(h) >= w.max {
		return false, h[0].Add(w.per).Sub(now)
	}
	return true, 0
}

// live drops the acts older than the window.
func (w *Window) live(h []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(h) && !h[i].After(now.Add(-w.per)) {
		i++
	}
	return h[i:]
}

// sweep forgets keys without acts in the window (memory stays bounded by
// the keys active within one window).
func (w *Window) sweep(now time.Time) {
	for k, h := range w.hits {
		if len(w.live(h, now)) == 0 {
			delete(w.hits, k)
		}
	}
}
