package storetest

import (
	"testing"

	"github.com/kifpool/kifpool/internal/store"
)

// CheckInvariants asserts the promises of ARCHITECTURE §2 over the whole
// database: every balance equals the sum of its ledger and is never
// negative; at most one ledger entry per payment and one payment per bank
// reference; every credited payment has a reference and a verified amount
// equal to its own amount, and exactly one ledger entry of that amount in
// its wallet; no other payment has a ledger entry.
func CheckInvariants(t testing.TB, db *store.DB) {
	t.Helper()
	for _, c := range []struct{ what, sql string }{
		{"balance = sum(ledger)", `SELECT COUNT(*) FROM wallets w WHERE w.balance_rials <>
			COALESCE((SELECT SUM(l.amount_rials) FROM ledger_entries l WHERE l.wallet_id = w.id), 0)`},
		{"balance >= 0", `SELECT COUNT(*) FROM wallets WHERE balance_rials < 0`},
		{"at most one ledger entry per payment", `SELECT COUNT(*) FROM (SELECT payment_id FROM ledger_entries
			WHERE payment_id IS NOT NULL GROUP BY payment_id HAVING COUNT(*) > 1) x`},
		{"at most one payment per (gateway, ref_id)", `SELECT COUNT(*) FROM (SELECT gateway, ref_id FROM payments
			WHERE ref_id IS NOT NULL GROUP BY gateway, ref_id HAVING COUNT(*) > 1) x`},
		{"credited has ref_id and the verified amount", `SELECT COUNT(*) FROM payments WHERE status = 'credited'
			AND (ref_id IS NULL OR verified_amount_rials IS NULL OR verified_amount_rials <> amount_rials)`},
		{"credited has exactly its ledger entry", `SELECT COUNT(*) FROM payments p WHERE p.status = 'credited'
			AND (SELECT COUNT(*) FROM ledger_entries l WHERE l.payment_id = p.id AND l.amount_rials = p.amount_rials AND l.wallet_id = p.wallet_id) <> 1`},
		{"only credited payments have ledger entries", `SELECT COUNT(*) FROM ledger_entries l JOIN payments p
			ON p.id = l.payment_id WHERE p.status <> 'credited'`},
	} {
		var n int64
		if err := db.Gorm.Raw(c.sql).Scan(&n).Error; err != nil {
			t.Fatalf("invariant %s: %v", c.what, err)
		}
		if n != 0 {
			t.Errorf("invariant broken: %s (%d rows)", c.what, n)
		}
	}
}
