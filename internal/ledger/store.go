package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

// Ledger writes and reads the ledger over one database. Its methods that
// take a context are each one database transaction; Post writes inside a
// transaction of the caller's (a top-up's credit is written in the same
// transaction as the payment's move).
//
// It remembers account ids by code and by wallet: an account's id never
// changes once its row is committed, so a remembered id is never stale as
// long as only ids of committed rows enter the cache. An id read inside a
// caller's transaction may be of a row that transaction made and will roll
// back: on PostgreSQL an id that then names no account; on SQLite, whose
// AUTOINCREMENT rolls back with the transaction, an id given again to the
// next account made, another user's wallet. So an id enters the cache only from
// the ledger's own committed transaction (EnsureAccount), from a read
// outside any transaction, or, for a clearing slot, from a read in a
// transaction when this ledger has not made that slot in a transaction of
// a caller's. A wallet's account is made by wallet.Create, out of the
// ledger's sight, so a wallet read in a transaction is remembered only
// when the caller vouches that the wallet is older than the transaction
// (CommittedWalletAccount: a top-up's credit).
//
// Each map holds at most cacheCap ids and is emptied when full: ids never
// change, so forgetting is always correct, and millions of wallets cannot
// grow the process without bound.
type Ledger struct {
	db *store.DB

	mu       sync.RWMutex
	cacheCap int
	byCode   map[string]codeEntry
	byWallet map[int64]int64
	// madeInTx are the codes this ledger made inside a caller's
	// transaction (ClearingAccount), not known to be committed: never
	// remembered from a read in a transaction. EnsureAccount, which
	// commits its own, takes a code off.
	madeInTx map[string]bool

	// groupMax and batch are Write's group commit (GroupCommit), batch
	// nil without it; groupTimeout bounds a group's round trip
	// (batchTimeout when 0; tests shorten it).
	groupMax     int
	groupTimeout time.Duration
	batch        *batcher
}

// codeEntry is an account's id and kind (exported fields: GORM scans
// rows into it).
type codeEntry struct {
	ID   int64
	Kind AccountKind
}

// DefaultCacheCap is how many ids each of a ledger's caches (by code, by
// wallet) holds before it is emptied: about 5 MB at most for both.
const DefaultCacheCap = 50_000

// lookupAfterError bounds Write's look-up of a movement whose write
// failed, run even after the caller's context ended.
const lookupAfterError = 5 * time.Second

// New returns the ledger over db. With GroupCommit on PostgreSQL it
// starts a goroutine of its own, which its owner stops with Close.
func New(db *store.DB, opts ...Option) *Ledger {
	return newLedger(db, nil, false, opts...)
}

// newLedger is New, with before run before each group is written and,
// with all, every Write sent to the group writer (tests).
func newLedger(db *store.DB, before func(), all bool, opts ...Option) *Ledger {
	l := &Ledger{db: db, cacheCap: DefaultCacheCap, byCode: map[string]codeEntry{}, byWallet: map[int64]int64{}, madeInTx: map[string]bool{}}
	for _, o := range opts {
		o(l)
	}
	if l.groupMax >= 2 && db.Dialect == store.Postgres {
		timeout := l.groupTimeout
		if timeout <= 0 {
			timeout = batchTimeout
		}
		l.batch = newBatcher(l, l.groupMax, timeout, before, all)
	}
	return l
}

// Account is a ledger account with its two figures.
type Account struct {
	ID            int64
	Kind          AccountKind
	Code          string
	WalletID      *int64
	UserID        *int64
	MayGoNegative bool
	PostedRials   int64
	HeldRials     int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// AvailableRials is what the account may spend: posted − held.
func (a Account) AvailableRials() int64 { return a.PostedRials - a.HeldRials }

// Transaction is a written ledger transaction.
type Transaction struct {
	ID         int64
	Kind       Kind
	Reference  string
	TopUpID    *int64
	ReversesID *int64
	Note       string
	CreatedAt  time.Time
	Postings   []PostingRow `gorm:"-"`
}

// PostingRow is a written posting with the account's posted balance after
// it.
type PostingRow struct {
	ID                int64
	TransactionID     int64
	AccountID         int64
	AmountRials       int64
	BalanceAfterRials int64
	CreatedAt         time.Time
}

const (
	accountsTable     = "ledger_accounts"
	transactionsTable = "ledger_transactions"
	postingsTable     = "ledger_postings"
	holdsTable        = "ledger_holds"
)

// CreateWalletAccount makes the account of a new wallet inside the
// caller's transaction (the wallet's own).
func CreateWalletAccount(tx *gorm.DB, walletID, userID int64, now time.Time) (int64, error) {
	a := Account{Kind: AccountWallet, Code: WalletCode(walletID), WalletID: &walletID, UserID: &userID, CreatedAt: now, UpdatedAt: now}
	if err := tx.Table(accountsTable).Create(&a).Error; err != nil {
		return 0, fmt.Errorf("account of wallet %d: %w", walletID, err)
	}
	return a.ID, nil
}

// EnsureAccount returns the id of the account with code, making it (of
// kind, for userID when not 0) when there is none, in its own transaction.
// An account of code that is of another kind is an error, never an
// answer.
func (l *Ledger) EnsureAccount(ctx context.Context, kind AccountKind, code string, userID int64) (int64, error) {
	if id, ok := l.cachedCode(code, kind); ok {
		return id, nil
	}
	if !kind.Valid() {
		return 0, fmt.Errorf("ledger: unknown account kind %q", kind)
	}
	var id int64
	err := l.db.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		id, err = ensureAccount(tx, kind, code, userID, time.Now())
		return err
	})
	if err != nil {
		return 0, err
	}
	// Committed: whatever made it, the row is there for good.
	l.mu.Lock()
	delete(l.madeInTx, code)
	l.mu.Unlock()
	l.rememberCode(code, kind, id)
	return id, nil
}

func ensureAccount(tx *gorm.DB, kind AccountKind, code string, userID int64, now time.Time) (int64, error) {
	var uid any
	if userID != 0 {
		uid = userID
	}
	if err := tx.Exec(`INSERT INTO ledger_accounts (kind, code, user_id, may_go_negative, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (code) DO NOTHING`, kind, code, uid, kind.MayGoNegative(), now.UTC(), now.UTC()).Error; err != nil {
		return 0, fmt.Errorf("account %s: %w", code, err)
	}
	var rows []codeEntry
	if err := store.Scan(tx.Raw(`SELECT id, kind FROM ledger_accounts WHERE code = ?`, code), &rows); err != nil || len(rows) == 0 {
		return 0, fmt.Errorf("account %s: %w", code, errors.Join(err, ErrAccountNotFound))
	}
	if rows[0].Kind != kind {
		return 0, fmt.Errorf("ledger: account %s is a %s account, not %s", code, rows[0].Kind, kind)
	}
	return rows[0].ID, nil
}

// cachedCode is the remembered id of the account of code, when it is of
// kind.
func (l *Ledger) cachedCode(code string, kind AccountKind) (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.byCode[code]
	return e.ID, ok && e.Kind == kind
}

func (l *Ledger) rememberCode(code string, kind AccountKind, id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.byCode) >= l.cacheCap {
		clear(l.byCode)
	}
	l.byCode[code] = codeEntry{ID: id, Kind: kind}
}

func (l *Ledger) rememberWallet(walletID, id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.byWallet) >= l.cacheCap {
		clear(l.byWallet)
	}
	l.byWallet[walletID] = id
}

// inTx reports whether db runs inside a transaction (what it reads may
// be uncommitted).
func inTx(db *gorm.DB) bool {
	_, ok := db.Statement.ConnPool.(gorm.TxCommitter)
	return ok
}

// EnsureClearing makes every clearing slot of each gateway that has none
// yet (at start, for the gateways offered), so that a credit never makes
// one on its path.
func (l *Ledger) EnsureClearing(ctx context.Context, gateways ...string) error {
	for _, g := range gateways {
		for slot := range int64(ClearingSlots) {
			if _, err := l.EnsureAccount(ctx, AccountGateway, ClearingCode(g, slot), 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// ClearingAccount returns the id of the clearing slot of gateway that a
// credit of payment paymentID takes (ClearingCode), inside the caller's
// transaction tx, making it when it does not exist yet (a slot's first
// credit, a gateway named after the migration). An id tx may have made
// itself is never remembered (see Ledger).
func (l *Ledger) ClearingAccount(tx *gorm.DB, gateway string, topUpID int64) (int64, error) {
	code := ClearingCode(gateway, topUpID)
	if id, ok := l.cachedCode(code, AccountGateway); ok {
		return id, nil
	}
	// Read in tx (a second connection could wait behind tx's own write
	// lock on SQLite). A row found here is committed unless tx made it,
	// and tx makes one only below, which madeInTx records first.
	var rows []codeEntry
	if err := store.Scan(tx.Raw(`SELECT id, kind FROM ledger_accounts WHERE code = ?`, code), &rows); err != nil {
		return 0, fmt.Errorf("clearing account of %s: %w", gateway, err)
	}
	if len(rows) == 1 {
		if rows[0].Kind != AccountGateway {
			return 0, fmt.Errorf("ledger: account %s is a %s account, not a gateway's", code, rows[0].Kind)
		}
		l.mu.RLock()
		unsure := l.madeInTx[code]
		l.mu.RUnlock()
		if !unsure {
			l.rememberCode(code, AccountGateway, rows[0].ID)
		}
		return rows[0].ID, nil
	}
	l.mu.Lock()
	l.madeInTx[code] = true
	l.mu.Unlock()
	return ensureAccount(tx, AccountGateway, code, 0, time.Now())
}

// WalletAccount returns the id of a wallet's account, read through db (a
// transaction of the caller's, or the ledger's database). The account is
// made with the wallet, in an earlier transaction than any posting to it.
// An id read inside a transaction is not remembered: that transaction may
// have made the wallet, and roll it back (CommittedWalletAccount is for a
// wallet known to be older than the transaction).
func (l *Ledger) WalletAccount(db *gorm.DB, walletID int64) (int64, error) {
	return l.walletAccount(db, walletID, !inTx(db))
}

// CommittedWalletAccount is WalletAccount for a wallet the caller knows
// was committed before db's transaction began, so that the id it reads
// there is remembered: a top-up's wallet, which its payment, made by an
// earlier transaction, references (wallet.CreditTopUp). It keeps a credit
// at the statements it had (TestCreditPathStatements): the wallet's
// account is read on the instance's first credit of the wallet only.
func (l *Ledger) CommittedWalletAccount(db *gorm.DB, walletID int64) (int64, error) {
	return l.walletAccount(db, walletID, true)
}

func (l *Ledger) walletAccount(db *gorm.DB, walletID int64, keep bool) (int64, error) {
	l.mu.RLock()
	id, ok := l.byWallet[walletID]
	l.mu.RUnlock()
	if ok {
		return id, nil
	}
	if err := store.Scan(db.Raw(`SELECT id FROM ledger_accounts WHERE wallet_id = ?`, walletID), &id); err != nil {
		return 0, fmt.Errorf("account of wallet %d: %w", walletID, err)
	}
	if id == 0 {
		return 0, fmt.Errorf("account of wallet %d: %w", walletID, ErrAccountNotFound)
	}
	if keep {
		l.rememberWallet(walletID, id)
	}
	return id, nil
}

// Post writes entry e inside the caller's transaction tx (given the
// database itself, in a transaction of its own): the transaction
// row (its kind and reference unique: a replay is ErrDuplicate, and the
// caller must roll back), each account's balance by a guarded UPDATE in
// ascending id order (ErrInsufficientFunds when an account that may not go
// below zero would), then the postings with each account's balance after.
// Any error leaves tx to be rolled back.
func (l *Ledger) Post(tx *gorm.DB, e Entry) (Transaction, error) {
	return l.post(tx, e, nil)
}

// post is Post with holds ending in the same transaction: release[account]
// is taken off that account's held figure in the same guarded UPDATE as
// its postings (a capture).
func (l *Ledger) post(tx *gorm.DB, e Entry, release map[int64]int64) (Transaction, error) {
	net, err := Validate(e)
	if err != nil {
		return Transaction{}, err
	}
	at := e.At.UTC()
	t := Transaction{Kind: e.Kind, Reference: e.Reference, Note: e.Note, CreatedAt: at}
	if e.TopUpID != 0 {
		t.TopUpID = &e.TopUpID
	}
	if e.ReversesID != 0 {
		t.ReversesID = &e.ReversesID
	}
	if l.db.Dialect == store.Postgres {
		return l.postOne(tx, e, t, net, release, at)
	}
	if !inTx(tx) {
		// SQLite's several statements are atomic only in a transaction:
		// given the database itself, Post makes its own.
		var out Transaction
		err := tx.Transaction(func(tx *gorm.DB) error {
			var err error
			out, err = l.postSQLite(tx, e, t, net, release, at)
			return err
		})
		return out, err
	}
	return l.postSQLite(tx, e, t, net, release, at)
}

// postSQLite is post on SQLite, inside tx: the transaction first (a
// replay stops here, before any balance is touched), then each balance by
// its guarded UPDATE, then the postings, and their sum read back.
func (l *Ledger) postSQLite(tx *gorm.DB, e Entry, t Transaction, net []Posting, release map[int64]int64, at time.Time) (Transaction, error) {
	if e.ReversesID != 0 {
		// A reversal of a reversal is refused here, in the transaction
		// that writes it (a transaction's kind never changes: the row is
		// append-only).
		if err := refuseReversalOfReversal(tx, e); err != nil {
			return Transaction{}, err
		}
	}
	if err := store.Scan(tx.Raw(`INSERT INTO ledger_transactions (kind, reference, topup_id, reverses_id, note, created_at)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING id`, t.Kind, t.Reference, t.TopUpID, t.ReversesID, t.Note, at), &t.ID); err != nil {
		if store.IsUniqueViolation(err) {
			return Transaction{}, fmt.Errorf("%s %s: %w", e.Kind, e.Reference, ErrDuplicate)
		}
		return Transaction{}, fmt.Errorf("ledger transaction %s %s: %w", e.Kind, e.Reference, err)
	}
	var ins strings.Builder
	ins.WriteString(`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES `)
	args := make([]any, 0, 5*len(net))
	for i, p := range net {
		after, err := move(tx, p.AccountID, p.AmountRials, -release[p.AccountID], at)
		if errors.Is(err, ErrInsufficientFunds) {
			// An account of a higher id may not exist: that is the
			// refusal (as PostgreSQL's statement reports it), whatever
			// the balances.
			err = errors.Join(missingAccount(tx, net), err)
		}
		if err != nil {
			return Transaction{}, fmt.Errorf("%s %s: %w", e.Kind, e.Reference, err)
		}
		if i > 0 {
			ins.WriteString(", ")
		}
		ins.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, t.ID, p.AccountID, p.AmountRials, after, at)
		t.Postings = append(t.Postings, PostingRow{TransactionID: t.ID, AccountID: p.AccountID, AmountRials: p.AmountRials, BalanceAfterRials: after, CreatedAt: at})
	}
	if err := tx.Exec(ins.String(), args...).Error; err != nil {
		return Transaction{}, fmt.Errorf("postings of %s %s: %w", e.Kind, e.Reference, err)
	}
	// No Σ = 0 trigger on SQLite: read the sum back in the same
	// transaction (PostgreSQL's trigger does this at the end of the
	// statement, migration 00041).
	var sum struct{ Total, N int64 }
	if err := tx.Raw(`SELECT COALESCE(SUM(amount_rials), 0) AS total, COUNT(*) AS n FROM ledger_postings WHERE transaction_id = ?`, t.ID).
		Scan(&sum).Error; err != nil {
		return Transaction{}, fmt.Errorf("sum of %s %s: %w", e.Kind, e.Reference, err)
	}
	if sum.Total != 0 || sum.N < 2 {
		return Transaction{}, fmt.Errorf("%w: transaction %d has %d postings summing to %d rials", ErrUnbalanced, t.ID, sum.N, sum.Total)
	}
	return t, nil
}

// postOne is post on PostgreSQL: one statement, whose parts run in an
// order fixed by what each reads, not by the planner's choice of join:
//
//  1. lk locks the accounts in ascending id (ORDER BY id FOR NO KEY
//     UPDATE locks rows in the order it returns them);
//  2. t inserts the transaction once lk has locked every account (it
//     reads lk's count; when an account is missing it inserts nothing,
//     and nothing else is written: ErrAccountNotFound), and only when
//     the original a reversal names is not a reversal itself (otherwise
//     it inserts nothing either: ErrReversalReversed). A replay is
//     refused here by the unique (kind, reference) (ErrDuplicate), before
//     any balance moves: a replay of money spent since is a replay, not
//     ErrInsufficientFunds, as on SQLite;
//  3. mv moves the figures of the accounts, only once t has its row (it
//     reads t). An account that may not go below zero is kept at
//     available ≥ 0 and held ≥ 0 by the CHECK constraints of
//     ledger_accounts, in the UPDATE itself: the statement fails whole
//     (ErrInsufficientFunds);
//  4. the postings, with each account's balance after.
//
// A hot account (a merchant's, a clearing slot) stays locked from this one
// statement to the commit, not across several round trips.
func (l *Ledger) postOne(tx *gorm.DB, e Entry, t Transaction, net []Posting, release map[int64]int64, at time.Time) (Transaction, error) {
	ids := make([]string, len(net))
	vals := make([]string, len(net))
	args := make([]any, 0, 4*len(net)+8)
	for i, p := range net {
		ids[i] = "?"
		args = append(args, p.AccountID)
	}
	args = append(args, t.Kind, t.Reference, t.TopUpID, t.ReversesID, t.Note, at)
	// A reversal only: its original must not be a reversal (the text of
	// every other movement's statement stays as it was: one prepared
	// statement per shape, transfer.pgbench's).
	notOfReversal := ""
	if e.ReversesID != 0 {
		notOfReversal = `
			AND NOT EXISTS (SELECT 1 FROM ledger_transactions o WHERE o.id = ?::bigint AND o.kind = 'reversal')`
		args = append(args, t.ReversesID)
	}
	args = append(args, at)
	for i, p := range net {
		vals[i] = "(?::bigint, ?::bigint, ?::bigint)"
		args = append(args, p.AccountID, p.AmountRials, -release[p.AccountID])
	}
	args = append(args, at)
	// The count is the entry's shape, written into the text, not a value.
	var rows []struct{ TransactionID, AccountID, BalanceAfterRials int64 }
	err := store.Scan(tx.Raw(`WITH lk AS (SELECT id FROM ledger_accounts WHERE id IN (`+strings.Join(ids, ", ")+`) ORDER BY id FOR NO KEY UPDATE),
		t AS (INSERT INTO ledger_transactions (kind, reference, topup_id, reverses_id, note, created_at)
			SELECT ?::text, ?::text, ?::bigint, ?::bigint, ?::text, ?::timestamptz WHERE (SELECT count(*) FROM lk) = `+strconv.Itoa(len(net))+notOfReversal+` RETURNING id),
		mv AS (UPDATE ledger_accounts a SET posted_rials = a.posted_rials + v.amount, held_rials = a.held_rials + v.held, updated_at = ?
			FROM (VALUES `+strings.Join(vals, ", ")+`) AS v (account_id, amount, held)
			WHERE a.id = v.account_id AND EXISTS (SELECT 1 FROM t) RETURNING a.id, a.posted_rials, v.amount)
		INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at)
		SELECT t.id, mv.id, mv.amount, mv.posted_rials, ? FROM t, mv
		RETURNING transaction_id, account_id, balance_after_rials`, args...), &rows)
	if err == nil && len(rows) == 0 && e.ReversesID != 0 {
		// Nothing inserted: an account missing, or the original a
		// reversal (its kind never changes, so reading it now tells).
		if rerr := refuseReversalOfReversal(tx, e); rerr != nil {
			return Transaction{}, rerr
		}
	}
	if err := statementErr(e, err, len(rows), len(net), func() string { return fmt.Sprintf("%d of %d accounts", len(rows), len(net)) }); err != nil {
		return Transaction{}, err
	}
	after := make(map[int64]int64, len(rows))
	for _, r := range rows {
		after[r.AccountID] = r.BalanceAfterRials
	}
	t.ID = rows[0].TransactionID
	for _, p := range net {
		t.Postings = append(t.Postings, PostingRow{TransactionID: t.ID, AccountID: p.AccountID, AmountRials: p.AmountRials,
			BalanceAfterRials: after[p.AccountID], CreatedAt: at})
	}
	return t, nil
}

// PostToWallet posts e, a movement of amountRials from account from into
// the account of wallet walletID, inside the caller's transaction tx: a
// top-up's credit (wallet.CreditTopUp). As with CommittedWalletAccount, the
// caller vouches that the wallet is older than tx, so the account id found
// is remembered. e's Postings are ignored. On PostgreSQL, when the wallet's
// account id is not remembered yet, the one statement finds it itself
// (postToWalletOne): no read before it, one round trip fewer on the credit
// path. Otherwise this is Post of ledger.Transfer(from, the account, amount).
func (l *Ledger) PostToWallet(tx *gorm.DB, e Entry, from, walletID, amountRials int64) (Transaction, error) {
	l.mu.RLock()
	_, known := l.byWallet[walletID]
	l.mu.RUnlock()
	if known || l.db.Dialect != store.Postgres || e.ReversesID != 0 {
		to, err := l.CommittedWalletAccount(tx, walletID)
		if err != nil {
			return Transaction{}, err
		}
		e.Postings = Transfer(from, to, amountRials)
		return l.Post(tx, e)
	}
	// Validate the shape with a stand-in for the wallet's account (any id
	// other than from's): the statement names the real one.
	stand := from + 1
	e.Postings = Transfer(from, stand, amountRials)
	if _, err := Validate(e); err != nil {
		return Transaction{}, err
	}
	return l.postToWalletOne(tx, e, from, walletID, amountRials)
}

// postToWalletOne is postOne for a movement from account from into the
// account of wallet walletID, named by its wallet: w finds the account
// (wallet_id is unique) and lk locks both in ascending id; a wallet
// without an account locks one row only, writes nothing and is
// ErrAccountNotFound.
func (l *Ledger) postToWalletOne(tx *gorm.DB, e Entry, from, walletID, amountRials int64) (Transaction, error) {
	at := e.At.UTC()
	var topUpID *int64
	if e.TopUpID != 0 {
		topUpID = &e.TopUpID
	}
	var rows []struct{ TransactionID, AccountID, BalanceAfterRials int64 }
	err := store.Scan(tx.Raw(`WITH w AS (SELECT id FROM ledger_accounts WHERE wallet_id = ?),
		lk AS (SELECT id FROM ledger_accounts WHERE id = ? OR id = (SELECT id FROM w) ORDER BY id FOR NO KEY UPDATE),
		t AS (INSERT INTO ledger_transactions (kind, reference, topup_id, reverses_id, note, created_at)
			SELECT ?::text, ?::text, ?::bigint, NULL::bigint, ?::text, ?::timestamptz WHERE (SELECT count(*) FROM lk) = 2 RETURNING id),
		mv AS (UPDATE ledger_accounts a SET posted_rials = a.posted_rials + v.amount, updated_at = ?
			FROM (VALUES (?::bigint, ?::bigint), ((SELECT id FROM w), ?::bigint)) AS v (account_id, amount)
			WHERE a.id = v.account_id AND EXISTS (SELECT 1 FROM t) RETURNING a.id, a.posted_rials, v.amount)
		INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at)
		SELECT t.id, mv.id, mv.amount, mv.posted_rials, ? FROM t, mv
		RETURNING transaction_id, account_id, balance_after_rials`,
		walletID, from, e.Kind, e.Reference, topUpID, e.Note, at, at, from, -amountRials, amountRials, at), &rows)
	if err := statementErr(e, err, len(rows), 2, func() string { return fmt.Sprintf("account of wallet %d", walletID) }); err != nil {
		return Transaction{}, err
	}
	t := Transaction{ID: rows[0].TransactionID, Kind: e.Kind, Reference: e.Reference, TopUpID: topUpID, Note: e.Note, CreatedAt: at}
	after := make(map[int64]int64, 2)
	var to int64
	for _, r := range rows {
		after[r.AccountID] = r.BalanceAfterRials
		if r.AccountID != from {
			to = r.AccountID
		}
	}
	l.rememberWallet(walletID, to)
	for _, p := range Net(Transfer(from, to, amountRials)) {
		t.Postings = append(t.Postings, PostingRow{TransactionID: t.ID, AccountID: p.AccountID, AmountRials: p.AmountRials,
			BalanceAfterRials: after[p.AccountID], CreatedAt: at})
	}
	return t, nil
}

// move changes one account's posted figure by amount and its held figure
// by held, guarded in the UPDATE itself: an account that may not go below
// zero keeps posted − held ≥ 0, and held never goes below zero. It returns
// the posted balance after.
func move(tx *gorm.DB, accountID, amount, held int64, at time.Time) (int64, error) {
	var after []int64
	if err := store.Scan(tx.Raw(`UPDATE ledger_accounts SET posted_rials = posted_rials + ?, held_rials = held_rials + ?, updated_at = ?
		WHERE id = ? AND held_rials + ? >= 0 AND (may_go_negative OR posted_rials + ? - (held_rials + ?) >= 0)
		RETURNING posted_rials`, amount, held, at, accountID, held, amount, held), &after); err != nil {
		if balanceViolation(err) {
			return 0, fmt.Errorf("account %d: %w", accountID, ErrInsufficientFunds)
		}
		return 0, fmt.Errorf("account %d: %w", accountID, err)
	}
	if len(after) == 1 {
		return after[0], nil
	}
	var n int64
	if err := store.Scan(tx.Raw(`SELECT COUNT(*) FROM ledger_accounts WHERE id = ?`, accountID), &n); err != nil {
		return 0, fmt.Errorf("account %d: %w", accountID, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("account %d: %w", accountID, ErrAccountNotFound)
	}
	return 0, fmt.Errorf("account %d: %w", accountID, ErrInsufficientFunds)
}

// missingAccount is ErrAccountNotFound when an account of ps does not
// exist, nil when all do (or when it cannot tell).
func missingAccount(tx *gorm.DB, ps []Posting) error {
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.AccountID
	}
	var n int64
	if err := store.Scan(tx.Raw(`SELECT COUNT(*) FROM ledger_accounts WHERE id IN ?`, ids), &n); err != nil || n == int64(len(ids)) {
		return nil
	}
	return fmt.Errorf("%d of %d accounts: %w", n, len(ids), ErrAccountNotFound)
}

// refuseReversalOfReversal is ErrReversalReversed when the original
// reversal e names is itself a reversal, read through tx; nil when it is
// not, or is not there (the foreign key refuses that).
func refuseReversalOfReversal(tx *gorm.DB, e Entry) error {
	var kinds []Kind
	if err := store.Scan(tx.Raw(`SELECT kind FROM ledger_transactions WHERE id = ?`, e.ReversesID), &kinds); err != nil {
		return fmt.Errorf("%s %s: original %d: %w", e.Kind, e.Reference, e.ReversesID, err)
	}
	if len(kinds) == 1 && kinds[0] == KindReversal {
		return fmt.Errorf("%s %s: transaction %d is a reversal: %w", e.Kind, e.Reference, e.ReversesID, ErrReversalReversed)
	}
	return nil
}

// Write posts e in a transaction of its own. A replay (ErrDuplicate)
// answers with the transaction written first; another movement under a
// taken kind and reference is ErrReferenceReused, with the first.
//
// On PostgreSQL the write is postOne's one statement sent on its own: the
// statement is its own transaction (autocommit; the Σ = 0 trigger runs at
// its end), one round trip instead of BEGIN, the statement and
// COMMIT, and an account it locks (a hot merchant's, a clearing slot) is
// held for the statement and its commit only, never across the client's
// round trips. SQLite's several statements need the explicit transaction.
//
// With GroupCommit (PostgreSQL), concurrent calls are written several to
// a database transaction (batch.go): each its own guarded statement, so
// that its outcome is its own, exactly as written alone; a call alone is
// written alone. A call whose ctx ends while it waits in the queue is not
// written; one already in a group being committed answers with its
// outcome, ErrOutcomeUnknown when the commit's answer was lost (the
// movement may be written: look it up, or write it again under its
// reference).
//
// On PostgreSQL, any failure that does not say for sure that nothing was
// committed (a context that ended mid-statement, a lost connection) is
// ErrOutcomeUnknown too, with or without group commit, unless the look-up
// that follows every failure finds the movement written (then its first
// answer, ErrDuplicate). A context that ended before anything was sent is
// returned as it is: nothing was written.
func (l *Ledger) Write(ctx context.Context, e Entry) (Transaction, error) {
	var t Transaction
	var err error
	if l.batch != nil {
		t, err = l.batch.write(ctx, e)
	}
	switch {
	case l.batch != nil && !errors.Is(err, errSingly):
		// Written in a group (or refused there): its own outcome.
	case l.db.Dialect == store.Postgres:
		cerr := ctx.Err()
		switch {
		case cerr != nil && errors.Is(err, errSinglyUnsure):
			// The group's session ended, perhaps after its commit, and
			// this caller cannot write it again: the look-up below tells.
			err = fmt.Errorf("ledger: %s %s: %w: %w: %w", e.Kind, e.Reference, ErrOutcomeUnknown, err, cerr)
		case cerr != nil:
			return Transaction{}, notSent(cerr)
		default:
			t, err = l.Post(l.db.Gorm.WithContext(ctx), e)
		}
	default:
		err = l.db.Tx(ctx, func(tx *gorm.DB) error {
			var err error
			t, err = l.Post(tx, e)
			return err
		})
	}
	if err == nil {
		return t, nil
	}
	if errors.Is(err, errNotSent) {
		return Transaction{}, err // nothing sent: nothing to look up
	}
	if l.db.Dialect == store.Postgres && !settled(err) && !errors.Is(err, ErrOutcomeUnknown) {
		// Written alone, the context ended mid-statement or the
		// connection was lost: the commit may have happened. Not a
		// failure (a group's answer says so already).
		err = fmt.Errorf("ledger: %s %s: %w: %w", e.Kind, e.Reference, ErrOutcomeUnknown, err)
	}
	// A replay: refused by the unique index (written alone, the
	// transaction's row goes in before any balance moves, postOne and
	// postSQLite alike, so a replay of money since spent is ErrDuplicate),
	// or, in a group, by groupSQL's funds check, which comes before its
	// insert. Either way the movement is on record: its first answer.
	// The lookup runs also when ctx has ended (the caller gone, its
	// deadline passed), within its own bound: it is what tells a movement
	// committed just before its answer was lost, now known, from one that
	// stays unknown.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupAfterError)
	defer cancel()
	first, ferr := l.ByReference(lctx, e.Kind, e.Reference)
	switch {
	case ferr == nil && !SameMovement(e, first):
		return first, fmt.Errorf("%s %s: %w", e.Kind, e.Reference, ErrReferenceReused)
	case ferr == nil:
		return first, ErrDuplicate
	case errors.Is(ferr, ErrNotFound):
		return Transaction{}, err
	}
	return Transaction{}, errors.Join(err, ferr)
}

// Reverse writes the reversal of transaction id: the opposite postings,
// pointing at the original. An original is reversed at most once (a unique
// index); a second reversal answers with the first and ErrDuplicate. The
// reversal is refused (ErrInsufficientFunds) when an account that may not
// go below zero has spent the money since.
func (l *Ledger) Reverse(ctx context.Context, id int64, note string, now time.Time) (Transaction, error) {
	orig, err := l.Transaction(ctx, id)
	if err != nil {
		return Transaction{}, err
	}
	if orig.Kind == KindReversal {
		return Transaction{}, fmt.Errorf("ledger: transaction %d is a reversal: %w", id, ErrReversalReversed)
	}
	ps := make([]Posting, len(orig.Postings))
	for i, p := range orig.Postings {
		ps[i] = Posting{AccountID: p.AccountID, AmountRials: -p.AmountRials}
	}
	return l.Write(ctx, Entry{Kind: KindReversal, Reference: ReversalReference(id), ReversesID: id,
		TopUpID: deref(orig.TopUpID), Note: note, Postings: ps, At: now})
}

// Transaction reads transaction id with its postings.
func (l *Ledger) Transaction(ctx context.Context, id int64) (Transaction, error) {
	return l.readTransaction(ctx, "id = ?", id)
}

// ByReference reads the transaction of kind and reference.
func (l *Ledger) ByReference(ctx context.Context, kind Kind, reference string) (Transaction, error) {
	return l.readTransaction(ctx, "kind = ? AND reference = ?", kind, reference)
}

func (l *Ledger) readTransaction(ctx context.Context, where string, args ...any) (Transaction, error) {
	db := l.db.Gorm.WithContext(ctx)
	var t Transaction
	err := db.Table(transactionsTable).Where(where, args...).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Transaction{}, ErrNotFound
	}
	if err != nil {
		return Transaction{}, fmt.Errorf("ledger transaction: %w", err)
	}
	if err := db.Table(postingsTable).Where("transaction_id = ?", t.ID).Order("account_id").Find(&t.Postings).Error; err != nil {
		return Transaction{}, fmt.Errorf("postings of transaction %d: %w", t.ID, err)
	}
	return t, nil
}

// Account reads account id.
func (l *Ledger) Account(ctx context.Context, id int64) (Account, error) {
	var a Account
	err := l.db.Gorm.WithContext(ctx).Table(accountsTable).Take(&a, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Account{}, ErrAccountNotFound
	}
	if err != nil {
		return Account{}, fmt.Errorf("account %d: %w", id, err)
	}
	return a, nil
}

// Hold reserves r.AmountRials of an account until r.ExpiresAt, in one
// transaction: the hold row ((reason, reference) unique: a repeat answers
// with the first hold, as it stands, and ErrDuplicate; another account,
// amount or expiry under the same reason and reference, ErrReferenceReused)
// and the account's held figure, guarded so that its available balance
// stays ≥ 0 (ErrInsufficientFunds, nothing written).
//
// The account is locked first (FOR NO KEY UPDATE on PostgreSQL), before
// the hold's row is inserted: the insert's foreign key takes a KEY SHARE
// lock on the account, and a transaction that holds that weaker lock and
// then waits to update the row deadlocks with a transfer waiting for the
// same row (PostgreSQL's tuple lock queue), as holds and transfers racing
// on one wallet did. The lock also tells a missing account
// (ErrAccountNotFound) from the rest.
func (l *Ledger) Hold(ctx context.Context, r HoldRequest) (Hold, error) {
	if err := CheckHold(r); err != nil {
		return Hold{}, err
	}
	var h Hold
	err := l.db.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		h, err = l.holdTx(tx, r)
		return err
	})
	if errors.Is(err, ErrDuplicate) {
		first, ferr := l.HoldBy(ctx, r.Reason, r.Reference)
		if ferr != nil {
			return Hold{}, errors.Join(err, ferr)
		}
		if first.AccountID != r.AccountID || first.AmountRials != r.AmountRials || !sameInstant(first.ExpiresAt, r.ExpiresAt) {
			return first, fmt.Errorf("hold %s %s: %w", r.Reason, r.Reference, ErrReferenceReused)
		}
		return first, ErrDuplicate
	}
	if err != nil {
		return Hold{}, fmt.Errorf("hold %s %s: %w", r.Reason, r.Reference, err)
	}
	return h, nil
}

// sameInstant reports whether a stored time and a requested one are the
// same instant to the stored precision: PostgreSQL keeps microseconds
// (rounding or truncating what it is sent), SQLite what it is sent.
func sameInstant(stored, asked time.Time) bool {
	d := stored.Sub(asked)
	return d > -time.Microsecond && d < time.Microsecond
}

// HoldIn is Hold inside the caller's transaction tx, so that a hold is
// made with the movement that needs it (a withdrawal's row): the same
// lock, row and guarded figure. A taken reason and reference is
// ErrDuplicate with nothing to answer: tx must be rolled back (on
// PostgreSQL the failed insert has ended it), and the caller's own unique
// row is what tells a replay.
func (l *Ledger) HoldIn(tx *gorm.DB, r HoldRequest) (Hold, error) {
	if err := CheckHold(r); err != nil {
		return Hold{}, err
	}
	h, err := l.holdTx(tx, r)
	if err != nil {
		return Hold{}, fmt.Errorf("hold %s %s: %w", r.Reason, r.Reference, err)
	}
	return h, nil
}

// holdTx locks the account, inserts the hold and moves the held figure,
// in tx.
func (l *Ledger) holdTx(tx *gorm.DB, r HoldRequest) (Hold, error) {
	h := Hold{AccountID: r.AccountID, AmountRials: r.AmountRials, Reason: r.Reason, Reference: r.Reference, Status: HoldOpen,
		ExpiresAt: r.ExpiresAt.UTC(), CreatedAt: r.Now.UTC()}
	lock := `SELECT id FROM ledger_accounts WHERE id = ?`
	if l.db.Dialect == store.Postgres {
		lock += ` FOR NO KEY UPDATE`
	}
	var found []int64
	if err := store.Scan(tx.Raw(lock, r.AccountID), &found); err != nil {
		return Hold{}, fmt.Errorf("account %d: %w", r.AccountID, err)
	}
	if len(found) == 0 {
		return Hold{}, fmt.Errorf("account %d: %w", r.AccountID, ErrAccountNotFound)
	}
	if err := tx.Table(holdsTable).Create(&h).Error; err != nil {
		if store.IsUniqueViolation(err) {
			return Hold{}, ErrDuplicate
		}
		return Hold{}, fmt.Errorf("insert: %w", err)
	}
	if _, err := move(tx, r.AccountID, 0, r.AmountRials, h.CreatedAt); err != nil {
		return Hold{}, err
	}
	return h, nil
}

// HoldBy reads the hold of reason and reference.
func (l *Ledger) HoldBy(ctx context.Context, reason, reference string) (Hold, error) {
	var h Hold
	err := l.db.Gorm.WithContext(ctx).Table(holdsTable).Where("reason = ? AND reference = ?", reason, reference).Take(&h).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Hold{}, ErrNotFound
	}
	if err != nil {
		return Hold{}, fmt.Errorf("hold %s %s: %w", reason, reference, err)
	}
	return h, nil
}

// Capture posts amount of hold id to account to as a transaction of kind
// (its reference is the hold's), releasing the rest of the hold in the
// same transaction. A second capture answers with the first result (the
// hold as captured) and ErrDuplicate; a capture of a hold that ended
// otherwise, or whose time has passed, is ErrHoldEnded.
func (l *Ledger) Capture(ctx context.Context, id, amountRials, to int64, kind Kind, now time.Time) (Hold, error) {
	return l.end(ctx, id, EndCapture, amountRials, to, kind, now)
}

// Release ends hold id without moving money. A second release answers with
// the first result and ErrDuplicate.
func (l *Ledger) Release(ctx context.Context, id int64, now time.Time) (Hold, error) {
	return l.end(ctx, id, EndRelease, 0, 0, "", now)
}

// ExpireDue releases, as expired, up to batch open holds whose time has
// passed, each in its own transaction; it returns how many it ended, and
// the failures of those it could not end (the others are ended all the
// same). Holds whose reason is among owned are left alone: their owner
// ends them with its own move (a charge's authorization, whose status
// must change in the same transaction as its hold), so that this sweep
// never leaves an owner's row pointing at a hold it ended behind its back.
//
// The due holds are read a page of batch at a time in (expires_at, id)
// order, each page after the last hold of the one before (a keyset), until
// batch holds are ended or none is left: holds that cannot end are gone
// past, never read again in the same call, so that however many of them
// there are, the holds due after them are ended.
func (l *Ledger) ExpireDue(ctx context.Context, now time.Time, batch int, owned ...string) (int, error) {
	if batch <= 0 {
		return 0, nil
	}
	type due struct {
		ID        int64
		ExpiresAt time.Time
	}
	n := 0
	var errs []error
	var last *due
	for n < batch {
		var page []due
		q := l.db.Gorm.WithContext(ctx).Table(holdsTable).Select("id, expires_at").Where("status = 'open' AND expires_at <= ?", now.UTC())
		if len(owned) > 0 {
			q = q.Where("reason NOT IN ?", owned)
		}
		if last != nil {
			at := last.ExpiresAt.UTC()
			q = q.Where("(expires_at > ? OR (expires_at = ? AND id > ?))", at, at, last.ID)
		}
		if err := q.Order("expires_at, id").Limit(batch).Find(&page).Error; err != nil {
			errs = append(errs, fmt.Errorf("due holds: %w", err))
			break
		}
		for i := range page {
			if n == batch {
				break
			}
			if err := ctx.Err(); err != nil {
				return n, errors.Join(append(errs, err)...)
			}
			id := page[i].ID
			_, err := l.end(ctx, id, EndExpire, 0, 0, "", now)
			switch {
			case err == nil:
				n++
			case errors.Is(err, ErrHoldEnded), errors.Is(err, ErrDuplicate):
				// captured or released meanwhile: nothing to expire
			default:
				// One hold that cannot end (its account's figures broken)
				// must not keep every hold due after it open: go past it,
				// and report it.
				errs = append(errs, fmt.Errorf("expire hold %d: %w", id, err))
			}
		}
		if len(page) < batch {
			break
		}
		last = &page[len(page)-1]
	}
	return n, errors.Join(errs...)
}

func (l *Ledger) end(ctx context.Context, id int64, a EndAction, amount, to int64, kind Kind, now time.Time) (Hold, error) {
	var out Hold
	var decided error
	err := l.db.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		out, decided, err = l.endTx(tx, id, a, amount, to, kind, "", 0, now)
		return err
	})
	if err != nil {
		return out, err
	}
	return out, decided
}

// CaptureIn is Capture inside the caller's transaction tx (the capture's
// transaction carries note), so that a hold ends with the move of the
// movement it belongs to (a withdrawal paid). A second capture answers
// with the hold as captured and ErrDuplicate, writing nothing; a capture
// of a hold ended otherwise or past its time is ErrHoldEnded (past its
// time, the hold has expired in tx: commit it, or roll back).
func (l *Ledger) CaptureIn(tx *gorm.DB, id, amountRials, to int64, kind Kind, note string, now time.Time) (Hold, error) {
	return l.CaptureInFor(tx, id, amountRials, to, kind, note, 0, now)
}

// CaptureInFor is CaptureIn of a hold that belongs to a top-up (a refund
// of it to the card): the capture's transaction names the top-up, so that
// the wallet's history links its line to the top-up's page.
func (l *Ledger) CaptureInFor(tx *gorm.DB, id, amountRials, to int64, kind Kind, note string, topUpID int64, now time.Time) (Hold, error) {
	h, decided, err := l.endTx(tx, id, EndCapture, amountRials, to, kind, note, topUpID, now)
	if err != nil {
		return h, err
	}
	return h, decided
}

// ReleaseIn is Release inside the caller's transaction tx. A second
// release answers with the hold and ErrDuplicate; a hold captured or
// expired is ErrHoldEnded.
func (l *Ledger) ReleaseIn(tx *gorm.DB, id int64, now time.Time) (Hold, error) {
	h, decided, err := l.endTx(tx, id, EndRelease, 0, 0, "", "", 0, now)
	if err != nil {
		return h, err
	}
	return h, decided
}

// ExpireIn ends hold id as expired inside the caller's transaction tx,
// so that a hold ends with the move of the movement it belongs to (a
// charge's authorization expiring). A hold already expired answers with
// it and ErrDuplicate; a hold not yet due, or ended otherwise, is an error.
func (l *Ledger) ExpireIn(tx *gorm.DB, id int64, now time.Time) (Hold, error) {
	h, decided, err := l.endTx(tx, id, EndExpire, 0, 0, "", "", 0, now)
	if err != nil {
		return h, err
	}
	return h, decided
}

// endTx ends hold id as a (DecideEnd) in tx: decided is the decision's
// own answer (ErrDuplicate for a replay, the refusal of a capture too
// late whose expiry is written); err means tx must be rolled back.
func (l *Ledger) endTx(tx *gorm.DB, id int64, a EndAction, amount, to int64, kind Kind, note string, topUpID int64, now time.Time) (out Hold, decided, err error) {
	var h Hold
	if err := l.db.ForUpdate(tx.Table(holdsTable)).Take(&h, id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return Hold{}, nil, ErrNotFound
		}
		return Hold{}, nil, fmt.Errorf("hold %d: %w", id, err)
	}
	d := DecideEnd(h, a, amount, now)
	if d.Replay {
		return h, ErrDuplicate, nil
	}
	if !d.Apply {
		return h, nil, d.Err
	}
	at := now.UTC()
	vals := map[string]any{"status": d.To, "ended_at": at}
	if d.To == HoldCaptured {
		t, err := l.post(tx, Entry{Kind: kind, Reference: "hold:" + strconv.FormatInt(h.ID, 10), Note: note, TopUpID: topUpID,
			Postings: Transfer(h.AccountID, to, amount), At: now}, map[int64]int64{h.AccountID: h.AmountRials})
		if err != nil {
			return h, nil, err
		}
		vals["captured_rials"], vals["transaction_id"] = amount, t.ID
		h.CapturedRials, h.TransactionID = amount, &t.ID
	} else if _, err := move(tx, h.AccountID, 0, -h.AmountRials, at); err != nil {
		return h, nil, err
	}
	res := tx.Table(holdsTable).Where("id = ? AND status = 'open'", h.ID).Updates(vals)
	if res.Error != nil {
		return h, nil, fmt.Errorf("end hold %d: %w", h.ID, res.Error)
	}
	if res.RowsAffected != 1 {
		return h, nil, fmt.Errorf("end hold %d: %w", h.ID, ErrHoldEnded)
	}
	h.Status, h.EndedAt = d.To, &at
	return h, d.Err, nil // a capture too late: expired now, and refused
}

// History is one page of an account's postings, newest first: each row is
// a transaction that touched the account, with its balance after.
type HistoryRow struct {
	PostingID         int64
	TransactionID     int64
	Kind              Kind
	Reference         string
	Note              string
	AmountRials       int64
	BalanceAfterRials int64
	CreatedAt         time.Time
	TopUpPublicID     string // the top-up's, when the transaction belongs to one
	RefID             *int64 // the bank's reference of that top-up
	ReversesID        *int64
}

// History returns up to limit rows of account's history older than the
// posting before (0: from the newest) and the cursor of the next page (0
// when there is none).
func (l *Ledger) History(ctx context.Context, accountID, before int64, limit int) ([]HistoryRow, int64, error) {
	return l.HistoryFrom(ctx, l.db, accountID, before, limit)
}

// HistoryFrom is History read from db: the pages' read pool
// (DATABASE_READ_URL), whose copy of the ledger may be a little behind.
func (l *Ledger) HistoryFrom(ctx context.Context, db *store.DB, accountID, before int64, limit int) ([]HistoryRow, int64, error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	q := `SELECT lp.id, lp.transaction_id, t.kind, t.reference, t.note, lp.amount_rials, lp.balance_after_rials, lp.created_at,
		p.public_id, p.ref_id, t.reverses_id
		FROM ledger_postings lp JOIN ledger_transactions t ON t.id = lp.transaction_id
		LEFT JOIN topups p ON p.id = t.topup_id
		WHERE lp.account_id = ?`
	args := []any{accountID}
	if before > 0 {
		q += ` AND lp.id < ?`
		args = append(args, before)
	}
	q += ` ORDER BY lp.id DESC LIMIT ` + strconv.Itoa(limit+1) // a literal: a parameter's generic plan guesses a tenth of the table
	rs, err := db.Gorm.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, 0, fmt.Errorf("history of account %d: %w", accountID, err)
	}
	defer rs.Close()
	var out []HistoryRow
	for rs.Next() {
		var r HistoryRow
		var pub sql.NullString
		if err := rs.Scan(&r.PostingID, &r.TransactionID, &r.Kind, &r.Reference, &r.Note, &r.AmountRials, &r.BalanceAfterRials,
			&r.CreatedAt, &pub, &r.RefID, &r.ReversesID); err != nil {
			return nil, 0, fmt.Errorf("history of account %d: %w", accountID, err)
		}
		r.TopUpPublicID = pub.String
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, 0, fmt.Errorf("history of account %d: %w", accountID, err)
	}
	var next int64
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].PostingID
	}
	return out, next, nil
}

// statementErr reads the outcome of a ledger transaction's one statement
// (PostgreSQL): a unique violation is a replay (ErrDuplicate), the Σ = 0
// trigger's is ErrUnbalanced, a balance guard's CHECK (balanceViolation)
// is ErrInsufficientFunds, any other CHECK (the transaction's own, the
// append-only trigger's) is returned as it is, and fewer postings than
// accounts means an account was missing (nothing was written: the
// statement inserts nothing unless it locked them all), named by missing
// (called only then: no formatting on the path that succeeds).
func statementErr(e Entry, err error, got, want int, missing func() string) error {
	switch {
	case store.IsUniqueViolation(err):
		return fmt.Errorf("%s %s: %w", e.Kind, e.Reference, ErrDuplicate)
	case unbalancedViolation(err):
		return fmt.Errorf("%s %s: %w: %w", e.Kind, e.Reference, ErrUnbalanced, err)
	case balanceViolation(err):
		return fmt.Errorf("%s %s: %w", e.Kind, e.Reference, ErrInsufficientFunds)
	case err != nil:
		return fmt.Errorf("ledger transaction %s %s: %w", e.Kind, e.Reference, err)
	case got != want:
		return fmt.Errorf("%s %s: %s: %w", e.Kind, e.Reference, missing(), ErrAccountNotFound)
	}
	return nil
}

// The CHECK constraints of ledger_accounts that keep an account from going
// below zero (migration 00019): available ≥ 0 unless it may go negative,
// and held ≥ 0 (a column CHECK, named by PostgreSQL after its column; on
// SQLite, whose message names no unnamed constraint, by its expression).
const (
	checkAvailable = "ledger_accounts_available_not_negative"
	checkHeld      = "ledger_accounts_held_rials_check"
	checkHeldExpr  = "held_rials >= 0"
)

// balanceViolation reports whether err is a refusal by one of the balance
// guards' CHECK constraints (ErrInsufficientFunds), not another CHECK's
// (a transaction's own, the append-only trigger's, the Σ = 0 trigger's):
// those are not a short balance, and are returned as they are.
func balanceViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23514" && (pgErr.ConstraintName == checkAvailable || pgErr.ConstraintName == checkHeld)
	}
	if err == nil || !store.IsCheckViolation(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, checkAvailable) || strings.Contains(msg, checkHeldExpr)
}
