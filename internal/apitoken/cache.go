package apitoken

import (
	"context"
	"time"

	"github.com/kifpool/kifpool/internal/revocable"
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
// is dropped. The cache holds at most CacheMax tokens. The rules are
// internal/revocable's, shared with the session cache.
type tokenCache = revocable.Cache[cachedToken]

// cachedToken is a live token as one lookup read it.
type cachedToken struct {
	p        Principal
	lastUsed *time.Time // the stored last use, or the last one noted since
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
	return revocable.New[cachedToken](now, ttl, max)
}

// KeepCache hears revocations (store.DB.Listen, and this process's
// signals) until ctx ends, and lets the token cache serve while they are
// heard. Without it running, every Authenticate reads the database.
func (s *Service) KeepCache(ctx context.Context) {
	cancel := s.db.Subscribe(cacheChannel, s.cache.Heard)
	defer cancel()
	s.db.Listen(ctx, cacheChannel, s.cache.Heard, s.cache.SetUp, s.listen)
}

// CacheServing reports whether looked-up tokens may be served from memory
// now (KeepCache runs and hears revocations).
func (s *Service) CacheServing() bool { return s.cache.Serving() }

// changed drops the user's cached tokens in this instance and in every
// other instance of this process over the same database handle,
// synchronously: called after a change to one of the user's tokens has
// committed (other processes hear it through the database's NOTIFY).
func (s *Service) changed(userID int64) {
	s.cache.Forget(userID)
	Changed(s.db, userID)
}

// Changed drops the user's cached tokens in every instance of this
// process over db (userID 0: everyone's), for a writer outside this
// package once its change has committed: internal/auth after it revoked
// the user's tokens or changed the user, a test fixture that writes
// tokens directly.
func Changed(db *store.DB, userID int64) {
	db.Signal(cacheChannel, revocable.Payload(userID))
}
