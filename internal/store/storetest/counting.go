package storetest

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

	"github.com/kifpool/kifpool/internal/store"
)

// Counter counts the statements GORM runs (as "VERB table": "SELECT FROM
// payments", "UPDATE wallets", "INSERT payment_events") and the transactions
// it begins, on a database from Counting.
type Counter struct {
	logger.Interface
	mu    sync.Mutex
	stmts []string
	txs   int
}

func (c *Counter) LogMode(logger.LogLevel) logger.Interface { return c }

func (c *Counter) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	s, _ := fc()
	c.mu.Lock()
	c.stmts = append(c.stmts, shape(s))
	c.mu.Unlock()
}

// Reset forgets what was counted so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.stmts, c.txs = nil, 0
	c.mu.Unlock()
}

// Take is what was counted since the last Reset: the statements' shapes
// in order, and the transactions begun.
func (c *Counter) Take() ([]string, int) {
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
	c *Counter
}

func (p countingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	p.c.mu.Lock()
	p.c.txs++
	p.c.mu.Unlock()
	return p.DB.BeginTx(ctx, opts)
}

// GetDBConn lets gorm.DB.DB() find the *sql.DB under the wrapper.
func (p countingPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// Counting returns db whose statements and transactions are counted (for
// tests that pin what a path costs the database); db itself is left
// alone.
func Counting(t testing.TB, db *store.DB) (*store.DB, *Counter) {
	t.Helper()
	c := &Counter{Interface: logger.Discard}
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
