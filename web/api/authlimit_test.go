package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// TestGuessedTokensAreLimitedPerAddress: past RATE_LIMIT_API_AUTH_FAILURES
// refusals a minute for an unknown token (or none), the address's API
// requests are answered 429 rate_limited with Retry-After before any
// token is read; a valid token's requests never count; a minute on, the
// address is heard again.
func TestGuessedTokensAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_API_AUTH_FAILURES": "3"}, Server: server.Options{RateLimits: true, Now: clock.Now}})
		good, _ := f.user(t, "partner@example.com", apitoken.ScopeRead)
		for range 10 {
			if a := good.get(routes.APIWallet); a.Status != http.StatusOK {
				t.Fatalf("a valid token: %d %s", a.Status, a.Body)
			}
		}
		guess := newAPIClient(t, f.app, f.spec, "kp_"+"0123456789abcdefghijklmnopqrstuv")
		none := newAPIClient(t, f.app, f.spec, "")
		for i, c := range []*apiClient{guess, none, guess} {
			if a := c.do(http.MethodGet, routes.APIWallet, nil, "", c == none); a.Status != http.StatusUnauthorized {
				t.Fatalf("refusal %d: %d, want 401", i+1, a.Status)
			}
		}
		for _, c := range []*apiClient{guess, good} {
			a := c.get(routes.APIWallet)
			if a.Status != http.StatusTooManyRequests || a.Code() != "rate_limited" || a.Header.Get("Retry-After") == "" {
				t.Fatalf("past the refusals: %d %q Retry-After %q, want 429 rate_limited", a.Status, a.Code(), a.Header.Get("Retry-After"))
			}
		}
		clock.Advance(time.Minute + time.Second)
		if a := good.get(routes.APIWallet); a.Status != http.StatusOK {
			t.Fatalf("a minute on, a valid token: %d", a.Status)
		}
	})
}
