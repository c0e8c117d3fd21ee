package ledger_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// pgbenchScript is the transfer's pgbench script, run by `make bench` as
// the design limit of the Go path (cmd/kifpool-load).
const pgbenchScript = "transfer.pgbench"

// sqlCapture records the statements GORM runs (with their $n
// placeholders, before the values are put in) and their arguments.
type sqlCapture struct {
	mu    sync.Mutex
	on    bool
	stmts []capturedStmt
}

type capturedStmt struct {
	sql  string
	vars []any
	inTx bool // run inside an explicit transaction (BEGIN … COMMIT)
}

func (c *sqlCapture) record(tx *gorm.DB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on {
		_, inTx := tx.Statement.ConnPool.(*sql.Tx)
		c.stmts = append(c.stmts, capturedStmt{sql: tx.Statement.SQL.String(), vars: append([]any(nil), tx.Statement.Vars...), inTx: inTx})
	}
}

func (c *sqlCapture) set(on bool) []capturedStmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = on
	out := c.stmts
	c.stmts = nil
	return out
}

// capture hooks c after every kind of statement GORM runs on db.
func capture(t *testing.T, db *store.DB) *sqlCapture {
	t.Helper()
	c := &sqlCapture{}
	cb := db.Gorm.Callback()
	for _, err := range []error{
		cb.Row().After("gorm:row").Register("pgbenchtest:row", c.record),
		cb.Raw().After("gorm:raw").Register("pgbenchtest:raw", c.record),
		cb.Query().After("gorm:query").Register("pgbenchtest:query", c.record),
		cb.Create().After("gorm:create").Register("pgbenchtest:create", c.record),
		cb.Update().After("gorm:update").Register("pgbenchtest:update", c.record),
		cb.Delete().After("gorm:delete").Register("pgbenchtest:delete", c.record),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// scriptStmt is one SQL statement of the pgbench script: its text and the
// \gset prefix it ends with ("" when it ends with a semicolon).
type scriptStmt struct {
	sql  string
	gset string
}

var gsetRE = regexp.MustCompile(`\\gset\s*([A-Za-z0-9_]*)\s*$`)

// readScript reads the SQL statements of the script between BEGIN and
// COMMIT, leaving out comments and meta-commands (\set, \if).
func readScript(t *testing.T, path string) (stmts []scriptStmt, begin, commit bool) {
	t.Helper()
	b, err := os.ReadFile(path) // #nosec G304 -- the package's own script
	if err != nil {
		t.Fatal(err)
	}
	var cur strings.Builder
	flush := func(gset string) {
		q := normalSQL(cur.String())
		cur.Reset()
		switch strings.ToUpper(q) {
		case "BEGIN":
			begin = true
		case "COMMIT", "END":
			commit = true
		case "":
		default:
			stmts = append(stmts, scriptStmt{sql: q, gset: gset})
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		tl := strings.TrimSpace(line)
		if strings.HasPrefix(tl, "--") || strings.HasPrefix(tl, `\`) && strings.TrimSpace(cur.String()) == "" {
			continue
		}
		if m := gsetRE.FindStringSubmatchIndex(line); m != nil {
			cur.WriteString(line[:m[0]])
			flush(line[m[2]:m[3]])
			continue
		}
		if strings.HasSuffix(tl, ";") {
			cur.WriteString(strings.TrimSuffix(tl, ";"))
			flush("")
			continue
		}
		cur.WriteString(line + "\n")
	}
	if strings.TrimSpace(cur.String()) != "" {
		t.Fatalf("%s ends inside a statement: %q", path, cur.String())
	}
	return stmts, begin, commit
}

var spaceRE = regexp.MustCompile(`\s+`)

func normalSQL(s string) string { return strings.TrimSpace(spaceRE.ReplaceAllString(s, " ")) }

var placeholderRE = regexp.MustCompile(`\$([0-9]+)`)

// asScript writes a statement the store ran in the script's terms: each
// $n by the pgbench variable its value stands for (names: value → name),
// a NULL argument as NULL and an empty string as the SQL empty string
// literal (pgbench has neither a NULL nor an empty variable).
func asScript(t *testing.T, st capturedStmt, names map[string]string) string {
	t.Helper()
	return placeholderRE.ReplaceAllStringFunc(normalSQL(st.sql), func(m string) string {
		var n int
		if _, err := fmt.Sscan(m[1:], &n); err != nil || n < 1 || n > len(st.vars) {
			t.Fatalf("placeholder %s of %d arguments in %s", m, len(st.vars), st.sql)
		}
		v := st.vars[n-1]
		if rv := reflect.ValueOf(v); v == nil || rv.Kind() == reflect.Pointer && rv.IsNil() {
			return "NULL"
		}
		key := valueKey(v)
		if key == "" {
			return "''"
		}
		name, ok := names[key]
		if !ok {
			t.Fatalf("argument %s = %v of the store's statement stands for none of the script's variables:\n%s", m, v, st.sql)
		}
		return ":" + name
	})
}

// valueKey is a value as the test knows it, whatever its Go type.
func valueKey(v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		v = rv.Elem().Interface()
	}
	switch x := v.(type) {
	case time.Time:
		return "time:" + x.UTC().Format(time.RFC3339Nano)
	case ledger.Kind:
		return string(x)
	}
	return fmt.Sprint(v)
}

// The pgbench script of `make bench` is the SQL of one transfer as the
// store runs it on PostgreSQL: each statement of ledger.Write's transfer,
// whitespace aside, with the script's variable where the store has a
// parameter of that value, in the same order, with the same transaction
// boundaries.
//
// With group commit (GroupCommit) a transfer written while none of its
// accounts is in flight is written alone, by the same statement: the
// script is checked against that path too. A group is N such movements,
// each by groupSQL's guarded statement, in one transaction (not scripted).
func TestPgbenchScriptIsTheStoresSQL(t *testing.T) {
	t.Run("alone", func(t *testing.T) { pgbenchScriptIsTheStoresSQL(t) })
	t.Run("group commit, nothing in flight", func(t *testing.T) { pgbenchScriptIsTheStoresSQL(t, ledger.GroupCommit(64)) })
}

func pgbenchScriptIsTheStoresSQL(t *testing.T, opts ...ledger.Option) {
	db := storetest.New(t, store.Postgres)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 6, 0, 0, 123456000, time.UTC)
	l := ledger.New(db, opts...)
	t.Cleanup(l.Close)
	gw, err := l.EnsureAccount(ctx, ledger.AccountGateway, ledger.GatewayCode("pgbenchtest"), 0)
	if err != nil {
		t.Fatal(err)
	}
	account := func(n int, rials int64) int64 {
		t.Helper()
		var uid, wid int64
		if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, created_at) VALUES (?, 'x', ?) RETURNING id`,
			fmt.Sprintf("pgbench%d@example.com", n), now).Scan(&uid).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, now, now).
			Scan(&wid).Error; err != nil {
			t.Fatal(err)
		}
		id, err := ledger.CreateWalletAccount(db.Gorm, wid, uid, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: fmt.Sprintf("fund-%d", n),
			Postings: ledger.Transfer(gw, id, rials), At: now}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	lo, hi := account(1, 500), account(2, 1_000_000)
	if lo >= hi {
		t.Fatalf("accounts %d, %d: want ascending", lo, hi)
	}

	// From the later account to the earlier one: the store updates them
	// in id order, not in the postings' order.
	const amount, ref = 1234, "pgbench-test-transfer"
	c := capture(t, db)
	c.set(true)
	tr, err := l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: ref, Postings: ledger.Transfer(hi, lo, amount), At: now})
	got := c.set(false)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for k, v := range map[string]any{
		"kind": ledger.KindTransfer, "ref": ref, "at": now, "held": int64(0),
		"lo": lo, "hi": hi, "lo_amount": int64(amount), "hi_amount": int64(-amount),
		"lo_posted_rials": int64(500 + amount), "hi_posted_rials": int64(1_000_000 - amount),
	} {
		key := valueKey(v)
		if other, dup := names[key]; dup {
			t.Fatalf("the test's values of :%s and :%s are both %s: make them differ", k, other, key)
		}
		names[key] = k
	}
	if len(tr.Postings) != 2 || tr.Postings[0].BalanceAfterRials != 500+amount || tr.Postings[1].BalanceAfterRials != 1_000_000-amount {
		t.Fatalf("the transfer's postings %+v: not the balances the names say", tr.Postings)
	}

	want, begin, commit := readScript(t, pgbenchScript)
	if begin != commit {
		t.Errorf("%s: BEGIN %v but COMMIT %v", pgbenchScript, begin, commit)
	}
	// The transaction's boundaries: the script's BEGIN … COMMIT when the
	// store runs its statements in an explicit transaction; none when the
	// store sends one statement on its own (its own transaction).
	for i, st := range got {
		if st.inTx != begin {
			t.Errorf("statement %d: the store runs it in an explicit transaction: %v; %s has BEGIN … COMMIT: %v", i+1, st.inTx, pgbenchScript, begin)
		}
	}
	if !begin && len(got) != 1 {
		t.Errorf("the store runs %d statements outside a transaction: only one statement is atomic on its own", len(got))
	}
	if len(got) != len(want) {
		var b strings.Builder
		for _, st := range got {
			b.WriteString("\n  " + normalSQL(st.sql))
		}
		t.Fatalf("the store ran %d statements for one transfer, %s has %d; the store's:%s", len(got), pgbenchScript, len(want), b.String())
	}
	for i := range got {
		if s := asScript(t, got[i], names); s != want[i].sql {
			t.Errorf("statement %d drifted from %s:\n store:  %s\n script: %s", i+1, pgbenchScript, s, want[i].sql)
		}
	}
	if n := len(want); n > 0 && want[n-1].gset != "" {
		t.Errorf("the last statement of %s ends in \\gset %s", pgbenchScript, want[n-1].gset)
	}
}
