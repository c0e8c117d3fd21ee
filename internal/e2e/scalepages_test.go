package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/cmd/kifpool-load/adminbench"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// sent is one statement as the app sent it: its text with placeholders
// and its arguments, and the same with its arguments inlined (as GORM
// logs it).
type sent struct {
	sql      string
	vars     []any
	rendered string
}

// sqlCapture keeps every statement the app runs through GORM (its query,
// row, raw, update and delete callbacks; store.Scan goes through the row
// callback), to EXPLAIN it with its arguments known (a custom plan) and
// unknown (the generic plan that pgx's prepared statements get after
// five executions).
type sqlCapture struct {
	mu   sync.Mutex
	stmt []sent
}

func (c *sqlCapture) register(db *gorm.DB) error {
	keep := func(tx *gorm.DB) {
		sql := tx.Statement.SQL.String()
		if sql == "" || tx.DryRun { // a subquery being built, not a statement sent
			return
		}
		vars := append([]any(nil), tx.Statement.Vars...)
		c.mu.Lock()
		c.stmt = append(c.stmt, sent{sql: sql, vars: vars, rendered: tx.Dialector.Explain(sql, vars...)})
		c.mu.Unlock()
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Query().After("gorm:query").Register("e2e:capture", keep),
		cb.Row().After("gorm:row").Register("e2e:capture", keep),
		cb.Raw().After("gorm:raw").Register("e2e:capture", keep),
		cb.Update().After("gorm:update").Register("e2e:capture", keep),
		cb.Delete().After("gorm:delete").Register("e2e:capture", keep),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *sqlCapture) take() []sent {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.stmt
	c.stmt = nil
	return out
}

// genericPlan prepares st on conn (whose session has plan_cache_mode =
// force_generic_plan) and explains its execution with st's arguments:
// the plan PostgreSQL would cache for the statement, chosen without
// knowing the arguments.
func genericPlan(ctx context.Context, conn *pgx.Conn, dialector gorm.Dialector, st sent, idx indexes) (string, []string, error) {
	if _, err := conn.Exec(ctx, "PREPARE kp_generic AS "+st.sql); err != nil {
		return "", nil, fmt.Errorf("prepare: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), "DEALLOCATE kp_generic") }()
	args := make([]string, len(st.vars))
	for i, v := range st.vars {
		args[i] = dialector.Explain("$1", v) // v as an SQL literal
	}
	return explainPlan(ctx, conn, "EXECUTE kp_generic("+strings.Join(args, ", ")+")", idx)
}

// moneyTables are the tables that grow with the money's movements: no page
// may read one of them whole.
var moneyTables = []string{"topups", "ledger_postings", "ledger_transactions", "topup_events", "transfers", "withdrawals", "webhook_deliveries",
	"charges", "charge_refunds", "card_refunds", "gateway_calls", "users"}

// seqScanRE is a sequential scan of one of moneyTables in a text plan.
var seqScanRE = regexp.MustCompile(`Seq Scan on (` + strings.Join(moneyTables, "|") + `)\b`)

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	IndexCond    string     `json:"Index Cond"`
	Filter       string     `json:"Filter"`
	Plans        []planNode `json:"Plans"`
}

// indexes is what the plans' checks know of the schema's indexes.
type indexes struct {
	// partial: the partial indexes (small by design).
	partial map[string]bool
	// table and first: each index's table, and its first key when that is
	// a plain column ("" for an expression).
	table, first map[string]string
}

// readIndexes reads the indexes of the session's schemas.
func readIndexes(ctx context.Context, conn *pgx.Conn) (indexes, error) {
	idx := indexes{partial: map[string]bool{}, table: map[string]string{}, first: map[string]string{}}
	rows, err := conn.Query(ctx, `SELECT c.relname, t.relname, i.indpred IS NOT NULL, pg_get_indexdef(i.indexrelid, 1, true)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
		WHERE c.relnamespace = ANY (current_schemas(false)::regnamespace[])`)
	if err != nil {
		return idx, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, table, first string
		var partial bool
		if err := rows.Scan(&name, &table, &partial, &first); err != nil {
			return idx, err
		}
		idx.partial[name], idx.table[name] = partial, table
		if plainColumnRE.MatchString(first) {
			idx.first[name] = first
		}
	}
	return idx, rows.Err()
}

// paramRE is a statement's parameter ($1) in a generic plan's condition.
var paramRE = regexp.MustCompile(`\$[0-9]+\b`)

// plainColumnRE is an index key that is a column, not an expression.
var plainColumnRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// onFirstKey reports whether an index condition names the index's first
// key (a column): without it, the condition filters the whole index.
func onFirstKey(cond, first string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(first) + `\b`).MatchString(cond)
}

// explainPlan returns sql's plan as text, and the moneyTables it reads
// whole: a scan of one with no index condition that no Limit bounds (a
// blocking node, Sort, Hash, Aggregate, Materialize, between them, or no
// Limit at all). An index walked in order under a Limit (the newest
// first page) is bounded; the same walk under a Sort is not; a partial
// index (the open top-ups) is small by design. users, a table of people
// rather than movements, is held to the sequential scan check only: a
// planner kept off sequential scans on the test's small tables walks
// its primary key in merge joins it would not choose at scale. An index
// condition that does not name the index's first key (a column) reads
// the whole index too (charges_merchant_order_key for an order id alone).
// So does, in a generic plan, an index walked in order under a Limit and
// filtered by a parameter: the planner assumed an average value, and a
// rare one is found only at the end of the walk (the payments list by
// gateway, before its name was written as a literal).
func explainPlan(ctx context.Context, conn *pgx.Conn, sql string, idx indexes) (string, []string, error) {
	var lines []string
	rows, err := conn.Query(ctx, "EXPLAIN (COSTS OFF) "+sql)
	if err != nil {
		return "", nil, err
	}
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			rows.Close()
			return "", nil, err
		}
		lines = append(lines, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", nil, err
	}
	var js []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (COSTS OFF, FORMAT JSON) "+sql).Scan(&js); err != nil {
		return "", nil, err
	}
	var top []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(js, &top); err != nil {
		return "", nil, err
	}
	var whole []string
	var walk func(n planNode, bounded bool)
	walk = func(n planNode, bounded bool) {
		switch n.NodeType {
		case "Limit":
			bounded = true
		case "Sort", "Hash", "Aggregate", "Materialize", "SetOp", "WindowAgg", "Incremental Sort":
			bounded = false
		case "Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Index Scan":
			table := n.RelationName
			if table == "" {
				table = idx.table[n.IndexName] // a bitmap's index names no relation
			}
			if !slices.Contains(moneyTables[:len(moneyTables)-1], table) || idx.partial[n.IndexName] {
				break
			}
			switch {
			case n.IndexCond == "" && !bounded:
				whole = append(whole, table)
			case n.IndexCond == "" && paramRE.MatchString(n.Filter):
				whole = append(whole, table+" (walked in order under a Limit, filtered by a parameter: "+n.Filter+")")
			case n.IndexCond != "" && idx.first[n.IndexName] != "" && !onFirstKey(n.IndexCond, idx.first[n.IndexName]):
				whole = append(whole, table+" (its index "+n.IndexName+" by a condition off its first key)")
			}
		}
		for _, c := range n.Plans {
			walk(c, bounded)
		}
	}
	for _, t := range top {
		walk(t.Plan, false)
	}
	return strings.Join(lines, "\n"), whole, nil
}

// TestScalePagesUseIndexes: every statement that every page of the
// admin-at-scale bench issues (the admin console's lists, cursor pages,
// status filters, each search kind, the CSV, a top-up's and a user's
// detail, users, audit, transfers, withdrawals and the dashboard; the
// payer's wallet, top-ups, CSV and receipts; the API's lists) can be
// answered without a sequential scan of the money's tables: captured
// from the app itself as it serves the page (so a changed query is
// checked as it is), each is EXPLAINed on PostgreSQL with sequential
// scans disabled, and a plan that still scans one of those tables has no
// index to use. The data is the bench's own seed at a small size, so the
// test also proves the harness (seed, sample, pages, timing) that
// `make bench-admin` runs at 10,000,000 top-ups.
func TestScalePagesUseIndexes(t *testing.T) {
	ctx := context.Background()
	url := storetest.URL(t, store.Postgres)
	db, err := store.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx, nil, store.PerSchemaLock()); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sample, err := adminbench.Seed(ctx, conn, adminbench.Small, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded rows: %v", sample.Rows)
	// The seed writes the money as the app does: every rule of
	// `kifpool check` holds on it (the 10M bench checks it too).
	// (The newest top-ups are open, as a live system's are: deadlines of a
	// day, as the worker's would be.)
	rep, err := integrity.Check(ctx, db, integrity.Options{Now: time.Now(), CreatedDeadline: 24 * time.Hour, OpenDeadline: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations() {
		t.Errorf("the seed breaks %s", v)
	}
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}

	idx, err := readIndexes(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.first) == 0 || !idx.partial["topups_user_open_idx"] {
		t.Fatalf("the schema's indexes not read: %+v", idx)
	}

	// Every plan below with sequential scans off, and each statement's
	// generic plan as the one PostgreSQL would keep for it.
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	cp := &sqlCapture{}
	if err := cp.register(db.Gorm); err != nil {
		t.Fatal(err)
	}
	app := apptest.Start(t, db, apptest.Options{Unchecked: "adminbench.Seed writes its rows directly, and the test closes its database"})
	c := adminbench.NewClient(app.URL, sample, http.DefaultTransport)
	explained := 0
	for _, p := range adminbench.Pages(sample) {
		cp.take()
		if _, err := c.Get(ctx, p); err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		for _, st := range cp.take() {
			verb := strings.ToUpper(strings.Fields(st.sql)[0])
			if verb != "SELECT" && verb != "WITH" && verb != "UPDATE" && verb != "DELETE" {
				continue
			}
			plans := []struct {
				kind  string
				plan  func() (string, []string, error)
				valid bool
			}{
				{"custom plan", func() (string, []string, error) { return explainPlan(ctx, conn, st.rendered, idx) }, true},
				// Without arguments the generic plan is the custom one.
				{"generic plan", func() (string, []string, error) {
					return genericPlan(ctx, conn, db.Gorm.Dialector, st, idx)
				}, len(st.vars) > 0},
			}
			for _, pl := range plans {
				if !pl.valid {
					continue
				}
				plan, whole, err := pl.plan()
				if err != nil {
					t.Errorf("%s: explain (%s): %v\n%s", p.Name, pl.kind, err, st.sql)
					continue
				}
				explained++
				if testing.Verbose() {
					t.Logf("%s, %s:\n%s\n%s", p.Name, pl.kind, st.rendered, plan)
				}
				if seqScanRE.MatchString(plan) {
					t.Errorf("%s, %s: a sequential scan (no index serves it):\n%s\n%s", p.Name, pl.kind, st.sql, plan)
				}
				for _, w := range whole {
					t.Errorf("%s, %s: reads the whole of %s (an index walked without a condition or a bound):\n%s\n%s", p.Name, pl.kind, w, st.sql, plan)
				}
			}
		}
	}
	if explained < len(adminbench.Pages(sample)) {
		t.Errorf("only %d statements explained for %d pages: the capture misses the app's statements", explained, len(adminbench.Pages(sample)))
	}
	// The bench's timing loop over the same pages (two fetches each).
	if _, err := adminbench.TimePages(ctx, c, adminbench.Pages(sample), 2); err != nil {
		t.Fatal(err)
	}
}
