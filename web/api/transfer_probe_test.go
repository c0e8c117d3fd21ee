package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A wallet too short for the transfer is refused as short whatever the
// address (unknown, or another person's), through the API and the page
// (its confirmation step and its Send alike), as often as it asks: the
// refusal tells nothing of the address and takes nothing of the
// unknown-recipient allowance, whose places are all still there once the
// wallet has the money.
func TestShortWalletProbesNoAddress(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_UNKNOWN_RECIPIENTS": "2"},
			Server: server.Options{RateLimits: true}})
		prober, proberID := f.user(t, "prober@example.com", apitoken.ScopeTransfer)
		f.fund(t, proberID, 0)
		_, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		f.fund(t, bobID, 0)
		page := f.app.NewClient(t)
		page.SignIn("prober@example.com", "correct horse battery")
		for i := range 3 {
			for _, to := range []string{fmt.Sprintf("nobody%d@example.com", i), "bob@example.com"} {
				key := fmt.Sprintf("probe-%d-%s", i, to)
				if a := prober.post(routes.APITransfers, key, `{"to_email": "`+to+`", "amount_rials": 20000}`); a.Status != http.StatusUnprocessableEntity || a.Code() != "insufficient_funds" {
					t.Fatalf("API, %s: %d %s", to, a.Status, a.Body)
				}
				for _, confirmed := range []string{"", "1"} {
					r := page.Submit(routes.Transfer, routes.Transfer, url.Values{"to": {to}, "amount": {"2000"}, "confirmed": {confirmed}})
					e := apptest.Parse(r.Body).TestID("transfer-error")
					if r.Status != http.StatusUnprocessableEntity || e == nil {
						t.Fatalf("page (confirmed=%q), %s: %d", confirmed, to, r.Status)
					}
					if bob := page.Submit(routes.Transfer, routes.Transfer, url.Values{"to": {"bob@example.com"}, "amount": {"2000"}, "confirmed": {confirmed}}); apptest.Parse(bob.Body).TestID("transfer-error").Text() != e.Text() {
						t.Fatalf("page (confirmed=%q): %q for %s, %q for bob", confirmed, e.Text(), to, apptest.Parse(bob.Body).TestID("transfer-error").Text())
					}
				}
			}
		}
		// With the money, the allowance's two places are all there.
		f.fund(t, proberID, 1_000_000)
		for i, want := range []int{http.StatusUnprocessableEntity, http.StatusUnprocessableEntity, http.StatusTooManyRequests} {
			a := prober.post(routes.APITransfers, fmt.Sprintf("unknown-%d", i), fmt.Sprintf(`{"to_email": "stranger%d@example.com", "amount_rials": 20000}`, i))
			if a.Status != want {
				t.Fatalf("unknown address %d with the money: %d %s, want %d", i, a.Status, a.Body, want)
			}
		}
	})
}
