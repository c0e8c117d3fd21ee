// Package sqlstore is the one implementation of topup.Store: the
// payment lifecycle's rows in PostgreSQL or SQLite, through GORM. Every
// SQL string, column name, dialect quirk, literal limit and text cleaning
// of the payment code lives here. Each writing method is one transaction
// guarded by one conditional statement (the claim of a lease, the move of
// a status with its event, the credit with its ledger entry): the
// guarantees of ARCHITECTURE §2 and §4 live in those guards, and the
// contract suite (sqlstore_test.go) runs them on both databases.
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Store implements topup.Store over a database.
type Store struct {
	db *store.DB
	// one runs a write that is a single statement as its own transaction
	// (the database's autocommit), without GORM's default BEGIN/COMMIT
	// around it: a conditional UPDATE is atomic alone, and the two round
	// trips saved are a fifth of a credit's (the claim of every first
	// callback). A write of more than one statement uses db.Tx.
	one *gorm.DB
	// queued, when set, is called after a move that queued webhook
	// deliveries has committed (OnWebhookQueued).
	queued func()
	// ledger posts a credit's transaction (shared by the instance: it
	// remembers account ids).
	ledger *ledger.Ledger
	// switches, when set (CacheSwitches), keeps the gateway switches in
	// memory on the clock now (switches.go).
	switches *switchCache
	now      func() time.Time
}

var _ topup.Store = (*Store)(nil)

// New returns the payment store over db.
func New(db *store.DB) *Store {
	return &Store{db: db, one: db.Gorm.Session(&gorm.Session{SkipDefaultTransaction: true, NewDB: true}), ledger: ledger.New(db)}
}

// WithLedger makes the store post credits through l (the instance's one
// ledger) instead of its own; it returns s.
func (s *Store) WithLedger(l *ledger.Ledger) *Store {
	s.ledger = l
	return s
}

const (
	topUpsTable  = "topups"
	eventsTable  = "topup_events"
	callsTable   = "gateway_calls"
	reportsTable = "reconcile_reports"
)

// OnWebhookQueued sets f to be called after a move that queued partners'
// webhook deliveries has committed: the instance's sender is woken for
// them, and for nothing else (a move of a payer without endpoints queues
// none, and a credit then costs the sender no look at its table). It is
// wiring, set before the store is used; it returns s.
func (s *Store) OnWebhookQueued(f func()) *Store {
	s.queued = f
	return s
}

// kick tells OnWebhookQueued's f of n committed deliveries.
func (s *Store) kick(n int64) {
	if n > 0 && s.queued != nil {
		s.queued()
	}
}

// bg detaches ctx from cancellation: a write that decides a payment's
// fate must finish once started, whatever the caller's request does.
func bg(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// dup turns a unique-constraint violation into topup.ErrDuplicate.
func dup(err error) error {
	if err != nil && store.IsUniqueViolation(err) {
		return fmt.Errorf("%w: %w", topup.ErrDuplicate, err)
	}
	return err
}

// ---- reads ----

// Get implements topup.Store.
func (s *Store) Get(ctx context.Context, id int64) (topup.TopUp, error) {
	var p topup.TopUp
	if err := s.db.Gorm.WithContext(bg(ctx)).Take(&p, id).Error; err != nil {
		return topup.TopUp{}, fmt.Errorf("reload payment %d: %w", id, err)
	}
	return p, nil
}

// ByPublicID implements topup.Store.
func (s *Store) ByPublicID(ctx context.Context, publicID string) (topup.TopUp, error) {
	var p topup.TopUp
	err := s.db.Gorm.WithContext(ctx).Where("public_id = ?", publicID).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return topup.TopUp{}, topup.ErrNotFound
	}
	if err != nil {
		return topup.TopUp{}, fmt.Errorf("payment %s: %w", publicID, err)
	}
	return p, nil
}

// ByFormToken implements topup.Store.
func (s *Store) ByFormToken(ctx context.Context, userID int64, token string) (topup.TopUp, error) {
	var p topup.TopUp
	if err := s.db.Gorm.WithContext(ctx).Where("user_id = ? AND form_token = ?", userID, token).Take(&p).Error; err != nil {
		return p, fmt.Errorf("load payment of form: %w", err)
	}
	return p, nil
}

// FormSubmitted implements topup.Store: one lookup on
// unique(user_id, form_token).
func (s *Store) FormSubmitted(ctx context.Context, userID int64, token string) (bool, error) {
	var n int64
	err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM topups WHERE user_id = ? AND form_token = ?`, userID, token), &n)
	if err != nil {
		return false, fmt.Errorf("form %s of user %d: %w", token, userID, err)
	}
	return n > 0, nil
}

// ByAuthority implements topup.Store.
func (s *Store) ByAuthority(ctx context.Context, gw, authority string) (topup.TopUp, bool, error) {
	return s.find(ctx, "gateway = ? AND authority = ?", gw, authority)
}

// ReceiptHolder implements topup.Store.
func (s *Store) ReceiptHolder(ctx context.Context, gw, receipt string) (topup.TopUp, bool, error) {
	return s.find(ctx, "gateway = ? AND receipt = ?", gw, receipt)
}

// ByGatewayPublicID implements topup.Store.
func (s *Store) ByGatewayPublicID(ctx context.Context, gw, publicID string) (topup.TopUp, bool, error) {
	return s.find(ctx, "gateway = ? AND public_id = ?", gw, publicID)
}

func (s *Store) find(ctx context.Context, where string, args ...any) (topup.TopUp, bool, error) {
	var p topup.TopUp
	err := s.db.Gorm.WithContext(ctx).Where(where, args...).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return p, false, nil
	}
	return p, err == nil, err
}

// StaleCreated implements topup.Store.
func (s *Store) StaleCreated(ctx context.Context, before time.Time, limit int) ([]topup.TopUp, error) {
	var out []topup.TopUp
	err := s.db.Gorm.WithContext(ctx).Where("status = ? AND authority IS NULL AND created_at <= ?",
		topup.StatusCreated, before).Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("find stale created payments: %w", err)
	}
	return out, nil
}

// reconcileOrder is the order of reconciliation's lists past their hot
// payments: those it looked at least recently first (never, then longest
// ago), newest first among equals.
const reconcileOrder = "reconciled_at IS NOT NULL, reconciled_at, created_at DESC"

// reconcileList reads b's batch of a gateway's payments matching where
// (literal statuses, for the (status, created_at) index): the hot ones
// newest first, then the rest in reconcileOrder, up to b.Limit in all.
func (s *Store) reconcileList(ctx context.Context, what string, b topup.ReconcileBatch, where string, args ...any) ([]topup.TopUp, error) {
	q := func() *gorm.DB {
		return s.db.Gorm.WithContext(ctx).Where(where, args...).Where("gateway = ? AND authority IS NOT NULL", b.Gateway)
	}
	var hot []topup.TopUp
	if err := q().Where("created_at >= ?", b.Hot).Order("created_at DESC, id DESC").Limit(b.Limit).Find(&hot).Error; err != nil {
		return nil, fmt.Errorf("find %s payments of %s: %w", what, b.Gateway, err)
	}
	if len(hot) >= b.Limit {
		return hot, nil
	}
	var rest []topup.TopUp
	if err := q().Where("created_at >= ? AND created_at < ?", b.Since, b.Hot).Order(reconcileOrder).Limit(b.Limit - len(hot)).Find(&rest).Error; err != nil {
		return nil, fmt.Errorf("find %s payments of %s: %w", what, b.Gateway, err)
	}
	return append(hot, rest...), nil
}

// RecentEnded lists a gateway's failed or needs-review payments with an
// authority in b's order.
func (s *Store) RecentEnded(ctx context.Context, b topup.ReconcileBatch) ([]topup.TopUp, error) {
	return s.reconcileList(ctx, "recent ended", b, "status IN ('failed', 'needs_review')")
}

// RecentUnsure lists those of RecentEnded's payments under review, or
// failed at the page's lifetime at or after lifetimeSince (ended:
// resolved, else last updated), in b's order.
func (s *Store) RecentUnsure(ctx context.Context, b topup.ReconcileBatch, lifetimeSince time.Time) ([]topup.TopUp, error) {
	return s.reconcileList(ctx, "recent unsure", b,
		"status IN ('failed', 'needs_review') AND (status = 'needs_review' OR (status_reason = ? AND COALESCE(resolved_at, updated_at) >= ?))",
		string(topup.ReasonNotPaidAfterLife), lifetimeSince)
}

// Reconciled implements topup.Store: one UPDATE of the column alone (no
// updated_at: nothing about the payment changed).
func (s *Store) Reconciled(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.one.WithContext(bg(ctx)).Model(&topup.TopUp{}).Where("id IN ?", ids).
		UpdateColumn("reconciled_at", at).Error
	if err != nil {
		return fmt.Errorf("record %d payments reconciled: %w", len(ids), err)
	}
	return nil
}

// RecentUncredited lists a gateway's payments with an authority, open or
// ended without a credit, in b's order. The statuses are literals (the
// (status, created_at) index); 'settling' (Mellat's verified, unsettled
// payments) is listed ahead of the status itself: a value no row has yet
// matches nothing.
func (s *Store) RecentUncredited(ctx context.Context, b topup.ReconcileBatch) ([]topup.TopUp, error) {
	return s.reconcileList(ctx, "recent uncredited", b,
		"status IN ('awaiting_payment', 'pending_verification', 'settling', 'failed', 'needs_review')")
}

// EventsOf lists a payment's status changes, oldest first (the contract
// tests' view; pages read them through internal/topupread).
func (s *Store) EventsOf(ctx context.Context, topUpID int64) ([]topup.Event, error) {
	var out []topup.Event
	if err := s.db.Gorm.WithContext(ctx).Table(eventsTable).Where("topup_id = ?", topUpID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("events of payment %d: %w", topUpID, err)
	}
	return out, nil
}

// CallsOf lists a payment's gateway attempts, oldest first (as EventsOf).
func (s *Store) CallsOf(ctx context.Context, topUpID int64) ([]topup.GatewayCall, error) {
	var out []topup.GatewayCall
	err := s.db.Gorm.WithContext(ctx).Table(callsTable).Where("topup_id = ?", topUpID).Order("id").Find(&out).Error
	return out, err
}

// ---- writes ----

// Create implements topup.Store: unique(user_id, form_token) refuses a
// second payment of one form (topup.ErrDuplicate).
func (s *Store) Create(ctx context.Context, p *topup.TopUp) error {
	return dup(s.one.WithContext(ctx).Create(p).Error)
}

// CreateAdmitted implements topup.Store. The payer's wallet row is
// locked first (FOR UPDATE on PostgreSQL; SQLite's immediate transaction
// holds the database's one write lock), so that two starts of one payer
// cannot both read the usage before either inserts: the second waits for
// the first's commit and counts its payment. Other payers' starts take
// other rows and do not wait.
func (s *Store) CreateAdmitted(ctx context.Context, p *topup.TopUp, q topup.Quota) error {
	err := s.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var w struct{ BalanceRials int64 }
		// The wallet row is the payer's lock (its ledger account is not:
		// a credit moving the balance meanwhile need not wait for a start).
		res := s.db.ForUpdate(tx.Table("wallets").
			Select("(SELECT a.posted_rials FROM ledger_accounts a WHERE a.wallet_id = wallets.id) AS balance_rials").
			Where("id = ? AND user_id = ?", p.WalletID, p.UserID)).Scan(&w)
		if res.Error != nil {
			return fmt.Errorf("lock wallet %d: %w", p.WalletID, res.Error)
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("lock wallet %d of user %d: no such wallet", p.WalletID, p.UserID)
		}
		var n int64
		if err := tx.Model(&topup.TopUp{}).Where("user_id = ? AND form_token = ?", p.UserID, p.FormToken).Count(&n).Error; err != nil {
			return fmt.Errorf("form of user %d: %w", p.UserID, err)
		}
		if n > 0 {
			// A repeat of a submitted form is answered as its first
			// submit was, never refused by a limit.
			return fmt.Errorf("%w: form already submitted", topup.ErrDuplicate)
		}
		u, err := UsageOf(tx, p.UserID, q.Since)
		if err != nil {
			return err
		}
		u.BalanceRials = w.BalanceRials
		if err := q.Admit(u); err != nil {
			return err
		}
		return tx.Create(p).Error
	})
	return dup(err)
}

// Claim implements topup.Store: one conditional UPDATE takes the lease
// when the payment is in one of the statuses, nobody holds it, and (when
// paced) the bank was not asked since NotCheckedSince; with FirstReturn it
// also records the first callback and requires that none came before.
func (s *Store) Claim(ctx context.Context, c topup.Claim) (topup.TopUp, bool, error) {
	var cur topup.TopUp
	q := s.one.WithContext(bg(ctx)).Model(&cur).Clauses(clause.Returning{}).
		Where("id = ? AND status IN ? AND (lease_until IS NULL OR lease_until < ?)", c.ID, c.Statuses, c.Now)
	vals := map[string]any{"lease_until": c.Until, "lease_owner": c.Token}
	if c.NotCheckedSince != nil {
		q = q.Where("(last_checked_at IS NULL OR last_checked_at <= ?)", *c.NotCheckedSince)
	}
	if c.FirstReturn {
		q = q.Where("returned_at IS NULL")
		vals["returned_at"] = c.Now
	}
	res := q.Updates(vals)
	if res.Error != nil {
		return topup.TopUp{}, false, fmt.Errorf("claim payment %d: %w", c.ID, res.Error)
	}
	if res.RowsAffected == 1 {
		return cur, true, nil // the row as claimed (RETURNING)
	}
	if c.FirstReturn {
		return topup.TopUp{}, false, nil
	}
	p, err := s.Get(ctx, c.ID)
	return p, false, err
}

// MarkReturned implements topup.Store.
func (s *Store) MarkReturned(ctx context.Context, id int64, now time.Time) (bool, error) {
	res := s.one.WithContext(bg(ctx)).Model(&topup.TopUp{}).
		Where("id = ? AND returned_at IS NULL", id).Update("returned_at", now)
	if res.Error != nil {
		return false, fmt.Errorf("mark return of payment %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// KeepReceipt stores a receipt on a payment without one, with where it
// came from (one conditional UPDATE; unique (gateway, receipt) refuses
// another payment's: topup.ErrDuplicate) and returns the row. A receipt
// from the bank also confirms the same receipt kept from a callback.
func (s *Store) KeepReceipt(ctx context.Context, id int64, receipt string, from topup.ReceiptSource) (topup.TopUp, error) {
	q := s.db.Gorm.WithContext(bg(ctx)).Model(&topup.TopUp{})
	if from == topup.ReceiptFromBank {
		q = q.Where("id = ? AND (receipt IS NULL OR receipt = ?)", id, receipt)
	} else {
		q = q.Where("id = ? AND receipt IS NULL", id)
	}
	res := q.Updates(map[string]any{"receipt": receipt, "receipt_source": string(from)})
	if res.Error != nil {
		return topup.TopUp{}, fmt.Errorf("keep the receipt of payment %d: %w", id, dup(res.Error))
	}
	return s.Get(ctx, id)
}

// ReplaceReceipt implements topup.Store: one conditional UPDATE (the
// kept receipt still old, no ref id yet); unique (gateway, receipt)
// refuses another payment's (topup.ErrDuplicate). The new receipt is
// the bank's.
func (s *Store) ReplaceReceipt(ctx context.Context, id int64, old, receipt string) (topup.TopUp, error) {
	res := s.db.Gorm.WithContext(bg(ctx)).Model(&topup.TopUp{}).
		Where("id = ? AND receipt = ? AND ref_id IS NULL", id, old).
		Updates(map[string]any{"receipt": receipt, "receipt_source": string(topup.ReceiptFromBank)})
	if res.Error != nil {
		return topup.TopUp{}, fmt.Errorf("replace the receipt of payment %d: %w", id, dup(res.Error))
	}
	return s.Get(ctx, id)
}

// TakeReceipt implements topup.Store: in one transaction, the other
// payment of the gateway that holds receipt on a callback's word only
// (source callback, no ref id) drops it — the guard: no such row, nothing
// happens (topup.ErrNotMoved) — and id, holding no confirmed receipt,
// takes it as the bank's.
func (s *Store) TakeReceipt(ctx context.Context, id int64, receipt string) (topup.TopUp, error) {
	err := s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE topups SET receipt = NULL, receipt_source = NULL
			WHERE gateway = (SELECT gateway FROM topups WHERE id = ?) AND receipt = ? AND id <> ?
			AND (receipt_source IS NULL OR receipt_source <> ?) AND ref_id IS NULL`,
			id, receipt, id, string(topup.ReceiptFromBank))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return topup.ErrNotMoved
		}
		res = tx.Exec(`UPDATE topups SET receipt = ?, receipt_source = ?
			WHERE id = ? AND ref_id IS NULL AND (receipt IS NULL OR receipt_source IS NULL OR receipt_source <> ?)`,
			receipt, string(topup.ReceiptFromBank), id, string(topup.ReceiptFromBank))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return topup.ErrNotMoved
		}
		return nil
	})
	if err != nil {
		return topup.TopUp{}, fmt.Errorf("take receipt for payment %d: %w", id, dup(err))
	}
	return s.Get(ctx, id)
}

// fieldValues is the column map of a decision's fields.
func fieldValues(f topup.Fields, vals map[string]any) map[string]any {
	if vals == nil {
		vals = map[string]any{}
	}
	if f.Authority != nil {
		vals["authority"] = *f.Authority
	}
	if f.OpenedAt != nil {
		vals["opened_at"] = *f.OpenedAt
	}
	if f.LastCheckedAt != nil {
		vals["last_checked_at"] = *f.LastCheckedAt
	}
	if f.CountAttempt {
		vals["attempts"] = gorm.Expr("attempts + 1")
	}
	if f.CountCreditFailure {
		vals["credit_failures"] = gorm.Expr("credit_failures + 1")
	}
	if f.NextCheckAt != nil {
		vals["next_check_at"] = *f.NextCheckAt
	}
	if f.RefID != nil {
		vals["ref_id"] = *f.RefID
	}
	if f.VerifiedAmountRials != nil {
		vals["verified_amount_rials"] = *f.VerifiedAmountRials
	}
	if f.CardPANMasked != nil {
		vals["card_pan_masked"] = *f.CardPANMasked
	}
	if f.ClearReverseSent {
		vals["reverse_sent_at"] = nil
	}
	if f.ClearReceipt {
		// Only a receipt the bank did not confirm is dropped.
		keep := "receipt_source = 'bank' OR ref_id IS NOT NULL"
		vals["receipt"] = gorm.Expr("CASE WHEN " + keep + " THEN receipt END")
		vals["receipt_source"] = gorm.Expr("CASE WHEN " + keep + " THEN receipt_source END")
	}
	return vals
}

// Release implements topup.Store: gives up the lease tok if still
// ours, writing f with it; otherwise returns the row as it stands.
func (s *Store) Release(ctx context.Context, id int64, tok string, f topup.Fields) (topup.TopUp, error) {
	vals := fieldValues(f, map[string]any{"lease_until": nil, "lease_owner": ""})
	var out topup.TopUp
	res := s.one.WithContext(bg(ctx)).Model(&out).Clauses(clause.Returning{}).
		Where("id = ? AND lease_owner = ?", id, tok).Updates(vals)
	if res.Error != nil {
		return topup.TopUp{}, fmt.Errorf("release payment %d: %w", id, res.Error)
	}
	if res.RowsAffected == 1 {
		return out, nil
	}
	return s.Get(ctx, id) // the lease was no longer ours
}

// Schedule implements topup.Store: one UPDATE conditional on the
// payment being open and its next check still being from (what the
// worker's claim, or its own check under it, wrote).
func (s *Store) Schedule(ctx context.Context, id int64, from, at time.Time) (bool, error) {
	ok, err := s.moveNextCheck(ctx, id, from, at)
	if err != nil {
		return false, fmt.Errorf("schedule payment %d: %w", id, err)
	}
	return ok, nil
}

// Postpone implements topup.Store: one UPDATE conditional on the next
// check still being from.
func (s *Store) Postpone(ctx context.Context, id int64, from, to time.Time) (bool, error) {
	ok, err := s.moveNextCheck(ctx, id, from, to)
	if err != nil {
		return false, fmt.Errorf("postpone payment %d: %w", id, err)
	}
	return ok, nil
}

// moveNextCheck is Schedule's and Postpone's one statement: an open
// payment's next check from from to to, only if it is still from.
func (s *Store) moveNextCheck(ctx context.Context, id int64, from, to time.Time) (bool, error) {
	res := s.one.WithContext(bg(ctx)).Model(&topup.TopUp{}).
		Where("id = ? AND next_check_at = ? AND status IN ?", id, from,
			[]topup.Status{topup.StatusAwaitingPayment, topup.StatusPendingVerification, topup.StatusSettling}).
		Update("next_check_at", to)
	return res.RowsAffected == 1, res.Error
}

// Dismiss implements topup.Store: one INSERT … SELECT of the payment
// only if it is the user's; a second dismissal changes nothing.
func (s *Store) Dismiss(ctx context.Context, userID, topUpID int64, now time.Time) error {
	err := s.one.WithContext(bg(ctx)).Exec(`INSERT INTO dismissed_topups (topup_id, user_id, dismissed_at)
		SELECT id, user_id, ? FROM topups WHERE id = ? AND user_id = ? ON CONFLICT (topup_id) DO NOTHING`,
		now.UTC(), topUpID, userID).Error
	if err != nil {
		return fmt.Errorf("dismiss payment %d: %w", topUpID, err)
	}
	return nil
}

// Move implements topup.Store: the state machine's one writer.
func (s *Store) Move(ctx context.Context, m topup.Move) (topup.TopUp, error) {
	var moved topup.TopUp
	var queued int64
	err := s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		var err error
		moved, err = s.moveTx(tx, m, &queued)
		return err
	})
	if err != nil {
		return topup.TopUp{}, dup(err)
	}
	s.kick(queued)
	return moved, nil
}

// moveTx takes the edge m.From → m.To with a conditional UPDATE on the
// expected status (and the lease owner where the edge needs the lease)
// and appends its event, audit entry, calls and outbox rows, in the
// caller's transaction. It is every move's writer; the credit's on
// PostgreSQL shares its UPDATE (moveRow) and writes the rest in one
// statement (foldCredit).
func (s *Store) moveTx(tx *gorm.DB, m topup.Move, queued *int64) (topup.TopUp, error) {
	out, unchanged, err := s.moveRow(tx, m)
	if err != nil {
		return topup.TopUp{}, err
	}
	ev := topup.Event{TopUpID: m.TopUpID, FromStatus: m.From, ToStatus: m.To, Actor: m.Actor, Reason: m.Reason,
		GatewayCode: m.GatewayCode, AdminID: m.AdminID, CreatedAt: m.Now}
	if err := tx.Table(eventsTable).Create(&ev).Error; err != nil {
		return topup.TopUp{}, fmt.Errorf("event of payment %s: %w", m.PublicID, err)
	}
	if m.Audit != nil {
		if err := audit.Record(tx, *m.Audit); err != nil {
			return topup.TopUp{}, err
		}
	}
	if err := insertCalls(tx, m.Calls); err != nil {
		return topup.TopUp{}, err
	}
	if unchanged {
		return out, nil // partners heard this outcome already: no webhook
	}
	n, err := enqueueWebhook(tx, m, out)
	if err != nil {
		return topup.TopUp{}, err
	}
	*queued = n
	return out, nil
}

// moveRow is a move's conditional UPDATE (RETURNING the row as moved),
// topup.ErrNotMoved when the row is no longer as expected; unchanged
// reports a public outcome partners heard already (no webhook).
func (s *Store) moveRow(tx *gorm.DB, m topup.Move) (out topup.TopUp, unchanged bool, err error) {
	needLease, err := topup.EdgeNeedsLease(m.From, m.To, m.Actor)
	if err != nil {
		return topup.TopUp{}, false, err
	}
	vals := map[string]any{"status": m.To, "status_reason": string(m.Reason), "updated_at": m.Now}
	if !m.KeepLease {
		vals["lease_until"], vals["lease_owner"] = nil, ""
	}
	// unchanged: the public outcome is the one before the last reopen.
	if m.To.Terminal() {
		resolved := m.Now
		if topup.ResolvedAtNeedsEvents(m.From, m.To) {
			var evs []topup.Event
			if err := tx.Table(eventsTable).Select("from_status", "to_status", "created_at").Where("topup_id = ?", m.TopUpID).
				Order("id DESC").Find(&evs).Error; err != nil {
				return topup.TopUp{}, false, fmt.Errorf("events of payment %s: %w", m.PublicID, err)
			}
			resolved = topup.ResolvedAt(m.From, m.To, m.Now, evs)
			unchanged = topup.OutcomeUnchanged(m.From, m.To, evs)
		}
		vals["resolved_at"], vals["next_check_at"] = resolved, nil
	} else {
		vals["resolved_at"] = nil // open again: no outcome to show
	}
	fieldValues(m.Fields, vals)
	// RETURNING hands back the row as changed: no reload afterwards.
	q := tx.Model(&out).Clauses(clause.Returning{}).Where("id = ? AND status = ?", m.TopUpID, m.From)
	if needLease {
		if m.Lease == "" {
			return topup.TopUp{}, false, fmt.Errorf("%w: %s → %s needs the lease", topup.ErrIllegalTransition, m.From, m.To)
		}
		q = q.Where("lease_owner = ?", m.Lease)
	}
	if m.To == topup.StatusCredited {
		// Never a payment whose reverse was sent, from any status (one
		// an admin closed and a reopen brought back included): the
		// credit's locked read then says why (ErrReverseSent).
		q = q.Where("reverse_sent_at IS NULL")
	}
	if m.From == topup.StatusReversing && m.To == topup.StatusSettling {
		// Back to settling (its reverse refused as settled) only a
		// payment reversing because its settle was refused, with the
		// bank's verified facts for its own amount (topup.Verified): the
		// next settle credits those.
		q = q.Where("status_reason = ? AND ref_id > 0 AND verified_amount_rials = amount_rials", string(topup.ReasonSettleRefused))
	}
	res := q.Updates(vals)
	if res.Error != nil {
		return topup.TopUp{}, false, fmt.Errorf("payment %s %s → %s: %w", m.PublicID, m.From, m.To, res.Error)
	}
	if res.RowsAffected == 0 {
		return topup.TopUp{}, false, topup.ErrNotMoved
	}
	return out, unchanged, nil
}

// enqueueWebhook writes the partners' outbox rows of a move to an
// event-worthy status (topup.EventType) in the move's transaction: no
// credit commits without its event, and no event without its credit. It is
// called from moveTx only, the one writer every edge goes through (the
// credit's fold on PostgreSQL writes the same rows: foldCredit).
func enqueueWebhook(tx *gorm.DB, m topup.Move, p topup.TopUp) (int64, error) {
	e, ok := webhookEvent(m, p)
	if !ok {
		return 0, nil
	}
	n, err := webhook.Enqueue(tx, e)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", topup.ErrOutbox, err)
	}
	return n, nil
}

// webhookEvent is the partners' event of the move m of p, the row as
// moved; false for a status without one (topup.EventType).
func webhookEvent(m topup.Move, p topup.TopUp) (webhook.Event, bool) {
	typ := topup.EventType(m.To)
	if typ == "" {
		return webhook.Event{}, false
	}
	var creditedAt *time.Time
	if m.To == topup.StatusCredited {
		creditedAt = &m.Now // the ledger entry's time (creditTx)
	}
	return webhook.Event{UserID: p.UserID, TopUpID: m.TopUpID, Type: typ,
		TopUp: topup.ViewOf(p, creditedAt, nil), CreatedAt: m.Now}, true
}

// Credit implements topup.Store: in one transaction, the move to
// credited (from the status as read, else from the status the locked row
// has), the ledger entry with the balance, and the verify's attempts.
func (s *Store) Credit(ctx context.Context, m topup.Move, walletID int64, calls []resilient.Call) (topup.TopUp, topup.Status, error) {
	var out topup.TopUp
	var queued int64
	was := m.From
	err := s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		// Usually the row is as the lease found it: move from that status
		// at once (no SELECT first). The move is conditional on it, so a
		// row changed meanwhile is not touched; then lock the row and move
		// from the status it has.
		if m.From == topup.StatusAwaitingPayment || m.From == topup.StatusPendingVerification || m.From == topup.StatusSettling {
			var err error
			if out, err = s.creditMoveTx(tx, m, calls, &queued); !errors.Is(err, topup.ErrNotMoved) {
				if err != nil {
					return err
				}
				return s.creditTx(tx, m, out)
			}
		}
		var cur topup.TopUp
		if err := s.db.ForUpdate(tx).Select("status", "reverse_sent_at").Take(&cur, m.TopUpID).Error; err != nil {
			return err
		}
		was = cur.Status
		if was == topup.StatusCredited {
			return topup.ErrNotMoved
		}
		if was == topup.StatusReversing || cur.ReverseSentAt != nil {
			// A verifier whose lease ran out mid-call, answered after
			// another actor sent the reverse: the money goes back to the
			// card, never into the wallet too.
			return topup.ErrReverseSent
		}
		mm := m
		mm.From = was
		var err error
		if out, err = s.creditMoveTx(tx, mm, calls, &queued); err != nil {
			return err
		}
		return s.creditTx(tx, m, out)
	})
	if err != nil {
		return topup.TopUp{}, was, dup(err)
	}
	s.kick(queued)
	return out, was, nil
}

// creditMoveTx is the credit's move to credited with its event, outbox
// rows and gateway calls (the move's, then the verify's calls). On
// PostgreSQL: the move's UPDATE (moveRow, as every move's), then the
// rest in one statement (foldCredit): the credit's transaction is five
// round trips, not seven. SQLite has no data-modifying WITH: moveTx, then
// the verify's calls, statement by statement. Both write the same rows
// (TestCreditFoldWritesTheSameRows).
func (s *Store) creditMoveTx(tx *gorm.DB, m topup.Move, calls []resilient.Call, queued *int64) (topup.TopUp, error) {
	if s.db.Dialect != store.Postgres {
		out, err := s.moveTx(tx, m, queued)
		if err != nil {
			return topup.TopUp{}, err
		}
		return out, insertCalls(tx, calls)
	}
	out, unchanged, err := s.moveRow(tx, m)
	if err != nil {
		return topup.TopUp{}, err
	}
	if m.Audit != nil { // an admin's credit: its entry as moveTx writes it
		if err := audit.Record(tx, *m.Audit); err != nil {
			return topup.TopUp{}, err
		}
	}
	all := append(append(make([]resilient.Call, 0, len(m.Calls)+len(calls)), m.Calls...), calls...)
	if *queued, err = foldCredit(tx, m, out, unchanged, all); err != nil {
		return topup.TopUp{}, err
	}
	return out, nil
}

// foldCredit writes, in one PostgreSQL statement of data-modifying WITH
// parts, the rows moveTx and insertCalls write one by one after the
// move's UPDATE: the move's event, the gateway calls (each payment id
// found by its public id, as insertCalls finds it) and, unless unchanged,
// the partners' outbox rows (webhook.OutboxOf, the insert Enqueue runs).
// It returns how many deliveries it queued. A failure of the outbox part
// (PostgreSQL names its table) is topup.ErrOutbox, as Enqueue's.
func foldCredit(tx *gorm.DB, m topup.Move, p topup.TopUp, unchanged bool, calls []resilient.Call) (int64, error) {
	var q strings.Builder
	q.WriteString(`WITH ev AS (INSERT INTO topup_events (topup_id, from_status, to_status, actor, reason, gateway_code, admin_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?))`)
	args := []any{m.TopUpID, string(m.From), string(m.To), string(m.Actor), string(m.Reason), m.GatewayCode, m.AdminID, m.Now}
	if len(calls) > 0 {
		q.WriteString(`, gc AS (INSERT INTO gateway_calls
		(topup_id, gateway, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome, error) VALUES `)
		for i, c := range calls {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(`((SELECT id FROM topups WHERE public_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
			args = append(args, callArgs(c)...)
		}
		q.WriteString(")")
	}
	count := "0"
	if e, ok := webhookEvent(m, p); ok && !unchanged {
		o, err := webhook.OutboxOf(e)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", topup.ErrOutbox, err)
		}
		q.WriteString(", wh AS (" + o.Insert + " RETURNING 1)")
		args = append(args, o.Args...)
		count = "(SELECT COUNT(*) FROM wh)"
	}
	q.WriteString(" SELECT " + count)
	var n int64
	if err := store.Scan(tx.Raw(q.String(), args...), &n); err != nil {
		err = fmt.Errorf("event, calls and outbox of payment %s: %w", m.PublicID, err)
		if outboxFailed(err) {
			return 0, fmt.Errorf("%w: %w", topup.ErrOutbox, err)
		}
		return 0, err
	}
	return n, nil
}

// outboxFailed reports whether err, foldCredit's statement's, is its
// outbox part's: PostgreSQL names the table of a refused row
// (TableName) or, for a missing or forbidden one, in the message.
func outboxFailed(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	for _, t := range []string{"webhook_deliveries", "webhook_endpoints"} {
		if pe.TableName == t || strings.Contains(pe.Message, `"`+t+`"`) {
			return true
		}
	}
	return false
}

// creditTx writes the ledger transaction (gateway clearing → wallet),
// last in the credit's transaction: the gateway's clearing account is
// every credit's, so its row lock is taken as late as it can be and held
// only until the commit.
func (s *Store) creditTx(tx *gorm.DB, m topup.Move, p topup.TopUp) error {
	if m.Fields.VerifiedAmountRials == nil {
		return fmt.Errorf("credit payment %s: no verified amount", m.PublicID)
	}
	testhook.At(testhook.InsideLedgerBeforePostings) // e2e: moved to credited, not committed
	if _, err := wallet.CreditTopUp(tx, s.ledger, wallet.TopUpCredit{WalletID: p.WalletID, TopUpID: m.TopUpID, PublicID: p.PublicID,
		Gateway: p.Gateway, AmountRials: *m.Fields.VerifiedAmountRials, At: m.Now}); err != nil {
		return err
	}
	testhook.At(testhook.InsideLedgerAfterPostings) // e2e: postings written, not committed
	return nil
}

// ClaimDue implements topup.Store: picks due open payments and pushes
// their next check forward in one transaction (FOR UPDATE SKIP LOCKED on
// PostgreSQL), so no other worker takes them meanwhile.
func (s *Store) ClaimDue(ctx context.Context, c topup.DueClaim) ([]int64, error) {
	var ids []int64
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		q := tx.Model(&topup.TopUp{}).Select("id").
			Where("(lease_until IS NULL OR lease_until < ?)", c.Now).
			Where("(next_check_at IS NULL OR next_check_at <= ?)", c.Now).
			Where("(status IN (?, ?, ?) OR (status = ? AND opened_at <= ?))",
				topup.StatusPendingVerification, topup.StatusSettling, topup.StatusReversing, topup.StatusAwaitingPayment, c.AbandonedBefore).
			Order("CASE WHEN next_check_at IS NULL THEN 0 ELSE 1 END, next_check_at").Limit(c.Batch)
		if err := s.db.SkipLocked(q).Find(&ids).Error; err != nil {
			return err
		}
		if !c.ReturnedSince.IsZero() {
			// Failed at the lifetime, the payer back from the bank since:
			// the literal condition is the partial index's
			// (topups_failed_returned_idx, migration 00011).
			var more []int64
			q := tx.Model(&topup.TopUp{}).Select("id").
				Where("status = 'failed' AND status_reason = 'not_paid_after_lifetime' AND returned_at >= ?", c.ReturnedSince).
				Where("(lease_until IS NULL OR lease_until < ?)", c.Now).
				Where("(next_check_at IS NULL OR next_check_at <= ?)", c.Now).
				Order("returned_at").Limit(c.Batch)
			if err := s.db.SkipLocked(q).Find(&more).Error; err != nil {
				return err
			}
			ids = append(ids, more...)
		}
		if len(ids) == 0 {
			return nil
		}
		return tx.Model(&topup.TopUp{}).Where("id IN ?", ids).Update("next_check_at", c.Until).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim due payments: %w", err)
	}
	return ids, nil
}

// Unclaim implements topup.Store: one UPDATE conditional on each next
// check still being from (the claim's); the others are left as they are.
func (s *Store) Unclaim(ctx context.Context, ids []int64, from, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.one.WithContext(bg(ctx)).Model(&topup.TopUp{}).Where("id IN ? AND next_check_at = ?", ids, from).
		Update("next_check_at", at).Error; err != nil {
		return fmt.Errorf("release claims: %w", err)
	}
	return nil
}

// MarkReverseSent implements topup.Store: one UPDATE conditional on the
// payment being reversing, held by tok at now, with no intent yet.
func (s *Store) MarkReverseSent(ctx context.Context, id int64, tok string, now time.Time) (topup.TopUp, error) {
	var out topup.TopUp
	res := s.one.WithContext(bg(ctx)).Model(&out).Clauses(clause.Returning{}).
		Where("id = ? AND status = ? AND lease_owner = ? AND lease_until >= ? AND reverse_sent_at IS NULL",
			id, topup.StatusReversing, tok, now).
		Updates(map[string]any{"reverse_sent_at": now, "updated_at": now})
	if res.Error != nil {
		return topup.TopUp{}, fmt.Errorf("mark the reverse of payment %d sent: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return topup.TopUp{}, topup.ErrNotMoved
	}
	return out, nil
}

// RecordCalls implements topup.Store.
func (s *Store) RecordCalls(ctx context.Context, calls []resilient.Call) error {
	if len(calls) == 0 {
		return nil
	}
	return insertCalls(s.db.Gorm.WithContext(bg(ctx)), calls)
}

// insertCalls writes attempts to gateway_calls, each with its payment's id
// found by its public id in the same statement.
func insertCalls(db *gorm.DB, calls []resilient.Call) error {
	for _, c := range calls {
		err := db.Exec(`INSERT INTO gateway_calls
		(topup_id, gateway, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome, error)
		VALUES ((SELECT id FROM topups WHERE public_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`, callArgs(c)...).Error
		if err != nil {
			return fmt.Errorf("record gateway call %s: %w", c.Operation, err)
		}
	}
	return nil
}

// callArgs is an attempt's row in gateway_calls' column order, its
// payment found by its public id (insertCalls, foldCredit).
func callArgs(c resilient.Call) []any {
	return []any{c.Ref, storableText(c.Gateway, 100), storableText(c.Operation, 100), c.Attempt, c.StartedAt.UTC(),
		c.Duration.Milliseconds(), c.HTTPStatus, c.GatewayCode, storableText(c.Outcome, 100), storableText(c.Error, 500)}
}

// storableText is s as a text column always takes it: at most n bytes,
// cut at a character boundary, valid UTF-8, no NUL (which PostgreSQL's
// text refuses). A bank's garbled answer quoted in an error must not make
// the row, and so the credit it is written with, fail.
func storableText(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// SaveReconcileReport implements topup.Store.
func (s *Store) SaveReconcileReport(ctx context.Context, r *topup.ReconcileReport) error {
	r.Error = storableText(r.Error, 500)
	if err := s.db.Gorm.WithContext(bg(ctx)).Table(reportsTable).Create(r).Error; err != nil {
		return fmt.Errorf("store reconcile report: %w", err)
	}
	return nil
}

// NewestReconcileReports implements topup.Store: one indexed read per
// gateway, the table's id order walked back to the gateway's newest.
func (s *Store) NewestReconcileReports(ctx context.Context, gateways []string) (map[string]topup.ReconcileReport, error) {
	out := make(map[string]topup.ReconcileReport, len(gateways))
	for _, gw := range gateways {
		var reps []topup.ReconcileReport
		if err := s.db.Gorm.WithContext(ctx).Table(reportsTable).Where("gateway = ?", gw).Order("id DESC").Limit(1).Find(&reps).Error; err != nil {
			return out, fmt.Errorf("newest reconciliation of %s: %w", gw, err)
		}
		if len(reps) == 1 {
			out[gw] = reps[0]
		}
	}
	return out, nil
}

// ClaimReconcileTurn implements topup.Store: one conditional UPDATE of
// the gateway's row, or, when it has none, an insert the primary key lets
// one instance make.
func (s *Store) ClaimReconcileTurn(ctx context.Context, gateway string, now, next time.Time) (bool, error) {
	claimed := false
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE reconcile_turns SET next_at = ? WHERE gateway = ? AND next_at <= ?`, next.UTC(), gateway, now.UTC())
		if res.Error != nil || res.RowsAffected == 1 {
			claimed = res.RowsAffected == 1
			return res.Error
		}
		res = tx.Exec(`INSERT INTO reconcile_turns (gateway, next_at) VALUES (?, ?) ON CONFLICT (gateway) DO NOTHING`, gateway, next.UTC())
		claimed = res.RowsAffected == 1
		return res.Error
	})
	if err != nil {
		return false, fmt.Errorf("claim the reconciliation's turn of %s: %w", gateway, err)
	}
	return claimed, nil
}

// SwitchGateway writes a gateway's switch (insert or update of its one
// row) and the audit entry in one transaction.
func (s *Store) SwitchGateway(ctx context.Context, gateway string, disabled bool, e audit.Entry) error {
	err := s.db.Gorm.WithContext(bg(ctx)).Transaction(func(tx *gorm.DB) error {
		row := map[string]any{"gateway": gateway, "disabled": disabled, "note": storableText(e.Note, 500), "admin_id": e.AdminID, "updated_at": e.CreatedAt}
		if err := tx.Table("gateway_switches").Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "gateway"}},
			DoUpdates: clause.AssignmentColumns([]string{"disabled", "note", "admin_id", "updated_at"}),
		}).Create(row).Error; err != nil {
			return fmt.Errorf("switch gateway %s: %w", gateway, err)
		}
		return audit.Record(tx, e)
	})
	// Dropped whatever the outcome: an error may come after the commit,
	// and dropping the kept copy is never wrong.
	s.switched()
	return err
}

func (s *Store) RecordAdminAction(ctx context.Context, e audit.Entry) error {
	return audit.Record(s.db.Gorm.WithContext(bg(ctx)), e)
}

// UsageOf sums what counts against a user's limits, in db's transaction
// or statement: the amount and number of their top-ups started since
// since that did not fail (credited, open or under review), the amount of
// all their payments still open (they may yet be credited), and how many
// wait for payment. The one query behind both the start's admission
// (CreateAdmitted, under the wallet's lock) and the limits page's read.
// The open statuses are literals, as the partial indexes' conditions are.
func UsageOf(db *gorm.DB, userID int64, since time.Time) (topup.Usage, error) {
	var u topup.Usage
	since = since.UTC()
	if err := store.Scan(db.Raw(`SELECT
		COALESCE(SUM(CASE WHEN created_at >= ? AND status <> 'failed' THEN amount_rials END), 0) AS since_rials,
		COUNT(CASE WHEN created_at >= ? AND status <> 'failed' THEN 1 END) AS since_count,
		COALESCE(SUM(CASE WHEN status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'reversing', 'needs_review') THEN amount_rials END), 0) AS open_rials,
		COUNT(CASE WHEN status IN ('created', 'awaiting_payment') THEN 1 END) AS waiting_count
		FROM topups WHERE user_id = ? AND (created_at >= ? OR status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'reversing', 'needs_review'))`,
		since, since, userID, since), &u); err != nil {
		return topup.Usage{}, fmt.Errorf("limit usage of user %d: %w", userID, err)
	}
	return u, nil
}
