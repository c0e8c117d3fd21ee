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

// Allowed counts nothing: it says what Take would, keeps nothing for a
// key never counted, and forgets a key whose acts all left the window.
func TestAllowedCountsNothing(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := New(2, time.Hour, func() time.Time { return now })
	for range 5 {
		if ok, _ := w.Allowed("u1"); !ok {
			t.Fatal("a key never counted is not allowed")
		}
	}
	if len(w.hits) != 0 {
		t.Fatalf("%d keys kept by Allowed alone", len(w.hits))
	}
	w.Take("u1")
	now = now.Add(10 * time.Minute)
	w.Take("u1")
	if ok, wait := w.Allowed("u1"); ok || wait != 50*time.Minute {
		t.Fatalf("full: ok=%v wait=%s, want refused for 50m", ok, wait)
	}
	now = now.Add(50 * time.Minute)
	if ok, _ := w.Allowed("u1"); !ok {
		t.Fatal("refused after the oldest act left the window")
	}
	now = now.Add(time.Hour)
	if ok, _ := w.Allowed("u1"); !ok || len(w.hits) != 0 {
		t.Fatalf("ok=%v, %d keys kept once every act left", ok, len(w.hits))
	}
}
