package auth

import (
	"testing"
	"time"
)

// A lookup that read its row before a revocation does not put it into
// the cache after it; nothing is put while revocations are not heard; and
// the cache never holds more than its bound.
func TestSessionCacheEpochAndBound(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	c := newSessionCache(func() time.Time { return now }, time.Second, 2)
	s := Session{ExpiresAt: now.Add(time.Hour)}
	c.put(c.begin(), "down", User{ID: 1}, s, now)
	if _, _, ok := c.get("down"); ok {
		t.Fatal("kept while revocations are not heard")
	}
	c.setUp(true)
	e := c.begin()
	c.forget(1)
	c.put(e, "stale", User{ID: 1}, s, now)
	if _, _, ok := c.get("stale"); ok {
		t.Fatal("a row read before a revocation was kept after it")
	}
	for i, h := range []string{"a", "b", "c"} {
		c.put(c.begin(), h, User{ID: int64(i + 10)}, s, now)
	}
	if len(c.m) > 2 {
		t.Fatalf("%d entries kept, bound 2", len(c.m))
	}
	if _, _, ok := c.get("c"); !ok {
		t.Fatal("the newest entry is missing")
	}
	c.heard("11")
	c.heard("garbage")
	if len(c.m) != 0 {
		t.Fatalf("%d entries after forgetting everyone", len(c.m))
	}
	c.put(c.begin(), "d", User{ID: 12}, s, now)
	c.setUp(false)
	if _, _, ok := c.get("d"); ok {
		t.Fatal("served after revocations stopped being heard")
	}
}
