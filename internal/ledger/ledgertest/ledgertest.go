// Package ledgertest reads the ledger for tests in typed form, so that a
// test above the ledger asserts balances and credits without writing SQL
// against its tables.
package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
)

// Credit is the wallet's side of a top-up's ledger transaction.
type Credit struct {
	TransactionID     int64
	WalletID          int64
	AmountRials       int64
	BalanceAfterRials int64
}

// Balance is a wallet's posted balance (its ledger account's).
func Balance(t testing.TB, db *store.DB, walletID int64) int64 {
	t.Helper()
	var b []int64
	if err := db.Gorm.Raw(`SELECT posted_rials FROM ledger_accounts WHERE wallet_id = ?`, walletID).Scan(&b).Error; err != nil {
		t.Fatalf("balance of wallet %d: %v", walletID, err)
	}
	if len(b) != 1 {
		t.Fatalf("wallet %d has %d ledger accounts", walletID, len(b))
	}
	return b[0]
}

// Held is what holds reserve of a wallet's balance.
func Held(t testing.TB, db *store.DB, walletID int64) int64 {
	t.Helper()
	var h int64
	if err := db.Gorm.Raw(`SELECT held_rials FROM ledger_accounts WHERE wallet_id = ?`, walletID).Scan(&h).Error; err != nil {
		t.Fatalf("held of wallet %d: %v", walletID, err)
	}
	return h
}

// CreditsOf lists the top-up transactions of payment paymentID as its
// wallet saw them (one, for a credited payment).
func CreditsOf(t testing.TB, db *store.DB, topUpID int64) []Credit {
	t.Helper()
	var out []Credit
	if err := db.Gorm.Raw(`SELECT t.id AS transaction_id, a.wallet_id, lp.amount_rials, lp.balance_after_rials
		FROM ledger_transactions t JOIN ledger_postings lp ON lp.transaction_id = t.id JOIN ledger_accounts a ON a.id = lp.account_id
		WHERE t.kind = 'topup' AND t.topup_id = ? AND a.kind = 'wallet' ORDER BY t.id`, topUpID).Scan(&out).Error; err != nil {
		t.Fatalf("credits of payment %d: %v", topUpID, err)
	}
	return out
}

// Credits counts every top-up transaction in the ledger.
func Credits(t testing.TB, db *store.DB) int64 {
	t.Helper()
	return count(t, db, `SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'topup'`)
}

// Transactions counts every ledger transaction.
func Transactions(t testing.TB, db *store.DB) int64 {
	t.Helper()
	return count(t, db, `SELECT COUNT(*) FROM ledger_transactions`)
}

// Holds counts every hold, whatever its state.
func Holds(t testing.TB, db *store.DB) int64 {
	t.Helper()
	return count(t, db, `SELECT COUNT(*) FROM ledger_holds`)
}

// Wallets counts the user's wallets (0: none yet, 1).
func Wallets(t testing.TB, db *store.DB, userID int64) int64 {
	t.Helper()
	return count(t, db, `SELECT COUNT(*) FROM wallets WHERE user_id = ?`, userID)
}

// DropWallet takes away a fresh user's wallet and its account (which
// must have no postings): a user made before wallets were, who has never
// received money.
func DropWallet(t testing.TB, db *store.DB, userID int64) {
	t.Helper()
	for _, q := range []string{`DELETE FROM ledger_accounts WHERE wallet_id IN (SELECT id FROM wallets WHERE user_id = ?)`,
		`DELETE FROM wallets WHERE user_id = ?`} {
		if err := db.Gorm.Exec(q, userID).Error; err != nil {
			t.Fatalf("drop the wallet of user %d: %v", userID, err)
		}
	}
}

func count(t testing.TB, db *store.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// WalletsTotal is the sum of every wallet's posted balance.
func WalletsTotal(t testing.TB, db *store.DB) int64 {
	t.Helper()
	return count(t, db, `SELECT COALESCE(SUM(posted_rials), 0) FROM ledger_accounts WHERE kind = 'wallet'`)
}

// Total is the sum of every account's posted balance: zero in a
// double-entry ledger, whatever moved (money is never made or lost, only
// moved between accounts, the outside world's included).
func Total(t testing.TB, db *store.DB) int64 {
	t.Helper()
	return count(t, db, `SELECT COALESCE(SUM(posted_rials), 0) FROM ledger_accounts`)
}

// RestampTopUp dates the ledger transaction of a top-up (payment
// paymentID) and its postings at at: a screenshot fixture's fixed history
// on SQLite. Postings and transactions are append-only, so it first drops
// SQLite's triggers that refuse the update, on this test database only;
// on PostgreSQL it fails the test (the ledger's history is never
// rewritten there, not even by a fixture).
func RestampTopUp(t testing.TB, db *store.DB, topUpID int64, at time.Time) {
	t.Helper()
	if db.Dialect != store.SQLite {
		t.Fatalf("restamp the ledger: SQLite fixtures only")
	}
	for _, q := range []string{
		`DROP TRIGGER IF EXISTS ledger_transactions_no_update`,
		`DROP TRIGGER IF EXISTS ledger_postings_no_update`,
	} {
		if err := db.Gorm.Exec(q).Error; err != nil {
			t.Fatalf("restamp the ledger: %v", err)
		}
	}
	if err := db.Gorm.Exec(`UPDATE ledger_transactions SET created_at = ? WHERE topup_id = ?`, at, topUpID).Error; err != nil {
		t.Fatalf("restamp the ledger transaction of payment %d: %v", topUpID, err)
	}
	if err := db.Gorm.Exec(`UPDATE ledger_postings SET created_at = ? WHERE transaction_id IN
		(SELECT id FROM ledger_transactions WHERE topup_id = ?)`, at, topUpID).Error; err != nil {
		t.Fatalf("restamp the postings of payment %d: %v", topUpID, err)
	}
}

// Fund puts rials into the account of a wallet, from a test gateway's
// clearing account, as an operator's adjustment (reference names it, and
// is unique): a test's starting balance without a bank.
func Fund(t testing.TB, db *store.DB, walletAccountID, rials int64, reference string) {
	t.Helper()
	ctx := context.Background()
	l := ledger.New(db)
	gw, err := l.EnsureAccount(ctx, ledger.AccountGateway, ledger.GatewayCode("test-fund"), 0)
	if err != nil {
		t.Fatalf("fund: %v", err)
	}
	if _, err := l.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: "fund:" + reference,
		Postings: ledger.Transfer(gw, walletAccountID, rials), At: time.Now()}); err != nil {
		t.Fatalf("fund account %d: %v", walletAccountID, err)
	}
}
