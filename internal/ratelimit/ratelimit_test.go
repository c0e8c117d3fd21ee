package ratelimit

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := New(2, time.Minute, func() time.Time { return now })
	for i := 0; i < 2; i++ {
		if ok, _ := w.Take("u1"); !ok {
			t.Fatalf("act %d refused", i+1)
		}
		now = now.Add(10 * time.Second)
	}
	ok, wait := w.Take("u1")
	if ok || wait != 40*time.Second {
		t.Fatalf("third act: ok=%v wait=%s, want refused for 40s", ok, wait)
	}
	if ok, _ := w.Take("u2"); !ok {
		t.Fatal("another key shares the allowance")
	}
	now = now.Add(40 * time.Second) // the first act leaves the window
	if ok, _ := w.Take("u1"); !ok {
		t.Fatal("refused after the oldest act left the window")
	}
	if ok, _ := w.Take("u1"); ok {
		t.Fatal("a refused act was counted as none, but the window is full again")
	}
}

func TestSweepForgetsIdleKeys(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := New(1, time.Minute, func() time.Time { return now })
	for i := 0; i < 5000; i++ {
		w.Take(string(rune('a'+i%26)) + time.Duration(i).String())
	}
	now = now.Add(2 * time.Minute)
	w.Take("late-1")
	w.Take("late-2")
	w.mu.Lock()
	n, at := len(w.hits), w.sweepAt
	w.mu.Unlock()
	// 5,000 keys live at once: the sweep at 4,097 kept them all, and the
	// next waits for twice as many (a request does not walk every live
	// key each time); memory stays within twice the live keys.
	if n > 2*5000+2 || at != 2*(minSweep+1) {
		t.Fatalf("%d keys kept, next sweep at %d", n, at)
	}
	w.sweep(now)
	if len(w.hits) != 2 {
		t.Fatalf("%d keys after a sweep, want the 2 live ones", len(w.hits))
	}
}

// Reserve: a place per request while the allowance lasts and fewer than
// LimitPending are open; Count records the act, Release nothing; a key
// with nothing counted or open is forgotten.
func TestReserve(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := New(2, time.Hour, func() time.Time { return now }).LimitPending(3)
	var open []*Reservation
	for i := range 3 {
		r, _, ok := w.Reserve("u1")
		if !ok {
			t.Fatalf("reservation %d refused", i+1)
		}
		open = append(open, r)
	}
	if _, wait, ok := w.Reserve("u1"); ok || wait != time.Second {
		t.Fatalf("a fourth open reservation: ok=%v wait=%s, want refused for a second", ok, wait)
	}
	if _, _, ok := w.Reserve("u2"); !ok {
		t.Fatal("another key shares the open reservations")
	}
	open[0].Release()
	open[1].Count()
	now = now.Add(10 * time.Minute)
	open[2].Count()
	if _, wait, ok := w.Reserve("u1"); ok || wait != 50*time.Minute {
		t.Fatalf("allowance spent: ok=%v wait=%s, want refused for 50m", ok, wait)
	}
	now = now.Add(2 * time.Hour)
	r, _, ok := w.Reserve("u1")
	if !ok {
		t.Fatal("refused once every act left the window")
	}
	r.Release()
	w.mu.Lock()
	n, p := len(w.hits), len(w.pending)
	w.mu.Unlock()
	if n != 0 || p != 1 { // u2's reservation is still open
		t.Fatalf("%d keys with acts, %d with open reservations kept", n, p)
	}
}

// With CountPending, open reservations count against Max as acts do: an
// act counted and two open take all three places, where without it two
// more could open; a place given back frees one.
func TestReserveCountingPending(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	w := New(3, time.Minute, func() time.Time { return now }).LimitPending(64).CountPending()
	first, _, _ := w.Reserve("u1")
	first.Count()
	a, _, okA := w.Reserve("u1")
	_, _, okB := w.Reserve("u1")
	if !okA || !okB {
		t.Fatal("the second and third places refused")
	}
	if _, wait, ok := w.Reserve("u1"); ok || wait != time.Second {
		t.Fatalf("a fourth while two are open and one counted: ok=%v wait=%s, want refused for a second", ok, wait)
	}
	a.Release()
	if _, _, ok := w.Reserve("u1"); !ok {
		t.Fatal("a place given back is not free again")
	}
	loose := New(3, time.Minute, func() time.Time { return now }).LimitPending(64)
	done, _, _ := loose.Reserve("u1")
	done.Count()
	for i := range 3 {
		if _, _, ok := loose.Reserve("u1"); !ok {
			t.Fatalf("without CountPending, open place %d refused", i+1)
		}
	}
}

// Counted reservations of keys never seen again are swept as Take's are:
// the map stays bounded by the keys active within one window.
func TestCountSweepsIdleKeys(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := New(1, time.Minute, func() time.Time { return now }).LimitPending(1)
	for i := range 5000 {
		if i == 4000 {
			now = now.Add(2 * time.Minute) // the first 4,000 leave the window
		}
		r, _, ok := w.Reserve(time.Duration(i).String())
		if !ok {
			t.Fatalf("key %d refused", i)
		}
		r.Count()
	}
	if n := len(w.hits); n > 4097 {
		t.Fatalf("%d keys kept", n)
	}
	// With few live keys left, the next sweep comes at the floor again.
	if w.sweepAt != minSweep {
		t.Fatalf("next sweep at %d, want %d", w.sweepAt, minSweep)
	}
}

// Spent says whether a key's allowance is spent without counting: a
// check before the act is known (an API token's lookup), counted with
// Take only when it fails.
func TestSpentCountsNothing(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	w := New(2, time.Minute, func() time.Time { return now })
	for range 5 {
		if spent, _ := w.Spent("a"); spent {
			t.Fatal("spent before any act")
		}
	}
	w.Take("a")
	w.Take("a")
	spent, wait := w.Spent("a")
	if !spent || wait != time.Minute {
		t.Fatalf("after two acts: spent %v, wait %s, want true and a minute", spent, wait)
	}
	if spent, _ := w.Spent("b"); spent {
		t.Fatal("another key spent")
	}
	now = now.Add(time.Minute)
	if spent, _ := w.Spent("a"); spent {
		t.Fatal("still spent once the window has passed")
	}
}
