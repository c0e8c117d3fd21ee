package topupread_test

// The payment list at scale, on PostgreSQL: TestListQueriesUseIndexes
// checks on a seeded table that every query kind of the list is answered
// from an index (never a sequential scan of payments);
// BenchmarkAdminList seeds 1,000,000 payments (BENCH_PAYMENTS to change
// it) and measures each query kind's p95, printing its EXPLAIN ANALYZE.
// Run it with `make bench-admin-queries`.

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/wallet"
)

// seedScale inserts n payments with generate_series (one statement per
// table, no row-by-row inserts): n/10 users with wallets; 1% open
// (awaiting_payment and pending_verification), 0.1% needs_review, a quarter
// failed, the rest credited; creation times 30 s apart over the past,
// three payments per timestamp (ties); amounts from 1,000 to 100,900
// tomans; one gateway; cards and bank references on credited payments.
func seedScale(t testing.TB, db *store.DB, n int) {
	t.Helper()
	users := n / 10
	if users < 100 {
		users = 100
	}
	stmts := []string{
		`INSERT INTO users (email, password_hash, role, locale, created_at)
		 SELECT 'user' || g || '@' || (ARRAY['gmail.com','yahoo.com','example.ir','chmail.ir'])[1 + g % 4], 'x', 'user', 'fa', now() - interval '400 days'
		 FROM generate_series(1, ` + strconv.Itoa(users) + `) g`,
		`INSERT INTO wallets (user_id, created_at, updated_at) SELECT id, created_at, created_at FROM users ORDER BY id`,
		`INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, ref_id,
		   verified_amount_rials, card_pan_masked, status, status_reason, created_at, updated_at, opened_at, resolved_at)
		 SELECT substr(translate(md5(g::text), '0189', 'wxyz'), 1, 24),
		        u.id, w.id, a.amount, 'zarinpal', 'ft' || g,
		        'A' || lpad(g::text, 35, '0'),
		        CASE WHEN s.st = 'credited' THEN 50000000000 + g END,
		        CASE WHEN s.st = 'credited' THEN a.amount END,
		        CASE WHEN s.st = 'credited' THEN '603799******' || lpad(((g * 37) % 10000)::text, 4, '0') ELSE '' END,
		        s.st, '', c.at, c.at, c.at, CASE WHEN s.st IN ('credited', 'failed') THEN c.at END
		 FROM generate_series(1::bigint, ` + strconv.Itoa(n) + `) g
		 CROSS JOIN LATERAL (SELECT 1 + (g * 7919) % ` + strconv.Itoa(users) + ` AS uid) x
		 JOIN users u ON u.id = (SELECT MIN(id) FROM users) - 1 + x.uid
		 JOIN wallets w ON w.user_id = u.id
		 CROSS JOIN LATERAL (SELECT CASE
		     WHEN g % 100 = 0 THEN 'awaiting_payment'
		     WHEN g % 100 = 50 THEN 'pending_verification'
		     WHEN g % 1000 = 7 THEN 'needs_review'
		     WHEN g % 4 = 1 THEN 'failed'
		     ELSE 'credited' END AS st) s
		 CROSS JOIN LATERAL (SELECT (10000 + (g * 13 % 1000) * 1000)::bigint AS amount) a
		 CROSS JOIN LATERAL (SELECT date_trunc('second', now()) - ((g / 3) * interval '30 seconds') AS at) c`,
		// As autovacuum leaves a table in steady state (visibility map set,
		// so index-only scans skip the heap).
		`VACUUM ANALYZE users`, `VACUUM ANALYZE wallets`, `VACUUM ANALYZE topups`,
		// Each wallet's ledger account (last: statement 2 is the payments'
		// load, around which their indexes are dropped and built again).
		`INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, created_at, updated_at)
		 SELECT 'wallet', 'wallet:' || id, id, user_id, FALSE, created_at, created_at FROM wallets ORDER BY id`,
	}
	// Loading is faster with the payments' secondary indexes built after
	// the rows: they are dropped and made again from their definitions.
	var defs []struct{ Indexname, Indexdef string }
	if err := db.Gorm.Raw(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'topups' AND indexname NOT IN ('topups_pkey', 'topups_public_id_key')`).Scan(&defs).Error; err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i, s := range stmts {
		if i == 2 {
			for _, d := range defs {
				if err := db.Gorm.Exec(`DROP INDEX ` + d.Indexname).Error; err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := db.Gorm.Exec(s).Error; err != nil {
			t.Fatalf("seed: %v\n%s", err, s)
		}
		if i == 2 {
			for _, d := range defs {
				if err := db.Gorm.Exec(d.Indexdef).Error; err != nil {
					t.Fatalf("%s: %v", d.Indexdef, err)
				}
			}
		}
	}
	t.Logf("seeded %d payments and %d users in %v", n, users, time.Since(start).Round(time.Millisecond))
}

// sqlCapture is a GORM logger that keeps the statements run, with their
// arguments in place, to EXPLAIN them.
type sqlCapture struct {
	logger.Interface
	mu   sync.Mutex
	stmt []string
}

func (c *sqlCapture) LogMode(logger.LogLevel) logger.Interface { return c }

func (c *sqlCapture) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	sql, _ := fc()
	c.mu.Lock()
	c.stmt = append(c.stmt, sql)
	c.mu.Unlock()
}

func (c *sqlCapture) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.stmt
	c.stmt = nil
	return out
}

// capturing returns a console over db whose statements land in the capture.
func capturing(db *store.DB) (*topupread.Reader, *sqlCapture) {
	cp := &sqlCapture{Interface: logger.Discard}
	sess := *db
	sess.Gorm = db.Gorm.Session(&gorm.Session{Logger: cp})
	return topupread.New(&sess), cp
}

type queryKind struct {
	name   string
	f      topupread.Filter
	after  *topupread.Cursor
	counts bool // the per-status counts of f instead of a page
}

// queryKinds are the list's queries: the default view, each filter, each
// search kind, a deep page, and the counts of the default view.
func queryKinds(t testing.TB, db *store.DB, n int) []queryKind {
	t.Helper()
	var sample struct {
		PublicID      string
		Authority     string
		RefID         int64
		CardPANMasked string
		Email         string
		AmountRials   int64
	}
	db.Gorm.Raw(`SELECT p.public_id, p.authority, p.ref_id, p.card_pan_masked, u.email, p.amount_rials FROM topups p JOIN users u ON u.id = p.user_id
		WHERE p.status = 'credited' ORDER BY p.id LIMIT 1 OFFSET ?`, n/3).Scan(&sample)
	var deep struct {
		CreatedAt time.Time
		ID        int64
	}
	db.Gorm.Raw(`SELECT created_at, id FROM topups ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?`, n/2).Scan(&deep)
	now := time.Now().UTC()
	return []queryKind{
		{name: "default view (newest first)", f: topupread.Filter{}},
		{name: "oldest first", f: topupread.Filter{Oldest: true}},
		{name: "status: credited", f: topupread.Filter{Statuses: []string{"credited"}}},
		{name: "status: open (awaiting, pending)", f: topupread.Filter{Statuses: []string{"awaiting_payment", "pending_verification"}}},
		{name: "status: needs_review", f: topupread.Filter{Statuses: []string{"needs_review"}}},
		{name: "gateway", f: topupread.Filter{Gateway: "zarinpal"}},
		{name: "created range (one week, a month ago)", f: topupread.Filter{From: now.Add(-37 * 24 * time.Hour), To: now.Add(-30 * 24 * time.Hour)}},
		{name: "amount range", f: topupread.Filter{MinRials: 500_000, MaxRials: 510_000}},
		{name: "one amount", f: topupread.Filter{MinRials: sample.AmountRials, MaxRials: sample.AmountRials}},
		{name: "counts per status (one amount)", f: topupread.Filter{MinRials: sample.AmountRials, MaxRials: sample.AmountRials}, counts: true},
		{name: "counts per status (card suffix)", f: topupread.Filter{Query: sample.CardPANMasked[len(sample.CardPANMasked)-4:]}, counts: true},
		{name: "counts per status (gateway)", f: topupread.Filter{Gateway: "zarinpal"}, counts: true},
		{name: "search: public id", f: topupread.Filter{Query: sample.PublicID}},
		{name: "search: authority", f: topupread.Filter{Query: sample.Authority}},
		{name: "search: bank reference", f: topupread.Filter{Query: strconv.FormatInt(sample.RefID, 10)}},
		{name: "search: card suffix", f: topupread.Filter{Query: sample.CardPANMasked[len(sample.CardPANMasked)-4:]}},
		{name: "search: e-mail", f: topupread.Filter{Query: sample.Email}},
		{name: "search: part of an e-mail", f: topupread.Filter{Query: strings.SplitN(sample.Email, "@", 2)[0]}},
		{name: "deep page (half-way)", f: topupread.Filter{}, after: &topupread.Cursor{CreatedAt: deep.CreatedAt.UTC(), ID: deep.ID}},
		{name: "open statuses, deep page", f: topupread.Filter{Statuses: []string{"awaiting_payment", "pending_verification", "needs_review"}},
			after: &topupread.Cursor{CreatedAt: deep.CreatedAt.UTC(), ID: deep.ID}},
		{name: "counts per status (default view)", f: topupread.Filter{}, counts: true},
		{name: "counts per status (e-mail search)", f: topupread.Filter{Query: sample.Email}, counts: true},
	}
}

func run(ctx context.Context, c *topupread.Reader, q queryKind) error {
	if q.counts {
		_, err := c.StatusCounts(ctx, q.f, topupread.CountCap)
		return err
	}
	_, _, err := c.List(ctx, q.f, q.after, topupread.PageSize)
	return err
}

func explain(t testing.TB, db *store.DB, sql string, analyze bool) string {
	t.Helper()
	opts := "(COSTS OFF)"
	if analyze {
		opts = "(ANALYZE, BUFFERS, COSTS OFF)"
	}
	var lines []string
	if err := db.Gorm.Raw("EXPLAIN " + opts + " " + sql).Scan(&lines).Error; err != nil {
		t.Fatalf("explain: %v\n%s", err, sql)
	}
	return strings.Join(lines, "\n")
}

func TestListQueriesUseIndexes(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	const n = 30_000
	seedScale(t, db, n)
	c, cp := capturing(db)
	ctx := context.Background()
	for _, q := range queryKinds(t, db, n) {
		cp.take()
		if err := run(ctx, c, q); err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		for _, sql := range cp.take() {
			if strings.HasPrefix(sql, "EXPLAIN") {
				continue // the totals' estimate: statistics, no scan at all
			}
			plan := explain(t, db, sql, false)
			if strings.Contains(plan, "Seq Scan on topups") || !strings.Contains(plan, "Index") {
				t.Errorf("%s: not answered from an index:\n%s\n%s", q.name, sql, plan)
			}
			// A filter's counts (migrations 00029, 00031): each status's
			// count is a range of an index on the filter and the status,
			// never a walk of the filter's matches read for their status.
			if col, ok := map[string]string{"counts per status (one amount)": "amount_rials = ", "counts per status (card suffix)": `"right"(card_pan_masked, 4)`,
				"counts per status (gateway)": "gateway = ", "counts per status (e-mail search)": "user_id = "}[q.name]; ok {
				n := 0
				for _, l := range strings.Split(plan, "\n") {
					if strings.Contains(l, "Index Cond:") && strings.Contains(l, "status = ") && strings.Contains(l, col) {
						n++
					}
				}
				if n < len(topupread.Statuses) {
					t.Errorf("%s: %d of %d counts have the status in an index condition:\n%s\n%s", q.name, n, len(topupread.Statuses), sql, plan)
				}
			}
		}
	}
}

// TestDashboardQueriesUseIndexes: every read of the dashboard is answered
// from an index, on a seeded table with the bank calls of its payments (no
// sequential scan of payments or gateway_calls), and the totals, the
// top-ups by hour, the bank's latency and the worker's backlog can be
// answered from their index alone: with every other kind of scan disabled
// their plans hold index-only scans and nothing else. (Whether PostgreSQL
// then prefers them depends on the visibility map, which VACUUM cannot
// set while another session on the server holds an old snapshot: a plan
// choice on a shared server, not a property of the query.)
func TestDashboardQueriesUseIndexes(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	seedScale(t, db, 30_000)
	seedCalls(t, db)
	kinds, cp := dashboardKinds(db)
	ctx := context.Background()
	for _, k := range kinds {
		if k.quiet {
			continue
		}
		cp.take()
		if err := k.run(ctx); err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		for _, sql := range cp.take() {
			if strings.HasPrefix(sql, "EXPLAIN") {
				continue // the totals' estimate: statistics, no scan at all
			}
			plan := explain(t, db, sql, false)
			if strings.Contains(plan, "Seq Scan on topups") || strings.Contains(plan, "Seq Scan on gateway_calls") || !strings.Contains(plan, "Index") {
				t.Errorf("%s: not answered from an index:\n%s\n%s", k.name, sql, plan)
			}
			if k.name == "unresolved payments" || k.name == "latest reconciliations" {
				continue // they show the rows themselves
			}
			only := indexOnlyPlan(t, db, sql)
			if strings.Contains(only, "Seq Scan") || strings.Contains(only, "Index Scan") || strings.Contains(only, "Bitmap") ||
				!strings.Contains(only, "Index Only Scan") {
				t.Errorf("%s: cannot be answered from an index alone:\n%s\n%s", k.name, sql, only)
			}
		}
	}
}

// TestOpenForUserUsesItsPartialIndex: the wallet page's payments in
// progress (Reader.OpenForUser) are read through the partial
// index topups_user_open_idx, for a user with thousands of ended
// payments, also in the generic plan PostgreSQL caches for a prepared
// statement (the status condition is written as literals for this: as
// parameters, the generic plan walks the user's every payment).
func TestOpenForUserUsesItsPartialIndex(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	seedScale(t, db, 30_000)
	ctx := context.Background()
	var heavy struct{ UserID, WalletID int64 }
	if err := db.Gorm.Raw(`SELECT u.id AS user_id, w.id AS wallet_id FROM users u JOIN wallets w ON w.user_id = u.id ORDER BY u.id LIMIT 1`).Scan(&heavy).Error; err != nil {
		t.Fatal(err)
	}
	// 5,000 ended payments of one user (the bench's wallet user has
	// 10,000), on top of its share of the seeded ones.
	for _, sql := range []string{
		`INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, status, status_reason, created_at, updated_at, opened_at, resolved_at)
		 SELECT 'heavy' || lpad(g::text, 19, '0'), ?, ?, 10000, 'zarinpal', 'heavy' || g, 'failed', 'bank_cancelled', now(), now(), now(), now()
		 FROM generate_series(1, 5000) g`,
		`VACUUM ANALYZE topups`,
	} {
		args := []any{heavy.UserID, heavy.WalletID}
		if !strings.Contains(sql, "?") {
			args = nil
		}
		if err := db.Gorm.Exec(sql, args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	var wantOpen int64
	db.Gorm.Raw(`SELECT COUNT(*) FROM topups WHERE user_id = ? AND status IN ('awaiting_payment', 'pending_verification', 'settling', 'reversing', 'needs_review')`, heavy.UserID).Scan(&wantOpen)
	if wantOpen == 0 {
		t.Fatal("the seeded user has no open payment")
	}

	// The statement as sent (placeholders and arguments), for the generic
	// plan.
	type sent struct {
		sql  string
		vars []any
	}
	var stmts []sent
	if err := db.Gorm.Callback().Query().After("gorm:query").Register("scale_test:capture", func(tx *gorm.DB) {
		stmts = append(stmts, sent{tx.Statement.SQL.String(), append([]any(nil), tx.Statement.Vars...)})
	}); err != nil {
		t.Fatal(err)
	}
	got, err := topupread.New(db).OpenForUser(ctx, heavy.UserID, 100)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != min(wantOpen, 100) {
		t.Fatalf("%d open payments, want %d", len(got), min(wantOpen, 100))
	}
	if len(stmts) != 1 {
		t.Fatalf("%d statements, want 1", len(stmts))
	}
	st := stmts[0]
	args := make([]string, len(st.vars))
	for i, v := range st.vars {
		args[i] = db.Gorm.Dialector.Explain("$1", v) // v as an SQL literal
	}
	const index = "topups_user_open_idx"
	// The custom plan (the arguments known) reads only open payments: the
	// user's open ones (index), or, where the planner's estimate of this
	// user's share (a seventh of this small table's payments) makes that
	// look dearer, the few open payments of everyone
	// (topups_open_created_idx, 00007/00057), filtered by user. Never the
	// user's ended payments (their indexes) nor the table.
	if plan := explain(t, db, db.Gorm.Dialector.Explain(st.sql, st.vars...), false); !strings.Contains(plan, index) && !strings.Contains(plan, "topups_open_created_idx") {
		t.Errorf("custom plan uses no partial index of open payments:\n%s\n%s", st.sql, plan)
	} else {
		for _, walk := range []string{"Seq Scan", "topups_user_idx", "topups_user_created_idx", "topups_user_status_created_idx", "topups_pkey"} {
			if strings.Contains(plan, walk) {
				t.Errorf("custom plan walks %s:\n%s\n%s", walk, st.sql, plan)
			}
		}
	}
	// The generic plan (the arguments unknown), on one connection.
	var lines []string
	err = db.Gorm.Connection(func(tx *gorm.DB) error {
		for _, s := range []string{"SET plan_cache_mode = force_generic_plan", "PREPARE open_for_user AS " + st.sql} {
			if err := tx.Exec(s).Error; err != nil {
				return err
			}
		}
		defer tx.Exec("DEALLOCATE open_for_user")
		defer tx.Exec("RESET plan_cache_mode")
		return tx.Raw("EXPLAIN (COSTS OFF) EXECUTE open_for_user(" + strings.Join(args, ", ") + ")").Scan(&lines).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, index) {
		t.Errorf("generic plan does not use %s:\n%s\n%s", index, st.sql, plan)
	}
}

// TestPageStatementsArePlannedOnce: the statements of the admin list's
// default view and of the wallet page, run again and again on one
// connection (prepared and cached, as the app runs them), are not planned
// again on every execution: PostgreSQL settles on the cached generic plan
// after its five trial custom plans, at once for the statements without
// parameters. A LIMIT sent as a parameter made it re-plan them every time
// (store.literalLimits).
func TestPageStatementsArePlannedOnce(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	seedScale(t, db, 3_000)
	ctx := context.Background()
	var owner struct{ UserID, WalletID int64 }
	if err := db.Gorm.Raw(`SELECT user_id, wallet_id FROM topups ORDER BY id LIMIT 1`).Scan(&owner).Error; err != nil {
		t.Fatal(err)
	}
	const runs = 12
	type prepared struct {
		Statement                 string
		GenericPlans, CustomPlans int64
	}
	var stmts []prepared
	err := db.Gorm.Connection(func(tx *gorm.DB) error {
		one := *db
		one.Gorm = tx
		c := topupread.New(&one)
		wallets := wallet.NewService(&one, nil)
		w, err := wallets.ForUser(ctx, owner.UserID)
		if err != nil {
			return err
		}
		for range runs {
			if _, _, err := c.List(ctx, topupread.Filter{}, nil, topupread.PageSize); err != nil {
				return err
			}
			if _, err := c.StatusCounts(ctx, topupread.Filter{}, topupread.CountCap); err != nil {
				return err
			}
			if _, err := c.OpenForUser(ctx, owner.UserID, 10); err != nil {
				return err
			}
			if _, _, err := wallets.History(ctx, w, 0, 20); err != nil {
				return err
			}
		}
		return tx.Raw(`SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
			WHERE statement LIKE '%topups%' AND generic_plans + custom_plans > 1 AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&stmts).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 4 {
		t.Fatalf("%d prepared statements over payments, want 4: %+v", len(stmts), stmts)
	}
	for _, st := range stmts {
		maxCustom := int64(5) // PostgreSQL's trial custom plans
		if !strings.Contains(st.Statement, "$1") {
			maxCustom = 0 // nothing to bind: the generic plan from the start
		}
		if st.CustomPlans > maxCustom || st.GenericPlans+st.CustomPlans != runs {
			t.Errorf("%d custom plans (want at most %d) and %d generic ones in %d runs of\n%s",
				st.CustomPlans, maxCustom, st.GenericPlans, runs, st.Statement)
		}
	}
}

// BenchmarkAdmin seeds a PostgreSQL table (BENCH_PAYMENTS, default
// 1,000,000 payments, and the bank calls of the last week's payments) once,
// then measures the admin console on it: "list" times every query kind of
// the payment list, "dashboard" every read of GET /admin; each prints its
// p50 and p95 and its statements' EXPLAIN ANALYZE. Use -benchtime Nx: each
// of the N iterations runs every query kind once.
func BenchmarkAdmin(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("BENCH_PAYMENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			b.Fatalf("BENCH_PAYMENTS=%q", v)
		}
	}
	db := storetest.New(b, store.Postgres)
	seedScale(b, db, n)
	seedCalls(b, db)
	b.Run("list", func(b *testing.B) {
		c, cp := capturing(db)
		var kinds []timedKind
		for _, q := range queryKinds(b, db, n) {
			kinds = append(kinds, timedKind{name: q.name, run: func(ctx context.Context) error { return run(ctx, c, q) }})
		}
		timeKinds(b, db, cp, n, kinds)
	})
	b.Run("dashboard", func(b *testing.B) {
		kinds, cp := dashboardKinds(db)
		timeKinds(b, db, cp, n, kinds)
	})
}

// seedCalls records a request and a verify at the bank for each payment of
// the last week (the dashboard's latency reads the last day's), as the
// resilient caller writes them.
func seedCalls(t testing.TB, db *store.DB) {
	t.Helper()
	start := time.Now()
	for _, sql := range []string{
		`INSERT INTO gateway_calls (topup_id, gateway, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome)
		 SELECT p.id, 'zarinpal', op.name, 1, p.created_at + op.after, 40 + (p.id * 7 + op.n * 13) % 400, 200, 100, 'ok'
		 FROM topups p CROSS JOIN (VALUES ('request', interval '0', 1), ('verify', interval '90 seconds', 2)) AS op(name, after, n)
		 WHERE p.created_at >= now() - interval '7 days'`,
		`VACUUM ANALYZE gateway_calls`,
	} {
		if err := db.Gorm.Exec(sql).Error; err != nil {
			t.Fatalf("seed calls: %v\n%s", err, sql)
		}
	}
	var calls int64
	db.Gorm.Raw(`SELECT COUNT(*) FROM gateway_calls`).Scan(&calls)
	t.Logf("seeded %d bank calls in %v", calls, time.Since(start).Round(time.Millisecond))
}

// timedKind is one query kind of a page, timed as a whole.
type timedKind struct {
	name  string
	run   func(ctx context.Context) error
	quiet bool // its plans are printed by the other kinds
}

// timeKinds runs every kind once to warm the cache and print its plans,
// then b.N times, and prints and reports each one's p50 and p95.
func timeKinds(b *testing.B, db *store.DB, cp *sqlCapture, n int, kinds []timedKind) {
	ctx := context.Background()
	times := make([][]time.Duration, len(kinds))
	for _, k := range kinds { // warm the cache once, and print the plans
		cp.take()
		if err := k.run(ctx); err != nil {
			b.Fatal(err)
		}
		for _, sql := range cp.take() {
			switch {
			case k.quiet:
			case strings.HasPrefix(sql, "EXPLAIN"): // the totals' estimate: planning only
				fmt.Printf("\n=== %s\n%s\n(statistics only, not run)\n", k.name, sql)
			default:
				fmt.Printf("\n=== %s\n%s\n%s\n", k.name, sql, explain(b, db, sql, true))
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		for i, k := range kinds {
			start := time.Now()
			if err := k.run(ctx); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	b.StopTimer()
	fmt.Printf("\n%d payments, %d runs of each query kind:\n%-40s %10s %10s\n", n, b.N, "query", "p50", "p95")
	worst := time.Duration(0)
	for i, k := range kinds {
		ts := times[i]
		sort.Slice(ts, func(a, z int) bool { return ts[a] < ts[z] })
		p50, p95 := ts[len(ts)/2], ts[(len(ts)*95+99)/100-1]
		worst = max(worst, p95)
		fmt.Printf("%-40s %10s %10s\n", k.name, p50.Round(10*time.Microsecond), p95.Round(10*time.Microsecond))
		b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms/"+strings.NewReplacer(" ", "_", ":", "", "(", "", ")", "", ",", "").Replace(k.name))
	}
	fmt.Printf("worst p95: %v\n", worst)
}

// dashboardKinds are the reads of GET /admin (web.adminPage: Reader.
// Dashboard), each alone and all of them together, on a reader whose
// statements land in the capture.
func dashboardKinds(db *store.DB) ([]timedKind, *sqlCapture) {
	c, cp := capturing(db)
	const grace = 10 * time.Minute
	kinds := []timedKind{
		{name: "totals by status", run: func(ctx context.Context) error { _, err := c.Totals(ctx); return err }},
		{name: "unresolved payments", run: func(ctx context.Context) error { _, err := c.Unresolved(ctx, 200); return err }},
		{name: "top-ups by hour", run: func(ctx context.Context) error { _, err := c.TopUpsByHour(ctx, time.Now()); return err }},
		{name: "bank latency", run: func(ctx context.Context) error { _, err := c.BankLatency(ctx, time.Now()); return err }},
		{name: "worker backlog", run: func(ctx context.Context) error { _, err := c.WorkerBacklog(ctx, time.Now(), grace); return err }},
		{name: "latest reconciliations", run: func(ctx context.Context) error { _, err := c.Reconciles(ctx, 5); return err }},
		{name: "the whole dashboard", run: func(ctx context.Context) error { _, err := c.Dashboard(ctx, time.Now(), grace); return err }, quiet: true},
	}
	return kinds, cp
}

// TestFragmentReadsEachPersonsKeysFromTheIndex: a search by part of an
// e-mail address reads each matching person's page as keys only
// (created_at, id), which the index (user_id, created_at, id) answers
// without the rows, and reads whole rows only for the page it shows.
// With every scan but the index-only one disabled, that read still is an
// index-only scan of topups_user_created_idx; a LATERAL that took whole
// rows (each a heap page: at 10M, 5,753 pages for one page of 50,
// docs/benchmarks.md) could not be. The first page, a page after it and
// the oldest-first order are checked, and the pages are the newest
// (oldest) top-ups of the matching people in order.
func TestFragmentReadsEachPersonsKeysFromTheIndex(t *testing.T) {
	keysOnlyRE := regexp.MustCompile(`Index Only Scan (Backward )?using topups_user_created_idx on topups\b`)
	db := storetest.New(t, store.Postgres)
	seedScale(t, db, 30_000)
	c, cp := capturing(db)
	ctx := context.Background()
	const frag = "user12" // user12, user120..user129, user1200.. : a few dozen people
	first, next, err := c.List(ctx, topupread.Filter{Query: frag}, nil, topupread.PageSize)
	if err != nil || next == nil || len(first) != topupread.PageSize {
		t.Fatalf("first page: %d rows, next %v, %v", len(first), next, err)
	}
	second, _, err := c.List(ctx, topupread.Filter{Query: frag}, next, topupread.PageSize)
	if err != nil || len(second) == 0 {
		t.Fatalf("second page: %d rows, %v", len(second), err)
	}
	oldest, _, err := c.List(ctx, topupread.Filter{Query: frag, Oldest: true}, nil, topupread.PageSize)
	if err != nil || len(oldest) != topupread.PageSize {
		t.Fatalf("oldest first: %d rows, %v", len(oldest), err)
	}
	// The pages against the same rows read plainly.
	want := func(order string, offset int) []int64 {
		var ids []int64
		if err := db.Gorm.Raw(`SELECT p.id FROM topups p JOIN users u ON u.id = p.user_id WHERE lower(u.email) LIKE ? ORDER BY `+order+` LIMIT ? OFFSET ?`,
			"%"+frag+"%", topupread.PageSize, offset).Scan(&ids).Error; err != nil {
			t.Fatal(err)
		}
		return ids
	}
	for _, pg := range []struct {
		name string
		got  []topupread.TopUp
		want []int64
	}{
		{"first page", first, want("p.created_at DESC, p.id DESC", 0)},
		{"second page", second, want("p.created_at DESC, p.id DESC", topupread.PageSize)},
		{"oldest first", oldest, want("p.created_at ASC, p.id ASC", 0)},
	} {
		got := make([]int64, len(pg.got))
		for i, r := range pg.got {
			got[i] = r.ID
			if !strings.Contains(r.Email, frag) {
				t.Errorf("%s: %s does not contain %q", pg.name, r.Email, frag)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(pg.want) {
			t.Errorf("%s: ids %v, want %v", pg.name, got, pg.want)
		}
	}
	lateral := 0
	for _, sql := range cp.take() {
		if !strings.Contains(sql, "LATERAL") {
			continue
		}
		lateral++
		plan := indexOnlyPlan(t, db, sql)
		if !keysOnlyRE.MatchString(plan) {
			t.Errorf("each person's page is not read from the index alone:\n%s\n%s", sql, plan)
		}
	}
	if lateral != 3 {
		t.Errorf("%d statements with LATERAL captured, want one per page (3)", lateral)
	}
}

// indexOnlyPlan is sql's plan with only index-only scans allowed (every
// other scan off, on one connection, reset after).
func indexOnlyPlan(t *testing.T, db *store.DB, sql string) string {
	t.Helper()
	var lines []string
	err := db.Gorm.Connection(func(tx *gorm.DB) error {
		for _, set := range []string{"SET enable_seqscan = off", "SET enable_indexscan = off", "SET enable_bitmapscan = off"} {
			if err := tx.Exec(set).Error; err != nil {
				return err
			}
		}
		defer tx.Exec("RESET ALL")
		return tx.Raw("EXPLAIN (COSTS OFF) " + sql).Scan(&lines).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
