package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/testwait"
)

// cachedService is an instance's auth service with its session cache
// running (as serve's background does) until the test ends, on db.
func cachedService(t *testing.T, db *store.DB, c *clock, lo store.ListenOptions) *auth.Service {
	t.Helper()
	s := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost, SessionTTL: time.Hour, Now: c.Now, Listen: lo})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.KeepSessionCache(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testwait.Eventually(t, 10*time.Second, "the session cache to hear revocations", s.SessionCacheServing)
	return s
}

// lookups is how many statements the lookups of token made.
func lookups(t *testing.T, s *auth.Service, counter *storetest.Counter, token string, n int) int {
	t.Helper()
	counter.Reset()
	for range n {
		if _, _, err := s.Lookup(context.Background(), token); err != nil {
			t.Fatalf("lookup: %v", err)
		}
	}
	stmts, _ := counter.Take()
	return len(stmts)
}

// A looked-up session is served from memory for SessionCacheTTL (1 s) at
// most, on the service's clock, and never past its session's expiry.
func TestSessionCacheServesWithinItsBound(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		authtest.DistinctUserIDs(t, db)
		c := testclock.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
		cdb, counter := storetest.Counting(t, db)
		s := cachedService(t, cdb, c, store.ListenOptions{})
		u, err := s.SignUp(ctx, "cache@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := s.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n := lookups(t, s, counter, tok, 5); n != 1 {
			t.Fatalf("5 lookups within the bound: %d statements, want 1", n)
		}
		c.Add(999 * time.Millisecond)
		if n := lookups(t, s, counter, tok, 1); n != 0 {
			t.Fatalf("a lookup 999 ms after the read: %d statements, want 0", n)
		}
		c.Add(time.Millisecond)
		if n := lookups(t, s, counter, tok, 2); n != 1 {
			t.Fatalf("lookups 1 s after the read: %d statements, want 1 (read again, then kept)", n)
		}
		// Past the session's own expiry, neither memory nor the database
		// answers.
		// (Now 1 s after the sign-in; the session ends at 1 h.)
		c.Add(time.Hour - 1500*time.Millisecond)
		if n := lookups(t, s, counter, tok, 1); n != 1 {
			t.Fatalf("a lookup 0.5 s before the expiry: %d statements, want 1", n)
		}
		c.Add(600 * time.Millisecond)
		if _, _, err := s.Lookup(ctx, tok); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("an expired session: %v", err)
		}
		// Without KeepSessionCache (the CLI, a test's app), nothing is
		// kept.
		plain := auth.NewService(cdb, auth.Options{BcryptCost: bcrypt.MinCost, Now: c.Now})
		tok2, _, err := plain.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n := lookups(t, plain, counter, tok2, 3); n != 3 {
			t.Fatalf("3 lookups without the cache running: %d statements, want 3", n)
		}
	})
}

// Two instances: a session cached by B stops at B as soon as A signs the
// user out everywhere, changes their password or role, or anything
// changes the user's row in the database (on PostgreSQL, by NOTIFY at
// commit; the instances here share nothing else). The clock stands still,
// so the cache's 1 s bound never runs out during the test: only the
// revocation can end the session at B. On A itself the end is immediate.
func TestSessionCacheRevokedAcrossInstances(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbA := storetest.New(t, d)
			authtest.DistinctUserIDs(t, dbA)
			dbB := dbA // SQLite: one process, one instance's database
			if d == store.Postgres {
				dbB = reopen(t, dbA)
			}
			c := testclock.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
			a := cachedService(t, dbA, c, store.ListenOptions{})
			cB, counter := storetest.Counting(t, dbB)
			b := cachedService(t, cB, c, store.ListenOptions{})
			u, err := a.SignUp(ctx, "everywhere@example.com", "correct horse battery", "", "en")
			if err != nil {
				t.Fatal(err)
			}
			signIn := func() string {
				t.Helper()
				tok, _, err := a.NewSession(ctx, u.ID)
				if err != nil {
					t.Fatal(err)
				}
				if n := lookups(t, b, counter, tok, 3); n != 1 {
					t.Fatalf("B's 3 lookups: %d statements, want 1 (then kept)", n)
				}
				if _, _, err := a.Lookup(ctx, tok); err != nil {
					t.Fatal(err)
				}
				return tok
			}
			refusedAtB := func(what, tok string) {
				t.Helper()
				start := time.Now()
				testwait.Eventually(t, 5*time.Second, "B to refuse the session after "+what, func() bool {
					_, _, err := b.Lookup(ctx, tok)
					return errors.Is(err, auth.ErrNoSession)
				})
				t.Logf("%s: refused at B after %v", what, time.Since(start))
			}

			// Sign out everywhere.
			tok := signIn()
			if _, err := a.EndAllSessions(ctx, u.ID); err != nil {
				t.Fatal(err)
			}
			if _, _, err := a.Lookup(ctx, tok); !errors.Is(err, auth.ErrNoSession) {
				t.Fatalf("A after signing out everywhere: %v", err)
			}
			refusedAtB("sign out everywhere", tok)

			// One sign-out.
			tok = signIn()
			if err := a.EndSession(ctx, tok); err != nil {
				t.Fatal(err)
			}
			if _, _, err := a.Lookup(ctx, tok); !errors.Is(err, auth.ErrNoSession) {
				t.Fatalf("A after signing out: %v", err)
			}
			refusedAtB("sign-out", tok)

			// A password change (from the command line: another process
			// on PostgreSQL would be heard the same way).
			tok = signIn()
			if _, _, err := a.SetPassword(ctx, u.Email, "another horse battery"); err != nil {
				t.Fatal(err)
			}
			refusedAtB("a password change", tok)

			// A new role: B sees it, not the cached admin.
			tok = signIn()
			if _, err := a.SetRole(ctx, u.Email, auth.RoleAdmin); err != nil {
				t.Fatal(err)
			}
			testwait.Eventually(t, 5*time.Second, "B to see the new role", func() bool {
				got, _, err := b.Lookup(ctx, tok)
				return err == nil && got.IsAdmin()
			})
		})
	}
}

// On PostgreSQL, a change made behind every instance's back (an
// operator's SQL, another program) is heard too: the triggers notify.
func TestSessionCacheHearsAnyWriterOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t, store.Postgres)
	authtest.DistinctUserIDs(t, db)
	c := testclock.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	s := cachedService(t, db, c, store.ListenOptions{})
	u, err := s.SignUp(ctx, "operator@example.com", "correct horse battery", "", "en")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := s.NewSession(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Lookup(ctx, tok); err != nil {
		t.Fatal(err)
	}
	other := reopen(t, db)
	if err := other.Gorm.Exec(`DELETE FROM sessions WHERE user_id = ?`, u.ID).Error; err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, "the session deleted by hand to be refused", func() bool {
		_, _, err := s.Lookup(ctx, tok)
		return errors.Is(err, auth.ErrNoSession)
	})
}

// When the LISTEN connection drops, the cache stops serving at once and
// every lookup reads the database until the connection is back.
func TestSessionCacheStopsServingWhenTheListenDrops(t *testing.T) {
	// It ends only its own schema's LISTEN (application_name).
	ctx := context.Background()
	db := storetest.New(t, store.Postgres)
	authtest.DistinctUserIDs(t, db)
	c := testclock.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	cdb, counter := storetest.Counting(t, db)
	// Reconnects only after the test has looked.
	s := cachedService(t, cdb, c, store.ListenOptions{Retry: 2 * time.Second})
	u, err := s.SignUp(ctx, "dropped@example.com", "correct horse battery", "", "en")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := s.NewSession(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := lookups(t, s, counter, tok, 3); n != 1 {
		t.Fatalf("3 lookups: %d statements, want 1", n)
	}
	if err := db.Gorm.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN "kifpool_sessions"' AND pid <> pg_backend_pid()
		AND application_name = current_setting('application_name')`).Error; err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, "the cache to stop serving", func() bool { return !s.SessionCacheServing() })
	if n := lookups(t, s, counter, tok, 3); n != 3 {
		t.Fatalf("3 lookups while the LISTEN is down: %d statements, want 3", n)
	}
	testwait.Eventually(t, 10*time.Second, "the LISTEN to come back", s.SessionCacheServing)
	if n := lookups(t, s, counter, tok, 3); n != 1 {
		t.Fatalf("3 lookups once back: %d statements, want 1", n)
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
