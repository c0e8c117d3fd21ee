package scenario_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

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
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		counted, cnt := counting(t, db)
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
			cnt.reset()
			res := c.Get(back)
			stmts, txs := cnt.take()
			if got := apptest.PaymentStatus(res.Body); got != "credited" {
				t.Fatalf("credit %d: status %q, want credited", i, got)
			}
			// session; payment by public id; claim (first callback and
			// lease, one statement, no transaction of its own); then one
			// transaction: the move, its event, the partners' webhook
			// outbox (none here: one INSERT … SELECT of the user's
			// endpoints), the verify's gateway_calls row, then the ledger:
			// the wallet's account id on the instance's first credit of this
			// wallet only (remembered after), then on PostgreSQL one
			// statement (the accounts locked in ascending id, their
			// balances, the transaction and its postings), on SQLite the
			// transaction, each balance, the postings and the read-back of
			// their sum.
			want := []string{
				"SELECT FROM sessions", "SELECT FROM payments",
				"UPDATE payments",
				"UPDATE payments", "INSERT payment_events", "INSERT webhook_deliveries", "INSERT gateway_calls",
			}
			if i == 0 {
				want = append(want, "SELECT FROM ledger_accounts") // the wallet's account; the clearing slots are made and known at start
			}
			if db.Dialect == store.Postgres {
				want = append(want, "WITH")
			} else {
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

// counter counts the statements GORM runs (as "VERB table") and the
// transactions it begins.
type counter struct {
	logger.Interface
	mu    sync.Mutex
	stmts []string
	txs   int
}

func (c *counter) LogMode(logger.LogLevel) logger.Interface { return c }

func (c *counter) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	s, _ := fc()
	c.mu.Lock()
	c.stmts = append(c.stmts, shape(s))
	c.mu.Unlock()
}

func (c *counter) reset() {
	c.mu.Lock()
	c.stmts, c.txs = nil, 0
	c.mu.Unlock()
}

func (c *counter) take() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts, c.txs
}

// shape is a statement's verb and first table: "SELECT FROM payments".
func shape(s string) string {
	f := strings.Fields(strings.NewReplacer(`"`, "", "`", "", "(", " ").Replace(s))
	if len(f) == 0 {
		return ""
	}
	verb := strings.ToUpper(f[0])
	for i := 1; i+1 < len(f); i++ {
		switch w := strings.ToUpper(f[i]); {
		case verb == "SELECT" && w == "FROM":
			return "SELECT FROM " + f[i+1]
		case verb == "INSERT" && w == "INTO", verb == "DELETE" && w == "FROM":
			return verb + " " + f[i+1]
		}
	}
	if verb == "UPDATE" && len(f) > 1 {
		return "UPDATE " + f[1]
	}
	return verb
}

// countingPool is the database's pool as GORM sees it, counting the
// transactions begun on it.
type countingPool struct {
	*sql.DB
	c *counter
}

func (p countingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	p.c.mu.Lock()
	p.c.txs++
	p.c.mu.Unlock()
	return p.DB.BeginTx(ctx, opts)
}

// GetDBConn lets gorm.DB.DB() find the *sql.DB under the wrapper.
func (p countingPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// counting returns db whose statements and transactions are counted.
func counting(t *testing.T, db *store.DB) (*store.DB, *counter) {
	t.Helper()
	c := &counter{Interface: logger.Discard}
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	// A new session (its own copy of the configuration) whose statements
	// start from one of its own on the counting pool; db.Gorm is left
	// alone.
	pool := countingPool{DB: sqlDB, c: c}
	g := db.Gorm.Session(&gorm.Session{Logger: c, NewDB: true})
	g.Config.ConnPool = pool
	g.Statement = &gorm.Statement{DB: g, ConnPool: pool, Context: context.Background(), Clauses: map[string]clause.Clause{}}
	out := *db
	out.Gorm = g
	if _, err := out.Gorm.DB(); err != nil {
		t.Fatal(fmt.Errorf("counting pool: %w", err))
	}
	return &out, c
}
