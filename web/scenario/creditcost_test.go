package scenario_test

import (
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// TestCreditPathStatements pins what one credit costs the database: the
// payer's first callback of a paid payment (session, payment read, the
// claim that records the callback, the bank's verify, then the credit's
// one transaction). `make bench`'s credit path is bound by these round
// trips; a statement or a transaction added to this path fails here, not
// in a benchmark on a shared machine (docs/benchmarks.md).
func TestCreditPathStatements(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		counted, cnt := storetest.Counting(t, db)
		app := apptest.Start(t, counted, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("cost@example.com")
		for i := range 3 {
			csrf, token := c.TopUpForm()
			r := c.PostTopUp(csrf, token, "10000")
			back, err := app.Server.Bank.Pay(apptest.Authority(r.Location))
			if err != nil {
				t.Fatal(err)
			}
			cnt.Reset()
			res := c.Get(back)
			stmts, txs := cnt.Take()
			if got := apptest.TopUpStatus(res.Body); got != "credited" {
				t.Fatalf("credit %d: status %q, want credited", i, got)
			}
			// session; payment by public id; claim (first callback and
			// lease, one statement, no transaction of its own); then one
			// transaction: the move, then its event, the partners' webhook
			// outbox (none here: an INSERT … SELECT of the user's
			// endpoints) and the verify's gateway_calls row, then the
			// ledger. On PostgreSQL the event, outbox and calls are one
			// statement of data-modifying WITH parts (the credit's fold),
			// and the ledger one statement (the wallet's account found by
			// its wallet, the accounts locked in ascending id, their
			// balances, the transaction and its postings): five round trips
			// with BEGIN and COMMIT. On SQLite each is its own statement,
			// and the ledger's are the wallet's account id on the
			// instance's first credit of this wallet only (remembered
			// after), then the transaction, each balance, the postings and
			// the read-back of their sum.
			want := []string{"SELECT FROM sessions", "SELECT FROM topups", "UPDATE topups", "UPDATE topups"}
			if db.Dialect == store.Postgres {
				// The fold, then the ledger's statement (the wallet's
				// account is found by the statement itself, also on the
				// instance's first credit of this wallet).
				want = append(want, "WITH", "WITH")
			} else {
				want = append(want, "INSERT topup_events", "INSERT webhook_deliveries", "INSERT gateway_calls")
				if i == 0 {
					want = append(want, "SELECT FROM ledger_accounts") // the wallet's account; the clearing slots are made and known at start
				}
				want = append(want, "INSERT ledger_transactions", "UPDATE ledger_accounts", "UPDATE ledger_accounts", "INSERT ledger_postings",
					"SELECT FROM ledger_postings")
			}
			if strings.Join(stmts, "; ") != strings.Join(want, "; ") || txs != 1 {
				t.Fatalf("credit %d ran %d statements in %d transactions:\n  %s\nwant %d in 1:\n  %s", i, len(stmts), txs,
					strings.Join(stmts, "\n  "), len(want), strings.Join(want, "\n  "))
			}
		}
		if got := c.Balance(); got != 3*100_000 { // 10,000 tomans each
			t.Fatalf("balance %d rials, want 300,000", got)
		}
		apptest.CheckInvariants(t, db)
	})
}
