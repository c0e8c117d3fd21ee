package revocable

import (
	"fmt"
	"testing"
	"time"
)

type row struct{ noted string }

// The rules of the cache, on a clock that only the test moves.
func TestCache(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	c := New[row](func() time.Time { return now }, time.Second, 3)
	far := now.Add(time.Hour)
	entry := func(user int64, expires time.Time) Entry[row] {
		return Entry[row]{UserID: user, Expires: expires, Read: now}
	}

	c.Put(c.Begin(), "down", entry(1, far))
	if _, ok := c.Get("down"); ok || c.Serving() {
		t.Fatal("kept while revocations are not heard")
	}
	c.SetUp(true)
	if !c.Serving() {
		t.Fatal("not serving once revocations are heard")
	}

	// Served for less than the TTL after it was read, not at it.
	c.Put(c.Begin(), "a", entry(1, far))
	now = now.Add(999 * time.Millisecond)
	if e, ok := c.Get("a"); !ok || e.UserID != 1 {
		t.Fatal("not served 999 ms after it was read")
	}
	now = now.Add(time.Millisecond)
	if _, ok := c.Get("a"); ok {
		t.Fatal("served a whole TTL after it was read")
	}
	if c.Len() != 0 {
		t.Fatalf("%d entries after the expired one was asked for", c.Len())
	}

	// Never past its own expiry; no expiry (zero) is the TTL alone.
	c.Put(c.Begin(), "short", Entry[row]{UserID: 2, Expires: now.Add(500 * time.Millisecond), Read: now})
	c.Put(c.Begin(), "none", Entry[row]{UserID: 2, Read: now})
	now = now.Add(500 * time.Millisecond)
	if _, ok := c.Get("short"); ok {
		t.Fatal("served past its own expiry")
	}
	if _, ok := c.Get("none"); !ok {
		t.Fatal("an entry without an expiry is not served within the TTL")
	}

	// A clock that went back is not trusted.
	c.Put(c.Begin(), "back", Entry[row]{UserID: 3, Expires: far, Read: now})
	now = now.Add(-time.Second)
	if _, ok := c.Get("back"); ok {
		t.Fatal("served read in the future")
	}
	now = now.Add(time.Second)

	// A revocation drops its user's entries only; "*" and garbage drop
	// everyone's.
	c.Put(c.Begin(), "u4", entry(4, far))
	c.Put(c.Begin(), "u5", entry(5, far))
	c.Heard("4")
	if _, ok := c.Get("u4"); ok {
		t.Fatal("user 4's entry served after its revocation")
	}
	if _, ok := c.Get("u5"); !ok {
		t.Fatal("user 5's entry dropped by user 4's revocation")
	}
	c.Heard("garbage")
	if c.Len() != 0 {
		t.Fatalf("%d entries after forgetting everyone", c.Len())
	}

	// A lookup that began before a revocation does not put its row after it.
	e := c.Begin()
	c.Forget(6)
	c.Put(e, "stale", entry(6, far))
	if _, ok := c.Get("stale"); ok {
		t.Fatal("a row read before a revocation was kept after it")
	}

	// Bounded, and the newest is kept.
	for i := range 100 {
		c.Put(c.Begin(), fmt.Sprint("h", i), Entry[row]{UserID: int64(100 + i), Expires: far, Read: now})
		if c.Len() > 3 {
			t.Fatalf("%d entries kept, bound 3", c.Len())
		}
	}
	if _, ok := c.Get("h99"); !ok {
		t.Fatal("the newest entry is missing")
	}

	// Update changes the kept entry, and nothing else.
	c.Update("h99", func(r *row) { r.noted = "used" })
	c.Update("nothing", func(r *row) { t.Fatal("updated an entry that is not kept") })
	if e, _ := c.Get("h99"); e.Value.noted != "used" {
		t.Fatalf("update not kept: %+v", e)
	}

	// Revocations no longer heard: nothing served, the cache empty.
	c.SetUp(false)
	if _, ok := c.Get("h99"); ok || c.Len() != 0 || c.Serving() {
		t.Fatal("served after revocations stopped being heard")
	}
}

// A TTL of zero or less turns the cache off.
func TestCacheOff(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	c := New[row](func() time.Time { return now }, -1, 3)
	c.SetUp(true)
	c.Put(c.Begin(), "a", Entry[row]{UserID: 1, Read: now})
	if _, ok := c.Get("a"); ok || c.Len() != 0 || c.Serving() {
		t.Fatal("a cache with no TTL kept or served an entry")
	}
}

func TestPayload(t *testing.T) {
	if Payload(0) != "*" || Payload(42) != "42" {
		t.Fatalf("payloads %q %q", Payload(0), Payload(42))
	}
}
