package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// schema is a tiny raw-SQL fixture builder over a fresh database.
type schema struct {
	t   *testing.T
	db  *store.DB
	now time.Time
	seq int
}

func (s *schema) id(sql string, args ...any) int64 {
	s.t.Helper()
	var id int64
	if err := s.db.Gorm.Raw(sql+" RETURNING id", args...).Scan(&id).Error; err != nil {
		s.t.Fatalf("%s: %v", sql, err)
	}
	if id == 0 {
		s.t.Fatalf("%s: no id returned", sql)
	}
	return id
}

func (s *schema) user(email string) int64 {
	s.t.Helper()
	return s.id(`INSERT INTO users (email, password_hash, created_at) VALUES (?, 'x', ?)`, email, s.now)
}

func (s *schema) wallet(userID int64) int64 {
	s.t.Helper()
	id := s.id(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?)`, userID, s.now, s.now)
	s.id(`INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, created_at, updated_at)
		VALUES ('wallet', ?, ?, ?, FALSE, ?, ?)`, fmt.Sprintf("wallet:%d", id), id, userID, s.now, s.now)
	return id
}

// payment inserts an awaiting_payment payment with a fresh public id and
// form token.
func (s *schema) topUp(userID, walletID int64, authority *string) int64 {
	s.t.Helper()
	s.seq++
	return s.id(`INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, status, created_at, updated_at)
		VALUES (?, ?, ?, 10000, 'sandbox', ?, ?, 'awaiting_payment', ?, ?)`,
		fmt.Sprintf("pub%021d", s.seq), userID, walletID, fmt.Sprintf("tok%019d", s.seq), authority, s.now, s.now)
}

// exec runs a statement that must fail.
func (s *schema) exec(sql string, args ...any) error {
	s.t.Helper()
	return s.db.Gorm.Exec(sql, args...).Error
}

func (s *schema) count(sql string, args ...any) int64 {
	s.t.Helper()
	var n int64
	if err := s.db.Gorm.Raw(sql, args...).Scan(&n).Error; err != nil {
		s.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

type violation int

const (
	unique violation = iota
	check
	foreignKey // any error
	none       // must succeed
)

func (v violation) String() string {
	return [...]string{"unique violation", "CHECK violation", "foreign-key error", "success"}[v]
}

func expect(t *testing.T, what string, err error, want violation) {
	t.Helper()
	switch want {
	case unique:
		if !store.IsUniqueViolation(err) {
			t.Errorf("%s: got %v, want a unique violation", what, err)
		}
	case check:
		if !store.IsCheckViolation(err) {
			t.Errorf("%s: got %v, want a CHECK violation", what, err)
		}
	case foreignKey:
		if err == nil {
			t.Errorf("%s: no error, want a foreign-key error", what)
		}
	case none:
		if err != nil {
			t.Errorf("%s: %v, want success", what, err)
		}
	}
}

// TestSchemaConstraints writes rows with raw SQL on purpose, statuses
// included (a credited payment without its ledger entry, statuses without
// their payment_events rows): it tests what the database itself refuses,
// whatever the code above it does, so it cannot go through the state
// machine or topuptest.ForceStatus, and topuptest.CheckInvariants (which
// such rows break by design) is not run on it.
func TestSchemaConstraints(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := &schema{t: t, db: db, now: time.Now().UTC()}
		alice := s.user("alice@example.com")
		bob := s.user("bob@example.com")
		aw := s.wallet(alice)
		bw := s.wallet(bob)
		p1 := s.topUp(alice, aw, ptr("S0001"))
		s.topUp(alice, aw, nil) // a payment without authority yet
		const insTopUp = `INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, ref_id, verified_amount_rials, status, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
		const insTx = `INSERT INTO ledger_transactions (kind, reference, topup_id, reverses_id, created_at) VALUES (?, ?, ?, ?, ?)`
		const insPostings = `INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)`
		const insPosting = `INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES (?, ?, ?, ?, ?)`
		now := s.now
		account := func(code string) int64 { return s.count(`SELECT id FROM ledger_accounts WHERE code = ?`, code) }
		gw, awAcc, bwAcc := account("gateway:zarinpal"), account(fmt.Sprintf("wallet:%d", aw)), account(fmt.Sprintf("wallet:%d", bw))
		t1 := s.id(insTx, "topup", "pub-t1", p1, nil, now)
		if err := s.exec(insPostings, t1, gw, -10000, -10000, now, t1, awAcc, 10000, 10000, now); err != nil {
			t.Fatalf("a balanced transaction: %v", err)
		}
		t2 := s.id(insTx, "adjustment", "adj-unbalanced", nil, nil, now)
		// PostgreSQL's trigger refuses a statement that leaves a
		// transaction's postings not summing to zero (migration 00041);
		// SQLite has none (the store checks it, and so does kifpool
		// check).
		unbalanced := none
		if db.Dialect == store.Postgres {
			unbalanced = check
		}

		tests := []struct {
			name string
			sql  string
			args []any
			want violation
		}{
			// users
			{"users: same email", `INSERT INTO users (email, password_hash, created_at) VALUES (?, 'x', ?)`,
				[]any{"alice@example.com", now}, unique},
			{"users: email differing only in case", `INSERT INTO users (email, password_hash, created_at) VALUES (?, 'x', ?)`,
				[]any{"Alice@Example.COM", now}, unique},
			{"users: unknown role", `INSERT INTO users (email, password_hash, role, created_at) VALUES (?, 'x', 'root', ?)`,
				[]any{"carol@example.com", now}, check},
			// wallets and their accounts
			{"wallets: second wallet of a user", `INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?)`,
				[]any{alice, now, now}, unique},
			{"wallets: unknown user", `INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?)`,
				[]any{999999, now, now}, foreignKey},
			// payments
			{"payments: same form token of a user", insTopUp,
				[]any{"pubX1", alice, aw, 10000, "sandbox", "tok0000000000000000001", nil, nil, nil, "created", now, now}, unique},
			{"payments: same form token of another user", insTopUp,
				[]any{"pubX2", bob, bw, 10000, "sandbox", "tok0000000000000000001", nil, nil, nil, "created", now, now}, none},
			{"payments: same public id", insTopUp,
				[]any{"pub000000000000000000001", bob, bw, 10000, "sandbox", "tokX3", nil, nil, nil, "created", now, now}, unique},
			{"payments: same authority on the same gateway", insTopUp,
				[]any{"pubX4", bob, bw, 10000, "sandbox", "tokX4", "S0001", nil, nil, "awaiting_payment", now, now}, unique},
			{"payments: same authority on another gateway", insTopUp,
				[]any{"pubX5", bob, bw, 10000, "zarinpal", "tokX5", "S0001", nil, nil, "awaiting_payment", now, now}, none},
			{"payments: a second NULL authority", insTopUp,
				[]any{"pubX6", alice, aw, 10000, "sandbox", "tokX6", nil, nil, nil, "created", now, now}, none},
			{"payments: first credited with ref_id 42", insTopUp,
				[]any{"pubX7", alice, aw, 10000, "sandbox", "tokX7", "S0007", 42, 10000, "credited", now, now}, none},
			{"payments: same ref_id on the same gateway", insTopUp,
				[]any{"pubX8", bob, bw, 10000, "sandbox", "tokX8", "S0008", 42, 10000, "credited", now, now}, unique},
			{"payments: same ref_id, not credited, same gateway", insTopUp,
				[]any{"pubX9", bob, bw, 10000, "sandbox", "tokX9", "S0009", 42, nil, "needs_review", now, now}, unique},
			{"payments: same ref_id on another gateway", insTopUp,
				[]any{"pubX10", bob, bw, 10000, "zarinpal", "tokX10", "S0010", 42, 10000, "credited", now, now}, none},
			{"payments: zero amount", insTopUp,
				[]any{"pubX11", alice, aw, 0, "sandbox", "tokX11", nil, nil, nil, "created", now, now}, check},
			{"payments: negative amount", insTopUp,
				[]any{"pubX12", alice, aw, -10000, "sandbox", "tokX12", nil, nil, nil, "created", now, now}, check},
			{"payments: unknown status", insTopUp,
				[]any{"pubX13", alice, aw, 10000, "sandbox", "tokX13", nil, nil, nil, "paid", now, now}, check},
			{"payments: credited without ref_id", insTopUp,
				[]any{"pubX14", alice, aw, 10000, "sandbox", "tokX14", "S0014", nil, 10000, "credited", now, now}, check},
			{"payments: credited without verified amount", insTopUp,
				[]any{"pubX15", alice, aw, 10000, "sandbox", "tokX15", "S0015", 4242, nil, "credited", now, now}, check},
			{"payments: update to credited without ref_id", `UPDATE topups SET status = 'credited', verified_amount_rials = 10000 WHERE id = ?`,
				[]any{p1}, check},
			{"payments: unknown user", insTopUp,
				[]any{"pubX16", 999999, aw, 10000, "sandbox", "tokX16", nil, nil, nil, "created", now, now}, foreignKey},
			{"payments: unknown wallet", insTopUp,
				[]any{"pubX17", alice, 999999, 10000, "sandbox", "tokX17", nil, nil, nil, "created", now, now}, foreignKey},
			// the ledger
			{"ledger: second account of a wallet", `INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, created_at, updated_at)
				VALUES ('wallet', 'wallet:x', ?, ?, FALSE, ?, ?)`, []any{aw, alice, now, now}, unique},
			{"ledger: same account code", `INSERT INTO ledger_accounts (kind, code, may_go_negative, created_at, updated_at)
				VALUES ('suspense', 'suspense', FALSE, ?, ?)`, []any{now, now}, unique},
			{"ledger: unknown account kind", `INSERT INTO ledger_accounts (kind, code, may_go_negative, created_at, updated_at)
				VALUES ('bonus', 'bonus', FALSE, ?, ?)`, []any{now, now}, check},
			{"ledger: a wallet allowed below zero", `UPDATE ledger_accounts SET may_go_negative = TRUE WHERE id = ?`, []any{awAcc}, check},
			{"ledger: a gateway not allowed below zero", `UPDATE ledger_accounts SET may_go_negative = FALSE WHERE id = ?`, []any{gw}, check},
			{"ledger: a wallet below zero", `UPDATE ledger_accounts SET posted_rials = -1 WHERE id = ?`, []any{bwAcc}, check},
			{"ledger: held beyond the balance", `UPDATE ledger_accounts SET held_rials = 10001 WHERE id = ?`, []any{awAcc}, check},
			{"ledger: a gateway below zero", `UPDATE ledger_accounts SET posted_rials = -10000 WHERE id = ?`, []any{gw}, none},
			{"ledger: second top-up transaction of a payment", insTx, []any{"topup", "pub-t1", p1, nil, now}, unique},
			{"ledger: unknown transaction kind", insTx, []any{"gift", "g1", nil, nil, now}, check},
			{"ledger: top-up without its payment", insTx, []any{"topup", "pub-none", nil, nil, now}, check},
			{"ledger: reversal naming no original", insTx, []any{"reversal", "rev-none", nil, nil, now}, check},
			{"ledger: first reversal", insTx, []any{"reversal", "reversal:1", nil, t1, now}, none},
			{"ledger: second reversal of one original", insTx, []any{"reversal", "reversal:1b", nil, t1, now}, unique},
			{"ledger: zero posting", insPostings, []any{t2, gw, 0, 0, now, t2, awAcc, 0, 0, now}, check},
			{"ledger: a posting alone", insPosting, []any{t2, awAcc, 5, 5, now}, unbalanced},
			{"ledger: a second posting of one account in a transaction", insPosting, []any{t1, awAcc, 1, 1, now}, unique},
			{"ledger: a posting changed", `UPDATE ledger_postings SET amount_rials = 20000 WHERE transaction_id = ? AND account_id = ?`, []any{t1, awAcc}, check},
			{"ledger: a posting deleted", `DELETE FROM ledger_postings WHERE transaction_id = ?`, []any{t1}, check},
			{"ledger: a transaction changed", `UPDATE ledger_transactions SET reference = 'other' WHERE id = ?`, []any{t1}, check},
			{"ledger: a transaction deleted", `DELETE FROM ledger_transactions WHERE id = ?`, []any{t1}, check},
			{"ledger: a captured hold without its transaction", `INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, captured_rials, expires_at, created_at, ended_at)
				VALUES (?, 100, 'charge', 'h1', 'captured', 100, ?, ?, ?)`, []any{awAcc, now, now, now}, check},
			{"ledger: an open hold that ended", `INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, expires_at, created_at, ended_at)
				VALUES (?, 100, 'charge', 'h2', 'open', ?, ?, ?)`, []any{awAcc, now, now, now}, check},
			{"ledger: a hold of nothing", `INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, expires_at, created_at)
				VALUES (?, 0, 'charge', 'h3', 'open', ?, ?)`, []any{awAcc, now, now}, check},
		}
		if db.Dialect == store.Postgres {
			// The check is per statement (00041): each transaction a
			// statement gives postings to is checked whole, the rows
			// before the statement included; on SQLite the store's read
			// back does it, and these rows would stay.
			const ins3 = `INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)`
			tests = append(tests, []struct {
				name string
				sql  string
				args []any
				want violation
			}{
				{"ledger: a posting added to a balanced transaction", insPosting, []any{t1, bwAcc, 5, 5, now}, check},
				{"ledger: a balanced and an unbalanced transaction in one statement", ins3,
					[]any{t2, gw, -5, -5, now, t2, awAcc, 5, 5, now, s.id(insTx, "adjustment", "adj-one-leg", nil, nil, now), bwAcc, 5, 5, now}, check},
			}...)
		}
		for _, tt := range tests {
			expect(t, tt.name, s.exec(tt.sql, tt.args...), tt.want)
		}

		// The refused statements left nothing behind.
		for _, c := range []struct {
			sql  string
			want int64
		}{
			{`SELECT COUNT(*) FROM users`, 2},
			{`SELECT COUNT(*) FROM wallets`, 2},
			{`SELECT COUNT(*) FROM ledger_accounts WHERE kind = 'wallet' AND (posted_rials <> 0 OR held_rials <> 0) AND id <> ` + fmt.Sprint(awAcc), 0},
			{`SELECT COUNT(*) FROM ledger_postings WHERE transaction_id = ` + fmt.Sprint(t1), 2},
			{`SELECT COUNT(*) FROM topups WHERE authority IS NULL`, 3}, // 1 + pubX2 + pubX6
			{`SELECT COUNT(*) FROM topups WHERE ref_id = 42`, 2},
			{`SELECT COUNT(*) FROM topups WHERE status = 'credited'`, 2},
			{`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'topup'`, 1},
			{`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'reversal'`, 1},
		} {
			if got := s.count(c.sql); got != c.want {
				t.Errorf("%s = %d, want %d", c.sql, got, c.want)
			}
		}
	})
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		url     string
		dialect store.Dialect
		dsn     string
		wantErr bool
	}{
		{"", store.SQLite, store.DefaultSQLitePath, false},
		{"sqlite:/tmp/x.db", store.SQLite, "/tmp/x.db", false},
		{"sqlite:./data/k.db", store.SQLite, "./data/k.db", false},
		{"sqlite://rel.db", store.SQLite, "rel.db", false},
		{"sqlite:///abs/x.db", store.SQLite, "/abs/x.db", false},
		{"postgres://u@h:5432/db?sslmode=disable", store.Postgres, "postgres://u@h:5432/db?sslmode=disable", false},
		{"postgresql://u:p@h/db", store.Postgres, "postgresql://u:p@h/db", false},
		{"mysql://u@h/db", "", "", true},
		{"sqlite:", "", "", true},
		{"sqlite://", "", "", true},
		{"/tmp/x.db", "", "", true},
		{"postgres:/h/db", "", "", true},
	}
	for _, tt := range tests {
		d, dsn, err := store.ParseURL(tt.url)
		if (err != nil) != tt.wantErr || d != tt.dialect || dsn != tt.dsn {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q, error %v", tt.url, d, dsn, err, tt.dialect, tt.dsn, tt.wantErr)
		}
	}
}

// The SQLite database (and the -wal/-shm files SQLite adds beside it) are
// readable by their owner only: they hold password hashes and sessions.
func TestSQLiteFileIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "kifpool.db")
	db, err := store.Open(context.Background(), "sqlite:"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s mode = %o, want 600", filepath.Base(f), perm)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("database folder mode = %v (%v), want 700", fi.Mode().Perm(), err)
	}
}

func TestMigrateTwiceIsNoop(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := &schema{t: t, db: db, now: time.Now().UTC()}
		uid := s.user("keep@example.com")
		s.wallet(uid)
		version := func() (v int64, rows int64) {
			v = s.count(`SELECT MAX(version_id) FROM goose_db_version`)
			rows = s.count(`SELECT COUNT(*) FROM goose_db_version`)
			return
		}
		v1, n1 := version()
		if v1 < 1 {
			t.Fatalf("schema version %d after migrate", v1)
		}
		for i := range 2 {
			if err := db.Migrate(context.Background(), nil); err != nil {
				t.Fatalf("migrate again (%d): %v", i+1, err)
			}
		}
		if v2, n2 := version(); v2 != v1 || n2 != n1 {
			t.Errorf("version %d (%d rows) became %d (%d rows)", v1, n1, v2, n2)
		}
		if got := s.count(`SELECT COUNT(*) FROM users WHERE email = 'keep@example.com'`); got != 1 {
			t.Errorf("data lost on re-migrate: %d users", got)
		}
		if got := s.count(`SELECT COUNT(*) FROM wallets`); got != 1 {
			t.Errorf("data lost on re-migrate: %d wallets", got)
		}
	})
}
