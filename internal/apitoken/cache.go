package apitoken

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// The token cache.
//
// Every partner API request looks its bearer token up: read from the
// database each time, that is one round trip per request. The cache keeps
// a looked-up live token (with its owner's address) in this process's
// memory for at most CacheTTL (1 s by default), and only while revocations
// are heard — the session cache's rules (internal/auth/sessioncache.go):
//
//   - a change made through this Service (Revoke, AdminRevoke) or through
//     internal/auth (sign out everywhere, a password change or reset, any
//     change to the user: auth calls Changed) drops the user's cached
//     tokens in this process before the call returns (store.DB.Signal,
//     synchronously, after the commit);
//   - on PostgreSQL, the triggers of migration 00037 NOTIFY
//     kifpool_api_tokens with the owner's id at the commit of any change
//     to a token (its last use aside) or to a user, by any writer (another
//     instance, the CLI, an operator's SQL); every instance LISTENs and
//     drops that user's tokens on arrival;
//   - while the LISTEN connection is down (or has not started), nothing is
//     served from the cache and nothing is put into it: every request
//     reads the database, as without the cache, until the LISTEN is back
//     (then the cache starts empty);
//   - whatever happens to the notifications, an entry is never served
//     longer than the TTL after it was read, nor past its token's expiry:
//     the TTL is the hard bound of a revocation that nothing announced (on
//     SQLite, a change made by another process, the CLI).
//
// Only live tokens are kept: an unknown, revoked or expired token is read
// from the database every time (a flood of made-up tokens grows nothing,
// and a token just created is never refused from memory). A lookup that
// began before a revocation never puts its (older) row into the cache
// after it: every revocation moves an epoch, and a put whose epoch moved
// is dropped. The cache holds at most CacheMax tokens.
type tokenCache struct {
	now func() time.Time
	ttl time.Duration
	max int

	mu    sync.Mutex
	up    bool   // revocations are heard
	epoch uint64 // moved by every revocation and by up changing
	m     map[string]cachedToken
}

// cachedToken is a live token as read at read.
type cachedToken struct {
	p         Principal
	expiresAt *time.Time
	lastUsed  *time.Time // the stored last use, or the last one noted since
	read      time.Time
}

// Token cache defaults.
const (
	DefaultCacheTTL = time.Second
	DefaultCacheMax = 10000
	// cacheChannel is the channel of migration 00037's NOTIFY and of the
	// in-process signal: the payload is a user id, or "*" for all.
	cacheChannel = "kifpool_api_tokens"
)

func newTokenCache(now func() time.Time, ttl time.Duration, max int) *tokenCache {
	return &tokenCache{now: now, ttl: ttl, max: max, m: map[string]cachedToken{}}
}

// get returns the cached token of a hash while it may be served.
func (c *tokenCache) get(hash string) (cachedToken, bool) {
	if c.ttl <= 0 {
		return cachedToken{}, false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || !c.up {
		return cachedToken{}, false
	}
	if !now.Before(e.read.Add(c.ttl)) || (e.expiresAt != nil && !now.Before(*e.expiresAt)) || now.Before(e.read) {
		delete(c.m, hash)
		return cachedToken{}, false
	}
	return e, true
}

// begin is the epoch a lookup starts at (see put).
func (c *tokenCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// put keeps a live token read at e.read, unless revocations are not heard
// or one happened since begin returned epoch.
func (c *tokenCache) put(epoch uint64, hash string, e cachedToken) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.up || epoch != c.epoch {
		return
	}
	if _, ok := c.m[hash]; !ok && len(c.m) >= c.max {
		c.evict()
	}
	c.m[hash] = e
}

// noted records a use noted for FlushLastUsed in the cached entry, so that
// the next hits within the minute do not note it again.
func (c *tokenCache) noted(hash string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[hash]; ok {
		e.lastUsed = &at
		c.m[hash] = e
	}
}

// evict makes room: the entries past their TTL go, or else any one.
func (c *tokenCache) evict() {
	now := c.now()
	for k, e := range c.m {
		if !now.Before(e.read.Add(c.ttl)) {
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

// forget drops the cached tokens of one user (0: of everyone).
func (c *tokenCache) forget(userID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if userID == 0 {
		clear(c.m)
		return
	}
	for k, e := range c.m {
		if e.p.UserID == userID {
			delete(c.m, k)
		}
	}
}

// setUp says whether revocations are heard; either way the cache starts
// again empty.
func (c *tokenCache) setUp(up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.up = up
	clear(c.m)
}

// heard is a revocation's payload: a user id, or "*" for everyone.
func (c *tokenCache) heard(payload string) {
	id, err := strconv.ParseInt(payload, 10, 64)
	if err != nil || id <= 0 {
		id = 0 // anything unexpected forgets everything
	}
	c.forget(id)
}

// KeepCache hears revocations (store.DB.Listen, and this process's
// signals) until ctx ends, and lets the token cache serve while they are
// heard. Without it running, every Authenticate reads the database.
func (s *Service) KeepCache(ctx context.Context) {
	cancel := s.db.Subscribe(cacheChannel, s.cache.heard)
	defer cancel()
	s.db.Listen(ctx, cacheChannel, s.cache.heard, s.cache.setUp, s.listen)
}

// CacheServing reports whether looked-up tokens may be served from memory
// now (KeepCache runs and hears revocations).
func (s *Service) CacheServing() bool {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return s.cache.up && s.cache.ttl > 0
}

// changed drops the user's cached tokens in this instance and in every
// other instance of this process over the same database handle,
// synchronously: called after a change to one of the user's tokens has
// committed (other processes hear it through the database's NOTIFY).
func (s *Service) changed(userID int64) {
	s.cache.forget(userID)
	Changed(s.db, userID)
}

// Changed drops the user's cached tokens in every instance of this
// process over db (userID 0: everyone's), for a writer outside this
// package once its change has committed: internal/auth after it revoked
// the user's tokens or changed the user, a test fixture that writes
// tokens directly.
func Changed(db *store.DB, userID int64) {
	payload := "*"
	if userID != 0 {
		payload = strconv.FormatInt(userID, 10)
	}
	db.Signal(cacheChannel, payload)
}
