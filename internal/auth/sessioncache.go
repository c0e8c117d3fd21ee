package auth

import (
	"context"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/revocable"
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
// epoch moved is dropped. Failed lookups are not cached. The rules are
// internal/revocable's, shared with the API token cache.
type sessionCache = revocable.Cache[cachedSession]

// cachedSession is a session and its user as one lookup read them.
type cachedSession struct {
	u User
	s Session
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
	return revocable.New[cachedSession](now, ttl, max)
}

// KeepSessionCache hears revocations (store.DB.Listen, and this process's
// signals) until ctx ends, and lets the session cache serve while they are
// heard. Without it running, every lookup reads the database.
func (s *Service) KeepSessionCache(ctx context.Context) {
	cancel := s.db.Subscribe(sessionsChannel, s.cache.Heard)
	defer cancel()
	s.db.Listen(ctx, sessionsChannel, s.cache.Heard, s.cache.SetUp, s.listen)
}

// SessionCacheServing reports whether looked-up sessions may be served
// from memory now (KeepSessionCache runs and hears revocations).
func (s *Service) SessionCacheServing() bool { return s.cache.Serving() }

// changed drops the user's cached sessions and API tokens in every
// instance of this process, synchronously: called after a change to the
// user, one of their sessions or their tokens (endEverything) has
// committed (other processes hear it through the database's NOTIFY).
// userID 0 is everyone.
func (s *Service) changed(userID int64) {
	s.cache.Forget(userID)
	s.db.Signal(sessionsChannel, revocable.Payload(userID))
	apitoken.Changed(s.db, userID)
}

// SessionChanged is changed for a writer outside this package (a test
// fixture that writes sessions directly): the user's cached sessions are
// dropped in every instance of this process over db. userID 0 is everyone.
func SessionChanged(db *store.DB, userID int64) {
	db.Signal(sessionsChannel, revocable.Payload(userID))
}
