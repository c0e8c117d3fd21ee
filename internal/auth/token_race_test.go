package auth_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A token asked for by a session is refused once that session has ended
// (auth.SessionLive as the insert's check), and "sign out everywhere" run
// while tokens are being made leaves none of them live: each was either
// made first and revoked, or refused (issue 18, item 7: tokens die with
// the session, with no window between the password check and the insert).
func TestTokensOfAnEndedSessionAreNeverLive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc := newService(db, nil)
		tokens := apitoken.New(db, nil, apitoken.Options{MaxLive: 1000})
		u, err := svc.SignUp(ctx, "racer@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		create := func(session string) error {
			_, _, err := tokens.Create(ctx, apitoken.CreateInput{UserID: u.ID, Name: "app", Scope: "topup", Still: auth.SessionLive(session)})
			return err
		}
		session, _, err := svc.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := create(session); err != nil {
			t.Fatalf("a live session's token: %v", err)
		}
		if _, err := svc.EndAllSessions(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if err := create(session); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("an ended session's token: %v, want ErrNoSession", err)
		}
		// At once: tokens asked for, and the sign-out everywhere.
		for round := range 10 {
			session, _, err := svc.NewSession(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if err := create(session); err != nil && !errors.Is(err, auth.ErrNoSession) {
						t.Errorf("round %d: create: %v", round, err)
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := svc.EndAllSessions(ctx, u.ID); err != nil {
					t.Errorf("round %d: sign out everywhere: %v", round, err)
				}
			}()
			close(start)
			wg.Wait()
			var live int64
			db.Gorm.Raw(`SELECT COUNT(*) FROM api_tokens WHERE user_id = ? AND revoked_at IS NULL`, u.ID).Scan(&live)
			if live != 0 {
				t.Fatalf("round %d: %d tokens live after sign out everywhere", round, live)
			}
		}
	})
}
