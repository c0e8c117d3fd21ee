// Package wallet holds users' wallets. A wallet's balance is its ledger
// account's (internal/ledger): a credit is a ledger transaction, gateway
// clearing → the wallet's account, written by CreditTopUp in the caller's
// transaction, and nothing else changes a balance but the ledger.
package wallet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
)

// Wallet is a user's wallet with its account's figures. A user has at
// most one: signing up makes it, and a user without one yet (made before
// wallets were, or by hand) gets it from Ensure the first time money
// comes in; until then Figures reads an empty wallet.
type Wallet struct {
	ID        int64
	UserID    int64
	AccountID int64
	// BalanceRials is the account's posted balance; HeldRials what holds
	// reserve of it (charges, withdrawals awaiting their outcome).
	BalanceRials int64
	HeldRials    int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// AvailableRials is what the user may spend: posted − held.
func (w Wallet) AvailableRials() int64 { return w.BalanceRials - w.HeldRials }

// ErrAlreadyCredited means the payment already has its ledger transaction:
// the unique (kind, reference) index refused a second one.
var ErrAlreadyCredited = errors.New("payment already credited")

// ErrNotFound means there is no such wallet.
var ErrNotFound = errors.New("wallet not found")

// Create makes the wallet of a new user and its ledger account inside the
// caller's transaction.
func Create(tx *gorm.DB, userID int64, now time.Time) (Wallet, error) {
	w := struct {
		ID        int64 `gorm:"primaryKey"`
		UserID    int64
		CreatedAt time.Time
		UpdatedAt time.Time
	}{UserID: userID, CreatedAt: now, UpdatedAt: now}
	if err := tx.Table("wallets").Create(&w).Error; err != nil {
		return Wallet{}, fmt.Errorf("create wallet for user %d: %w", userID, err)
	}
	acc, err := ledger.CreateWalletAccount(tx, w.ID, userID, now)
	if err != nil {
		return Wallet{}, err
	}
	return Wallet{ID: w.ID, UserID: userID, AccountID: acc, CreatedAt: now, UpdatedAt: now}, nil
}

// Ensure returns the user's wallet, making it and its ledger account
// inside the caller's transaction when the user has none yet. Two
// transactions racing to make it: the unique wallets.user_id makes one
// wait for the other (ON CONFLICT DO NOTHING), and the second reads the
// first's. The figures are not read (zero).
func Ensure(tx *gorm.DB, userID int64, now time.Time) (Wallet, error) {
	var ids []int64
	if err := store.Scan(tx.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT (user_id) DO NOTHING RETURNING id`,
		userID, now, now), &ids); err != nil {
		return Wallet{}, fmt.Errorf("ensure wallet of user %d: %w", userID, err)
	}
	if len(ids) == 1 {
		acc, err := ledger.CreateWalletAccount(tx, ids[0], userID, now)
		if err != nil {
			return Wallet{}, err
		}
		return Wallet{ID: ids[0], UserID: userID, AccountID: acc, CreatedAt: now, UpdatedAt: now}, nil
	}
	var ws []Wallet
	if err := store.Scan(tx.Raw(`SELECT w.id, w.user_id, a.id AS account_id, w.created_at, a.updated_at
		FROM wallets w JOIN ledger_accounts a ON a.wallet_id = w.id WHERE w.user_id = ?`, userID), &ws); err != nil {
		return Wallet{}, fmt.Errorf("ensure wallet of user %d: %w", userID, err)
	}
	if len(ws) == 0 {
		return Wallet{}, fmt.Errorf("ensure wallet of user %d: %w", userID, ErrNotFound)
	}
	return ws[0], nil
}

// TopUpCredit is a verified top-up to credit.
type TopUpCredit struct {
	WalletID    int64
	TopUpID     int64
	PublicID    string // the payment's: the transaction's reference
	Gateway     string // whose clearing account gives
	AmountRials int64  // as the bank verified it
	At          time.Time
}

// CreditTopUp posts a verified top-up inside the caller's transaction: the
// ledger transaction gateway clearing (the payment's slot of it,
// ledger.ClearingCode) → the wallet's account (at most one
// per payment, by the unique (kind, reference) index). A second credit of
// the same payment returns ErrAlreadyCredited and must be treated as a
// replay; the caller's transaction must then be rolled back.
func CreditTopUp(tx *gorm.DB, l *ledger.Ledger, c TopUpCredit) (ledger.Transaction, error) {
	if c.AmountRials <= 0 {
		return ledger.Transaction{}, fmt.Errorf("credit wallet %d: amount %d is not positive", c.WalletID, c.AmountRials)
	}
	from, err := l.ClearingAccount(tx, c.Gateway, c.TopUpID)
	if err != nil {
		return ledger.Transaction{}, fmt.Errorf("credit payment %s: %w", c.PublicID, err)
	}
	// The wallet is older than tx: the payment being credited references
	// it, and an earlier transaction made that payment. Its account is
	// found by the ledger's statement itself (PostToWallet).
	t, err := l.PostToWallet(tx, ledger.Entry{Kind: ledger.KindTopUp, Reference: c.PublicID, TopUpID: c.TopUpID, At: c.At},
		from, c.WalletID, c.AmountRials)
	if errors.Is(err, ledger.ErrAccountNotFound) {
		return ledger.Transaction{}, fmt.Errorf("credit payment %s: wallet %d: %w: %w", c.PublicID, c.WalletID, ErrNotFound, err)
	}
	if errors.Is(err, ledger.ErrDuplicate) {
		return ledger.Transaction{}, fmt.Errorf("credit payment %s: %w: %w", c.PublicID, ErrAlreadyCredited, err)
	}
	return t, err
}

// Service reads wallets and their history.
type Service struct {
	db     *store.DB
	ledger *ledger.Ledger
	// reads is where History reads (nil: db); the wallet's figures,
	// which moves check, always come from db.
	reads *store.ReadPool
}

// WithReadPool returns the service with its history read from pool
// (DATABASE_READ_URL; docs/design/scaling.md#read-replicas).
func (s *Service) WithReadPool(pool *store.ReadPool) *Service {
	return &Service{db: s.db, ledger: s.ledger, reads: pool}
}

// NewService returns a wallet reader over db and the instance's ledger
// (nil: a ledger of its own, for a test or a command).
func NewService(db *store.DB, l *ledger.Ledger) *Service {
	if l == nil {
		l = ledger.New(db)
	}
	return &Service{db: db, ledger: l}
}

// ForUser returns the user's wallet with its account's figures.
func (s *Service) ForUser(ctx context.Context, userID int64) (Wallet, error) {
	var ws []Wallet
	err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT w.id, w.user_id, a.id AS account_id, a.posted_rials AS balance_rials, a.held_rials,
		w.created_at, a.updated_at FROM wallets w JOIN ledger_accounts a ON a.wallet_id = w.id WHERE w.user_id = ?`, userID), &ws)
	if err != nil {
		return Wallet{}, fmt.Errorf("wallet of user %d: %w", userID, err)
	}
	if len(ws) == 0 {
		return Wallet{}, ErrNotFound
	}
	return ws[0], nil
}

// Figures returns the user's wallet with its figures as a page shows
// them: a user without a wallet yet has an empty one (ID 0, every figure
// 0), and nothing is written.
func (s *Service) Figures(ctx context.Context, userID int64) (Wallet, error) {
	w, err := s.ForUser(ctx, userID)
	if errors.Is(err, ErrNotFound) {
		return Wallet{UserID: userID}, nil
	}
	return w, err
}

// Ensure returns the user's wallet, made at now in its own transaction
// when they have none yet (Ensure), with its figures.
func (s *Service) Ensure(ctx context.Context, userID int64, now time.Time) (Wallet, error) {
	w, err := s.ForUser(ctx, userID)
	if !errors.Is(err, ErrNotFound) {
		return w, err
	}
	if err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		_, err := Ensure(tx, userID, now.UTC().Truncate(time.Microsecond))
		return err
	}); err != nil {
		return Wallet{}, err
	}
	return s.ForUser(ctx, userID)
}

// HistoryItem is one ledger transaction that touched the wallet.
type HistoryItem = ledger.HistoryRow

// History returns up to limit of the wallet's transactions, newest first,
// older than the posting before (0: from the newest). next is the cursor
// for the following page, 0 when there is none (keyset pagination).
func (s *Service) History(ctx context.Context, w Wallet, before int64, limit int) (items []HistoryItem, next int64, err error) {
	if s.reads != nil {
		return s.ledger.HistoryFrom(ctx, s.reads.DB(), w.AccountID, before, limit)
	}
	return s.ledger.History(ctx, w.AccountID, before, limit)
}
