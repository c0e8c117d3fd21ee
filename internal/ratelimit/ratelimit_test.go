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
	n := len(w.hits)
	w.mu.Unlock()
	if n > 4097 {
		t.Fatalf("%d keys kept", n)
	}
	w.sweep(now)
	if len(w.hits) != 2 {
		t.Fatalf("%d keys after a sweep, want the 2 live ones", len(w.hits))
	}
}

// Undo gives back the newest act: a key at its limit has room again, and
// a key whose only act is undone is forgotten.
func TestUndo(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := New(2, time.Hour, func() time.Time { return now })
	w.Take("u1")
	w.Take("u1")
	if ok, _ := w.Take("u1"); ok {
		t.Fatal("a third act within the window")
	}
	w.Undo("u1")
	if ok, _ := w.Take("u1"); !ok {
		t.Fatal("no room after an undo")
	}
	w.Undo("u1")
	w.Undo("u1")
	w.Undo("u1") // nothing left: no-op
	w.Undo("never")
	if len(w.hits) != 0 {
		t.Fatalf("%d keys kept after every act was undone", len(w.hits))
	}
}
