package integrity_test

import (
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// seedWithdrawals adds to seed's history four withdrawals from wallet:1
// as the app writes them (withdrawal/sqlstore): w_open (10,000 rials,
// requested, its hold open); w_paid (20,000, paid: its hold captured
// into sandbank's payouts in flight, then settled to its rail); w_ret
// (5,000, paid then returned before it settled: captured, and given back
// from payouts in flight to the wallet); w_fail (3,000, failed: its hold
// released). Each has its chain of events, the first from "".
func seedWithdrawals(t *testing.T, db *store.DB, now time.Time) {
	t.Helper()
	at := now.Add(-10 * time.Minute).UTC()
	wallet := `(SELECT id FROM ledger_accounts WHERE code = 'wallet:1')`
	inFlight := `(SELECT id FROM ledger_accounts WHERE code = 'payouts_in_flight:sandbank')`
	rail := `(SELECT id FROM ledger_accounts WHERE code = 'payout_rail:sandbank')`
	hold := func(ref string) string {
		return `(SELECT id FROM ledger_holds WHERE reason = 'withdrawal' AND reference = '` + ref + `')`
	}
	capture := func(ref string) string { return `'hold:' || CAST(` + hold(ref) + ` AS TEXT)` }
	txn := func(kind, ref string) string {
		return `(SELECT id FROM ledger_transactions WHERE kind = '` + kind + `' AND reference = ` + ref + `)`
	}
	type stmt struct {
		sql  string
		args []any
	}
	stmts := []stmt{
		{`INSERT INTO ledger_accounts (kind, code, may_go_negative, created_at, updated_at) VALUES
			('payouts_in_flight', 'payouts_in_flight:sandbank', FALSE, ?, ?), ('payout_rail', 'payout_rail:sandbank', TRUE, ?, ?)`,
			[]any{at, at, at, at}},
		{`INSERT INTO bank_accounts (id, user_id, sheba, bank_code, status, created_at, updated_at)
			VALUES (1, 1, 'IR820540102680020817909002', '054', 'verified', ?, ?)`, []any{at, at}},
		{`INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, expires_at, created_at) VALUES
			(` + wallet + `, 10000, 'withdrawal', 'w_open', 'open', ?, ?),
			(` + wallet + `, 20000, 'withdrawal', 'w_paid', 'open', ?, ?),
			(` + wallet + `, 5000, 'withdrawal', 'w_ret', 'open', ?, ?),
			(` + wallet + `, 3000, 'withdrawal', 'w_fail', 'open', ?, ?)`,
			[]any{now.Add(time.Hour).UTC(), at, now.Add(time.Hour).UTC(), at, now.Add(time.Hour).UTC(), at, now.Add(time.Hour).UTC(), at}},
	}
	// The ledger, in the order the app writes it: w_paid's capture and
	// settlement, w_ret's capture and return; wallet:1 stood at 150,000.
	for _, m := range []struct {
		kind, ref                  string
		from, to                   string
		amount, fromAfter, toAfter int64
	}{
		{"withdrawal", capture("w_paid"), wallet, inFlight, 20000, 130000, 20000},
		{"withdrawal", `'settle:w_paid'`, inFlight, rail, 20000, 0, 20000},
		{"withdrawal", capture("w_ret"), wallet, inFlight, 5000, 125000, 5000},
		{"withdrawal_return", `'w_ret'`, inFlight, wallet, 5000, 0, 130000},
	} {
		stmts = append(stmts,
			stmt{`INSERT INTO ledger_transactions (kind, reference, note, created_at) VALUES ('` + m.kind + `', ` + m.ref + `, '', ?)`, []any{at}},
			stmt{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
				(` + txn(m.kind, m.ref) + `, ` + m.from + `, ?, ?, ?), (` + txn(m.kind, m.ref) + `, ` + m.to + `, ?, ?, ?)`,
				[]any{-m.amount, m.fromAfter, at, m.amount, m.toAfter, at}})
	}
	stmts = append(stmts, []stmt{
		{`UPDATE ledger_holds SET status = 'captured', captured_rials = amount_rials, ended_at = ?,
			transaction_id = (SELECT id FROM ledger_transactions t WHERE t.kind = 'withdrawal' AND t.reference = 'hold:' || CAST(ledger_holds.id AS TEXT))
			WHERE reason = 'withdrawal' AND reference IN ('w_paid', 'w_ret')`, []any{at}},
		{`UPDATE ledger_holds SET status = 'released', ended_at = ? WHERE reason = 'withdrawal' AND reference = 'w_fail'`, []any{at}},
		// Held: ch_1's 20,000 and w_open's 10,000.
		{`UPDATE ledger_accounts SET posted_rials = 130000, held_rials = 30000 WHERE code = 'wallet:1'`, nil},
		{`UPDATE ledger_accounts SET posted_rials = 20000 WHERE code = 'payout_rail:sandbank'`, nil},
		{`INSERT INTO withdrawals (public_id, user_id, wallet_id, bank_account_id, sheba, bank_code, amount_rials, provider, rail, form_token,
			status, review_required, hold_id, submitted_at, paid_at, settled_at, returned_at, created_at, updated_at) VALUES
			('w_open', 1, 1, 1, 'IR820540102680020817909002', '054', 10000, 'sandbank', 'paya', 'f1', 'requested', FALSE, ` + hold("w_open") + `,
				NULL, NULL, NULL, NULL, ?, ?),
			('w_paid', 1, 1, 1, 'IR820540102680020817909002', '054', 20000, 'sandbank', 'paya', 'f2', 'paid', FALSE, ` + hold("w_paid") + `,
				?, ?, ?, NULL, ?, ?),
			('w_ret', 1, 1, 1, 'IR820540102680020817909002', '054', 5000, 'sandbank', 'paya', 'f3', 'returned', FALSE, ` + hold("w_ret") + `,
				?, ?, NULL, ?, ?, ?),
			('w_fail', 1, 1, 1, 'IR820540102680020817909002', '054', 3000, 'sandbank', 'paya', 'f4', 'failed', FALSE, ` + hold("w_fail") + `,
				?, NULL, NULL, NULL, ?, ?)`,
			[]any{at, at, at, at, at, at, at, at, at, at, at, at, at, at, at}},
	}...)
	for _, w := range []struct {
		public string
		chain  []string
	}{
		{"w_open", []string{"", "requested"}},
		{"w_paid", []string{"", "requested", "submitted", "paid"}},
		{"w_ret", []string{"", "requested", "submitted", "paid", "returned"}},
		{"w_fail", []string{"", "requested", "submitted", "failed"}},
	} {
		for i := 1; i < len(w.chain); i++ {
			stmts = append(stmts, stmt{`INSERT INTO withdrawal_events (withdrawal_id, from_status, to_status, actor, created_at)
				VALUES ((SELECT id FROM withdrawals WHERE public_id = ?), ?, ?, 'worker', ?)`, []any{w.public, w.chain[i-1], w.chain[i], at}})
		}
	}
	for _, s := range stmts {
		if err := db.Gorm.Exec(s.sql, s.args...).Error; err != nil {
			t.Fatalf("seed %s: %v", s.sql, err)
		}
	}
}

// TestWithdrawalRules: withdrawals as the app writes them pass every
// rule; each deliberate breakage is named by its rule, naming the
// withdrawal (or the stray transaction).
func TestWithdrawalRules(t *testing.T) {
	cases := []ruleCase{
		{"healthy", nil, "", ""},
		{"requested, its hold released", []string{`UPDATE ledger_holds SET status = 'released', ended_at = created_at WHERE reference = 'w_open'`,
			`UPDATE ledger_accounts SET held_rials = 20000 WHERE code = 'wallet:1'`},
			"withdrawal_hold_follows_status", "withdrawal w_open"},
		{"failed, its hold left open", []string{`UPDATE ledger_holds SET status = 'open', ended_at = NULL WHERE reference = 'w_fail'`,
			`UPDATE ledger_accounts SET held_rials = 33000 WHERE code = 'wallet:1'`},
			"withdrawal_hold_follows_status", "withdrawal w_fail"},
		{"another amount than its hold", []string{`UPDATE withdrawals SET amount_rials = 12000 WHERE public_id = 'w_open'`},
			"withdrawal_hold_follows_status", "withdrawal w_open"},
		{"returned without its return", []string{
			`DELETE FROM ledger_postings WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE kind = 'withdrawal_return' AND reference = 'w_ret')`,
			`DELETE FROM ledger_transactions WHERE kind = 'withdrawal_return' AND reference = 'w_ret'`},
			"withdrawal_returned_once", "withdrawal w_ret"},
		{"returned into another account", []string{`UPDATE ledger_postings SET account_id = (SELECT id FROM ledger_accounts WHERE code = 'suspense')
			WHERE amount_rials > 0 AND transaction_id = (SELECT id FROM ledger_transactions WHERE kind = 'withdrawal_return' AND reference = 'w_ret')`},
			"withdrawal_returned_once", "withdrawal w_ret"},
		{"a failed withdrawal returned", []string{
			`INSERT INTO ledger_transactions (kind, reference, note, created_at) VALUES ('withdrawal_return', 'w_fail', '', '2026-01-01 00:00:00+00')`,
			`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
				((SELECT id FROM ledger_transactions WHERE kind = 'withdrawal_return' AND reference = 'w_fail'),
					(SELECT id FROM ledger_accounts WHERE code = 'suspense'), -3000, -3000, '2026-01-01 00:00:00+00'),
				((SELECT id FROM ledger_transactions WHERE kind = 'withdrawal_return' AND reference = 'w_fail'),
					(SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 3000, 133000, '2026-01-01 00:00:00+00')`},
			"withdrawal_returned_once", "withdrawal w_fail"},
		{"a return of no withdrawal", []string{
			`INSERT INTO ledger_transactions (id, kind, reference, note, created_at) VALUES (50, 'withdrawal_return', 'w_ghost', '', '2026-01-01 00:00:00+00')`},
			"withdrawal_returned_once", "ledger transaction 50"},
		{"settled without its settlement", []string{
			`DELETE FROM ledger_postings WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE reference = 'settle:w_paid')`,
			`DELETE FROM ledger_transactions WHERE reference = 'settle:w_paid'`},
			"withdrawal_settled_once", "withdrawal w_paid"},
		{"a settlement, not marked settled", []string{`UPDATE withdrawals SET settled_at = NULL WHERE public_id = 'w_paid'`},
			"withdrawal_settled_once", "withdrawal w_paid"},
		{"settled, not paid", []string{`UPDATE withdrawals SET settled_at = paid_at, status = 'needs_review' WHERE public_id = 'w_paid'`,
			`INSERT INTO withdrawal_events (withdrawal_id, from_status, to_status, actor, created_at)
				VALUES ((SELECT id FROM withdrawals WHERE public_id = 'w_paid'), 'paid', 'needs_review', 'worker', '2026-01-01 00:00:00+00')`},
			"withdrawal_settled_once", "withdrawal w_paid"},
		{"status changed without its event", []string{`UPDATE withdrawals SET status = 'approved' WHERE public_id = 'w_open'`},
			"withdrawal_events_chain", "withdrawal w_open"},
		{"an event missing in the chain", []string{`DELETE FROM withdrawal_events
			WHERE withdrawal_id = (SELECT id FROM withdrawals WHERE public_id = 'w_paid') AND to_status = 'submitted'`},
			"withdrawal_events_chain", "withdrawal w_paid"},
		{"events without their request", []string{`DELETE FROM withdrawal_events
			WHERE withdrawal_id = (SELECT id FROM withdrawals WHERE public_id = 'w_fail') AND to_status = 'requested'`},
			"withdrawal_events_chain", "withdrawal w_fail"},
	}
	checkRuleCases(t, cases, seedWithdrawals)
}
