package integrity_test

import (
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// seedCardRefunds adds to seed's history two card refunds as the app
// writes them: cr_a gave 30,000 rials of p_credited1 back to the card
// (its hold captured into card refunds in flight, then moved on to the
// gateway's clearing side), cr_b holds 10,000 of p_credited2 while the
// bank is asked.
func seedCardRefunds(t *testing.T, db *store.DB, now time.Time) {
	t.Helper()
	at := now.Add(-10 * time.Minute).UTC()
	wallet := `(SELECT id FROM ledger_accounts WHERE code = 'wallet:1')`
	inFlight := `(SELECT id FROM ledger_accounts WHERE code = 'card_refunds_in_flight')`
	clearing := `(SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal')`
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ledger_accounts (kind, code, may_go_negative, created_at, updated_at)
			VALUES ('card_refunds_in_flight', 'card_refunds_in_flight', FALSE, ?, ?)`, []any{at, at}},
		{`INSERT INTO ledger_transactions (kind, reference, topup_id, created_at) VALUES ('card_refund', 'hold:cr_a', 1, ?)`, []any{at}},
		{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			((SELECT id FROM ledger_transactions WHERE reference = 'hold:cr_a'), ` + wallet + `, -30000, 120000, ?),
			((SELECT id FROM ledger_transactions WHERE reference = 'hold:cr_a'), ` + inFlight + `, 30000, 30000, ?)`, []any{at, at}},
		{`INSERT INTO ledger_transactions (kind, reference, topup_id, created_at) VALUES ('card_refund', 'card_refund:cr_a', 1, ?)`, []any{at}},
		{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			((SELECT id FROM ledger_transactions WHERE reference = 'card_refund:cr_a'), ` + inFlight + `, -30000, 0, ?),
			((SELECT id FROM ledger_transactions WHERE reference = 'card_refund:cr_a'), ` + clearing + `, 30000, -120000, ?)`, []any{at, at}},
		{`UPDATE ledger_accounts SET posted_rials = 120000, held_rials = 30000 WHERE code = 'wallet:1'`, nil},
		{`UPDATE ledger_accounts SET posted_rials = -120000 WHERE code = 'gateway:zarinpal'`, nil},
		{`INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, captured_rials, transaction_id, expires_at, created_at, ended_at)
			VALUES (` + wallet + `, 30000, 'card_refund', 'cr_a', 'captured', 30000, (SELECT id FROM ledger_transactions WHERE reference = 'hold:cr_a'), ?, ?, ?)`,
			[]any{now.Add(time.Hour).UTC(), at, at}},
		{`INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, expires_at, created_at)
			VALUES (` + wallet + `, 10000, 'card_refund', 'cr_b', 'open', ?, ?)`, []any{now.Add(time.Hour).UTC(), at}},
		{`INSERT INTO users (id, email, password_hash, role, locale, created_at) VALUES (9, 'admin@example.com', 'x', 'admin', 'en', ?)`, []any{at}},
		{`INSERT INTO card_refunds (public_id, topup_id, user_id, wallet_id, gateway, method, amount_rials, refunded_before_rials, status,
			hold_id, attempts, admin_id, created_at, updated_at, resolved_at) VALUES
			('cr_a', 1, 1, 1, 'zarinpal', 'refund', 30000, 0, 'refunded', (SELECT id FROM ledger_holds WHERE reference = 'cr_a'), 1, 9, ?, ?, ?),
			('cr_b', 2, 1, 1, 'zarinpal', 'refund', 10000, 0, 'submitted', (SELECT id FROM ledger_holds WHERE reference = 'cr_b'), 1, 9, ?, ?, NULL)`,
			[]any{at, at, at, at, at}},
		{`INSERT INTO card_refund_events (card_refund_id, from_status, to_status, actor, created_at) VALUES
			((SELECT id FROM card_refunds WHERE public_id = 'cr_a'), 'held', 'submitted', 'admin', ?),
			((SELECT id FROM card_refunds WHERE public_id = 'cr_a'), 'submitted', 'refunded', 'admin', ?),
			((SELECT id FROM card_refunds WHERE public_id = 'cr_b'), 'held', 'submitted', 'admin', ?)`, []any{at, at, at}},
	} {
		if err := db.Gorm.Exec(s.sql, s.args...).Error; err != nil {
			t.Fatalf("seed %s: %v", s.sql, err)
		}
	}
}

// TestCardRefundRules: card refunds as the app writes them pass every
// rule; each deliberate breakage is named by its rule.
func TestCardRefundRules(t *testing.T) {
	cases := []ruleCase{
		{"healthy", nil, "", ""},
		{"refunded, another hold captured", []string{`UPDATE card_refunds SET hold_id = (SELECT id FROM ledger_holds WHERE reference = 'ch_1') WHERE public_id = 'cr_a'`},
			"card_refund_hold_in_step", "card refund cr_a"},
		{"unresolved, its hold ended", []string{`UPDATE ledger_holds SET status = 'expired', ended_at = created_at WHERE reference = 'cr_b'`,
			`UPDATE ledger_accounts SET held_rials = 20000 WHERE code = 'wallet:1'`},
			"card_refund_hold_in_step", "card refund cr_b"},
		{"another amount than its hold", []string{`UPDATE card_refunds SET amount_rials = 12000 WHERE public_id = 'cr_b'`},
			"card_refund_hold_in_step", "card refund cr_b"},
		{"refunded without reaching the clearing side", []string{
			`DELETE FROM ledger_postings WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE reference = 'card_refund:cr_a')`,
			`DELETE FROM ledger_transactions WHERE reference = 'card_refund:cr_a'`},
			"card_refund_reached_clearing", "card refund cr_a"},
		{"money left in flight", []string{`UPDATE ledger_accounts SET posted_rials = 5 WHERE code = 'card_refunds_in_flight'`},
			"card_refund_reached_clearing", "account card_refunds_in_flight"},
		{"more refunded than the top-up", []string{`UPDATE topups SET amount_rials = 20000, verified_amount_rials = 20000 WHERE id = 1`},
			"card_refunds_within_topup", "top-up p_credited1"},
		{"a card refund of a failed top-up", []string{`UPDATE card_refunds SET topup_id = 3 WHERE public_id = 'cr_b'`},
			"card_refunds_within_topup", "top-up p_failed"},
		{"status changed without its event", []string{`UPDATE card_refunds SET status = 'needs_review' WHERE public_id = 'cr_b'`},
			"card_refund_events_end_in_status", "card refund cr_b"},
	}
	checkRuleCases(t, cases, seedCardRefunds)
}
