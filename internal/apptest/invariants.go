package apptest

import (
	"testing"

	"github.com/kifpool/kifpool/internal/store"
)

// CheckInvariants asserts the promises of ARCHITECTURE §2 over the whole
// database: every balance equals the sum of its ledger and is never
// negative; at most one ledger entry per payment and one payment per bank
// reference; every credited payment has a reference and a verified amount
// equal to its own amount, and exactly one ledger entry of that amount.
func CheckInvariants(t testing.TB, db *store.DB) {
	t.Helper()
	g := db.Gorm
	var n int64
	count := func(what, sql string) {
		t.Helper()
		n = -1
		if err := g.Raw(sql).Scan(&n).Error; err != nil {
			t.Fatalf("invariant %s: %v", what, err)
		}
		if n != 0 {
			t.Errorf("invariant broken: %s (%d rows)", what, n)
		}
	}
	count("balance = sum(ledger)", `SELECT COUNT(*) FROM wallets w WHERE w.balance_rials <>
		COALESCE((SELECT SUM(l.amount_rials) FROM ledger_entries l WHERE l.wallet_id = w.id), 0)`)
	count("balance >= 0", `SELECT COUNT(*) FROM wallets WHERE balance_rials < 0`)
	count("one ledger entry per payment", `SELECT COUNT(*) FROM (SELECT payment_id FROM ledger_entries
		WHERE payment_id IS NOT NULL GROUP BY payment_id HAVING COUNT(*) > 1) x`)
	count("one payment per ref_id", `SELECT COUNT(*) FROM (SELECT gateway, ref_id FROM payments
		WHERE ref_id IS NOT NULL GROUP BY gateway, ref_id HAVING COUNT(*) > 1) x`)
	count("credited has ref_id and verified amount", `SELECT COUNT(*) FROM payments WHERE status = 'credited'
		AND (ref_id IS NULL OR verified_amount_rials IS NULL OR verified_amount_rials <> amount_rials)`)
	count("credited has exactly its ledger entry", `SELECT COUNT(*) FROM payments p WHERE p.status = 'credited'
		AND (SELECT COUNT(*) FROM ledger_entries l WHERE l.payment_id = p.id AND l.amount_rials = p.amount_rials) <> 1`)
	count("only credited payments have ledger entries", `SELECT COUNT(*) FROM ledger_entries l JOIN payments p
		ON p.id = l.payment_id WHERE p.status <> 'credited'`)
}

// Count runs a COUNT query.
func Count(t testing.TB, db *store.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(sql, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
