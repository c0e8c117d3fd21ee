// Package withdrawaltest is the withdrawals' test support: typed reads
// and writes of their rows, bank accounts, national codes and ledger, so
// that tests above (the web's) assert outcomes without SQL, a clock the
// tests move, and the invariants of `kifpool check`.
package withdrawaltest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

// Clock is a clock tests move (testclock's, with the name of its move
// these tests use).
type Clock struct{ *testclock.Clock }

// NewClock starts at a working day's morning in Tehran (a Saturday,
// 10:00 there).
func NewClock() *Clock { return ClockAt(time.Date(2025, 6, 7, 6, 30, 0, 0, time.UTC)) }

// ClockAt is a clock at t (a web test's: its sessions' cookies must
// not be expired in the client's real time).
func ClockAt(t time.Time) *Clock { return &Clock{testclock.New(t)} }

// Advance moves the clock.
func (c *Clock) Advance(d time.Duration) { c.Add(d) }

// User makes a user (address confirmed) with a wallet and its ledger
// account; it returns their ids.
func User(t testing.TB, db *store.DB, email string) (userID, walletID int64) {
	t.Helper()
	now := time.Now().UTC()
	if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, role, locale, created_at, email_verified_at) VALUES (?, 'x', 'user', 'en', ?, ?) RETURNING id`,
		email, now, now).Scan(&userID).Error; err != nil {
		t.Fatalf("user %s: %v", email, err)
	}
	if err := db.Gorm.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, userID, now, now).
		Scan(&walletID).Error; err != nil {
		t.Fatalf("wallet of %s: %v", email, err)
	}
	if _, err := ledger.CreateWalletAccount(db.Gorm, walletID, userID, now); err != nil {
		t.Fatal(err)
	}
	return userID, walletID
}

// Fund credits a wallet with rials from a gateway's clearing account, as
// a top-up would (an adjustment: no payment row).
func Fund(t testing.TB, db *store.DB, walletID, rials int64) {
	t.Helper()
	l := ledger.New(db)
	ctx := context.Background()
	gw, err := l.EnsureAccount(ctx, ledger.AccountGateway, ledger.GatewayCode("zarinpal"), 0)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := l.WalletAccount(db.Gorm, walletID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: fmt.Sprintf("fund:%d:%d", walletID, time.Now().UnixNano()),
		Postings: ledger.Transfer(gw, acct, rials), At: time.Now()}); err != nil {
		t.Fatalf("fund wallet %d: %v", walletID, err)
	}
}

// Sheba is a valid Sheba of bank code, its account part made of n.
func Sheba(bankCode string, n int) string {
	return string(iban.Make(bankCode, fmt.Sprintf("%019d", n)))
}

// NationalCode is a valid national code made of n.
func NationalCode(n int) string {
	nine := fmt.Sprintf("%09d", n%1_000_000_000)
	return fmt.Sprintf("%s%d", nine, iban.NationalCheckDigit(nine))
}

// VerifiedAccount gives the user a national code (when none yet) and a
// verified bank account of sheba; it returns the account's id.
func VerifiedAccount(t testing.TB, db *store.DB, userID int64, sheba string) int64 {
	t.Helper()
	return account(t, db, userID, sheba, "verified")
}

// PendingAccount is VerifiedAccount waiting for an admin's review.
func PendingAccount(t testing.TB, db *store.DB, userID int64, sheba string) int64 {
	t.Helper()
	return account(t, db, userID, sheba, "pending_review")
}

func account(t testing.TB, db *store.DB, userID int64, sheba, status string) int64 {
	t.Helper()
	now := time.Now().UTC()
	if err := db.Gorm.Exec(`INSERT INTO national_codes (user_id, national_code, created_at) VALUES (?, ?, ?) ON CONFLICT (user_id) DO NOTHING`,
		userID, NationalCode(int(userID)*7919), now).Error; err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.Gorm.Raw(`INSERT INTO bank_accounts (user_id, sheba, bank_code, status, checked_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'test', ?, ?) RETURNING id`, userID, sheba, sheba[4:7], status, now, now).Scan(&id).Error; err != nil {
		t.Fatalf("bank account: %v", err)
	}
	return id
}

// BankAccountStatus is an account's status.
func BankAccountStatus(t testing.TB, db *store.DB, id int64) string {
	t.Helper()
	var s string
	if err := db.Gorm.Raw(`SELECT status FROM bank_accounts WHERE id = ?`, id).Scan(&s).Error; err != nil {
		t.Fatal(err)
	}
	return s
}

// BankAccounts counts a user's accounts.
func BankAccounts(t testing.TB, db *store.DB, userID int64) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(`SELECT COUNT(*) FROM bank_accounts WHERE user_id = ?`, userID).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// NationalCodeOf is the user's national code on file ("" for none).
func NationalCodeOf(t testing.TB, db *store.DB, userID int64) string {
	t.Helper()
	var s []string
	if err := db.Gorm.Raw(`SELECT national_code FROM national_codes WHERE user_id = ?`, userID).Scan(&s).Error; err != nil {
		t.Fatal(err)
	}
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// Get reads a withdrawal by its public id.
func Get(t testing.TB, db *store.DB, publicID string) withdrawal.Withdrawal {
	t.Helper()
	var w withdrawal.Withdrawal
	if err := db.Gorm.Table("withdrawals").Where("public_id = ?", publicID).Take(&w).Error; err != nil {
		t.Fatalf("withdrawal %s: %v", publicID, err)
	}
	return w
}

// All lists every withdrawal, oldest first.
func All(t testing.TB, db *store.DB) []withdrawal.Withdrawal {
	t.Helper()
	var out []withdrawal.Withdrawal
	if err := db.Gorm.Table("withdrawals").Order("id").Find(&out).Error; err != nil {
		t.Fatal(err)
	}
	return out
}

// Events lists a withdrawal's events, oldest first.
func Events(t testing.TB, db *store.DB, id int64) []withdrawal.Event {
	t.Helper()
	var out []withdrawal.Event
	if err := db.Gorm.Table("withdrawal_events").Where("withdrawal_id = ?", id).Order("id").Find(&out).Error; err != nil {
		t.Fatal(err)
	}
	return out
}

// Hold reads a withdrawal's hold.
func Hold(t testing.TB, db *store.DB, holdID int64) ledger.Hold {
	t.Helper()
	var h ledger.Hold
	if err := db.Gorm.Table("ledger_holds").Where("id = ?", holdID).Take(&h).Error; err != nil {
		t.Fatal(err)
	}
	return h
}

// Figures are a wallet's posted and held rials.
type Figures struct{ Posted, Held int64 }

// Wallet reads a wallet's figures.
func Wallet(t testing.TB, db *store.DB, walletID int64) Figures {
	t.Helper()
	var f Figures
	if err := db.Gorm.Raw(`SELECT posted_rials AS posted, held_rials AS held FROM ledger_accounts WHERE wallet_id = ?`, walletID).
		Scan(&f).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

// Account reads the posted rials of the account of code (0 when none).
func Account(t testing.TB, db *store.DB, code string) int64 {
	t.Helper()
	var n []int64
	if err := db.Gorm.Raw(`SELECT posted_rials FROM ledger_accounts WHERE code = ?`, code).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if len(n) == 0 {
		return 0
	}
	return n[0]
}

// Returns counts the withdrawal_return transactions of a withdrawal.
func Returns(t testing.TB, db *store.DB, publicID string) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'withdrawal_return' AND reference = ?`, publicID).
		Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// Calls counts the provider attempts recorded for a withdrawal by
// operation.
func Calls(t testing.TB, db *store.DB, publicID string) map[string]int {
	t.Helper()
	var rows []struct {
		Operation string
		N         int
	}
	if err := db.Gorm.Raw(`SELECT operation, COUNT(*) AS n FROM payout_calls WHERE reference = ? GROUP BY operation`, publicID).
		Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Operation] = r.N
	}
	return out
}

// AuditActions counts the audit log's rows of an action.
func AuditActions(t testing.TB, db *store.DB, action string) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(`SELECT COUNT(*) FROM admin_actions WHERE action = ?`, action).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// CheckInvariants asserts every rule of `kifpool check` (the call log's
// and the clock's left out).
func CheckInvariants(t testing.TB, db *store.DB) {
	t.Helper()
	rep, err := integrity.Check(context.Background(), db, integrity.Options{NoCallLog: true})
	if err != nil {
		t.Fatalf("invariants: %v", err)
	}
	for _, v := range rep.Violations() {
		t.Errorf("invariant broken: %s", v)
	}
}

// FundUser credits a user's wallet (Fund) by their id.
func FundUser(t testing.TB, db *store.DB, userID, rials int64) {
	t.Helper()
	var walletID int64
	if err := db.Gorm.Raw(`SELECT id FROM wallets WHERE user_id = ?`, userID).Scan(&walletID).Error; err != nil || walletID == 0 {
		t.Fatalf("wallet of user %d: %v", userID, err)
	}
	Fund(t, db, walletID, rials)
}

// WalletOf reads a user's wallet figures by the user's id.
func WalletOf(t testing.TB, db *store.DB, userID int64) Figures {
	t.Helper()
	var f Figures
	if err := db.Gorm.Raw(`SELECT a.posted_rials AS posted, a.held_rials AS held FROM ledger_accounts a JOIN wallets w ON w.id = a.wallet_id
		WHERE w.user_id = ?`, userID).Scan(&f).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

// ByUser lists a user's withdrawals, oldest first.
func ByUser(t testing.TB, db *store.DB, userID int64) []withdrawal.Withdrawal {
	t.Helper()
	var out []withdrawal.Withdrawal
	if err := db.Gorm.Table("withdrawals").Where("user_id = ?", userID).Order("id").Find(&out).Error; err != nil {
		t.Fatal(err)
	}
	return out
}

// ForceNeedsReview moves a submitted withdrawal to needs_review with its
// event, as the worker does when a provider's answer stays unknown too
// long (a fixture for the admin's pages, without the days it takes).
func ForceNeedsReview(t testing.TB, db *store.DB, publicID string) {
	t.Helper()
	w := Get(t, db, publicID)
	if w.Status != withdrawal.StatusSubmitted {
		t.Fatalf("withdrawal %s is %s, not submitted", publicID, w.Status)
	}
	now := time.Now().UTC()
	if err := db.Gorm.Exec(`UPDATE withdrawals SET status = 'needs_review', status_reason = 'unknown_too_long', lease_owner = '', lease_until = NULL
		WHERE id = ?`, w.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm.Exec(`INSERT INTO withdrawal_events (withdrawal_id, from_status, to_status, actor, reason, created_at)
		VALUES (?, 'submitted', 'needs_review', 'worker', 'unknown_too_long', ?)`, w.ID, now).Error; err != nil {
		t.Fatal(err)
	}
}

// Rename gives a withdrawal not yet sent the public id publicID (its
// hold's reference follows): a fixture's fixed id for screenshots, never
// a lifecycle move.
func Rename(t testing.TB, db *store.DB, old, publicID string) {
	t.Helper()
	if !withdrawal.ValidPublicID(publicID) {
		t.Fatalf("%q is no withdrawal's public id", publicID)
	}
	w := Get(t, db, old)
	if w.Status != withdrawal.StatusRequested {
		t.Fatalf("withdrawal %s is %s: only one not yet sent is renamed", old, w.Status)
	}
	err := db.Tx(context.Background(), func(tx *gorm.DB) error {
		if err := tx.Exec(`UPDATE withdrawals SET public_id = ? WHERE id = ?`, publicID, w.ID).Error; err != nil {
			return err
		}
		return tx.Exec(`UPDATE ledger_holds SET reference = ? WHERE reason = ? AND reference = ?`, publicID, withdrawal.HoldReason, old).Error
	})
	if err != nil {
		t.Fatalf("rename withdrawal %s: %v", old, err)
	}
}

// RestampAccounts dates every bank account of the user at (a fixture's
// fixed times for screenshots).
func RestampAccounts(t testing.TB, db *store.DB, userID int64, at time.Time) {
	t.Helper()
	if err := db.Gorm.Exec(`UPDATE bank_accounts SET created_at = ?, updated_at = ? WHERE user_id = ?`, at.UTC(), at.UTC(), userID).Error; err != nil {
		t.Fatalf("restamp the bank accounts of user %d: %v", userID, err)
	}
	if err := db.Gorm.Exec(`UPDATE national_codes SET created_at = ? WHERE user_id = ?`, at.UTC(), userID).Error; err != nil {
		t.Fatalf("restamp the national code of user %d: %v", userID, err)
	}
}

// ForceProviderPaid puts a submitted withdrawal under review as the
// worker does when the provider says it transferred it for another
// amount: reason amount_disagrees, the provider's word transferred, with
// its reference ref.
func ForceProviderPaid(t testing.TB, db *store.DB, publicID, ref string) {
	t.Helper()
	ForceNeedsReview(t, db, publicID)
	if err := db.Gorm.Exec(`UPDATE withdrawals SET status_reason = 'amount_disagrees', provider_state = 'transferred', provider_ref = ?
		WHERE public_id = ?`, ref, publicID).Error; err != nil {
		t.Fatal(err)
	}
}

// ForceContradicted records that the provider has contradicted its word
// on publicID since since (unknown_since: the count of its "failed" or
// "not found" after it said it had or transferred the payout; another
// word starts it again), which word not recorded, as on a row contradicted before migration 00058
// (ForceContradictedBy records it).
func ForceContradicted(t testing.TB, db *store.DB, publicID string, since time.Time) {
	t.Helper()
	if err := db.Gorm.Exec(`UPDATE withdrawals SET unknown_since = ? WHERE public_id = ?`, since.UTC(), publicID).Error; err != nil {
		t.Fatal(err)
	}
}

// ForceContradictedBy records that the provider has contradicted its
// word on publicID since since, last with word (the worker's record of
// its "failed" after "transferred", or of its "not found" after it had
// the payout).
func ForceContradictedBy(t testing.TB, db *store.DB, publicID string, word withdrawal.Contradiction, since time.Time) {
	t.Helper()
	if err := db.Gorm.Exec(`UPDATE withdrawals SET unknown_since = ?, contradiction = ? WHERE public_id = ?`, since.UTC(), string(word), publicID).Error; err != nil {
		t.Fatal(err)
	}
}

// ForceProviderUnknown puts a submitted withdrawal under review as the
// worker does when the provider's answer to its submit stayed unknown
// too long: the provider's word unknown.
func ForceProviderUnknown(t testing.TB, db *store.DB, publicID string) {
	t.Helper()
	ForceNeedsReview(t, db, publicID)
	if err := db.Gorm.Exec(`UPDATE withdrawals SET provider_state = 'unknown' WHERE public_id = ?`, publicID).Error; err != nil {
		t.Fatal(err)
	}
}

// HoldPerson locks the national codes of userID's person, as a
// withdrawal's write does, in a transaction of its own that lasts until
// release is called (its error, if any, is the test's). On SQLite the
// transaction is a writer: every other writer waits for it.
func HoldPerson(t testing.TB, db *store.DB, userID int64) (release func()) {
	t.Helper()
	locked, done, stop := make(chan error, 1), make(chan error, 1), make(chan struct{})
	go func() {
		done <- db.Tx(context.Background(), func(tx *gorm.DB) error {
			_, err := bankaccount.SamePerson(tx, db.Dialect, userID, true)
			if err == nil && db.Dialect != store.Postgres {
				// SQLite: a read does not make the transaction a writer.
				err = tx.Exec(`UPDATE national_codes SET national_code = national_code WHERE user_id = ?`, userID).Error
			}
			locked <- err
			if err != nil {
				return err
			}
			<-stop
			return nil
		})
	}()
	if err := <-locked; err != nil {
		t.Fatalf("hold the person of user %d: %v", userID, err)
	}
	return func() {
		t.Helper()
		close(stop)
		if err := <-done; err != nil {
			t.Fatalf("release the person of user %d: %v", userID, err)
		}
	}
}

// WaitingForANationalCode reports whether a session of the database
// waits for a row lock of national_codes (PostgreSQL; false on SQLite).
func WaitingForANationalCode(t testing.TB, db *store.DB) bool {
	t.Helper()
	if db.Dialect != store.Postgres {
		return false
	}
	var n int64
	if err := db.Gorm.Raw(`SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
		AND query LIKE '%national_codes%' AND pid <> pg_backend_pid()`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n > 0
}
