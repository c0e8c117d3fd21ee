package main

import "testing"

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line  string
		comm  string
		ticks int64
		ok    bool
	}{
		{"1234 (postgres) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 1 0 100 0 0", "postgres", 281, true},
		{"77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 0 0", "a (b) c", 11, true},
		{"9 (kifpool) S 1 9", "", 0, false},
		{"no parentheses here", "", 0, false},
		{"5 (x) S 1 5 5 0 -1 0 0 0 0 0 u 6 0 0", "", 0, false},
	} {
		comm, ticks, ok := parseStat(tc.line)
		if comm != tc.comm || ticks != tc.ticks || ok != tc.ok {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, %v", tc.line, comm, ticks, ok, tc.comm, tc.ticks, tc.ok)
		}
	}
}

func TestTickDelta(t *testing.T) {
	last := map[int]int64{1: 100, 2: 50, 3: 10}
	// 1 grew by 20, 2 exited (its last interval is lost), 3 did not move,
	// 4 started during the interval and counts whole.
	now := map[int]int64{1: 120, 3: 10, 4: 7}
	if got := tickDelta(last, now); got != 27 {
		t.Fatalf("tickDelta = %d, want 27", got)
	}
	// A pid reused by a new process with fewer ticks counts nothing for
	// that interval, never a negative.
	if got := tickDelta(map[int]int64{1: 100}, map[int]int64{1: 3}); got != 0 {
		t.Fatalf("tickDelta of a reused pid = %d, want 0", got)
	}
}
