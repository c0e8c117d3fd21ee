package api_test

import (
	"net/http"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// The top-up limit counts per user, through the form and every token
// together: more tokens give no more top-ups, and one user's limit does
// not touch another's.
func TestTopUpLimitIsPerUserAcrossFormAndTokens(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_TOPUP": "3"}, Server: server.Options{RateLimits: true}})
		web := f.app.NewClient(t)
		web.SignUp("flood@example.com")
		uid := authtest.UserID(t, db, "flood@example.com")
		a, b := f.token(t, uid, apitoken.ScopeTopUp), f.token(t, uid, apitoken.ScopeTopUp)

		csrf, tok := web.TopUpForm()
		if r := web.PostTopUp(csrf, tok, "50000"); r.Status != http.StatusSeeOther {
			t.Fatalf("form top-up: %d", r.Status)
		}
		// A double click of the same form is not a new top-up.
		if r := web.PostTopUp(csrf, tok, "50000"); r.Status == http.StatusTooManyRequests {
			t.Fatal("the replay of a submitted form was counted")
		}
		if r := a.post(routes.APITopUps, "k1", `{"amount_rials": 500000}`); r.Status != http.StatusCreated {
			t.Fatalf("token a: %d %s", r.Status, r.Body)
		}
		if r := b.post(routes.APITopUps, "k2", `{"amount_rials": 500000}`); r.Status != http.StatusCreated {
			t.Fatalf("token b: %d %s", r.Status, r.Body)
		}
		r := b.post(routes.APITopUps, "k3", `{"amount_rials": 500000}`)
		if r.Status != http.StatusTooManyRequests || r.Code() != "rate_limited" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("fourth top-up by token: %d %s", r.Status, r.Body)
		}
		csrf, tok = web.TopUpForm()
		if r := web.PostTopUp(csrf, tok, "50000"); r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
			t.Fatalf("fourth top-up by form: %d", r.Status)
		}
		if n := topuptest.Count(t, db); n != 3 {
			t.Fatalf("%d payments, want 3", n)
		}
		// Another user is not limited by the first one's flood.
		other, _ := f.user(t, "calm@example.com", apitoken.ScopeTopUp)
		if r := other.post(routes.APITopUps, "k1", `{"amount_rials": 500000}`); r.Status != http.StatusCreated {
			t.Fatalf("another user: %d %s", r.Status, r.Body)
		}
	})
}
