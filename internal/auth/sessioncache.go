package auth

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/store"
)

// The session cache.
//
// Every request of a signed-in browser needs its session and user. Read
// from the database each time, that is one round trip per request, the
// largest part of a signed-in replay's cost (docs/benchmarks.md). The
// cache keeps a looked-up session in this process's memory for at most
// SessionCacheTTL (1 s by default), and only while revocations are heard:
//
//   - a change made through this Service (sign-out, "sign out everywhere",
//     a password change or reset, a role, the second factor, the locale)
//     drops the user's cached sessions in this process before the call
//     returns (store.DB.Signal, synchronously, after the commit);
//   - on PostgreSQL, the triggers of migration 00039 NOTIFY kifpool_sessions
//     with the user's id at the commit of any change to a session or a
//     user, by any writer (another instance, the CLI, an operator's SQL);
//     every instance LISTENs and drops that user's sessions on arrival;
//   - while the LISTEN connection is down (or has not started), nothing is
//     served from the cache and nothing is put into it: every request
//     reads the database, as without the cache, until the LISTEN is back
//     (then the cache starts empty);
//   - whatever happens to the notifications, an entry is never served
//     longer than the TTL after it was read, nor past its session's
//     expiry: the TTL is the hard bound of a revocation that nothing
//     announced (on SQLite, a change made by another process, the CLI).
//
// A lookup that began before a revocation never puts its (older) row into
// the cache after it: every revocation moves an epoch, and a put whose
// epoch moved is dropped. Failed lookups are not cached.
type sessionCache struct {
	now func() time.Time
	ttl time.Duration
	max int

	mu    sync.Mutex
	up    bool   // revocations are heard
	epoch uint64 // moved by every revocation and by up changing
	m     map[string]cachedSession
}

type cachedSession struct {
	u    User
	s    Session
	read time.Time
}

// Session cache defaults.
const (
	DefaultSessionCacheTTL = time.Second
	DefaultSessionCacheMax = 10000
	// sessionsChannel is the channel of migration 00039's NOTIFY and of
	// the in-process signal: the payload is a user id, or "*" for all.
	sessionsChannel = "kifpool_sessions"
)

func newSessionCache(now func() time.Time, ttl time.Duration, max int) *sessionCache {
	return &sessionCache{now: now, ttl: ttl, max: max, m: map[string]cachedSession{}}
}

// get returns the cached session of a token hash while it may be served.
func (c *sessionCache) get(hash string) (User, Session, bool) {
	if c.ttl <= 0 {
		return User{}, Session{}, false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || !c.up {
		return User{}, Session{}, false
	}
	if !now.Before(e.read.Add(c.ttl)) || !now.Before(e.s.ExpiresAt) || now.Before(e.read) {
		delete(c.m, hash)
		return User{}, Session{}, false
	}
	return e.u, e.s, true
}

// begin is the epoch a lookup starts at (see put).
func (c *sessionCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// put keeps a row read at read, unless revocations are not heard or one
// happened since begin returned epoch.
func (c *sessionCache) put(epoch uint64, hash string, u User, s Session, read time.Time) {
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
	c.m[hash] = cachedSession{u: u, s: s, read: read}
}

// evict makes room: the entries past their TTL go, or else any one.
func (c *sessionCache) evict() {
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

// forget drops the cached sessions of one user (0: of everyone).
func (c *sessionCache) forget(userID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if userID == 0 {
		clear(c.m)
		return
	}
	for k, e := range c.m {
		if e.u.ID == userID {
			delete(c.m, k)
		}
	}
}

// setUp says whether revocations are heard; either way the cache starts
// again empty.
func (c *sessionCache) setUp(up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.up = up
	clear(c.m)
}

// heard is a revocation's payload: a user id, or "*" for everyone.
func (c *sessionCache) heard(payload string) {
	id, err := strconv.ParseInt(payload, 10, 64)
	if err != nil || id <= 0 {
		id = 0 // anything unexpected forgets everything
	}
	c.forget(id)
}

// KeepSessionCache hears revocations (store.DB.Listen, and this process's
// signals) until ctx ends, and lets the session cache serve while they are
// heard. Without it running, every lookup reads the database.
func (s *Service) KeepSessionCache(ctx context.Context) {
	cancel := s.db.Subscribe(sessionsChannel, s.cache.heard)
	defer cancel()
	s.db.Listen(ctx, sessionsChannel, s.cache.heard, s.cache.setUp, s.listen)
}

// SessionCacheServing reports whether looked-up sessions may be served
// from memory now (KeepSessionCache runs and hears revocations).
func (s *Service) SessionCacheServing() bool {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return s.cache.up && s.cache.ttl > 0
}

// changed drops the user's cached sessions and API tokens in every
// instance of this process, synchronously: called after a change to the
// user, one of their sessions or their tokens (endEverything) has
// committed (other processes hear it through the database's NOTIFY).
// userID 0 is everyone.
func (s *Service) changed(userID int64) {
	s.cache.forget(userID)
	payload := "*"
	if userID != 0 {
		payload = strconv.FormatInt(userID, 10)
	}
	s.db.Signal(sessionsChannel, payload)
	apitoken.Changed(s.db, userID)
}

// SessionChanged is changed for a writer outside this package (a test
// fixture that writes sessions directly): the user's cached sessions are
// dropped in every instance of this process over db. userID 0 is everyone.
func SessionChanged(db *store.DB, userID int64) {
	payload := "*"
	if userID != 0 {
		payload = strconv.FormatInt(userID, 10)
	}
	db.Signal(sessionsChannel, payload)
}
