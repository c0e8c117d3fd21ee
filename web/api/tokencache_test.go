package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// With the token cache running (as serve runs it), the second request with
// a token makes one statement fewer than the first: the token's lookup.
// The clock stands still, so only a revocation can end the cached token,
// and the owner's revocation is refused on the very next request.
func TestTokenCacheSavesTheLookupAndHonoursRevocation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		authtest.DistinctUserIDs(t, db) // other tests' users' changes are not this one's
		counted, cnt := storetest.Counting(t, db)
		clock := withdrawaltest.ClockAt(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
		f := start(t, counted, apptest.Options{Server: server.Options{Now: clock.Now}})
		f.app.KeepTokenCache(t)
		c, uid := f.user(t, "cached@example.com", apitoken.ScopeRead)

		wallet := func() []string {
			t.Helper()
			cnt.Reset()
			if a := c.get(routes.APIWallet); a.Status != http.StatusOK {
				t.Fatalf("GET wallet: %d %s", a.Status, a.Body)
			}
			stmts, _ := cnt.Take()
			return stmts
		}
		// Another package's test may end every token cache's LISTEN of the
		// database (TestTokenCacheStopsServingWhenTheListenDrops): this
		// cache then starts again empty, so the second request is tried
		// again until it is served from the cache, within 5 s.
		first := wallet()
		var second []string
		_ = testwait.Until(5*time.Second, "the token to be kept", func() bool {
			second = wallet()
			return len(second) == len(first)-1
		})
		if len(second) != len(first)-1 {
			t.Fatalf("statements of the first request:\n  %s\nof the second:\n  %s\nwant one fewer",
				strings.Join(first, "\n  "), strings.Join(second, "\n  "))
		}
		lookup := slices.IndexFunc(first, func(s string) bool { return strings.Contains(s, "api_tokens") })
		if lookup < 0 || slices.ContainsFunc(second, func(s string) bool { return strings.Contains(s, "api_tokens") }) {
			t.Fatalf("the token's lookup: first %q, second %q", first, second)
		}

		tokens, err := f.app.Server.Tokens.ForUser(ctx, uid)
		if err != nil || len(tokens) != 1 {
			t.Fatalf("tokens: %v %d", err, len(tokens))
		}
		if err := f.app.Server.Tokens.Revoke(ctx, uid, tokens[0].ID); err != nil {
			t.Fatal(err)
		}
		if a := c.get(routes.APIWallet); a.Status != http.StatusUnauthorized || a.Code() != "unauthorized" {
			t.Fatalf("the request after the revocation: %d %s, want 401", a.Status, a.Body)
		}
	})
}
