package auth_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/webhook"
)

// A webhook endpoint added, or turned on again, by a session is refused
// once that session has ended (auth.SessionLive as the write's check),
// and "sign out everywhere" run while endpoints are being added and
// enabled leaves none of them enabled: each was either written first and
// turned off, or refused. Without the check, a request already past the
// sign-in check when the owner signs out everywhere would leave a thief's
// endpoint hearing of the account's money.
func TestEndpointsOfAnEndedSessionAreNeverLive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		svc := newService(db, nil)
		hooks, err := webhook.New(db, clk.Now, webhook.Options{SessionSecret: make([]byte, 32), AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		u, err := svc.SignUp(ctx, "hooked@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		live := func() int64 {
			t.Helper()
			return storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_endpoints WHERE user_id = ? AND disabled_at IS NULL`, u.ID)
		}
		session, _, err := svc.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		first, _, err := hooks.Create(ctx, u.ID, "http://127.0.0.1:9/first", webhook.Types(), webhook.Still(auth.SessionLive(session)))
		if err != nil {
			t.Fatalf("a live session's endpoint: %v", err)
		}
		// Turned off by its owner, then everything ends.
		if err := hooks.Disable(ctx, u.ID, first.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.EndAllSessions(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := hooks.Create(ctx, u.ID, "http://127.0.0.1:9/late", webhook.Types(), webhook.Still(auth.SessionLive(session))); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("an ended session's new endpoint: %v, want ErrNoSession", err)
		}
		if err := hooks.Enable(ctx, u.ID, first.ID, webhook.Still(auth.SessionLive(session))); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("an ended session's enable: %v, want ErrNoSession", err)
		}
		if n := live(); n != 0 {
			t.Fatalf("%d endpoints enabled by an ended session", n)
		}
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_endpoints WHERE user_id = ?`, u.ID); n != 1 {
			t.Fatalf("%d endpoints, want only the first: a refused add writes nothing", n)
		}
		// At once: endpoints added and one enabled again, and the sign-out
		// everywhere. Each round's adds use their own URLs (the limit of
		// enabled endpoints never binds: every round ends with none).
		for round := range 8 {
			session, _, err := svc.NewSession(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := hooks.Disable(ctx, u.ID, first.ID); err != nil && !errors.Is(err, webhook.ErrNotFound) {
				t.Fatal(err)
			}
			still := webhook.Still(auth.SessionLive(session))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					url := fmt.Sprintf("http://127.0.0.1:9/r%d-%d", round, i)
					if _, _, err := hooks.Create(ctx, u.ID, url, webhook.Types(), still); err != nil && !errors.Is(err, auth.ErrNoSession) {
						t.Errorf("round %d: create: %v", round, err)
					}
				}()
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				err := hooks.Enable(ctx, u.ID, first.ID, still)
				if err != nil && !errors.Is(err, auth.ErrNoSession) && !errors.Is(err, webhook.ErrNotFound) {
					t.Errorf("round %d: enable: %v", round, err)
				}
			}()
			go func() {
				defer wg.Done()
				<-start
				if _, err := svc.EndAllSessions(ctx, u.ID); err != nil {
					t.Errorf("round %d: sign out everywhere: %v", round, err)
				}
			}()
			close(start)
			wg.Wait()
			if n := live(); n != 0 {
				t.Fatalf("round %d: %d endpoints enabled after sign out everywhere", round, n)
			}
		}
	})
}
