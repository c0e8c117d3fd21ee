package integrity_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// seed writes a healthy history as the app writes it: a user whose wallet
// holds two credited top-ups (events, ledger, verify calls), a failed
// payment, a payment waiting at the bank since a minute ago and one
// created just now.
func seed(t *testing.T, db *store.DB, now time.Time) {
	t.Helper()
	ago := func(d time.Duration) time.Time { return now.Add(-d).UTC() }
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO users (id, email, password_hash, role, locale, created_at) VALUES (1, 'sara@example.com', 'x', 'user', 'fa', ?)`, []any{ago(time.Hour)}},
		{`INSERT INTO wallets (id, user_id, created_at, updated_at) VALUES (1, 1, ?, ?)`, []any{ago(time.Hour), ago(time.Hour)}},
	}
	type pay struct {
		id     int64
		public string
		amount int64
		status string
		ref    any
		chain  []string
		opened time.Time
	}
	pays := []pay{
		{1, "p_credited1", 100000, "credited", int64(501), []string{"created", "awaiting_payment", "credited"}, ago(50 * time.Minute)},
		{2, "p_credited2", 50000, "credited", int64(502), []string{"created", "awaiting_payment", "pending_verification", "credited"}, ago(40 * time.Minute)},
		{3, "p_failed", 70000, "failed", nil, []string{"created", "awaiting_payment", "failed"}, ago(30 * time.Minute)},
		{4, "p_waiting", 80000, "awaiting_payment", nil, []string{"created", "awaiting_payment"}, ago(time.Minute)},
		{5, "p_created", 90000, "created", nil, []string{"created"}, ago(time.Second)},
	}
	for _, p := range pays {
		var verified any
		if p.status == "credited" {
			verified = p.amount
		}
		stmts = append(stmts, struct {
			sql  string
			args []any
		}{`INSERT INTO topups (id, public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, ref_id, verified_amount_rials,
			status, created_at, updated_at, opened_at) VALUES (?, ?, 1, 1, ?, 'zarinpal', ?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{p.id, p.public, p.amount, "form-" + p.public, "A" + p.public, p.ref, verified, p.status, p.opened, p.opened, p.opened}})
		for i := 1; i < len(p.chain); i++ {
			stmts = append(stmts, struct {
				sql  string
				args []any
			}{`INSERT INTO topup_events (topup_id, from_status, to_status, actor, created_at) VALUES (?, ?, ?, 'callback', ?)`,
				[]any{p.id, p.chain[i-1], p.chain[i], p.opened}})
		}
	}
	stmts = append(stmts, []struct {
		sql  string
		args []any
	}{
		// The ledger as the app writes it: two top-ups (zarinpal's clearing
		// → the wallet), an adjustment into suspense and its reversal, and
		// an open hold of 20,000 rials.
		{`INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, posted_rials, held_rials, created_at, updated_at)
			VALUES ('wallet', 'wallet:1', 1, 1, FALSE, 150000, 20000, ?, ?)`, []any{ago(time.Hour), ago(time.Hour)}},
		{`UPDATE ledger_accounts SET posted_rials = -150000 WHERE code = 'gateway:zarinpal'`, nil},
		{`INSERT INTO ledger_transactions (id, kind, reference, topup_id, reverses_id, created_at) VALUES
			(1, 'topup', 'p_credited1', 1, NULL, ?), (2, 'topup', 'p_credited2', 2, NULL, ?),
			(3, 'adjustment', 'adj-1', NULL, NULL, ?), (4, 'reversal', 'reversal:3', NULL, 3, ?)`,
			[]any{ago(49 * time.Minute), ago(39 * time.Minute), ago(20 * time.Minute), ago(19 * time.Minute)}},
		{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			(1, (SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal'), -100000, -100000, ?),
			(1, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 100000, 100000, ?)`, []any{ago(49 * time.Minute), ago(49 * time.Minute)}},
		{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			(2, (SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal'), -50000, -150000, ?),
			(2, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 50000, 150000, ?)`, []any{ago(39 * time.Minute), ago(39 * time.Minute)}},
		{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			(3, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), -10000, 140000, ?),
			(3, (SELECT id FROM ledger_accounts WHERE code = 'suspense'), 10000, 10000, ?)`, []any{ago(20 * time.Minute), ago(20 * time.Minute)}},
		{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			(4, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 10000, 150000, ?),
			(4, (SELECT id FROM ledger_accounts WHERE code = 'suspense'), -10000, 0, ?)`, []any{ago(19 * time.Minute), ago(19 * time.Minute)}},
		{`INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, expires_at, created_at)
			VALUES ((SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 20000, 'charge', 'ch_1', 'open', ?, ?)`,
			[]any{now.Add(time.Hour).UTC(), ago(time.Minute)}},
		{`INSERT INTO gateway_calls (topup_id, gateway, operation, attempt, started_at, duration_ms, outcome) VALUES (1, 'zarinpal', 'verify', 1, ?, 20, 'paid')`, []any{ago(49 * time.Minute)}},
		{`INSERT INTO gateway_calls (topup_id, gateway, operation, attempt, started_at, duration_ms, outcome) VALUES (2, 'zarinpal', 'verify', 1, ?, 20, 'timeout')`, []any{ago(40 * time.Minute)}},
		{`INSERT INTO gateway_calls (topup_id, gateway, operation, attempt, started_at, duration_ms, outcome) VALUES (2, 'zarinpal', 'verify', 2, ?, 20, 'already_verified')`, []any{ago(39 * time.Minute)}},
	}...)
	for _, s := range stmts {
		if err := db.Gorm.Exec(s.sql, s.args...).Error; err != nil {
			t.Fatalf("seed %s: %v", s.sql, err)
		}
	}
	if db.Dialect == store.Postgres { // explicit ids: move the sequences past them
		for _, tbl := range []string{"users", "wallets", "topups", "ledger_transactions"} {
			if err := db.Gorm.Exec(`SELECT setval(pg_get_serial_sequence('` + tbl + `', 'id'), 100)`).Error; err != nil {
				t.Fatal(err)
			}
		}
	}
}

func options(now time.Time) integrity.Options {
	return integrity.Options{Now: now, CreatedDeadline: 5 * time.Minute, OpenDeadline: 3 * time.Hour}
}

func TestHealthyDatabasePasses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Now()
		seed(t, db, now)
		rep, err := integrity.Check(context.Background(), db, options(now))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("a healthy database breaks rules: %v", rep.Violations())
		}
		if len(rep.Results) != len(integrity.Rules()) {
			t.Fatalf("%d results for %d rules", len(rep.Results), len(integrity.Rules()))
		}
		for _, r := range rep.Results {
			if r.Skipped {
				t.Errorf("rule %s skipped with every option given", r.Rule.Name)
			}
		}
		// An empty database passes too.
		rep, err = integrity.Check(context.Background(), storetest.New(t, db.Dialect), options(now))
		if err != nil || !rep.OK() {
			t.Fatalf("empty database: %v %v", err, rep.Violations())
		}
	})
}

// Each deliberate breakage is found by its rule, naming the row.
func TestBrokenDataIsNamed(t *testing.T) {
	cases := []struct {
		name    string
		breakIt []string // statements run after the healthy seed
		rule    string
		subject string
		later   time.Duration // judge open payments this much later
	}{
		{"postings that do not balance", []string{`UPDATE ledger_postings SET amount_rials = 90000 WHERE transaction_id = 1 AND amount_rials > 0`},
			"ledger_transaction_balanced", "ledger transaction 1", 0},
		{"a transaction of one posting", []string{`DELETE FROM ledger_postings WHERE transaction_id = 3 AND amount_rials > 0`},
			"ledger_transaction_balanced", "ledger transaction 3", 0},
		{"posted balance off its postings", []string{`UPDATE ledger_accounts SET posted_rials = 160000 WHERE code = 'wallet:1'`},
			"account_posted_equals_postings", "account wallet:1", 0},
		{"held amount off its open holds", []string{`UPDATE ledger_holds SET status = 'released', ended_at = created_at`},
			"account_held_equals_open_holds", "account wallet:1", 0},
		{"a wallet below zero", []string{`UPDATE ledger_accounts SET held_rials = 200000 WHERE code = 'wallet:1'`},
			"account_not_negative", "account wallet:1", 0},
		{"a wallet allowed below zero", []string{`UPDATE ledger_accounts SET may_go_negative = TRUE WHERE code = 'wallet:1'`},
			"account_not_negative", "account wallet:1", 0},
		{"running balance wrong", []string{`UPDATE ledger_postings SET balance_after_rials = 50000 WHERE transaction_id = 2 AND amount_rials > 0`},
			"ledger_running_balance", "ledger transaction 2", 0},
		{"reversed twice", []string{`DROP INDEX ledger_transactions_reverses_key`,
			`INSERT INTO ledger_transactions (id, kind, reference, reverses_id, created_at) VALUES (5, 'reversal', 'reversal:3b', 3, '2026-01-01 00:00:00+00')`,
			`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
				(5, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 10000, 160000, '2026-01-01 00:00:00+00'),
				(5, (SELECT id FROM ledger_accounts WHERE code = 'suspense'), -10000, -10000, '2026-01-01 00:00:00+00')`},
			"reversed_at_most_once", "ledger transaction 3", 0},
		{"a reversal that is not the opposite", []string{
			`UPDATE ledger_postings SET account_id = (SELECT id FROM ledger_accounts WHERE code = 'fees') WHERE transaction_id = 4 AND amount_rials < 0`},
			"reversed_at_most_once", "ledger transaction 4", 0},
		{"a reversal of a reversal", []string{
			`INSERT INTO ledger_transactions (id, kind, reference, reverses_id, created_at) VALUES (5, 'reversal', 'reversal:4', 4, '2026-01-01 00:00:00+00')`,
			`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
				(5, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), -10000, 140000, '2026-01-01 00:00:00+00'),
				(5, (SELECT id FROM ledger_accounts WHERE code = 'suspense'), 10000, 10000, '2026-01-01 00:00:00+00')`},
			"no_reversal_of_reversal", "ledger transaction 5", 0},
		{"a hold captured for another amount than its transaction took", []string{
			`INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, captured_rials, transaction_id, expires_at, created_at, ended_at)
				VALUES ((SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 12000, 'charge', 'ch_2', 'captured', 5000, 3,
				'2026-01-01 01:00:00+00', '2026-01-01 00:00:00+00', '2026-01-01 00:10:00+00')`},
			"hold_captured_once", "hold charge ch_2", 0},
		{"two holds captured by one transaction", []string{
			`INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, captured_rials, transaction_id, expires_at, created_at, ended_at)
				VALUES ((SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 10000, 'charge', 'ch_2', 'captured', 10000, 3,
				'2026-01-01 01:00:00+00', '2026-01-01 00:00:00+00', '2026-01-01 00:10:00+00'),
				((SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 10000, 'charge', 'ch_3', 'captured', 10000, 3,
				'2026-01-01 01:00:00+00', '2026-01-01 00:00:00+00', '2026-01-01 00:10:00+00')`},
			"hold_captured_once", "hold charge ch_3", 0},
		{"a wallet without its account", []string{
			`INSERT INTO users (id, email, password_hash, role, locale, created_at) VALUES (2, 'ali@example.com', 'x', 'user', 'fa', '2026-01-01 00:00:00+00')`,
			`INSERT INTO wallets (id, user_id, created_at, updated_at) VALUES (2, 2, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00')`},
			"wallet_has_account", "wallet 2", 0},
		{"second credit of a payment", []string{`DROP INDEX ledger_transactions_kind_reference_key`,
			`INSERT INTO ledger_transactions (id, kind, reference, topup_id, created_at) VALUES (5, 'topup', 'p_credited1', 1, '2026-01-01 00:00:00+00')`,
			`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
				(5, (SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal'), -100000, -250000, '2026-01-01 00:00:00+00'),
				(5, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 100000, 250000, '2026-01-01 00:00:00+00')`},
			"credited_has_its_transaction", "top-up p_credited1", 0},
		{"a transfer without its ledger transaction", []string{
			`INSERT INTO users (id, email, password_hash, role, locale, created_at) VALUES (3, 'bob@example.com', 'x', 'user', 'fa', '2026-01-01 00:00:00+00')`,
			`INSERT INTO transfers (public_id, sender_user_id, recipient_user_id, amount_rials, note, form_token, created_at)
				VALUES ('tr_broken', 1, 3, 10000, '', 'tok', '2026-01-01 00:00:00+00')`},
			"transfer_has_its_transaction", "transfer tr_broken", 0},
		{"a bank reference used twice", []string{`DROP INDEX topups_gateway_ref_id_key`, `UPDATE topups SET ref_id = 501 WHERE id = 2`},
			"one_topup_per_bank_reference", "bank reference zarinpal 501", 0},
		{"credited for another amount", []string{`UPDATE topups SET verified_amount_rials = 40000 WHERE id = 2`},
			"credited_has_bank_reference", "top-up p_credited2", 0},
		{"credited without its ledger transaction", []string{`DELETE FROM ledger_postings WHERE transaction_id = 2`, `DELETE FROM ledger_transactions WHERE id = 2`},
			"credited_has_its_transaction", "top-up p_credited2", 0},
		{"credited into another wallet's account", []string{`UPDATE ledger_postings SET amount_rials = 40000 WHERE transaction_id = 2 AND amount_rials > 0`},
			"credited_has_its_transaction", "top-up p_credited2", 0},
		{"a failed payment credited", []string{
			`INSERT INTO ledger_transactions (id, kind, reference, topup_id, created_at) VALUES (5, 'topup', 'p_failed', 3, '2026-01-01 00:00:00+00')`,
			`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
				(5, (SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal'), -70000, -220000, '2026-01-01 00:00:00+00'),
				(5, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 70000, 220000, '2026-01-01 00:00:00+00')`},
			"ledger_only_for_credited", "top-up p_failed", 0},
		{"status changed without its event", []string{`UPDATE topups SET status = 'needs_review' WHERE id = 3`},
			"events_end_in_status", "top-up p_failed", 0},
		{"an event missing in the chain", []string{`DELETE FROM topup_events WHERE topup_id = 2 AND to_status = 'pending_verification'`},
			"events_chain", "top-up p_credited2", 0},
		{"credited twice by events", []string{`INSERT INTO topup_events (topup_id, from_status, to_status, actor, created_at) VALUES (1, 'credited', 'credited', 'worker', '2026-01-01 00:00:00+00')`},
			"one_credit_event", "top-up p_credited1", 0},
		{"credited without the bank's verify on record", []string{`DELETE FROM gateway_calls WHERE topup_id = 1`},
			"credited_verify_on_record", "top-up p_credited1", 0},
		{"credited on a verify that did not say paid", []string{`DELETE FROM gateway_calls WHERE topup_id = 2 AND outcome = 'already_verified'`},
			"credited_verify_on_record", "top-up p_credited2", 0},
		{"open past its deadline", nil, "none_open_past_deadline", "top-up p_waiting", 4 * time.Hour},
		{"created past its deadline", nil, "none_open_past_deadline", "top-up p_created", 10 * time.Minute},
	}
	// A reversing top-up is judged from its creation (its reverse window
	// counts from it: OpenDeadline + ReverseWindowMax), however lately it
	// opened: one a minute past that cut-off is named, its line showing
	// its creation; one a minute inside it is not, though it opened
	// longer than OpenDeadline ago.
	open := options(time.Time{}).OpenDeadline
	reversing := []struct {
		name            string
		created, opened time.Duration // before now
		named           bool
	}{
		{"reversing just past its deadline, opened lately", open + integrity.ReverseWindowMax + time.Minute, time.Minute, true},
		{"reversing just inside its deadline, opened long ago", open + integrity.ReverseWindowMax - time.Minute, open + time.Minute, false},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, tc := range reversing {
			t.Run(tc.name, func(t *testing.T) {
				db := storetest.New(t, db.Dialect)
				now := time.Now()
				seed(t, db, now)
				created, opened := now.Add(-tc.created).UTC(), now.Add(-tc.opened).UTC()
				for _, s := range []struct {
					sql  string
					args []any
				}{
					{`INSERT INTO topups (id, public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, receipt, status, status_reason,
						created_at, updated_at, opened_at) VALUES (6, 'p_reversing', 1, 1, 60000, 'sep', 'form-p_reversing', 'Ap_reversing', 'RN6',
						'reversing', 'amount_mismatch', ?, ?, ?)`, []any{created, opened, opened}},
					{`INSERT INTO topup_events (topup_id, from_status, to_status, actor, created_at) VALUES (6, 'created', 'awaiting_payment', 'submit', ?),
						(6, 'awaiting_payment', 'reversing', 'callback', ?)`, []any{created, opened}},
				} {
					if err := db.Gorm.Exec(s.sql, s.args...).Error; err != nil {
						t.Fatalf("%s: %v", s.sql, err)
					}
				}
				rep, err := integrity.Check(context.Background(), db, options(now))
				if err != nil {
					t.Fatal(err)
				}
				var named []integrity.Violation
				for _, v := range rep.Violations() {
					if v.Rule == "none_open_past_deadline" && v.Subject == "top-up p_reversing" {
						named = append(named, v)
					}
				}
				switch {
				case !tc.named && len(named) > 0:
					t.Fatalf("named within its deadline: %v", named)
				case tc.named && len(named) != 1:
					t.Fatalf("not named past its deadline; violations: %v", rep.Violations())
				case tc.named && (!strings.HasPrefix(named[0].Detail, "status reversing since ") || !strings.HasSuffix(named[0].Detail, " (created)") ||
					!strings.Contains(named[0].Detail, created.Format("15:04"))):
					t.Errorf("detail %q: want the time it is judged from, its creation (%s)", named[0].Detail, created.Format(time.RFC3339))
				}
			})
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				db := storetest.New(t, db.Dialect)
				now := time.Now()
				seed(t, db, now)
				tamper(t, db, tc.breakIt)
				rep, err := integrity.Check(context.Background(), db, options(now.Add(tc.later)))
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, v := range rep.Violations() {
					if v.Rule == tc.rule && strings.HasPrefix(v.Subject, tc.subject) {
						found = true
					}
				}
				if !found {
					t.Fatalf("rule %s did not name %q; violations: %v", tc.rule, tc.subject, rep.Violations())
				}
			})
		}
	})
}

// The rules that need the call log or a clock can be left out (tests with
// a fake gateway, and CheckInvariants without a clock).
func TestSkippedRules(t *testing.T) {
	db := storetest.New(t, store.SQLite)
	now := time.Now()
	seed(t, db, now)
	if err := db.Gorm.Exec(`DELETE FROM gateway_calls`).Error; err != nil {
		t.Fatal(err)
	}
	rep, err := integrity.Check(context.Background(), db, integrity.Options{NoCallLog: true})
	if err != nil || !rep.OK() {
		t.Fatalf("%v %v", err, rep.Violations())
	}
	skipped := 0
	for _, r := range rep.Results {
		if r.Skipped {
			skipped++
		}
	}
	if skipped != 2 {
		t.Fatalf("%d rules skipped, want 2", skipped)
	}
}

// Check holds no lock that stops writers: while its read transaction is
// open, with a snapshot taken, a writer commits at once (SQLite: the app's
// connections BEGIN IMMEDIATE, the check's does not); on PostgreSQL the
// transaction cannot write at all (READ ONLY).
func TestCheckDoesNotBlockWriters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Now()
		seed(t, db, now)
		ctx := context.Background()
		tx, err := integrity.ReadOnlyTx(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		var before int64
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM topups`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		// A write transaction as the app makes them, while the snapshot is open.
		if err := db.Gorm.WithContext(wctx).Exec(`UPDATE topups SET updated_at = ? WHERE id = 4`, time.Now().UTC()).Error; err != nil {
			t.Fatalf("a write while a check's snapshot is open: %v", err)
		}
		if err := db.Gorm.WithContext(wctx).Exec(`DELETE FROM topup_events WHERE topup_id = 5`).Error; err != nil {
			t.Fatalf("a second write: %v", err)
		}
		if db.Dialect == store.Postgres {
			if _, err := tx.ExecContext(ctx, `UPDATE ledger_accounts SET posted_rials = 0`); err == nil {
				t.Fatal("the check's transaction could write")
			}
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		rep, err := integrity.Check(ctx, db, options(now))
		if err != nil || !rep.OK() {
			t.Fatalf("%v %v", err, rep.Violations())
		}
	})
}

// tamper runs statements as someone with the database's keys would, past
// the defences the schema has against them (the append-only and Σ = 0
// triggers, the CHECK on balances), all on one connection (SQLite's
// ignore_check_constraints is the connection's).
// ruleCase is a deliberate breakage of a healthy database and the rule
// that must name it; a case without a rule is the healthy database,
// which must pass every rule.
type ruleCase struct {
	name    string
	breakIt []string // statements run after the healthy seed
	rule    string
	subject string // the start of the violation's subject
}

// checkRuleCases runs each case on a fresh database of each dialect,
// seeded by seed and then more, and broken by the case's statements.
func checkRuleCases(t *testing.T, cases []ruleCase, more func(*testing.T, *store.DB, time.Time)) {
	t.Helper()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				db := storetest.New(t, db.Dialect)
				now := time.Now()
				seed(t, db, now)
				more(t, db, now)
				if tc.breakIt != nil {
					tamper(t, db, tc.breakIt)
				}
				rep, err := integrity.Check(context.Background(), db, options(now))
				if err != nil {
					t.Fatal(err)
				}
				if tc.rule == "" {
					if !rep.OK() {
						t.Fatalf("the healthy database breaks rules: %v", rep.Violations())
					}
					return
				}
				for _, v := range rep.Violations() {
					if v.Rule == tc.rule && strings.HasPrefix(v.Subject, tc.subject) {
						return
					}
				}
				t.Fatalf("rule %s did not name %q; violations: %v", tc.rule, tc.subject, rep.Violations())
			})
		}
	})
}

func tamper(t *testing.T, db *store.DB, stmts []string) {
	t.Helper()
	unlock := []string{`PRAGMA ignore_check_constraints = ON`, `DROP TRIGGER ledger_postings_no_update`, `DROP TRIGGER ledger_postings_no_delete`,
		`DROP TRIGGER ledger_transactions_no_update`, `DROP TRIGGER ledger_transactions_no_delete`}
	if db.Dialect == store.Postgres {
		unlock = []string{`DROP TRIGGER ledger_postings_balanced ON ledger_postings`, `DROP TRIGGER ledger_postings_append_only ON ledger_postings`,
			`DROP TRIGGER ledger_transactions_append_only ON ledger_transactions`,
			`ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_available_not_negative`,
			`ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_negative_kinds`}
	}
	err := db.Gorm.Connection(func(tx *gorm.DB) error {
		for _, s := range append(unlock, stmts...) {
			if err := tx.Exec(s).Error; err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		if db.Dialect == store.SQLite {
			return tx.Exec(`PRAGMA ignore_check_constraints = OFF`).Error
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
