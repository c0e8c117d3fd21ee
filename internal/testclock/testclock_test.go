package testclock_test

import (
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/testclock"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := testclock.New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	c.Add(90 * time.Second)
	c.Add(-30 * time.Second)
	if got, want := c.Now(), start.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("Now after moves = %v, want %v", got, want)
	}
}
