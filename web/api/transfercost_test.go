package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A transfer through the API is one transaction, and on PostgreSQL these
// statements (besides the token's lookup, which its cache may save): its
// round trips are its cost (docs/benchmarks.md), and one more is a change
// to measure. The ledger's posting is one statement.
func TestTransferCost(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		counted, cnt := storetest.Counting(t, db)
		f := start(t, counted, apptest.Options{})
		alice, aliceID := f.user(t, "cost-alice@example.com", apitoken.ScopeTransfer)
		_, bobID := f.user(t, "cost-bob@example.com", apitoken.ScopeRead)
		f.fund(t, aliceID, 1_000_000)
		f.fund(t, bobID, 0)
		for i := range 2 {
			cnt.Reset()
			if a := alice.post(routes.APITransfers, fmt.Sprint("cost-", i), `{"to_email": "cost-bob@example.com", "amount_rials": 10000}`); a.Status != http.StatusCreated {
				t.Fatalf("transfer %d: %d %s", i, a.Status, a.Body)
			}
			stmts, txs := cnt.Take()
			stmts = slices.DeleteFunc(stmts, func(s string) bool { return strings.Contains(s, "api_tokens") })
			if txs != 1 || !slices.Contains(stmts, "INSERT transfers") {
				t.Fatalf("transfer %d: %d transactions, statements:\n  %s\nwant the transfer in one transaction", i, txs, strings.Join(stmts, "\n  "))
			}
			if db.Dialect != store.Postgres {
				continue
			}
			want := []string{"SELECT FROM idempotency_keys", "SELECT FROM users", "INSERT idempotency_keys", "INSERT transfers",
				"INSERT webhook_deliveries", "INSERT webhook_deliveries", "WITH"}
			if !slices.Equal(stmts, want) {
				t.Fatalf("transfer %d ran:\n  %s\nwant:\n  %s", i, strings.Join(stmts, "\n  "), strings.Join(want, "\n  "))
			}
		}
	})
}
