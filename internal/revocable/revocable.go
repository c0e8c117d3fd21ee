// Package revocable is the in-memory cache of looked-up credentials that
// revocations drop: the session cache (internal/auth) and the API token
// cache (internal/apitoken) are each one. An entry is a row read from the
// database for one credential (a session's or a token's hash), owned by a
// user; it is served for at most the TTL after it was read, never past its
// own expiry, and only while revocations are heard:
//
//   - Forget (a revocation of one user, or of everyone) drops the user's
//     entries and moves an epoch: a lookup that began before it (Begin)
//     never puts its older row into the cache after it (Put);
//   - SetUp says whether revocations are heard (the owner's LISTEN is up);
//     while they are not, nothing is served or kept, and either way the
//     cache starts again empty;
//   - the cache holds at most its bound; making room drops the entries
//     past their TTL first, then any.
//
// A TTL of zero or less turns the cache off: nothing is served or kept.
package revocable

import (
	"strconv"
	"sync"
	"time"
)

// Entry is one credential's row as read at Read, owned by UserID;
// Expires, when not zero, is the credential's own end.
type Entry[V any] struct {
	Value   V
	UserID  int64
	Expires time.Time
	Read    time.Time
}

// Cache is one kind of credential's cache, keyed by the credential's hash.
type Cache[V any] struct {
	now func() time.Time
	ttl time.Duration
	max int

	mu    sync.Mutex
	up    bool   // revocations are heard
	epoch uint64 // moved by every revocation and by up changing
	m     map[string]Entry[V]
}

// New is an empty cache, not serving until SetUp(true).
func New[V any](now func() time.Time, ttl time.Duration, max int) *Cache[V] {
	return &Cache[V]{now: now, ttl: ttl, max: max, m: map[string]Entry[V]{}}
}

// Get returns the entry of key while it may be served.
func (c *Cache[V]) Get(key string) (Entry[V], bool) {
	if c.ttl <= 0 {
		return Entry[V]{}, false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.up {
		return Entry[V]{}, false
	}
	if !now.Before(e.Read.Add(c.ttl)) || (!e.Expires.IsZero() && !now.Before(e.Expires)) || now.Before(e.Read) {
		delete(c.m, key)
		return Entry[V]{}, false
	}
	return e, true
}

// Begin is the epoch a lookup starts at (see Put).
func (c *Cache[V]) Begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// Put keeps e under key, unless revocations are not heard or one happened
// since Begin returned epoch.
func (c *Cache[V]) Put(epoch uint64, key string, e Entry[V]) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.up || epoch != c.epoch {
		return
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		c.evict()
	}
	c.m[key] = e
}

// Update changes the kept entry of key in place (nothing when there is
// none): what the owner notes about a credential served from memory.
func (c *Cache[V]) Update(key string, f func(*V)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		f(&e.Value)
		c.m[key] = e
	}
}

// evict makes room: the entries past their TTL go, or else any one.
func (c *Cache[V]) evict() {
	now := c.now()
	for k, e := range c.m {
		if !now.Before(e.Read.Add(c.ttl)) {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) < c.max {
			return
		}
		delete(c.m, k)
	}
}

// Forget drops the entries of one user (0: of everyone).
func (c *Cache[V]) Forget(userID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if userID == 0 {
		clear(c.m)
		return
	}
	for k, e := range c.m {
		if e.UserID == userID {
			delete(c.m, k)
		}
	}
}

// SetUp says whether revocations are heard; either way the cache starts
// again empty.
func (c *Cache[V]) SetUp(up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.up = up
	clear(c.m)
}

// Heard is a revocation's payload: a user id, or "*" for everyone.
// Anything unexpected forgets everyone.
func (c *Cache[V]) Heard(payload string) {
	id, err := strconv.ParseInt(payload, 10, 64)
	if err != nil || id <= 0 {
		id = 0
	}
	c.Forget(id)
}

// Payload is a revocation's payload for userID (0: everyone, "*").
func Payload(userID int64) string {
	if userID == 0 {
		return "*"
	}
	return strconv.FormatInt(userID, 10)
}

// Serving reports whether entries may be served now: revocations are
// heard and the cache is on.
func (c *Cache[V]) Serving() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up && c.ttl > 0
}

// Len is how many entries are kept (tests of a bound).
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
