package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
)

// An instance whose own clock is ten minutes off reads the database's time
// once synced: leases written by one instance are read by another on one
// clock.
func TestClockFollowsTheDatabase(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			skew time.Duration
		}{
			{"ahead", 10 * time.Minute},
			{"behind", -10 * time.Minute},
			{"on time", 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				base := func() time.Time { return time.Now().Add(tc.skew) }
				c := store.NewClock(db, base, 0, nil)
				// Never synced: the base clock as it is (tests that drive a
				// fake clock never sync).
				if d := c.Now().Sub(base()); d < -time.Second || d > time.Second {
					t.Fatalf("unsynced clock differs from its base by %s", d)
				}
				// The database's reading lies between two readings of the
				// clock, give or take the sampling error (half a round trip,
				// SQLite's millisecond). A loaded machine can stall one
				// sample for seconds: a few tries, one must be close.
				const tolerance = time.Second
				var miss string
				for range 5 {
					if err := c.Sync(ctx); err != nil {
						t.Fatal(err)
					}
					before := c.Now()
					dbNow, err := db.Now(ctx)
					if err != nil {
						t.Fatal(err)
					}
					after := c.Now()
					off := c.Offset()
					miss = ""
					if dbNow.Before(before.Add(-tolerance)) || dbNow.After(after.Add(tolerance)) {
						miss = fmt.Sprintf("database time %s not within [%s, %s] ± %s (offset %s)", dbNow.Format(time.RFC3339Nano),
							before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano), tolerance, off)
					} else if off < -tc.skew-tolerance || off > -tc.skew+tolerance {
						miss = fmt.Sprintf("offset %s, want about %s", off, -tc.skew)
					}
					if miss == "" {
						break
					}
				}
				if miss != "" {
					t.Error(miss)
				}
			})
		}
	})
}

// Run keeps syncing; it stops with its context.
func TestClockRunStops(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		c := store.NewClock(db, func() time.Time { return time.Now().Add(time.Hour) }, 10*time.Millisecond, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		testwait.Eventually(t, 30*time.Second, "Run to sync the clock with the database", func() bool {
			return c.Offset() <= -59*time.Minute
		})
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not stop")
		}
	})
}

// L1: the clock is the last sync's database reading plus the monotonic
// time elapsed since, so a step of the machine's wall clock between two
// syncs (NTP, an operator) does not move it. With wall time plus an
// offset, a step of a minute made another instance's live lease look
// expired here, and a second verifier could take it.
func TestClockIgnoresWallClockSteps(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var mu sync.Mutex
		wall := time.Now()
		var mono time.Duration
		base := func() time.Time { mu.Lock(); defer mu.Unlock(); return wall }
		elapsed := func() time.Duration { mu.Lock(); defer mu.Unlock(); return mono }
		step := func(w, m time.Duration) { mu.Lock(); wall = wall.Add(w); mono += m; mu.Unlock() }
		c := store.NewClockMono(db, base, elapsed, 0, nil)
		if err := c.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := c.Now()
		step(time.Hour, time.Second) // the wall clock jumps an hour while one second passes
		if d := c.Now().Sub(before); d != time.Second {
			t.Fatalf("the clock moved %s over one second with a wall-clock step of an hour", d)
		}
		step(-2*time.Hour, 2*time.Second) // and back, past where it was
		if d := c.Now().Sub(before); d != 3*time.Second {
			t.Fatalf("the clock moved %s over three seconds with the wall clock stepped back", d)
		}
		// The next sync anchors on the database again: on a reading taken
		// between these two (the test's monotonic time stands still, so
		// the clock stays at that reading however slow the machine).
		dbBefore, err := db.Now(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		dbAfter, err := db.Now(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if now := c.Now(); now.Before(dbBefore.Add(-time.Second)) || now.After(dbAfter.Add(time.Second)) {
			t.Fatalf("after a sync the clock is %s, the database's between %s and %s", now, dbBefore, dbAfter)
		}
	})
}
