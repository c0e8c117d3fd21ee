package testwait_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/testwait"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	if err := testwait.Until(10*time.Second, "three", func() bool { return n.Load() == 3 }); err != nil {
		t.Fatal(err)
	}
	calls := 0
	if err := testwait.Until(time.Minute, "at once", func() bool { calls++; return true }); err != nil || calls != 1 {
		t.Fatalf("a condition that holds at once: %v after %d calls", err, calls)
	}
}

func TestUntilStopsAtItsBoundAndSaysWhat(t *testing.T) {
	calls := 0
	start := time.Now()
	err := testwait.Until(50*time.Millisecond, "the moon", func() bool { calls++; return false })
	if err == nil || !strings.Contains(err.Error(), "50ms waiting for the moon") {
		t.Fatalf("err %v", err)
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %v, want about the bound (50ms)", took)
	}
	// Asked at the start, between the sleeps, and once more at the bound.
	if calls < 3 {
		t.Errorf("cond asked %d times", calls)
	}
}

func TestUntilContextEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	err := testwait.UntilContext(ctx, time.Minute, "nothing", func() bool { return false })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
