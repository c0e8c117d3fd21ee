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

// Undo takes back key's newest act: for a limit on what a request turns
// out to be, taken before the request (so that requests at once cannot
// all pass a check that counted none of them) and given back when it
// did not count.
func (w *Window) Undo(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.hits[key]
	switch {
	case len(h) > 1:
		w.hits[key] = h[:len(h)-1]
	case len(h) == 1:
		delete(w.hits, key)
	}
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
