// Package people reads people for the admin pages: users found by
// e-mail, a user with their wallet, a wallet's ledger, and admins' e-mail
// addresses. It only reads. Top-ups are read by internal/topupread.
package people

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/email"
	"github.com/kifpool/kifpool/internal/store"
)

// Reader reads the database for the admin pages about people: pages
// only, so every read goes to its read pool when it has one
// (DATABASE_READ_URL; docs/design/scaling.md#read-replicas).
type Reader struct {
	db    *store.DB
	reads *store.ReadPool
}

// New returns a reader over db.
func New(db *store.DB) *Reader { return &Reader{db: db} }

// WithReadPool returns a reader whose reads go to pool.
func (r *Reader) WithReadPool(pool *store.ReadPool) *Reader {
	return &Reader{db: r.db, reads: pool}
}

// Fresh returns the reader with every read on the primary: for a page
// that shows what was just written (the admin's page of one top-up, after
// an action).
func (r *Reader) Fresh() *Reader { return &Reader{db: r.db} }

// page is the database a read goes to: the read pool's, else db.
func (r *Reader) page() *store.DB {
	if r.reads == nil {
		return r.db
	}
	return r.reads.DB()
}

// ErrNotFound is returned for a user that does not exist.
var ErrNotFound = errors.New("not found")

// ErrSearchTooShort is returned for a search by part of an address that
// holds no three letters or digits in a row: no index can find it, and
// it would read every user (store.TrigramSearchable).
var ErrSearchTooShort = errors.New("people: search text too short")

// User is a person as the admin pages show them, with their wallet.
type User struct {
	ID        int64
	Email     string
	Role      string
	Locale    string
	CreatedAt time.Time
	// EmailVerifiedAt is when the owner confirmed the address (nil:
	// not yet; only a confirmed address receives transfers).
	EmailVerifiedAt *time.Time
	WalletID        int64
	BalanceRials    int64
	HeldRials       int64
}

// LedgerEntry is one ledger transaction of a wallet (ID is the
// transaction's), with its payment's public id.
type LedgerEntry struct {
	ID            int64
	TopUpID       *int64
	TopUpPublicID string
	AmountRials   int64
	BalanceAfter  int64
	Kind          string
	CreatedAt     time.Time
}

const userColumns = "u.id, u.email, u.role, u.locale, u.created_at, u.email_verified_at, w.id AS wallet_id, a.posted_rials AS balance_rials, a.held_rials"

// userJoins bring in the user's wallet and its ledger account.
const userJoins = "LEFT JOIN wallets w ON w.user_id = u.id LEFT JOIN ledger_accounts a ON a.wallet_id = w.id"

// User returns a user with their wallet.
func (r *Reader) User(ctx context.Context, id int64) (User, error) {
	var out []User
	err := r.page().Gorm.WithContext(ctx).Table("users AS u").Select(userColumns).
		Joins(userJoins).Where("u.id = ?", id).Limit(1).Scan(&out).Error
	if err != nil {
		return User{}, fmt.Errorf("user %d: %w", id, err)
	}
	if len(out) == 0 {
		return User{}, ErrNotFound
	}
	return out[0], nil
}

// Users finds users whose e-mail address contains q (any case), newest
// first; with no q, the newest users; with a whole address, that person.
// A part of an address without three letters or digits in a row is
// refused with ErrSearchTooShort.
func (r *Reader) Users(ctx context.Context, q string, limit int) ([]User, error) {
	tx := r.page().Gorm.WithContext(ctx).Table("users AS u").Select(userColumns).Joins(userJoins)
	switch q = strings.TrimSpace(q); {
	case q == "":
	case email.LooksWhole(q):
		// A whole address is that person (the unique index on
		// lower(email)), however short.
		tx = tx.Where(`lower(u.email) = ?`, strings.ToLower(q))
	case !store.TrigramSearchable(q):
		return nil, ErrSearchTooShort
	default:
		tx = tx.Where(`lower(u.email) LIKE ? ESCAPE '\'`, store.Containing(strings.ToLower(q)))
	}
	var out []User
	if err := tx.Order("u.id DESC").Limit(limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("find users: %w", err)
	}
	return out, nil
}

// Ledger returns a wallet's latest movements, newest first.
func (r *Reader) Ledger(ctx context.Context, walletID int64, limit int) ([]LedgerEntry, error) {
	var out []LedgerEntry
	err := r.page().Gorm.WithContext(ctx).Table("ledger_postings AS lp").
		Select("t.id, t.topup_id, p.public_id AS topup_public_id, lp.amount_rials, lp.balance_after_rials AS balance_after, t.kind, lp.created_at").
		Joins("JOIN ledger_transactions t ON t.id = lp.transaction_id").
		Joins("LEFT JOIN topups p ON p.id = t.topup_id").
		// The wallet's one account with "=" (not a join), so that the
		// planner walks (account_id, id) newest first and stops at the
		// limit instead of sorting every posting of the account (3.2 s
		// for one with 80,000, make bench-admin).
		Where("lp.account_id = (SELECT id FROM ledger_accounts WHERE wallet_id = ?)", walletID).Order("lp.id DESC").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("ledger of wallet %d: %w", walletID, err)
	}
	return out, nil
}

// Emails returns the e-mail address of each user id given (admins in the
// audit log and the timeline).
func (r *Reader) Emails(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID    int64
		Email string
	}
	if err := r.page().Gorm.WithContext(ctx).Table("users").Select("id, email").Where("id IN ?", ids).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("emails of users: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Email
	}
	return out, nil
}
