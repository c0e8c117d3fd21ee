package integrity_test

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/migrations"
)

// The upgrade drill: a database at every earlier migration, filled with
// the data that version's schema holds (users, sessions, a wallet credited
// twice with its ledger and verify calls, failed, under-review and waiting
// payments, and each later table as it appears), migrates to the latest
// the way serve does and then passes every rule of `kifpool check`, with
// every row and balance still there.
func TestUpgradeFromEveryVersion(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			latest := latestVersion(t, d)
			if latest < 2 {
				t.Fatalf("latest migration %d", latest)
			}
			for v := int64(1); v < latest; v++ {
				t.Run(fmt.Sprintf("from_%05d", v), func(t *testing.T) {
					ctx := context.Background()
					db, _ := openAt(t, d, v)
					now := time.Now()
					fillAt(t, db, v, now)
					counts := tableCounts(t, db, v)
					if err := db.Migrate(ctx, nil, store.PerSchemaLock()); err != nil {
						t.Fatalf("migrate %d → latest: %v", v, err)
					}
					st, err := db.Migrations(ctx)
					if err != nil || st.Pending || st.Current != latest {
						t.Fatalf("after the upgrade: %+v %v", st, err)
					}
					rep, err := integrity.Check(ctx, db, integrity.Options{Now: now, CreatedDeadline: 5 * time.Minute, OpenDeadline: 3 * time.Hour})
					if err != nil {
						t.Fatal(err)
					}
					if !rep.OK() {
						t.Fatalf("check after upgrading from %d: %v", v, rep.Violations())
					}
					for tbl, n := range counts {
						if got := tableCounts(t, db, latest)[tbl]; got != n {
							t.Errorf("%s: %d rows after the upgrade, %d before", tbl, got, n)
						}
					}
					var balance int64
					db.Gorm.Raw(`SELECT posted_rials FROM ledger_accounts WHERE wallet_id = 1`).Scan(&balance)
					if balance != 150000 {
						t.Errorf("balance %d after the upgrade, want 150000", balance)
					}
					// Every history row is still there, with its balance after.
					var after []int64
					db.Gorm.Raw(`SELECT lp.balance_after_rials FROM ledger_postings lp JOIN ledger_accounts a ON a.id = lp.account_id
						WHERE a.wallet_id = 1 ORDER BY lp.id`).Scan(&after)
					if len(after) != 2 || after[0] != 100000 || after[1] != 150000 {
						t.Errorf("the wallet's history after the upgrade: balances after %v, want [100000 150000]", after)
					}
				})
			}
		})
	}
}

func provider(t *testing.T, db *store.DB) *goose.Provider {
	t.Helper()
	fsys, err := migrations.FS(string(db.Dialect))
	if err != nil {
		t.Fatal(err)
	}
	gd := goose.DialectSQLite3
	if db.Dialect == store.Postgres {
		gd = goose.DialectPostgres // a schema of the test's own: no lock needed
	}
	p, err := goose.NewProvider(gd, db.SQL(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// openAt opens a database of its own of dialect d, migrated up to
// version v, closed when the test ends; p migrates it further.
func openAt(t *testing.T, d store.Dialect, v int64) (db *store.DB, p *goose.Provider) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.URL(t, d), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	p = provider(t, db)
	if _, err := p.UpTo(ctx, v); err != nil {
		t.Fatalf("migrate up to %d: %v", v, err)
	}
	return db, p
}

func latestVersion(t *testing.T, d store.Dialect) int64 {
	t.Helper()
	fsys, err := migrations.FS(string(d))
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("migrations: %v %v", names, err)
	}
	var latest int64
	for _, n := range names {
		v, err := strconv.ParseInt(strings.SplitN(n, "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", n, err)
		}
		latest = max(latest, v)
	}
	return latest
}

func tableCounts(t *testing.T, db *store.DB, v int64) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, tbl := range []string{"users", "sessions", "wallets", "topups", "gateway_calls"} {
		var n int64
		name := tbl
		if tbl == "topups" && v < topupNamesVersion {
			name = "payments"
		}
		if err := db.Gorm.Raw(`SELECT COUNT(*) FROM ` + name).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		out[tbl] = n
	}
	// The credits: ledger_entries before 00019, top-up transactions after.
	var n int64
	credits := `SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'topup'`
	if v < ledgerVersion {
		credits = `SELECT COUNT(*) FROM ledger_entries`
	}
	if err := db.Gorm.Raw(credits).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	out["credits"] = n
	return out
}

// ledgerVersion is the migration that moved balances onto the ledger
// (00019: ledger_entries and wallets.balance_rials became ledger_*).
const ledgerVersion = 19

// topupNamesVersion is the migration that renamed payments to topups
// (00023): the fill of an earlier version writes the old names.
const topupNamesVersion = 23

// fillAt writes data into a database at migration v, using only what that
// version's schema has, as the release of that version wrote it.
func fillAt(t *testing.T, db *store.DB, v int64, now time.Time) {
	t.Helper()
	ago := func(d time.Duration) time.Time { return now.Add(-d).UTC() }
	// The fill is written in the old names; from 00023 on (a later
	// migration makes 00023 a version to upgrade from) in the new.
	renamed := strings.NewReplacer("payment_events", "topup_events", "dismissed_payments", "dismissed_topups",
		"payments", "topups", "payment_id", "topup_id")
	x := func(sql string, args ...any) {
		t.Helper()
		if v >= topupNamesVersion {
			sql = renamed.Replace(sql)
		}
		if err := db.Gorm.Exec(sql, args...).Error; err != nil {
			t.Fatalf("fill at %d: %s: %v", v, sql, err)
		}
	}
	x(`INSERT INTO users (id, email, password_hash, role, locale, created_at) VALUES (1, 'sara@example.com', 'h', 'user', 'fa', ?)`, ago(time.Hour))
	x(`INSERT INTO users (id, email, password_hash, role, locale, created_at) VALUES (2, 'admin@example.com', 'h', 'admin', 'en', ?)`, ago(time.Hour))
	x(`INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ('s1', 1, ?, ?)`, ago(time.Hour), now.Add(time.Hour).UTC())
	if v < ledgerVersion {
		x(`INSERT INTO wallets (id, user_id, balance_rials, created_at, updated_at) VALUES (1, 1, 150000, ?, ?)`, ago(time.Hour), ago(time.Minute))
		x(`INSERT INTO wallets (id, user_id, balance_rials, created_at, updated_at) VALUES (2, 2, 0, ?, ?)`, ago(time.Hour), ago(time.Hour))
	} else {
		x(`INSERT INTO wallets (id, user_id, created_at, updated_at) VALUES (1, 1, ?, ?)`, ago(time.Hour), ago(time.Minute))
		x(`INSERT INTO wallets (id, user_id, created_at, updated_at) VALUES (2, 2, ?, ?)`, ago(time.Hour), ago(time.Hour))
		x(`INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, posted_rials, created_at, updated_at)
			VALUES ('wallet', 'wallet:1', 1, 1, FALSE, 150000, ?, ?), ('wallet', 'wallet:2', 2, 2, FALSE, 0, ?, ?)`,
			ago(time.Hour), ago(time.Minute), ago(time.Hour), ago(time.Hour))
		x(`UPDATE ledger_accounts SET posted_rials = -150000 WHERE code = 'gateway:zarinpal'`)
	}
	type pay struct {
		id           int64
		status       string
		amount       int64
		ref          any
		chain        []string
		created, end time.Time
	}
	pays := []pay{
		{1, "credited", 100000, int64(9001), []string{"created", "awaiting_payment", "credited"}, ago(50 * time.Minute), ago(49 * time.Minute)},
		{2, "credited", 50000, int64(9002), []string{"created", "awaiting_payment", "pending_verification", "credited"}, ago(40 * time.Minute), ago(30 * time.Minute)},
		{3, "failed", 70000, nil, []string{"created", "awaiting_payment", "failed"}, ago(30 * time.Minute), ago(29 * time.Minute)},
		{4, "needs_review", 20000, nil, []string{"created", "awaiting_payment", "pending_verification", "needs_review"}, ago(25 * time.Minute), ago(5 * time.Minute)},
		{5, "awaiting_payment", 30000, nil, []string{"created", "awaiting_payment"}, ago(time.Minute), time.Time{}},
	}
	for _, p := range pays {
		var verified, resolved any
		if p.status == "credited" {
			verified = p.amount
		}
		if !p.end.IsZero() {
			resolved = p.end
		}
		x(`INSERT INTO payments (id, public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, ref_id, verified_amount_rials,
			status, created_at, updated_at, resolved_at) VALUES (?, ?, 1, 1, ?, 'zarinpal', ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.id, fmt.Sprintf("pub%d", p.id), p.amount, fmt.Sprintf("form%d", p.id), fmt.Sprintf("A%035d", p.id), p.ref, verified, p.status,
			p.created, p.created, resolved)
		x(`INSERT INTO gateway_calls (payment_id, gateway, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome)
			VALUES (?, 'zarinpal', 'request', 1, ?, 40, 200, 100, 'ok')`, p.id, p.created)
		if p.status == "credited" {
			x(`INSERT INTO gateway_calls (payment_id, gateway, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome)
				VALUES (?, 'zarinpal', 'verify', 1, ?, 40, 200, 100, 'paid')`, p.id, p.end)
		}
		if v >= 4 { // the state machine's log exists from 00004 on
			for i := 1; i < len(p.chain); i++ {
				x(`INSERT INTO payment_events (payment_id, from_status, to_status, actor, created_at) VALUES (?, ?, ?, 'callback', ?)`,
					p.id, p.chain[i-1], p.chain[i], p.created)
			}
			x(`UPDATE payments SET opened_at = created_at WHERE id = ?`, p.id)
		}
	}
	if v < ledgerVersion {
		x(`INSERT INTO ledger_entries (wallet_id, payment_id, amount_rials, balance_after, kind, created_at) VALUES (1, 1, 100000, 100000, 'topup', ?)`, ago(49*time.Minute))
		x(`INSERT INTO ledger_entries (wallet_id, payment_id, amount_rials, balance_after, kind, created_at) VALUES (1, 2, 50000, 150000, 'topup', ?)`, ago(30*time.Minute))
	} else {
		x(`INSERT INTO ledger_transactions (id, kind, reference, payment_id, created_at) VALUES (1, 'topup', 'pub1', 1, ?), (2, 'topup', 'pub2', 2, ?)`,
			ago(49*time.Minute), ago(30*time.Minute))
		for _, l := range []struct{ tx, gw, gwAfter, wallet, walletAfter int64 }{{1, -100000, -100000, 100000, 100000}, {2, -50000, -150000, 50000, 150000}} {
			x(`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
				(?, (SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal'), ?, ?, ?), (?, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), ?, ?, ?)`,
				l.tx, l.gw, l.gwAfter, ago(time.Minute), l.tx, l.wallet, l.walletAfter, ago(time.Minute))
		}
	}
	if v >= 2 {
		x(`INSERT INTO reconcile_reports (gateway, started_at, finished_at, listed, ours, credited) VALUES ('zarinpal', ?, ?, 1, 1, 1)`, ago(31*time.Minute), ago(30*time.Minute))
	}
	if v >= 3 {
		x(`INSERT INTO admin_actions (payment_id, admin_id, action, note, from_status, to_status, created_at) VALUES (4, 2, 'recheck', '', 'needs_review', 'needs_review', ?)`, ago(4*time.Minute))
	}
	if v >= 5 {
		x(`INSERT INTO auth_throttles (key, failures, locked_until, updated_at) VALUES ('signin:sara@example.com', 2, ?, ?)`, ago(time.Minute), ago(time.Minute))
		x(`INSERT INTO recovery_codes (user_id, code_hash, created_at) VALUES (2, 'rc', ?)`, ago(time.Hour))
	}
	if v >= 6 {
		x(`INSERT INTO api_tokens (user_id, name, token_hash, prefix, scope, created_at) VALUES (1, 'shop', 'th', 'kp_abc', 'topup', ?)`, ago(time.Hour))
		x(`INSERT INTO idempotency_keys (user_id, idempotency_key, request_method, request_path, fingerprint, response_status, response_body, payment_id, created_at, finished_at)
			VALUES (1, 'k1', 'POST', '/api/v1/topups', 'fp', 201, '{}', 5, ?, ?)`, ago(time.Minute), ago(time.Minute))
	}
	if db.Dialect == store.Postgres {
		tables := []string{"users", "wallets", "payments"}
		if v >= topupNamesVersion {
			tables[2] = "topups"
		}
		if v >= ledgerVersion {
			tables = append(tables, "ledger_transactions")
		}
		for _, tbl := range tables {
			x(`SELECT setval(pg_get_serial_sequence('` + tbl + `', 'id'), 100)`)
		}
	}
}
