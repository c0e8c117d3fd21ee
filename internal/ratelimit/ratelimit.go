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

	// pendingMax bounds each key's open reservations (0: none taken).
	pendingMax int
	// pendingCounts: open reservations count against Max as acts do
	// (CountPending).
	pendingCounts bool

	mu      sync.Mutex
	hits    map[string][]time.Time // per key, oldest first
	pending map[string]int         // per key, open reservations
	// sweepAt is how many keys trigger the next sweep: twice those the
	// last one kept (at least minSweep), so that with many keys live a
	// request does not walk them all each time (amortised O(1)).
	sweepAt int
}

// minSweep is the fewest keys a sweep waits for.
const minSweep = 4096

// New returns a window allowing max acts per key in any span of per;
// now is the clock (time.Now when nil).
func New(max int, per time.Duration, now func() time.Time) *Window {
	if now == nil {
		now = time.Now
	}
	return &Window{max: max, per: per, now: now, hits: map[string][]time.Time{}, pending: map[string]int{}, sweepAt: minSweep}
}

// LimitPending lets Reserve hold at most n open reservations per key, and
// returns w.
func (w *Window) LimitPending(n int) *Window {
	w.pendingMax = n
	return w
}

// CountPending makes Reserve count each key's open reservations against
// Max as if they were acts, and returns w: for an allowance whose
// reservations are mostly counted in the end (transfers made), so that
// requests at once never pass more than Max in a window. Without it, at
// most LimitPending beyond Max pass in one burst (fit for an allowance
// whose reservations are mostly given back).
func (w *Window) CountPending() *Window {
	w.pendingCounts = true
	return w
}

// Reservation is a place Reserve took for a request whose act may count;
// exactly one of Count and Release ends it.
type Reservation struct {
	w   *Window
	key string
}

// Reserve takes a place for a request whose act counts only once it is
// known (a transfer to an address that turns out to have no account):
// while the key's counted acts are below Max and fewer than LimitPending
// of its reservations are open. Requests at once cannot all pass a check
// that counted none of them: at most LimitPending are open, so at most
// that many acts beyond Max are counted in one burst. Refused, it says how
// long to wait: until the oldest act leaves the window when the allowance
// is spent, a second when only the open reservations are in the way.
func (w *Window) Reserve(key string) (*Reservation, time.Duration, bool) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.liveHits(key, now)
	switch {
	case len(h) >= w.max:
		return nil, h[0].Add(w.per).Sub(now), false
	case w.pending[key] >= w.pendingMax, w.pendingCounts && len(h)+w.pending[key] >= w.max:
		return nil, time.Second, false
	}
	w.pending[key]++
	return &Reservation{w: w, key: key}, 0, true
}

// Count ends the reservation with its act counted.
func (r *Reservation) Count() {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	r.w.release(r.key)
	now := r.w.now()
	r.w.hits[r.key] = append(r.w.hits[r.key], now)
	r.w.maybeSweep(now)
}

// Release ends the reservation with nothing counted.
func (r *Reservation) Release() {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	r.w.release(r.key)
}

func (w *Window) release(key string) {
	if w.pending[key] <= 1 {
		delete(w.pending, key)
		return
	}
	w.pending[key]--
}

// Max is the number of acts allowed per window.
func (w *Window) Max() int { return w.max }

// Spent reports whether key's allowance is spent, counting nothing, and
// if so how long until the oldest act leaves the window: for a check that
// comes before the act is known (an API token's lookup, counted with Take
// only when it fails).
func (w *Window) Spent(key string) (bool, time.Duration) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.liveHits(key, now)
	if len(h) >= w.max {
		return true, h[0].Add(w.per).Sub(now)
	}
	return false, 0
}

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
	w.maybeSweep(now)
	return true, 0
}

// liveHits is key's acts still in the window at now, kept as key's
// acts, or key forgotten when none is (w.mu held).
func (w *Window) liveHits(key string, now time.Time) []time.Time {
	h := w.live(w.hits[key], now)
	if len(h) > 0 {
		w.hits[key] = h
	} else {
		delete(w.hits, key)
	}
	return h
}

// live drops the acts older than the window.
func (w *Window) live(h []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(h) && !h[i].After(now.Add(-w.per)) {
		i++
	}
	return h[i:]
}

// maybeSweep sweeps once the keys reach sweepAt, and sets the next mark
// at twice the keys it kept.
func (w *Window) maybeSweep(now time.Time) {
	if len(w.hits) <= w.sweepAt {
		return
	}
	w.sweep(now)
	w.sweepAt = max(minSweep, 2*len(w.hits))
}

// sweep forgets keys without acts in the window (memory stays bounded by
// twice the keys active within one window).
func (w *Window) sweep(now time.Time) {
	for k, h := range w.hits {
		if len(w.live(h, now)) == 0 {
			delete(w.hits, k)
		}
	}
}
