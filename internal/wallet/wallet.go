// Package wallet holds wallets and their ledger. It is the ONLY code that
// changes a balance: every change is a ledger entry written in the same
// transaction as the balance, so balance = sum(ledger) always holds.
package wallet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

// Wallet is a user's wallet. Every user has exactly one.
type Wallet struct {
	ID           int64 `gorm:"primaryKey"`
	UserID       int64
	BalanceRials int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Entry kinds.
const KindTopUp = "topup"

// LedgerEntry is one change of a balance.
type LedgerEntry struct {
	ID           int64 `gorm:"primaryKey"`
	WalletID     int64
	PaymentID    *int64
	AmountRials  int64
	BalanceAfter int64
	Kind         string
	CreatedAt    time.Time
}

// ErrAlreadyCredited means the payment already has its ledger entry: the
// unique index on ledger_entries.payment_id refused a second one.
var ErrAlreadyCredited = errors.New("payment already credited")

// ErrNotFound means there is no such wallet.
var ErrNotFound = errors.New("wallet not found")

// Create makes the wallet of a new user inside the caller's transaction.
func Create(tx *gorm.DB, userID int64, now time.Time) (Wallet, error) {
	w := Wallet{UserID: userID, CreatedAt: now, UpdatedAt: now}
	if err := tx.Create(&w).Error; err != nil {
		return Wallet{}, fmt.Errorf("create wallet for user %d: %w", userID, err)
	}
	return w, nil
}

// CreditTopUp adds a verified top-up to a wallet inside the caller's
// transaction: the ledger entry (at most one per payment, by a unique
// index) and the balance, together. A second credit of the same payment
// returns ErrAlreadyCredited and must be treated as a replay; the caller's
// transaction must then be rolled back.
func CreditTopUp(tx *gorm.DB, walletID, paymentID, amountRials int64, now time.Time) (LedgerEntry, error) {
	if amountRials <= 0 {
		return LedgerEntry{}, fmt.Errorf("credit wallet %d: amount %d is not positive", walletID, amountRials)
	}
	var balance int64
	res := tx.Raw(`UPDATE wallets SET balance_rials = balance_rials + ?, updated_at = ? WHERE id = ? RETURNING balance_rials`,
		amountRials, now, walletID).Scan(&balance)
	if res.Error != nil {
		return LedgerEntry{}, fmt.Errorf("credit wallet %d: %w", walletID, res.Error)
	}
	if res.RowsAffected == 0 {
		return LedgerEntry{}, fmt.Errorf("credit wallet %d: %w", walletID, ErrNotFound)
	}
	pid := paymentID
	e := LedgerEntry{WalletID: walletID, PaymentID: &pid, AmountRials: amountRials, BalanceAfter: balance, Kind: KindTopUp, CreatedAt: now}
	if err := tx.Create(&e).Error; err != nil {
		if store.IsUniqueViolation(err) {
			return LedgerEntry{}, fmt.Errorf("credit payment %d: %w", paymentID, ErrAlreadyCredited)
		}
		return LedgerEntry{}, fmt.Errorf("ledger entry for payment %d: %w", paymentID, err)
	}
	return e, nil
}

// Service reads wallets and their history.
type Service struct {
	db *store.DB
}

// NewService returns a wallet reader over db.
func NewService(db *store.DB) *Service { return &Service{db: db} }

// ForUser returns the user's wallet.
func (s *Service) ForUser(ctx context.Context, userID int64) (Wallet, error) {
	var w Wallet
	err := s.db.Gorm.WithContext(ctx).Where("user_id = ?", userID).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Wallet{}, ErrNotFound
	}
	if err != nil {
		return Wallet{}, fmt.Errorf("wallet of user %d: %w", userID, err)
	}
	return w, nil
}

// HistoryItem is a ledger entry with the public id of its payment.
type HistoryItem struct {
	ID              int64
	AmountRials     int64
	BalanceAfter    int64
	Kind            string
	CreatedAt       time.Time
	PaymentPublicID string
	RefID           *int64
}

// History returns up to limit entries of the wallet, newest first, older
// than the entry with id before (0: from the newest). next is the cursor
// for the following page, 0 when there is none (keyset pagination).
func (s *Service) History(ctx context.Context, walletID, before int64, limit int) (items []HistoryItem, next int64, err error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	q := s.db.Gorm.WithContext(ctx).Table("ledger_entries AS l").
		Select("l.id, l.amount_rials, l.balance_after, l.kind, l.created_at, p.public_id AS payment_public_id, p.ref_id").
		Joins("LEFT JOIN payments p ON p.id = l.payment_id").
		Where("l.wallet_id = ?", walletID)
	if before > 0 {
		q = q.Where("l.id < ?", before)
	}
	// Read with database/sql's Scan in the columns' order (GORM's
	// reflective Scan into structs cost more than the query).
	rs, err := q.Order("l.id DESC").Limit(limit + 1).Rows()
	if err != nil {
		return nil, 0, fmt.Errorf("history of wallet %d: %w", walletID, err)
	}
	defer rs.Close()
	for rs.Next() {
		var it HistoryItem
		var publicID sql.NullString // no payment: NULL (a top-up always has one)
		if err := rs.Scan(&it.ID, &it.AmountRials, &it.BalanceAfter, &it.Kind, &it.CreatedAt, &publicID, &it.RefID); err != nil {
			return nil, 0, fmt.Errorf("history of wallet %d: %w", walletID, err)
		}
		it.PaymentPublicID = publicID.String
		items = append(items, it)
	}
	if err := rs.Err(); err != nil {
		return nil, 0, fmt.Errorf("history of wallet %d: %w", walletID, err)
	}
	if len(items) > limit {
		items = items[:limit]
		next = items[limit-1].ID
	}
	return items, next, nil
}
