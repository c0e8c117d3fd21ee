package integrity_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	Parent       string     `json:"Parent Relationship"`
	Plans        []planNode `json:"Plans"`
}

// TestRulesNeverReadATablePerRow: kifpool check reads whole tables, once
// each, but a rule whose correlated subquery (or the inner side of a
// nested loop) finds its rows with no index reads a table once per row of
// another: a square of their size (at a million withdrawals, the holds'
// rule read a trillion rows). Each rule is EXPLAINed on PostgreSQL with
// sequential scans off, so that a sequential scan left in the plan is one
// no index can replace; none may sit inside a subplan or a nested loop's
// inner side.
func TestRulesNeverReadATablePerRow(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	ctx := context.Background()
	now := time.Now().UTC()
	for _, r := range integrity.Rules() {
		t.Run(r.Name, func(t *testing.T) {
			tx, err := integrity.ReadOnlyTx(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback() }()
			if _, err := tx.ExecContext(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				t.Fatal(err)
			}
			var args []any
			if r.Open {
				args = []any{now, now, now}
			}
			var js []byte
			if err := tx.QueryRowContext(ctx, "EXPLAIN (COSTS OFF, FORMAT JSON) "+integrity.QueryOf(r), args...).Scan(&js); err != nil {
				t.Fatal(err)
			}
			var top []struct {
				Plan planNode `json:"Plan"`
			}
			if err := json.Unmarshal(js, &top); err != nil {
				t.Fatal(err)
			}
			var walk func(n planNode, repeated bool)
			walk = func(n planNode, repeated bool) {
				if n.Parent == "SubPlan" {
					repeated = true
				}
				if n.NodeType == "Seq Scan" && repeated {
					t.Errorf("reads %s once per row of another table (no index serves the lookup):\n%s", n.RelationName, js)
				}
				for _, c := range n.Plans {
					walk(c, repeated || (n.NodeType == "Nested Loop" && c.Parent == "Inner"))
				}
			}
			for _, p := range top {
				walk(p.Plan, false)
			}
		})
	}
}
