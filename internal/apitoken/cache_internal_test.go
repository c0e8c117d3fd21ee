package apitoken

import (
	"fmt"
	"testing"
	"time"
)

// The cache on a fake clock: a hit is served until 1 s after its read and
// not at 1 s, nor past its token's expiry; a revocation drops the user's
// tokens; a row read before a revocation is not kept after it; nothing is
// kept or served while revocations are not heard; and the cache never
// holds more than its bound.
func TestTokenCacheRules(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	c := newTokenCache(func() time.Time { return now }, time.Second, 3)
	entry := func(user int64, expires time.Time) cachedToken {
		return cachedToken{p: Principal{TokenID: user * 10, UserID: user, Scope: ScopeRead}, expiresAt: &expires, read: now}
	}
	far := now.Add(time.Hour)

	c.put(c.begin(), "down", entry(1, far))
	if _, ok := c.get("down"); ok {
		t.Fatal("kept while revocations are not heard")
	}
	c.setUp(true)

	// A hit, until the TTL.
	c.put(c.begin(), "a", entry(1, far))
	now = now.Add(999 * time.Millisecond)
	if e, ok := c.get("a"); !ok || e.p.UserID != 1 {
		t.Fatalf("999 ms after the read: %+v %v, want a hit", e, ok)
	}
	now = now.Add(time.Millisecond)
	if _, ok := c.get("a"); ok {
		t.Fatal("served 1 s after the read")
	}
	if len(c.m) != 0 {
		t.Fatalf("%d entries after the expired one was asked for", len(c.m))
	}

	// Never past the token's own expiry.
	c.put(c.begin(), "short", cachedToken{p: Principal{UserID: 2}, expiresAt: ptr(now.Add(500 * time.Millisecond)), read: now})
	now = now.Add(500 * time.Millisecond)
	if _, ok := c.get("short"); ok {
		t.Fatal("served past the token's expiry")
	}

	// A clock gone backwards does not stretch an entry's life.
	c.put(c.begin(), "back", entry(3, far))
	now = now.Add(-time.Second)
	if _, ok := c.get("back"); ok {
		t.Fatal("served before its read")
	}
	now = now.Add(time.Second)

	// A revocation drops the user's tokens, and no other's.
	c.put(c.begin(), "u4", entry(4, far))
	c.put(c.begin(), "u5", entry(5, far))
	c.heard("4")
	if _, ok := c.get("u4"); ok {
		t.Fatal("a revoked user's token served")
	}
	if _, ok := c.get("u5"); !ok {
		t.Fatal("another user's token dropped")
	}
	c.heard("garbage") // anything unexpected forgets everyone
	if len(c.m) != 0 {
		t.Fatalf("%d entries after forgetting everyone", len(c.m))
	}

	// A row read before a revocation is not kept after it.
	e := c.begin()
	c.forget(6)
	c.put(e, "stale", entry(6, far))
	if _, ok := c.get("stale"); ok {
		t.Fatal("a row read before a revocation was kept after it")
	}

	// Bounded: 100 tokens into a cache of 3.
	for i := range 100 {
		c.put(c.begin(), fmt.Sprint("h", i), entry(int64(100+i), far))
		if len(c.m) > 3 {
			t.Fatalf("%d entries kept, bound 3", len(c.m))
		}
	}
	if _, ok := c.get("h99"); !ok {
		t.Fatal("the newest entry is missing")
	}

	// A use noted is remembered by the entry.
	c.noted("h99", now)
	if e, _ := c.get("h99"); e.lastUsed == nil || !e.lastUsed.Equal(now) {
		t.Fatalf("last use after noted: %v", e.lastUsed)
	}

	c.setUp(false)
	if _, ok := c.get("h99"); ok {
		t.Fatal("served after revocations stopped being heard")
	}
}

// A TTL of zero or less turns the cache off.
func TestTokenCacheOff(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	c := newTokenCache(func() time.Time { return now }, -1, 3)
	c.setUp(true)
	c.put(c.begin(), "a", cachedToken{p: Principal{UserID: 1}, read: now})
	if _, ok := c.get("a"); ok || len(c.m) != 0 {
		t.Fatal("kept with the cache off")
	}
}

func ptr[T any](v T) *T { return &v }
