package transfer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Store is the transfers' store: every SQL string of a transfer, the
// ledger's own statements aside (ledger.Post writes the money).
type Store struct {
	db     *store.DB
	ledger *ledger.Ledger
	reads  *store.ReadPool // nil: the lists read db
}

// page is the database of a list's read: the read pool's, else the
// primary. Nothing a transfer decides on reads it.
func (s *Store) page() *store.DB {
	if s.reads == nil {
		return s.db
	}
	return s.reads.DB()
}

// NewStore returns the store over db and the instance's ledger.
func NewStore(db *store.DB, l *ledger.Ledger) *Store {
	if l == nil {
		l = ledger.New(db)
	}
	return &Store{db: db, ledger: l}
}

// errReplay: the sender's form token has a transfer already (the unique
// index refused a second): the caller answers with the first.
var errReplay = errors.New("transfer: form token already has its transfer")

// party is one side of a transfer: the user, their address, their name and
// their wallet's account.
type party struct {
	ID          int64
	Email       string
	DisplayName string
	AccountID   int64
	// Verified: the address is confirmed (auth's verify.go). An account
	// whose address is not confirmed may be a stranger's who signed up
	// with it: it is no one to send money to (refused as unknown, telling
	// the sender nothing about it), and it sends nothing in that
	// address's name (admit).
	Verified bool
	// AvailableRials is the wallet's available balance (posted less
	// held; 0 without a wallet), and SentRials what the user has sent on
	// the day parties was asked about: the sender's, read with the
	// recipient so that a short balance or a day's limit is refused
	// before the recipient is looked at (admit).
	AvailableRials int64
	SentRials      int64
}

// parties reads, in one statement, the sender (by id) and the recipient
// (by stored-form address) with their names, their wallets' accounts and
// available balances, and what each sent on the Tehran day starting at
// day; a zero party is not found (the same user when they are one), as is
// a recipient whose address is not confirmed unless they are the sender;
// a party without a wallet yet has AccountID 0 and nothing available.
// The figures are a read, not the write's guard: the guarded UPDATE and
// upsert of the write decide.
func (s *Store) parties(ctx context.Context, senderID int64, recipientEmail string, day time.Time) (sender, recipient party, err error) {
	var ps []party
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT u.id, u.email, u.display_name, COALESCE(a.id, 0) AS account_id,
		u.email_verified_at IS NOT NULL AS verified, COALESCE(a.posted_rials - a.held_rials, 0) AS available_rials,
		COALESCE(d.sent_rials, 0) AS sent_rials FROM users u
		LEFT JOIN wallets w ON w.user_id = u.id LEFT JOIN ledger_accounts a ON a.wallet_id = w.id
		LEFT JOIN transfer_daily_totals d ON d.user_id = u.id AND d.day_start = ?
		WHERE u.id = ? OR lower(u.email) = lower(?)`, day.UTC(), senderID, recipientEmail), &ps); err != nil {
		return party{}, party{}, fmt.Errorf("parties of a transfer: %w", err)
	}
	for _, p := range ps {
		if p.ID == senderID {
			sender = p
		}
		if p.Email == recipientEmail && (p.Verified || p.ID == senderID) {
			recipient = p
		}
	}
	return sender, recipient, nil
}

// write is one transfer to write.
type write struct {
	t        Transfer
	token    string
	from, to int64 // the sender's and the recipient's wallet accounts
	dailyMax int64
	day      time.Time
	// claim, when set, runs first in the transaction and returns the form
	// token (an API request's idempotency key, stored with its answer:
	// the key, the transfer and the answer commit together).
	claim func(tx *gorm.DB) (string, error)
	// pace, when set, takes the sender's place in RATE_LIMIT_TRANSFERS
	// once the request's key and form token are its own (after the key's
	// claim and the transfer's row): a repeat of a request still in
	// flight has waited on their unique indexes by then and is answered
	// with its first, never refused by the pace (Service.paced).
	pace func() error
}

// written is what the write wrote besides the transfer.
type written struct {
	t        Transfer
	webhooks int64
}

// The two people's addresses are scalar subqueries (a probe of users'
// primary key per row), not joins: joined, PostgreSQL 15 planned a
// Memoize over users sized for every transfer (the estimate ignores the
// LIMIT), and setting up its hash table cost 16 ms a page of 100 at 10M
// transfers against 1 ms for the rows themselves.
const parties = `(SELECT s.email FROM users s WHERE s.id = t.sender_user_id) AS sender_email,
	(SELECT r.email FROM users r WHERE r.id = t.recipient_user_id) AS recipient_email`

const selectTransfer = `SELECT t.id, t.public_id, t.sender_user_id, t.recipient_user_id, ` + parties + `,
	t.amount_rials, t.note, t.created_at, COALESCE(lt.id, 0) AS ledger_transaction_id
	FROM transfers t LEFT JOIN ledger_transactions lt ON lt.kind = 'transfer' AND lt.reference = t.public_id`

// selectTransferParties is selectTransfer without the ledger transaction
// (ledger_transaction_id 0): for a reader that comes from the ledger and
// has it. At 10M top-ups the ledger's join made a wallet page's read of
// its 20 transfers cost 11 ms to plan and 6 ms to run (0.3 ms a probe of
// the (kind, reference) index), against 1.7 and 0.5 ms without it.
const selectTransferParties = `SELECT t.id, t.public_id, t.sender_user_id, t.recipient_user_id, ` + parties + `,
	t.amount_rials, t.note, t.created_at, 0 AS ledger_transaction_id
	FROM transfers t`

// write writes a transfer whole in one database transaction, in this
// order (the lock order every transfer keeps: the API's idempotency key,
// the transfer's unique key, the sender's day total, the two accounts in
// ascending id):
//
//  0. through the API, the request's idempotency key with its answer
//     (w.claim: idempotency.Store.Claim); a key taken already ends the
//     transaction before anything is written;
//  1. the transfer's row; when the sender's form token has one already
//     (ON CONFLICT DO NOTHING waits for a racing first insert to commit
//     or roll back), errReplay, and nothing is written; then, the key and
//     the token being this request's own, the sender's place in the pace
//     (w.pace: a *PaceError rolls back the key and the row);
//  2. the sender's day total, by an upsert whose WHERE is the limit
//     (no row back: ErrDailyLimit), when the limit is on;
//  3. the webhook outbox rows;
//  4. the ledger transaction (ledger.Post: the guard in its UPDATE), last,
//     so that the accounts' row locks are held from its statement to the
//     commit only (a hot account waits for no other round trip).
//
// Mails are not written here: the notifier queues them after the fact
// from the committed transfers (notify.ScanTransfers), so that a mail can
// never slow or fail a transfer.
func (s *Store) write(ctx context.Context, w write) (written, error) {
	out := written{t: w.t}
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		t := &out.t
		token := w.token
		if w.claim != nil {
			var err error
			if token, err = w.claim(tx); err != nil {
				return err
			}
		}
		var ids []int64
		if err := store.Scan(tx.Raw(`INSERT INTO transfers (public_id, sender_user_id, recipient_user_id, amount_rials, note, form_token, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sender_user_id, form_token) DO NOTHING RETURNING id`,
			t.PublicID, t.SenderUserID, t.RecipientUserID, t.AmountRials, t.Note, token, t.CreatedAt), &ids); err != nil {
			return fmt.Errorf("insert transfer: %w", err)
		}
		if len(ids) == 0 {
			return errReplay
		}
		t.ID = ids[0]
		if w.pace != nil {
			if err := w.pace(); err != nil {
				return err
			}
		}
		if w.dailyMax > 0 {
			var total []int64
			if err := store.Scan(tx.Raw(`INSERT INTO transfer_daily_totals (user_id, day_start, sent_rials) VALUES (?, ?, ?)
				ON CONFLICT (user_id, day_start) DO UPDATE SET sent_rials = transfer_daily_totals.sent_rials + excluded.sent_rials
				WHERE transfer_daily_totals.sent_rials + excluded.sent_rials <= ?
				RETURNING sent_rials`, t.SenderUserID, w.day.UTC(), t.AmountRials, w.dailyMax), &total); err != nil {
				return fmt.Errorf("day total of user %d: %w", t.SenderUserID, err)
			}
			if len(total) == 0 {
				return ErrDailyLimit
			}
		}
		for _, ev := range []struct {
			user int64
			typ  string
		}{{t.SenderUserID, webhook.TypeTransferSent}, {t.RecipientUserID, webhook.TypeTransferReceived}} {
			n, err := webhook.EnqueueTransfer(tx, webhook.TransferEvent{UserID: ev.user, TransferID: t.ID, Type: ev.typ,
				Transfer: EventView(*t, ev.user), CreatedAt: t.CreatedAt})
			if err != nil {
				return err
			}
			out.webhooks += n
		}
		if w.to == 0 {
			// A recipient without a wallet yet receives: the wallet and
			// its account are made here, in the transfer's transaction.
			rw, err := wallet.Ensure(tx, t.RecipientUserID, t.CreatedAt)
			if err != nil {
				return err
			}
			w.to = rw.AccountID
		}
		// The accounts last, for the shortest lock: from this statement to
		// the commit, with nothing but the commit between.
		lt, err := s.ledger.Post(tx, ledger.Entry{Kind: ledger.KindTransfer, Reference: t.PublicID, Note: t.Note,
			Postings: ledger.Transfer(w.from, w.to, t.AmountRials), At: t.CreatedAt})
		if err != nil {
			return err
		}
		t.LedgerTransactionID = lt.ID
		testhook.At(testhook.InsideTransfer) // e2e: the transfer, its outbox rows and its postings written, not committed
		return nil
	})
	if err != nil {
		return written{}, err
	}
	return out, nil
}

// byToken reads the sender's transfer made with form token.
func (s *Store) byToken(ctx context.Context, senderID int64, token string) (Transfer, error) {
	return s.one(ctx, selectTransfer+` WHERE t.sender_user_id = ? AND t.form_token = ?`, senderID, token)
}

// get reads a transfer the user sent or received (userID 0: anyone's).
func (s *Store) get(ctx context.Context, userID int64, publicID string) (Transfer, error) {
	if userID == 0 {
		return s.one(ctx, selectTransfer+` WHERE t.public_id = ?`, publicID)
	}
	return s.one(ctx, selectTransfer+` WHERE t.public_id = ? AND (t.sender_user_id = ? OR t.recipient_user_id = ?)`,
		publicID, userID, userID)
}

func (s *Store) one(ctx context.Context, q string, args ...any) (Transfer, error) {
	var ts []Transfer
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(q, args...), &ts); err != nil {
		return Transfer{}, fmt.Errorf("read transfer: %w", err)
	}
	if len(ts) == 0 {
		return Transfer{}, ErrNotFound
	}
	return ts[0], nil
}

// list is a page of the user's transfers, sent or received, newest first
// (one index each side: the union of two keyset scans).
func (s *Store) list(ctx context.Context, userID, before int64, limit int) ([]Transfer, int64, error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	if before <= 0 {
		before = 1<<63 - 1
	}
	var ts []Transfer
	n := strconv.Itoa(limit + 1) // a literal, as search writes it
	err := store.Scan(s.page().Gorm.WithContext(ctx).Raw(selectTransfer+` WHERE t.id IN (
			SELECT id FROM (SELECT id FROM transfers WHERE sender_user_id = ? AND id < ? ORDER BY id DESC LIMIT `+n+`) AS a
			UNION SELECT id FROM (SELECT id FROM transfers WHERE recipient_user_id = ? AND id < ? ORDER BY id DESC LIMIT `+n+`) AS b)
		ORDER BY t.id DESC LIMIT `+n, userID, before, userID, before), &ts)
	if err != nil {
		return nil, 0, fmt.Errorf("transfers of user %d: %w", userID, err)
	}
	var next int64
	if len(ts) > limit {
		ts = ts[:limit]
		next = ts[limit-1].ID
	}
	return ts, next, nil
}

// byPublicIDs reads the user's transfers of the given public ids.
func (s *Store) byPublicIDs(ctx context.Context, userID int64, ids []string) (map[string]Transfer, error) {
	out := make(map[string]Transfer, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	// By the unique public id alone, and the user's kept here: with the
	// user in the WHERE, a prepared statement's generic plan read every
	// transfer the user ever sent (10,000 at 10M: 24 ms) and filtered the
	// ids out of them.
	var ts []Transfer
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(selectTransferParties+` WHERE t.public_id IN ?`, ids), &ts); err != nil {
		return nil, fmt.Errorf("transfers of user %d: %w", userID, err)
	}
	for _, t := range ts {
		if t.SenderUserID == userID || t.RecipientUserID == userID {
			out[t.PublicID] = t
		}
	}
	return out, nil
}

// search finds transfers by public id or by either person's address.
func (s *Store) search(ctx context.Context, q string, limit int) ([]Transfer, error) {
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	var ts []Transfer
	db := s.page().Gorm.WithContext(ctx)
	var err error
	// The limit is written as a literal: as a parameter, PostgreSQL's
	// generic plan guesses a tenth of the table (at 10M transfers it
	// planned two parallel workers for a page of 100).
	n := strconv.Itoa(limit)
	// As typed: Persian digits read as Latin, an id pasted in capitals.
	q = strings.TrimSpace(money.LatinDigits(q))
	switch {
	case q == "":
		// Without the ledger's join: nothing on the list shows it.
		err = store.Scan(db.Raw(selectTransferParties+` ORDER BY t.id DESC LIMIT `+n), &ts)
	case strings.HasPrefix(strings.ToLower(q), "tr_"):
		err = store.Scan(db.Raw(selectTransfer+` WHERE t.public_id = ?`, strings.ToLower(q)), &ts)
	default:
		// Either side's newest, each from its own index (users by the
		// unique lower(email), transfers by sender or recipient), as list
		// does: an OR across the two joins read every transfer.
		addr := strings.ToLower(q)
		err = store.Scan(db.Raw(selectTransferParties+` WHERE t.id IN (
				SELECT id FROM (SELECT id FROM transfers WHERE sender_user_id IN (SELECT id FROM users WHERE lower(email) = ?) ORDER BY id DESC LIMIT `+n+`) AS a
				UNION SELECT id FROM (SELECT id FROM transfers WHERE recipient_user_id IN (SELECT id FROM users WHERE lower(email) = ?) ORDER BY id DESC LIMIT `+n+`) AS b)
			ORDER BY t.id DESC LIMIT `+n, addr, addr), &ts)
	}
	if err != nil {
		return nil, fmt.Errorf("search transfers: %w", err)
	}
	return ts, nil
}
