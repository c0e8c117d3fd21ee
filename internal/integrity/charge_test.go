package integrity_test

import (
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// seedCharges adds to seed's history a merchant and two charges as the
// app writes them: ch_auto (automatic) paid 20,000 rials from wallet:1
// to the merchant, 5,000 of it refunded (re_1); ch_man (manual) holds
// 10,000 on wallet:1.
func seedCharges(t *testing.T, db *store.DB, now time.Time) {
	t.Helper()
	at := now.Add(-10 * time.Minute).UTC()
	wallet := `(SELECT id FROM ledger_accounts WHERE code = 'wallet:1')`
	merchant := `(SELECT id FROM ledger_accounts WHERE code = 'merchant:5')`
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO users (id, email, password_hash, role, locale, created_at) VALUES (5, 'shop@example.com', 'x', 'user', 'en', ?)`, []any{at}},
		{`INSERT INTO ledger_accounts (kind, code, user_id, may_go_negative, posted_rials, created_at, updated_at)
			VALUES ('merchant', 'merchant:5', 5, FALSE, 15000, ?, ?)`, []any{at, at}},
		{`INSERT INTO merchants (user_id, display_name, account_id, created_at) VALUES (5, 'Shop', ` + merchant + `, ?)`, []any{at}},
		{`INSERT INTO ledger_transactions (kind, reference, created_at) VALUES ('charge', 'ch_auto', ?)`, []any{at}},
		{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			((SELECT id FROM ledger_transactions WHERE reference = 'ch_auto'), ` + wallet + `, -20000, 130000, ?),
			((SELECT id FROM ledger_transactions WHERE reference = 'ch_auto'), ` + merchant + `, 20000, 20000, ?)`, []any{at, at}},
		{`INSERT INTO ledger_transactions (kind, reference, created_at) VALUES ('refund', 're_1', ?)`, []any{at}},
		{`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			((SELECT id FROM ledger_transactions WHERE reference = 're_1'), ` + merchant + `, -5000, 15000, ?),
			((SELECT id FROM ledger_transactions WHERE reference = 're_1'), ` + wallet + `, 5000, 135000, ?)`, []any{at, at}},
		{`INSERT INTO ledger_holds (account_id, amount_rials, reason, reference, status, expires_at, created_at)
			VALUES (` + wallet + `, 10000, 'charge', 'ch_man', 'open', ?, ?)`, []any{now.Add(time.Hour).UTC(), at}},
		{`UPDATE ledger_accounts SET posted_rials = 135000, held_rials = 30000 WHERE code = 'wallet:1'`, nil},
		{`INSERT INTO charges (public_id, merchant_user_id, payer_user_id, amount_rials, order_id, capture_method, status,
			captured_rials, refunded_rials, hold_id, form_token, expires_at, hold_expires_at, created_at, updated_at) VALUES
			('ch_auto', 5, 1, 20000, 'o-1', 'automatic', 'succeeded', 20000, 5000, NULL, 't1', ?, NULL, ?, ?),
			('ch_man', 5, 1, 10000, 'o-2', 'manual', 'authorized', 0, 0, (SELECT id FROM ledger_holds WHERE reference = 'ch_man'), 't2', ?, ?, ?, ?)`,
			[]any{at.Add(30 * time.Minute), at, at, at.Add(30 * time.Minute), now.Add(time.Hour).UTC(), at, at}},
		{`INSERT INTO charge_refunds (public_id, charge_id, amount_rials, form_token, created_at)
			VALUES ('re_1', (SELECT id FROM charges WHERE public_id = 'ch_auto'), 5000, 'r1', ?)`, []any{at}},
		{`INSERT INTO charge_events (charge_id, type, from_status, to_status, actor, amount_rials, created_at) VALUES
			((SELECT id FROM charges WHERE public_id = 'ch_auto'), 'charge.succeeded', 'requires_confirmation', 'succeeded', 'payer', 20000, ?),
			((SELECT id FROM charges WHERE public_id = 'ch_man'), 'charge.authorized', 'requires_confirmation', 'authorized', 'payer', 10000, ?)`,
			[]any{at, at}},
	} {
		if err := db.Gorm.Exec(s.sql, s.args...).Error; err != nil {
			t.Fatalf("seed %s: %v", s.sql, err)
		}
	}
}

// TestChargeRules: charges as the app writes them pass every rule; each
// deliberate breakage is named by its rule.
func TestChargeRules(t *testing.T) {
	cases := []ruleCase{
		{"healthy", nil, "", ""},
		{"refunded without its refund", []string{`DELETE FROM ledger_postings WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE reference = 're_1')`,
			`DELETE FROM ledger_transactions WHERE reference = 're_1'`, `DELETE FROM charge_refunds WHERE public_id = 're_1'`},
			"charge_amounts", "charge ch_auto"},
		{"succeeded without its transaction", []string{`DELETE FROM ledger_postings WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE reference = 'ch_auto')`,
			`DELETE FROM ledger_transactions WHERE reference = 'ch_auto'`},
			"charge_ledger_matches", "charge ch_auto"},
		{"paid into another account", []string{`UPDATE ledger_postings SET account_id = (SELECT id FROM ledger_accounts WHERE code = 'suspense')
			WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE reference = 'ch_auto') AND amount_rials > 0`},
			"charge_ledger_matches", "charge ch_auto"},
		{"authorized, its hold released", []string{`UPDATE ledger_holds SET status = 'released', ended_at = created_at WHERE reference = 'ch_man'`,
			`UPDATE ledger_accounts SET held_rials = 20000 WHERE code = 'wallet:1'`},
			"charge_ledger_matches", "charge ch_man"},
		{"authorized, its hold expired behind it", []string{`UPDATE ledger_holds SET status = 'expired', ended_at = created_at WHERE reference = 'ch_man'`,
			`UPDATE ledger_accounts SET held_rials = 20000 WHERE code = 'wallet:1'`},
			"charge_ledger_matches", "charge ch_man"},
		{"a refund without its transaction", []string{`DELETE FROM ledger_postings WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE reference = 're_1')`,
			`DELETE FROM ledger_transactions WHERE reference = 're_1'`},
			"charge_ledger_matches", "charge refund re_1"},
		{"status changed without its event", []string{`UPDATE charges SET status = 'canceled' WHERE public_id = 'ch_man'`},
			"charge_events_end_in_status", "charge ch_man"},
	}
	checkRuleCases(t, cases, seedCharges)
}
