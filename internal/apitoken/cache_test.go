package apitoken_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apitoken/apitokentest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/testwait"
)

// clock is the tests' adjustable clock.
type clock = testclock.Clock

// cachedService is an instance's token service with its cache running (as
// serve's background does) until the test ends, on db.
func cachedService(t *testing.T, db *store.DB, c *clock, lo store.ListenOptions) *apitoken.Service {
	t.Helper()
	s := apitoken.New(db, c.Now, apitoken.Options{Listen: lo})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.KeepCache(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testwait.Eventually(t, 10*time.Second, "the token cache to hear revocations", s.CacheServing)
	return s
}

// requests is how many statements n requests with secret made (each must
// be let in).
func requests(t *testing.T, s *apitoken.Service, counter *storetest.Counter, secret string, n int) int {
	t.Helper()
	counter.Reset()
	for range n {
		if _, err := s.Authenticate(context.Background(), secret); err != nil {
			t.Fatalf("authenticate: %v", err)
		}
	}
	stmts, _ := counter.Take()
	return len(stmts)
}

// kept waits until a round of 3 requests with secret makes at most one
// statement (read, then kept; or kept from the round before), the first
// round reading it. On PostgreSQL the NOTIFY of a change the test made a
// moment ago (the owner's previous token revoked, a fixture's write) may
// arrive after the read and drop the entry once more: a later round is
// clean.
func kept(t *testing.T, s *apitoken.Service, counter *storetest.Counter, secret string) {
	t.Helper()
	n, total := 0, 0
	if err := testwait.Until(5*time.Second, "the token to be kept", func() bool {
		n = requests(t, s, counter, secret, 3)
		total += n
		return n <= 1
	}); err != nil {
		t.Fatalf("%v: 3 requests made %d statements (cache serving: %v)", err, n, s.CacheServing())
	}
	if total == 0 {
		t.Fatal("a new token was served without being read")
	}
}

// refused fails the test unless secret is refused now, by s.
func refused(t *testing.T, s *apitoken.Service, what, secret string) {
	t.Helper()
	if _, err := s.Authenticate(context.Background(), secret); !errors.Is(err, apitoken.ErrUnauthorized) {
		t.Fatalf("the request after %s: %v, want ErrUnauthorized", what, err)
	}
}

// owner signs up a user and makes them a token (through an instance
// without a cache).
func owner(t *testing.T, db *store.DB, c *clock, email string) (auth.User, string) {
	t.Helper()
	ctx := context.Background()
	u, err := auth.NewService(db, auth.Options{BcryptCost: 4, Now: c.Now}).SignUp(ctx, email, "correct horse battery", "", "en")
	if err != nil {
		t.Fatal(err)
	}
	return u, newToken(t, db, c, u.ID)
}

func newToken(t *testing.T, db *store.DB, c *clock, userID int64) string {
	t.Helper()
	secret, _, err := apitoken.New(db, c.Now, apitoken.Options{}).Create(context.Background(), apitoken.CreateInput{UserID: userID, Name: "ci", Scope: "topup"})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// A looked-up token is served from memory for CacheTTL (1 s) at most, on
// the service's clock, and never past its expiry: the second request with
// a token makes one statement fewer than the first (none). Unknown tokens
// are never kept; the last use is still noted and flushed.
func TestTokenCacheServesWithinItsBound(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		authtest.DistinctUserIDs(t, db)
		c := testclock.New(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
		// The token is made before the cache listens: its own
		// notification, heard late on a loaded machine, would otherwise
		// drop the first request's entry and make the second read again.
		_, secret := owner(t, db, c, "cache@example.com")
		cdb, counter := storetest.Counting(t, db)
		s := cachedService(t, cdb, c, store.ListenOptions{})

		first := requests(t, s, counter, secret, 1)
		second := requests(t, s, counter, secret, 1)
		if first != 1 || second != first-1 {
			t.Fatalf("statements of the first and second requests: %d, %d; want 1, 0", first, second)
		}
		c.Add(999 * time.Millisecond)
		if n := requests(t, s, counter, secret, 3); n != 0 {
			t.Fatalf("requests 999 ms after the read: %d statements, want 0", n)
		}
		c.Add(time.Millisecond)
		if n := requests(t, s, counter, secret, 1); n != 1 {
			t.Fatalf("a request 1 s after the read: %d statements, want 1 (read again)", n)
		}
		// Then kept again. On PostgreSQL another test's revocation in the
		// same database, heard during that read, moves the cache's epoch
		// and drops the read's entry once more (a lookup never keeps what
		// a revocation may have overtaken): a later request is served
		// from memory, within a few.
		for i := 0; requests(t, s, counter, secret, 1) != 0; i++ {
			if i == 5 {
				t.Fatal("requests 1 s after the read: each read again, none kept")
			}
		}

		// The last use: noted by the first request, written by the flush,
		// not noted again by the cached ones within the minute.
		if n, err := s.FlushLastUsed(ctx); n != 1 || err != nil {
			t.Fatalf("flush: %d %v", n, err)
		}
		_ = requests(t, s, counter, secret, 2)
		if n, err := s.FlushLastUsed(ctx); n != 0 || err != nil {
			t.Fatalf("second flush within the minute: %d %v, want 0", n, err)
		}

		// An unknown token is read every time: no miss is kept.
		counter.Reset()
		for range 3 {
			if _, err := s.Authenticate(ctx, "kp_madeup"); !errors.Is(err, apitoken.ErrUnauthorized) {
				t.Fatalf("a made-up token: %v", err)
			}
		}
		if stmts, _ := counter.Take(); len(stmts) != 3 {
			t.Fatalf("3 requests with a made-up token: %d statements, want 3", len(stmts))
		}

		// Past its expiry, neither memory nor the database lets it in.
		apitokentest.Expire(t, db, secret, c.Now().Add(500*time.Millisecond))
		kept(t, s, counter, secret)
		c.Add(500 * time.Millisecond)
		refused(t, s, "its expiry", secret)

		// Without KeepCache (the CLI, a test's app), nothing is kept.
		plain := apitoken.New(cdb, c.Now, apitoken.Options{})
		_, secret2 := owner(t, db, c, "plain@example.com")
		if n := requests(t, plain, counter, secret2, 3); n != 3 {
			t.Fatalf("3 requests without the cache running: %d statements, want 3", n)
		}
	})
}

// Whatever ends a token through this process ends it at the very next
// request, though the clock stands still (the 1 s bound never runs out):
// the owner's and an admin's revocation, "sign out everywhere", a
// password change, a test fixture's write.
func TestTokenCacheRevokedOnNextRequest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		authtest.DistinctUserIDs(t, db)
		c := testclock.New(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
		cdb, counter := storetest.Counting(t, db)
		s := cachedService(t, cdb, c, store.ListenOptions{})
		users := auth.NewService(db, auth.Options{BcryptCost: 4, Now: c.Now})
		u, _ := owner(t, db, c, "revoked@example.com")
		admin, err := users.SignUp(ctx, "admin@example.com", "correct horse battery", "admin", "en")
		if err != nil {
			t.Fatal(err)
		}
		cached := func() (string, int64) {
			t.Helper()
			secret := newToken(t, db, c, u.ID)
			kept(t, s, counter, secret)
			p, err := s.Authenticate(ctx, secret)
			if err != nil {
				t.Fatal(err)
			}
			return secret, p.TokenID
		}

		secret, id := cached()
		if err := s.Revoke(ctx, u.ID, id); err != nil {
			t.Fatal(err)
		}
		refused(t, s, "its owner revoked it", secret)

		secret, id = cached()
		if _, err := s.AdminRevoke(ctx, admin.ID, id); err != nil {
			t.Fatal(err)
		}
		refused(t, s, "an admin revoked it", secret)

		secret, _ = cached()
		if _, err := users.EndAllSessions(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		refused(t, s, "sign out everywhere", secret)

		secret, _ = cached()
		if _, _, err := users.SetPassword(ctx, u.Email, "another horse battery"); err != nil {
			t.Fatal(err)
		}
		refused(t, s, "a password change", secret)

		secret, _ = cached()
		apitokentest.RevokeAtCreation(t, db, secret)
		refused(t, s, "a fixture revoked it", secret)
	})
}

// Two instances: a token cached by B stops at B as soon as A revokes it,
// or anything changes it (its scope, its row) in the database: on
// PostgreSQL by NOTIFY at commit (the instances share nothing else), on
// SQLite (one instance's database) by the in-process signal. The clock
// stands still, so the 1 s bound never runs out during the test: only the
// revocation can end the token at B.
func TestTokenCacheRevokedAcrossInstances(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbA := storetest.New(t, d)
			authtest.DistinctUserIDs(t, dbA)
			dbB := dbA
			if d == store.Postgres {
				dbB = reopen(t, dbA)
			}
			c := testclock.New(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
			a := cachedService(t, dbA, c, store.ListenOptions{})
			cB, counter := storetest.Counting(t, dbB)
			b := cachedService(t, cB, c, store.ListenOptions{})
			u, _ := owner(t, dbA, c, "everywhere@example.com")
			cachedAtB := func() (string, int64) {
				t.Helper()
				secret := newToken(t, dbA, c, u.ID)
				kept(t, b, counter, secret)
				p, err := a.Authenticate(ctx, secret)
				if err != nil {
					t.Fatal(err)
				}
				return secret, p.TokenID
			}
			refusedAtB := func(what, secret string) {
				t.Helper()
				start := time.Now()
				testwait.Eventually(t, 5*time.Second, "B to refuse the token after "+what, func() bool {
					_, err := b.Authenticate(ctx, secret)
					return errors.Is(err, apitoken.ErrUnauthorized)
				})
				t.Logf("%s: refused at B after %v", what, time.Since(start))
			}

			secret, id := cachedAtB()
			if err := a.Revoke(ctx, u.ID, id); err != nil {
				t.Fatal(err)
			}
			refused(t, a, "A revoked it", secret)
			refusedAtB("A revoked it", secret)

			// A direct write: an UPDATE of the scope (another program, an
			// operator), then a DELETE of the row.
			secret, _ = cachedAtB()
			if err := dbA.Gorm.Exec(`UPDATE api_tokens SET scope = 'read' WHERE token_hash = ?`, apitoken.Hash(secret)).Error; err != nil {
				t.Fatal(err)
			}
			if d == store.SQLite {
				apitoken.Changed(dbA, u.ID) // one process: the writer says so
			}
			testwait.Eventually(t, 5*time.Second, "B to see the new scope", func() bool {
				p, err := b.Authenticate(ctx, secret)
				return err == nil && p.Scope == apitoken.ScopeRead
			})
			if err := dbA.Gorm.Exec(`DELETE FROM api_tokens WHERE token_hash = ?`, apitoken.Hash(secret)).Error; err != nil {
				t.Fatal(err)
			}
			if d == store.SQLite {
				apitoken.Changed(dbA, u.ID)
			}
			refusedAtB("its row was deleted", secret)
		})
	}
}

// On PostgreSQL, a revocation made behind every instance's back (an
// operator's SQL on another connection) is heard through the triggers'
// NOTIFY, and a token's last use alone notifies nothing.
func TestTokenCacheHearsAnyWriterOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t, store.Postgres)
	authtest.DistinctUserIDs(t, db)
	c := testclock.New(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	cdb, counter := storetest.Counting(t, db)
	s := cachedService(t, cdb, c, store.ListenOptions{})
	u, secret := owner(t, db, c, "operator@example.com")
	if n := requests(t, s, counter, secret, 2); n != 1 {
		t.Fatalf("2 requests: %d statements, want 1", n)
	}
	other := reopen(t, db)
	uid, marker := strconv.FormatInt(u.ID, 10), strconv.FormatInt(u.ID+1, 10)
	// The last use alone notifies nothing (each instance's flush writes
	// it every few seconds): heard on the channel, nothing names the user
	// before the marker sent after the write on the same connection (an
	// id nobody has, so that the cache drops nothing of it).
	heard := listenTo(t, db, "kifpool_api_tokens")
	if err := other.Gorm.Exec(`UPDATE api_tokens SET last_used_at = now() WHERE user_id = ?`, u.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := other.Gorm.Exec(`SELECT pg_notify('kifpool_api_tokens', ?)`, marker).Error; err != nil {
		t.Fatal(err)
	}
	for got := heard(); got != marker; got = heard() {
		if got == uid {
			t.Fatal("a write of the last use alone notified the user's id")
		}
	}
	if n := requests(t, s, counter, secret, 2); n != 0 {
		t.Fatalf("2 requests after a last use's write: %d statements, want 0 (still kept)", n)
	}
	// A change to the user (its address, which the principal carries) is
	// heard.
	if err := other.Gorm.Exec(`UPDATE users SET email = 'renamed@example.com' WHERE id = ?`, u.ID).Error; err != nil {
		t.Fatal(err)
	}
	for got := heard(); got != uid; got = heard() {
	}
	testwait.Eventually(t, 5*time.Second, "the new address to be seen", func() bool {
		p, err := s.Authenticate(ctx, secret)
		return err == nil && p.Email == "renamed@example.com"
	})
	if err := other.Gorm.Exec(`UPDATE api_tokens SET revoked_at = now() WHERE user_id = ?`, u.ID).Error; err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, "the token revoked by hand to be refused", func() bool {
		_, err := s.Authenticate(ctx, secret)
		return errors.Is(err, apitoken.ErrUnauthorized)
	})
}

// When the LISTEN connection drops, the cache stops serving at once and
// every request reads the database until the connection is back. (Only
// this test's own token LISTEN is ended: its backends carry its schema's
// name as application_name; other tests' and the sessions' are left
// alone.)
func TestTokenCacheStopsServingWhenTheListenDrops(t *testing.T) {
	// It ends only its own schema's LISTEN (application_name).
	db := storetest.New(t, store.Postgres)
	authtest.DistinctUserIDs(t, db)
	c := testclock.New(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	cdb, counter := storetest.Counting(t, db)
	// Reconnects only after the test has looked.
	s := cachedService(t, cdb, c, store.ListenOptions{Retry: 2 * time.Second})
	_, secret := owner(t, db, c, "dropped@example.com")
	if n := requests(t, s, counter, secret, 3); n != 1 {
		t.Fatalf("3 requests: %d statements, want 1", n)
	}
	if err := db.Gorm.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN "kifpool_api_tokens"' AND pid <> pg_backend_pid()
		AND application_name = current_setting('application_name')`).Error; err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, "the cache to stop serving", func() bool { return !s.CacheServing() })
	if n := requests(t, s, counter, secret, 3); n != 3 {
		t.Fatalf("3 requests while the LISTEN is down: %d statements, want 3", n)
	}
	testwait.Eventually(t, 10*time.Second, "the LISTEN to come back", s.CacheServing)
	if n := requests(t, s, counter, secret, 3); n != 1 {
		t.Fatalf("3 requests once back: %d statements, want 1", n)
	}
}

// listenTo LISTENs to channel on db (store.DB.Listen) until the test
// ends; the returned function waits for the next notification's payload.
func listenTo(t *testing.T, db *store.DB, channel string) func() string {
	t.Helper()
	payloads := make(chan string, 1024)
	up := make(chan bool, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.Listen(ctx, channel, func(p string) { payloads <- p }, func(b bool) { up <- b }, store.ListenOptions{})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var listening bool
	testwait.Eventually(t, 10*time.Second, "the LISTEN on "+channel, func() bool {
		select {
		case b := <-up:
			listening = b
		default:
		}
		return listening
	})
	return func() string {
		t.Helper()
		var got string
		testwait.Eventually(t, 5*time.Second, "a notification on "+channel, func() bool {
			select {
			case got = <-payloads:
				return true
			default:
				return false
			}
		})
		return got
	}
}

// reopen is a second connection pool to db's database, sharing nothing
// in this process with db (another instance).
func reopen(t *testing.T, db *store.DB) *store.DB {
	t.Helper()
	other, err := store.Reopen(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	return other
}
