// Package sqlstore is the one implementation of withdrawal.Store: the
// withdrawals' rows in PostgreSQL or SQLite. Every SQL string of the
// withdrawal lifecycle lives here. Each writing method is one transaction
// guarded by one conditional statement; a move writes its status, its
// event, its ledger movement (a hold made, released or captured, a
// return), its partners' webhooks and an admin's audit row together or
// not at all.
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

const (
	table        = "withdrawals"
	eventsTable  = "withdrawal_events"
	callsTable   = "payout_calls"
	reportsTable = "payout_reconcile_reports"
)

// Store implements withdrawal.Store over a database.
type Store struct {
	db     *store.DB
	ledger *ledger.Ledger
	// queued, when set, is called after a move that queued webhook
	// deliveries has committed (the sender's kick).
	queued func()
	// reads, when set, is where List reads (WithReadPool).
	reads *store.ReadPool
}

// WithReadPool returns the store with List (the pages' and the API's
// lists) read from pool (DATABASE_READ_URL, else the primary); every move
// and what it decides on reads the primary
// (docs/design/scaling.md#read-replicas).
func (s *Store) WithReadPool(pool *store.ReadPool) *Store {
	cp := *s
	cp.reads = pool
	return &cp
}

// page is the database of a list's read.
func (s *Store) page() *store.DB {
	if s.reads == nil {
		return s.db
	}
	return s.reads.DB()
}

// OnWebhookQueued sets f to be called after a move that queued partners'
// webhook deliveries has committed; it returns s. Wiring, set before use.
func (s *Store) OnWebhookQueued(f func()) *Store {
	s.queued = f
	return s
}

var _ withdrawal.Store = (*Store)(nil)

// New returns the store over db, posting through the instance's ledger l
// (nil: a ledger of its own).
func New(db *store.DB, l *ledger.Ledger) *Store {
	if l == nil {
		l = ledger.New(db)
	}
	return &Store{db: db, ledger: l}
}

// bg detaches ctx from cancellation: a write that decides a withdrawal's
// fate finishes once started.
func bg(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// InFlightCode and RailCode are the codes of a provider's ledger
// accounts.
func InFlightCode(provider string) string { return "payouts_in_flight:" + provider }

// RailCode is the code of a provider's rail account: the outside world
// money leaves to.
func RailCode(provider string) string { return "payout_rail:" + provider }

// EnsureAccounts makes each provider's in-flight and rail accounts (at
// start).
func (s *Store) EnsureAccounts(ctx context.Context, providers ...string) error {
	for _, p := range providers {
		if _, err := s.ledger.EnsureAccount(ctx, ledger.AccountPayoutsInFlight, InFlightCode(p), 0); err != nil {
			return err
		}
		if _, err := s.ledger.EnsureAccount(ctx, ledger.AccountPayoutRail, RailCode(p), 0); err != nil {
			return err
		}
	}
	return nil
}

// ---- reads ----

// Get implements withdrawal.Store.
func (s *Store) Get(ctx context.Context, id int64) (withdrawal.Withdrawal, error) {
	return s.take(bg(ctx), "id = ?", id)
}

// ByPublicID implements withdrawal.Store.
func (s *Store) ByPublicID(ctx context.Context, publicID string) (withdrawal.Withdrawal, error) {
	return s.take(ctx, "public_id = ?", publicID)
}

// ByFormToken implements withdrawal.Store.
func (s *Store) ByFormToken(ctx context.Context, userID int64, token string) (withdrawal.Withdrawal, error) {
	return s.take(ctx, "user_id = ? AND form_token = ?", userID, token)
}

func (s *Store) take(ctx context.Context, where string, args ...any) (withdrawal.Withdrawal, error) {
	var w withdrawal.Withdrawal
	err := s.db.Gorm.WithContext(ctx).Table(table).Where(where, args...).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return w, withdrawal.ErrNotFound
	}
	if err != nil {
		return w, fmt.Errorf("withdrawal: %w", err)
	}
	return w, nil
}

// List implements withdrawal.Store.
func (s *Store) List(ctx context.Context, f withdrawal.Filter) ([]withdrawal.Withdrawal, int64, error) {
	limit := f.Limit
	if limit <= 0 || limit > 200 {
		limit = 20
	}
	q := s.page().Gorm.WithContext(ctx).Table(table)
	if f.UserID != 0 {
		q = q.Where("user_id = ?", f.UserID)
	}
	if len(f.Statuses) > 0 {
		// Known statuses written as literals (names from the fixed set,
		// never request text): with a parameter, PostgreSQL's generic plan
		// assumes an average status and walks every withdrawal newest first
		// filtering by it, which for the few under review reads them all
		// (TestScalePagesUseIndexes); with the name it walks (status, id).
		names := make([]string, 0, len(f.Statuses))
		for _, st := range f.Statuses {
			if !st.Valid() {
				return nil, 0, fmt.Errorf("list withdrawals: unknown status %q", st)
			}
			names = append(names, "'"+string(st)+"'")
		}
		q = q.Where("status IN (" + strings.Join(names, ", ") + ")")
	}
	if f.ReviewOnly {
		q = q.Where("status = 'requested' AND review_required")
	}
	order := "id DESC"
	switch {
	case f.Oldest:
		order = "id"
	case f.Before > 0:
		q = q.Where("id < ?", f.Before)
	}
	var out []withdrawal.Withdrawal
	if err := q.Order(order).Limit(limit + 1).Find(&out).Error; err != nil {
		return nil, 0, fmt.Errorf("list withdrawals: %w", err)
	}
	var next int64
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// Events implements withdrawal.Store.
func (s *Store) Events(ctx context.Context, id int64) ([]withdrawal.Event, error) {
	var out []withdrawal.Event
	if err := s.db.Gorm.WithContext(ctx).Table(eventsTable).Where("withdrawal_id = ?", id).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("events of withdrawal %d: %w", id, err)
	}
	return out, nil
}

// countsAgainstLimit are the statuses of a withdrawal that counts
// against the daily limit (the others gave the money back).
const countsAgainstLimit = "status NOT IN ('failed', 'rejected', 'cancelled', 'returned')"

// UsedToday implements withdrawal.Store.
func (s *Store) UsedToday(ctx context.Context, userID int64, since time.Time) (int64, error) {
	db := s.db.Gorm.WithContext(ctx)
	person, err := bankaccount.SamePerson(db, s.db.Dialect, userID, false)
	if err != nil {
		return 0, err
	}
	return usedToday(db, person, since)
}

// usedToday is the rials the users (one person's accounts) withdrew since.
func usedToday(db *gorm.DB, users []int64, since time.Time) (int64, error) {
	var n int64
	err := db.Raw(`SELECT COALESCE(SUM(amount_rials), 0) FROM withdrawals WHERE user_id IN ? AND created_at >= ? AND `+countsAgainstLimit,
		users, since.UTC()).Scan(&n).Error
	if err != nil {
		return 0, fmt.Errorf("withdrawals of users %v today: %w", users, err)
	}
	return n, nil
}

// ForReconcile implements withdrawal.Store.
func (s *Store) ForReconcile(ctx context.Context, provider string, since time.Time) ([]withdrawal.Withdrawal, error) {
	var out []withdrawal.Withdrawal
	err := s.db.Gorm.WithContext(ctx).Table(table).
		// Asked for, first sent or paid since: a withdrawal paid days after
		// it was asked for is compared for the lookback after its payment
		// (migration 00046 indexes each time by provider).
		Where("provider = ? AND (created_at >= ? OR submitted_at >= ? OR paid_at >= ?) AND status NOT IN ('requested', 'approved') AND submits > 0",
			provider, since.UTC(), since.UTC(), since.UTC()).
		Order("id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("withdrawals of %s to reconcile: %w", provider, err)
	}
	return out, nil
}

// ByPublicIDs implements withdrawal.Store.
func (s *Store) ByPublicIDs(ctx context.Context, userID int64, ids []string) (map[string]withdrawal.Withdrawal, error) {
	out := map[string]withdrawal.Withdrawal{}
	if len(ids) == 0 {
		return out, nil
	}
	// By the unique public id alone, and the user's kept here: with the
	// user in the WHERE, a prepared statement's generic plan can read all
	// of the user's withdrawals and filter the ids out of them.
	var ws []withdrawal.Withdrawal
	if err := s.db.Gorm.WithContext(ctx).Table(table).Where("public_id IN ?", ids).Find(&ws).Error; err != nil {
		return nil, fmt.Errorf("withdrawals by public id: %w", err)
	}
	for _, w := range ws {
		if w.UserID == userID {
			out[w.PublicID] = w
		}
	}
	return out, nil
}

// Reports implements withdrawal.Store.
func (s *Store) Reports(ctx context.Context, limit int) ([]withdrawal.Report, error) {
	var out []withdrawal.Report
	if err := s.db.Gorm.WithContext(ctx).Table(reportsTable).Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("payout reports: %w", err)
	}
	return out, nil
}

// AwaitingAdmin implements withdrawal.Store: since when the one that
// waits longest has waited, a withdrawal to approve from its request, one
// under review from its move there (its last event into needs_review:
// the worker's later checks do not move it).
func (s *Store) AwaitingAdmin(ctx context.Context) (int64, time.Time, error) {
	const waiting = "(w.status = 'requested' AND w.review_required) OR w.status = 'needs_review'"
	const since = "COALESCE((SELECT MAX(e.created_at) FROM " + eventsTable + " e WHERE e.withdrawal_id = w.id AND e.to_status = 'needs_review' AND w.status = 'needs_review'), w.created_at)"
	var n int64
	if err := s.db.Gorm.WithContext(ctx).Table(table + " AS w").Where(waiting).Count(&n).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("withdrawals awaiting an admin: %w", err)
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	var oldest []withdrawal.Withdrawal
	if err := s.db.Gorm.WithContext(ctx).Table(table + " AS w").Select("w.id, w.status, w.created_at").Where(waiting).
		Order(since + ", w.id").Limit(1).Find(&oldest).Error; err != nil || len(oldest) == 0 {
		return 0, time.Time{}, fmt.Errorf("oldest withdrawal awaiting an admin: %w", err)
	}
	w := oldest[0]
	if w.Status != withdrawal.StatusNeedsReview {
		return n, w.CreatedAt, nil
	}
	var evs []withdrawal.Event
	if err := s.db.Gorm.WithContext(ctx).Table(eventsTable).Where("withdrawal_id = ? AND to_status = 'needs_review'", w.ID).
		Order("id DESC").Limit(1).Find(&evs).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("when withdrawal %d went to review: %w", w.ID, err)
	}
	if len(evs) == 0 {
		return n, w.CreatedAt, nil
	}
	return n, evs[0].CreatedAt, nil
}

// LatestReports implements withdrawal.Store.
func (s *Store) LatestReports(ctx context.Context) ([]withdrawal.Report, error) {
	var out []withdrawal.Report
	err := s.db.Gorm.WithContext(ctx).Table(reportsTable + " AS r").
		Where("r.id = (SELECT MAX(id) FROM " + reportsTable + " WHERE provider = r.provider)").Order("r.provider").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("latest payout reports: %w", err)
	}
	return out, nil
}

// ---- writes ----

// Create implements withdrawal.Store: the wallet's row locked, the form
// looked for (a repeat is ErrDuplicate), the day's usage read and
// admitted, the hold made (its guarded write refuses an amount above the
// available balance), the row and its first event, in one transaction.
// The form is looked for under the lock, before the limit and the hold:
// a double click whose two requests both missed the service's fast path
// waits here for the first, and is answered as its repeat, not refused by
// the balance or the day's limit the first just used (the payer would
// read "insufficient balance" while the money leaves); the unique (user,
// form) index stays the guarantee.
func (s *Store) Create(ctx context.Context, w *withdrawal.Withdrawal, q withdrawal.Quota) error {
	acct, err := s.ledger.CommittedWalletAccount(s.db.Gorm.WithContext(ctx), w.WalletID)
	if err != nil {
		return err
	}
	err = s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		var locked []int64
		if err := s.db.ForUpdate(tx.Table("wallets").Select("id").Where("id = ?", w.WalletID)).Scan(&locked).Error; err != nil {
			return fmt.Errorf("lock wallet %d: %w", w.WalletID, err)
		}
		var made int64
		if err := tx.Table(table).Where("user_id = ? AND form_token = ?", w.UserID, w.FormToken).Count(&made).Error; err != nil {
			return fmt.Errorf("form of user %d: %w", w.UserID, err)
		}
		if made > 0 {
			return withdrawal.ErrDuplicate
		}
		if q.Admit != nil {
			// The person's rows locked, every account of theirs counted:
			// a second account with the same national code has no limit
			// of its own.
			person, err := bankaccount.SamePerson(tx, s.db.Dialect, w.UserID, true)
			if err != nil {
				return err
			}
			used, err := usedToday(tx, person, q.DayStart)
			if err != nil {
				return err
			}
			if err := q.Admit(used); err != nil {
				return err
			}
		}
		h, err := s.ledger.HoldIn(tx, ledger.HoldRequest{AccountID: acct, AmountRials: w.AmountRials, Reason: withdrawal.HoldReason,
			Reference: w.PublicID, ExpiresAt: w.CreatedAt.Add(withdrawal.HoldLife), Now: w.CreatedAt})
		if errors.Is(err, ledger.ErrInsufficientFunds) {
			return withdrawal.ErrInsufficientFunds
		}
		if err != nil {
			return err
		}
		w.HoldID = h.ID
		if err := tx.Table(table).Create(w).Error; err != nil {
			if store.IsUniqueViolation(err) {
				return withdrawal.ErrDuplicate
			}
			return fmt.Errorf("insert withdrawal: %w", err)
		}
		return tx.Table(eventsTable).Create(&withdrawal.Event{WithdrawalID: w.ID, ToStatus: w.Status, Actor: withdrawal.ActorUser,
			CreatedAt: w.CreatedAt}).Error
	})
	return err
}

// Claim implements withdrawal.Store.
func (s *Store) Claim(ctx context.Context, c withdrawal.Claim) (withdrawal.Withdrawal, bool, error) {
	res := s.db.Gorm.WithContext(bg(ctx)).Table(table).
		Where("id = ? AND status IN ? AND (lease_until IS NULL OR lease_until < ?)", c.ID, c.Statuses, c.Now.UTC()).
		Updates(map[string]any{"lease_owner": c.Token, "lease_until": c.Until.UTC()})
	if res.Error != nil {
		return withdrawal.Withdrawal{}, false, fmt.Errorf("claim withdrawal %d: %w", c.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		w, err := s.Get(ctx, c.ID)
		return w, false, err
	}
	w, err := s.Get(ctx, c.ID)
	return w, err == nil && w.LeaseOwner == c.Token, err
}

// Update implements withdrawal.Store.
func (s *Store) Update(ctx context.Context, id int64, tok string, f withdrawal.Fields, keepLease bool) (withdrawal.Withdrawal, error) {
	vals := map[string]any{"updated_at": time.Now().UTC()}
	fieldValues(f, vals)
	if !keepLease {
		vals["lease_owner"], vals["lease_until"] = "", nil
	}
	res := s.db.Gorm.WithContext(bg(ctx)).Table(table).Where("id = ? AND lease_owner = ?", id, tok).Updates(vals)
	if res.Error != nil {
		return withdrawal.Withdrawal{}, fmt.Errorf("update withdrawal %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return withdrawal.Withdrawal{}, withdrawal.ErrNotMoved
	}
	return s.Get(ctx, id)
}

// fieldValues adds f's fields to vals.
func fieldValues(f withdrawal.Fields, vals map[string]any) {
	if f.ProviderState != nil {
		vals["provider_state"] = string(*f.ProviderState)
	}
	if f.ProviderRef != nil {
		vals["provider_ref"] = *f.ProviderRef
	}
	if f.CountSubmit {
		vals["submits"] = gorm.Expr("submits + 1")
	}
	if f.CountCheck {
		vals["checks"] = gorm.Expr("checks + 1")
	}
	switch {
	case f.UnknownSince != nil && f.Contradiction != "":
		// The count is of the word heard now: another word than the one
		// on the row (the old value, as every expression of an UPDATE
		// reads it) starts it again, so that a "failed" after days of
		// "not found" stands on its own for UnknownReviewAfter before a
		// close as failed may go (DecideClose).
		// A count from before migration 00058 (no word on record) goes on
		// for a "not found", which never lets a close as failed go after
		// "transferred"; a "failed" starts its own.
		vals["unknown_since"] = gorm.Expr("CASE WHEN contradiction = ? OR (contradiction = '' AND ? = ?) THEN COALESCE(unknown_since, ?) ELSE ? END",
			string(f.Contradiction), string(f.Contradiction), string(withdrawal.ContradictionNotFound), f.UnknownSince.UTC(), f.UnknownSince.UTC())
	case f.UnknownSince != nil:
		vals["unknown_since"] = gorm.Expr("COALESCE(unknown_since, ?)", f.UnknownSince.UTC())
	}
	if f.Contradiction != "" {
		vals["contradiction"] = string(f.Contradiction)
	}
	if f.ClearUnknown {
		vals["unknown_since"], vals["contradiction"] = nil, ""
	}
	if f.SubmittedAt != nil {
		vals["submitted_at"] = gorm.Expr("COALESCE(submitted_at, ?)", f.SubmittedAt.UTC())
	}
	if f.NextCheckAt != nil {
		vals["next_check_at"] = f.NextCheckAt.UTC()
	}
	if f.ClearNext {
		vals["next_check_at"] = nil
	}
	if f.LastCheckedAt != nil {
		vals["last_checked_at"] = f.LastCheckedAt.UTC()
	}
	if f.WatchUntil != nil {
		vals["watch_until"] = f.WatchUntil.UTC()
	}
	if f.ReviewedBy != nil {
		vals["reviewed_by"] = *f.ReviewedBy
	}
	if f.ReviewNote != nil {
		vals["review_note"] = *f.ReviewNote
	}
}

// Move implements withdrawal.Store: the edge m.From → m.To by a
// conditional UPDATE on the expected status (and the lease owner where
// the edge needs the lease), its event, its money, the owner's webhook
// (withdrawal.paid, withdrawal.failed, withdrawal.returned: the outbox
// rows of the owner's endpoints) and an admin's audit row, in one
// transaction. A move replayed finds its row moved (ErrNotMoved) and
// writes nothing, webhooks included.
func (s *Store) Move(ctx context.Context, m withdrawal.Move) (withdrawal.Withdrawal, error) {
	needLease, err := withdrawal.EdgeNeedsLease(m.From, m.To, m.Actor)
	if err != nil {
		return withdrawal.Withdrawal{}, err
	}
	if needLease && m.Lease == "" {
		return withdrawal.Withdrawal{}, fmt.Errorf("%w: %s → %s needs the lease", withdrawal.ErrIllegalTransition, m.From, m.To)
	}
	cur, err := s.Get(ctx, m.ID) // what never changes: wallet, hold, provider, amount
	if err != nil {
		return withdrawal.Withdrawal{}, err
	}
	money := withdrawal.MoneyOf(m.To)
	var inFlight, railAcct, walletAcct int64
	if money == withdrawal.MoneyCapture || money == withdrawal.MoneyReturn {
		if inFlight, err = s.ledger.EnsureAccount(bg(ctx), ledger.AccountPayoutsInFlight, InFlightCode(cur.Provider), 0); err != nil {
			return withdrawal.Withdrawal{}, err
		}
		if railAcct, err = s.ledger.EnsureAccount(bg(ctx), ledger.AccountPayoutRail, RailCode(cur.Provider), 0); err != nil {
			return withdrawal.Withdrawal{}, err
		}
		if walletAcct, err = s.ledger.CommittedWalletAccount(s.db.Gorm.WithContext(bg(ctx)), cur.WalletID); err != nil {
			return withdrawal.Withdrawal{}, err
		}
	}
	now := m.Now.UTC()
	var out withdrawal.Withdrawal
	var queued int64
	err = s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		vals := map[string]any{"status": string(m.To), "status_reason": string(m.Reason), "updated_at": now}
		if !m.KeepLease {
			vals["lease_owner"], vals["lease_until"] = "", nil
		}
		switch m.To {
		case withdrawal.StatusPaid:
			vals["paid_at"] = now
		case withdrawal.StatusReturned:
			vals["returned_at"], vals["resolved_at"] = now, now
		case withdrawal.StatusFailed, withdrawal.StatusRejected, withdrawal.StatusCancelled:
			vals["resolved_at"] = now
		}
		fieldValues(m.Fields, vals)
		q := tx.Table(table).Where("id = ? AND status = ?", m.ID, string(m.From))
		if needLease {
			q = q.Where("lease_owner = ?", m.Lease)
		}
		res := q.Updates(vals)
		if res.Error != nil {
			return fmt.Errorf("withdrawal %s %s → %s: %w", m.PublicID, m.From, m.To, res.Error)
		}
		if res.RowsAffected == 0 {
			return withdrawal.ErrNotMoved
		}
		if err := tx.Table(table).Where("id = ?", m.ID).Take(&out).Error; err != nil {
			return err
		}
		ev := withdrawal.Event{WithdrawalID: m.ID, FromStatus: m.From, ToStatus: m.To, Actor: m.Actor, Reason: m.Reason,
			AdminID: m.AdminID, Note: m.Note, CreatedAt: now}
		if err := tx.Table(eventsTable).Create(&ev).Error; err != nil {
			return fmt.Errorf("event of withdrawal %s: %w", m.PublicID, err)
		}
		if m.Audit != nil {
			if err := audit.Record(tx, *m.Audit); err != nil {
				return err
			}
		}
		if err := s.money(tx, money, out, inFlight, railAcct, walletAcct, now); err != nil {
			return err
		}
		if typ, ok := webhookType(m.To); ok {
			n, err := webhook.EnqueueWithdrawal(tx, webhook.WithdrawalEvent{UserID: out.UserID, WithdrawalID: out.ID, Type: typ,
				Withdrawal: withdrawal.ViewOf(out), CreatedAt: now})
			if err != nil {
				return err
			}
			queued = n
		}
		return nil
	})
	if err != nil {
		return withdrawal.Withdrawal{}, err
	}
	if queued > 0 && s.queued != nil {
		s.queued()
	}
	return out, nil
}

// webhookType is the partners' event of a move to status to, if any
// (withdrawal.Told).
func webhookType(to withdrawal.Status) (string, bool) {
	if !withdrawal.Told(to) {
		return "", false
	}
	switch to {
	case withdrawal.StatusPaid:
		return webhook.TypeWithdrawalPaid, true
	case withdrawal.StatusReturned:
		return webhook.TypeWithdrawalReturned, true
	default:
		return webhook.TypeWithdrawalFailed, true
	}
}

// money writes a move's ledger effect in its transaction.
func (s *Store) money(tx *gorm.DB, money withdrawal.Money, w withdrawal.Withdrawal, inFlight, railAcct, walletAcct int64, now time.Time) error {
	switch money {
	case withdrawal.MoneyRelease:
		if _, err := s.ledger.ReleaseIn(tx, w.HoldID, now); err != nil && !errors.Is(err, ledger.ErrDuplicate) {
			return fmt.Errorf("release the hold of withdrawal %s: %w", w.PublicID, err)
		}
	case withdrawal.MoneyCapture:
		if _, err := s.ledger.CaptureIn(tx, w.HoldID, w.AmountRials, inFlight, ledger.KindWithdrawal, w.PublicID, now); err != nil &&
			!errors.Is(err, ledger.ErrDuplicate) {
			return fmt.Errorf("capture the hold of withdrawal %s: %w", w.PublicID, err)
		}
	case withdrawal.MoneyReturn:
		// Back from where the money is: payouts in flight until the
		// provider's list settled it, its rail after.
		from := inFlight
		if w.SettledAt != nil {
			from = railAcct
		}
		if _, err := s.ledger.Post(tx, ledger.Entry{Kind: ledger.KindWithdrawalReturn, Reference: w.PublicID, Note: w.PublicID,
			Postings: ledger.Transfer(from, walletAcct, w.AmountRials), At: now}); err != nil {
			return fmt.Errorf("return of withdrawal %s: %w", w.PublicID, err)
		}
		testhook.At(testhook.DuringWithdrawalReturn)
	}
	return nil
}

// Settle implements withdrawal.Store: settled_at set on a paid,
// unsettled withdrawal and its amount moved from payouts in flight to the
// provider's rail, in one transaction.
func (s *Store) Settle(ctx context.Context, id int64, now time.Time) (bool, error) {
	w, err := s.Get(ctx, id)
	if err != nil {
		return false, err
	}
	inFlight, err := s.ledger.EnsureAccount(bg(ctx), ledger.AccountPayoutsInFlight, InFlightCode(w.Provider), 0)
	if err != nil {
		return false, err
	}
	railAcct, err := s.ledger.EnsureAccount(bg(ctx), ledger.AccountPayoutRail, RailCode(w.Provider), 0)
	if err != nil {
		return false, err
	}
	settled := false
	err = s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		res := tx.Table(table).Where("id = ? AND status = 'paid' AND settled_at IS NULL", id).
			Updates(map[string]any{"settled_at": now.UTC(), "updated_at": now.UTC()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return nil
		}
		settled = true
		_, err := s.ledger.Post(tx, ledger.Entry{Kind: ledger.KindWithdrawal, Reference: "settle:" + w.PublicID, Note: w.PublicID,
			Postings: ledger.Transfer(inFlight, railAcct, w.AmountRials), At: now})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("settle withdrawal %s: %w", w.PublicID, err)
	}
	return settled, nil
}

// ClaimDue implements withdrawal.Store.
func (s *Store) ClaimDue(ctx context.Context, c withdrawal.DueClaim) ([]int64, error) {
	var ids []int64
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		q := tx.Table(table).Select("id").Where("next_check_at <= ? AND (lease_until IS NULL OR lease_until < ?)", c.Now.UTC(), c.Now.UTC()).
			Order("next_check_at").Limit(c.Batch)
		if err := s.db.SkipLocked(q).Find(&ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		return tx.Table(table).Where("id IN ?", ids).Update("next_check_at", c.Until.UTC()).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim due withdrawals: %w", err)
	}
	return ids, nil
}

// Unclaim implements withdrawal.Store.
func (s *Store) Unclaim(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.Gorm.WithContext(bg(ctx)).Table(table).Where("id IN ? AND next_check_at IS NOT NULL", ids).
		Update("next_check_at", at.UTC()).Error
}

// callRow is one payout_calls row.
type callRow struct {
	Reference  string
	Provider   string
	Operation  string
	Attempt    int
	StartedAt  time.Time
	DurationMS int64 `gorm:"column:duration_ms"`
	HTTPStatus int   `gorm:"column:http_status"`
	Code       int
	Outcome    string
	Error      string
}

// RecordCalls implements withdrawal.Store.
func (s *Store) RecordCalls(ctx context.Context, calls []resilient.Call) error {
	if len(calls) == 0 {
		return nil
	}
	rows := make([]callRow, len(calls))
	for i, c := range calls {
		rows[i] = callRow{Reference: c.Ref, Provider: c.Gateway, Operation: c.Operation, Attempt: c.Attempt,
			StartedAt: c.StartedAt.UTC(), DurationMS: c.Duration.Milliseconds(), HTTPStatus: c.HTTPStatus, Code: c.GatewayCode,
			Outcome: c.Outcome, Error: c.Error}
	}
	return s.db.Gorm.WithContext(bg(ctx)).Table(callsTable).Create(&rows).Error
}

// SaveReport implements withdrawal.Store.
func (s *Store) SaveReport(ctx context.Context, r *withdrawal.Report) error {
	return s.db.Gorm.WithContext(bg(ctx)).Table(reportsTable).Create(r).Error
}

// CallRecorder writes each provider attempt to payout_calls as it
// happens (a resilient.Recorder).
type CallRecorder struct {
	s   *Store
	log func(err error)
}

// Recorder returns the store's call recorder; failures go to onErr.
func (s *Store) Recorder(onErr func(err error)) *CallRecorder { return &CallRecorder{s: s, log: onErr} }

// Record implements resilient.Recorder.
func (r *CallRecorder) Record(ctx context.Context, c resilient.Call) {
	if err := r.s.RecordCalls(ctx, []resilient.Call{c}); err != nil && r.log != nil {
		r.log(err)
	}
}
