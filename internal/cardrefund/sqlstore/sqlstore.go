// Package sqlstore is the one implementation of cardrefund.Store: card
// refunds, their events and their money in PostgreSQL or SQLite. Every
// SQL string of the card refund code lives here. Each write is one
// transaction guarded by one conditional statement: the insert that
// takes the top-up's one open card refund (a unique index) only while
// what went back to the card stays within the top-up; the lease's claim;
// the move of a status, with its event, its money and its webhook.
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Store implements cardrefund.Store over a database.
type Store struct {
	db     *store.DB
	ledger *ledger.Ledger
	// inFlight is the card refunds in flight account's id.
	inFlight int64
	// queued, when set, is called after a move that queued webhook
	// deliveries has committed.
	queued func()
}

var _ cardrefund.Store = (*Store)(nil)

// New returns the store over db, posting through l (the instance's one
// ledger); it makes the card refunds in flight account when there is
// none.
func New(ctx context.Context, db *store.DB, l *ledger.Ledger) (*Store, error) {
	id, err := l.EnsureAccount(ctx, ledger.AccountCardRefundsInFlight, ledger.CodeCardRefundsInFlight, 0)
	if err != nil {
		return nil, fmt.Errorf("card refunds: %w", err)
	}
	return &Store{db: db, ledger: l, inFlight: id}, nil
}

// OnWebhookQueued sets f to be called after a move that queued partners'
// webhook deliveries has committed; it returns s.
func (s *Store) OnWebhookQueued(f func()) *Store {
	s.queued = f
	return s
}

const (
	refundsTable = "card_refunds"
	eventsTable  = "card_refund_events"
)

// row is a card_refunds row.
type row struct {
	ID                  int64
	PublicID            string
	TopUpID             int64 `gorm:"column:topup_id"`
	UserID              int64
	WalletID            int64
	Gateway             string
	Method              string
	AmountRials         int64
	RefundedBeforeRials int64
	Status              string
	StatusReason        string
	HoldID              int64
	BankReference       string
	BankCode            *int
	Attempts            int
	Checks              int
	SubmittedAt         *time.Time
	NextCheckAt         *time.Time
	LastCheckedAt       *time.Time
	LeaseUntil          *time.Time
	LeaseOwner          string
	AdminID             int64
	Note                string
	CreatedAt           time.Time
	UpdatedAt           time.Time
	ResolvedAt          *time.Time
}

func (row) TableName() string { return refundsTable }

func (r row) refund() cardrefund.CardRefund {
	return cardrefund.CardRefund{ID: r.ID, PublicID: r.PublicID, TopUpID: r.TopUpID, UserID: r.UserID, WalletID: r.WalletID,
		Gateway: r.Gateway, Method: cardrefund.Method(r.Method), AmountRials: r.AmountRials, RefundedBeforeRials: r.RefundedBeforeRials,
		Status: cardrefund.Status(r.Status), StatusReason: cardrefund.Reason(r.StatusReason), HoldID: r.HoldID,
		BankReference: r.BankReference, BankCode: r.BankCode, Attempts: r.Attempts, Checks: r.Checks, SubmittedAt: utc(r.SubmittedAt),
		NextCheckAt: utc(r.NextCheckAt), LastCheckedAt: utc(r.LastCheckedAt), LeaseUntil: utc(r.LeaseUntil), LeaseOwner: r.LeaseOwner,
		AdminID: r.AdminID, Note: r.Note, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), ResolvedAt: utc(r.ResolvedAt)}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// eventRow is a card_refund_events row.
type eventRow struct {
	ID           int64
	CardRefundID int64
	FromStatus   string
	ToStatus     string
	Actor        string
	Reason       string
	BankCode     *int
	AdminID      *int64
	CreatedAt    time.Time
}

func (eventRow) TableName() string { return eventsTable }

// bg detaches ctx from cancellation: a write that decides a card refund's
// fate must finish once started.
func bg(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// openStatuses are the statuses of the unique index card_refunds_one_open_key.
var openStatuses = []string{string(cardrefund.StatusHeld), string(cardrefund.StatusSubmitted), string(cardrefund.StatusNeedsReview)}

// ---- reads ----

type topUpRow struct {
	ID          int64
	PublicID    string
	UserID      int64
	WalletID    int64
	Gateway     string
	AmountRials int64
	Status      string
	Authority   *string
	RefID       *int64
	Receipt     *string
	CreatedAt   time.Time
}

func (t topUpRow) topUp() cardrefund.TopUp {
	out := cardrefund.TopUp{ID: t.ID, PublicID: t.PublicID, UserID: t.UserID, WalletID: t.WalletID, Gateway: t.Gateway,
		AmountRials: t.AmountRials, Credited: t.Status == "credited", CreatedAt: t.CreatedAt.UTC()}
	if t.Authority != nil {
		out.Authority = *t.Authority
	}
	if t.RefID != nil {
		out.RefID = *t.RefID
	}
	if t.Receipt != nil {
		out.Receipt = *t.Receipt
	}
	return out
}

const topUpColumns = `SELECT id, public_id, user_id, wallet_id, gateway, amount_rials, status, authority, ref_id, receipt, created_at FROM topups`

func (s *Store) topUp(ctx context.Context, where string, arg any) (cardrefund.TopUp, error) {
	var rows []topUpRow
	if err := s.db.Gorm.WithContext(ctx).Raw(topUpColumns+` WHERE `+where, arg).Scan(&rows).Error; err != nil {
		return cardrefund.TopUp{}, fmt.Errorf("top-up of a card refund: %w", err)
	}
	if len(rows) == 0 {
		return cardrefund.TopUp{}, cardrefund.ErrTopUpNotFound
	}
	return rows[0].topUp(), nil
}

// TopUp implements cardrefund.Store.
func (s *Store) TopUp(ctx context.Context, publicID string) (cardrefund.TopUp, error) {
	return s.topUp(ctx, `public_id = ?`, publicID)
}

// TopUpByID implements cardrefund.Store.
func (s *Store) TopUpByID(ctx context.Context, id int64) (cardrefund.TopUp, error) {
	return s.topUp(ctx, `id = ?`, id)
}

// Standing implements cardrefund.Store.
func (s *Store) Standing(ctx context.Context, t cardrefund.TopUp) (*cardrefund.CardRefund, int64, int64, error) {
	db := s.db.Gorm.WithContext(ctx)
	var open []row
	if err := db.Where("topup_id = ? AND status IN ?", t.ID, openStatuses).Find(&open).Error; err != nil {
		return nil, 0, 0, fmt.Errorf("open card refund of %s: %w", t.PublicID, err)
	}
	var refunded int64
	if err := db.Raw(`SELECT COALESCE(SUM(amount_rials), 0) FROM card_refunds WHERE topup_id = ? AND status = 'refunded'`, t.ID).
		Scan(&refunded).Error; err != nil {
		return nil, 0, 0, fmt.Errorf("card refunds of %s: %w", t.PublicID, err)
	}
	var available []int64
	if err := db.Raw(`SELECT posted_rials - held_rials FROM ledger_accounts WHERE wallet_id = ?`, t.WalletID).Scan(&available).Error; err != nil {
		return nil, 0, 0, fmt.Errorf("wallet of %s: %w", t.PublicID, err)
	}
	if len(available) == 0 {
		return nil, 0, 0, fmt.Errorf("wallet of %s: %w", t.PublicID, ledger.ErrAccountNotFound)
	}
	var o *cardrefund.CardRefund
	if len(open) > 0 {
		c := open[0].refund()
		o = &c
	}
	return o, refunded, available[0], nil
}

// Get implements cardrefund.Store.
func (s *Store) Get(ctx context.Context, id int64) (cardrefund.CardRefund, error) {
	return s.one(ctx, "id = ?", id)
}

// ByPublicID implements cardrefund.Store.
func (s *Store) ByPublicID(ctx context.Context, publicID string) (cardrefund.CardRefund, error) {
	return s.one(ctx, "public_id = ?", publicID)
}

func (s *Store) one(ctx context.Context, where string, arg any) (cardrefund.CardRefund, error) {
	var r row
	err := s.db.Gorm.WithContext(ctx).Where(where, arg).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return cardrefund.CardRefund{}, cardrefund.ErrNotFound
	}
	if err != nil {
		return cardrefund.CardRefund{}, fmt.Errorf("card refund: %w", err)
	}
	return r.refund(), nil
}

// UnderReview implements cardrefund.Store.
func (s *Store) UnderReview(ctx context.Context, limit int) ([]cardrefund.Waiting, error) {
	var rs []struct {
		Refund        row    `gorm:"embedded"`
		TopUpPublicID string `gorm:"column:topup_public_id"`
	}
	err := s.db.Gorm.WithContext(ctx).Table(refundsTable + " AS r").Select("r.*, t.public_id AS topup_public_id").
		Joins("JOIN topups t ON t.id = r.topup_id").Where("r.status = 'needs_review'"). // a literal: card_refunds_review_idx
		Order("r.created_at, r.id").Limit(limit).Find(&rs).Error
	if err != nil {
		return nil, fmt.Errorf("card refunds under review: %w", err)
	}
	out := make([]cardrefund.Waiting, len(rs))
	for i, r := range rs {
		out[i] = cardrefund.Waiting{CardRefund: r.Refund.refund(), TopUpPublicID: r.TopUpPublicID}
	}
	return out, nil
}

// AwaitingAdmin implements cardrefund.Store: since when the one that
// waits longest has waited, from its move into needs_review (its last
// event there), not its creation (a refund reaches review only after the
// bank's answer was awaited for days).
func (s *Store) AwaitingAdmin(ctx context.Context) (int64, time.Time, error) {
	const since = "COALESCE((SELECT MAX(e.created_at) FROM " + eventsTable + " e WHERE e.card_refund_id = r.id AND e.to_status = 'needs_review'), r.created_at)"
	var n int64
	if err := s.db.Gorm.WithContext(ctx).Table(refundsTable).Where("status = 'needs_review'").Count(&n).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("card refunds under review: %w", err)
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	var oldest []row
	if err := s.db.Gorm.WithContext(ctx).Table(refundsTable + " AS r").Select("r.id, r.created_at").Where("r.status = 'needs_review'").
		Order(since + ", r.id").Limit(1).Find(&oldest).Error; err != nil || len(oldest) == 0 {
		return 0, time.Time{}, fmt.Errorf("oldest card refund under review: %w", err)
	}
	var evs []eventRow
	if err := s.db.Gorm.WithContext(ctx).Where("card_refund_id = ? AND to_status = ?", oldest[0].ID, cardrefund.StatusNeedsReview).
		Order("id DESC").Limit(1).Find(&evs).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("when card refund %d went to review: %w", oldest[0].ID, err)
	}
	if len(evs) == 0 {
		return n, oldest[0].CreatedAt.UTC(), nil
	}
	return n, evs[0].CreatedAt.UTC(), nil
}

// OfTopUp implements cardrefund.Store.
func (s *Store) OfTopUp(ctx context.Context, topUpID int64) ([]cardrefund.CardRefund, error) {
	var rs []row
	if err := s.db.Gorm.WithContext(ctx).Where("topup_id = ?", topUpID).Order("id DESC").Find(&rs).Error; err != nil {
		return nil, fmt.Errorf("card refunds of top-up %d: %w", topUpID, err)
	}
	out := make([]cardrefund.CardRefund, len(rs))
	for i, r := range rs {
		out[i] = r.refund()
	}
	return out, nil
}

// EventsOf implements cardrefund.Store.
func (s *Store) EventsOf(ctx context.Context, id int64) ([]cardrefund.Event, error) {
	var rs []eventRow
	if err := s.db.Gorm.WithContext(ctx).Where("card_refund_id = ?", id).Order("id").Find(&rs).Error; err != nil {
		return nil, fmt.Errorf("events of card refund %d: %w", id, err)
	}
	out := make([]cardrefund.Event, len(rs))
	for i, r := range rs {
		out[i] = cardrefund.Event{ID: r.ID, CardRefundID: r.CardRefundID, FromStatus: cardrefund.Status(r.FromStatus),
			ToStatus: cardrefund.Status(r.ToStatus), Actor: cardrefund.Actor(r.Actor), Reason: cardrefund.Reason(r.Reason),
			BankCode: r.BankCode, AdminID: r.AdminID, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, nil
}

// ---- writes ----

// Create implements cardrefund.Store: in one transaction, the wallet's
// hold (its guard: the available balance), then the row, written only
// while the top-up is credited, its card refunds not failed add up to
// what the caller read as refunded (so none is open, and none resolved
// since), and that plus this amount stays within the top-up; the unique
// index refuses a second open one. The audit row commits with them.
//
// The hold locks the wallet's account until the commit, and every other
// write of a card refund of the wallet's top-ups (its creation, its
// capture, its release) takes that lock too: the sums read after it
// cannot change before the row is written. (SQLite's one writer
// serialises them anyway.)
func (s *Store) Create(ctx context.Context, d cardrefund.Draft) (cardrefund.CardRefund, error) {
	now := d.Now.UTC()
	var out row
	err := s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		acct, err := s.ledger.WalletAccount(tx, d.TopUp.WalletID)
		if err != nil {
			return err
		}
		h, err := s.ledger.HoldIn(tx, ledger.HoldRequest{AccountID: acct, AmountRials: d.AmountRials, Reason: cardrefund.HoldReason,
			Reference: d.PublicID, ExpiresAt: d.HoldUntil, Now: now})
		if errors.Is(err, ledger.ErrInsufficientFunds) {
			return cardrefund.ErrSpent
		}
		if err != nil {
			return err
		}
		var g struct {
			Credited    bool
			AmountRials int64
			NotFailed   int64
			UserID      int64
			WalletID    int64
			Gateway     string
			OpenRefunds int64
		}
		if err := tx.Raw(`SELECT p.status = 'credited' AS credited, p.amount_rials, p.user_id, p.wallet_id, p.gateway,
				(SELECT COALESCE(SUM(c.amount_rials), 0) FROM card_refunds c WHERE c.topup_id = p.id AND c.status <> 'failed') AS not_failed,
				(SELECT COUNT(*) FROM card_refunds c WHERE c.topup_id = p.id AND c.status IN ?) AS open_refunds
			FROM topups p WHERE p.id = ?`, openStatuses, d.TopUp.ID).Scan(&g).Error; err != nil {
			return fmt.Errorf("top-up of card refund %s: %w", d.PublicID, err)
		}
		switch {
		case !g.Credited:
			return cardrefund.ErrTopUpNotFound
		case g.OpenRefunds > 0:
			return cardrefund.ErrInProgress
		case g.NotFailed != d.RefundedBeforeRials || d.RefundedBeforeRials+d.AmountRials > g.AmountRials:
			return cardrefund.ErrOverRefunded
		}
		out = row{PublicID: d.PublicID, TopUpID: d.TopUp.ID, UserID: g.UserID, WalletID: g.WalletID, Gateway: g.Gateway,
			Method: string(d.Method), AmountRials: d.AmountRials, RefundedBeforeRials: d.RefundedBeforeRials,
			Status: string(cardrefund.StatusHeld), HoldID: h.ID, AdminID: d.AdminID, Note: d.Note, NextCheckAt: ptr(d.NextCheckAt.UTC()),
			CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&out).Error; err != nil {
			if store.IsUniqueViolation(err) {
				return cardrefund.ErrInProgress
			}
			return fmt.Errorf("insert card refund: %w", err)
		}
		return audit.Record(tx, d.Audit)
	})
	if err != nil {
		return cardrefund.CardRefund{}, err
	}
	return out.refund(), nil
}

func ptr[T any](v T) *T { return &v }

// TakeLease implements cardrefund.Store: one conditional UPDATE.
func (s *Store) TakeLease(ctx context.Context, id int64, from []cardrefund.Status, owner string, until, now time.Time) (cardrefund.CardRefund, bool, error) {
	st := make([]string, len(from))
	for i, f := range from {
		st[i] = string(f)
	}
	var rs []row
	err := s.db.Gorm.WithContext(bg(ctx)).Raw(`UPDATE card_refunds SET lease_owner = ?, lease_until = ?, updated_at = ?
		WHERE id = ? AND status IN ? AND (lease_until IS NULL OR lease_until < ?) RETURNING *`,
		owner, until.UTC(), now.UTC(), id, st, now.UTC()).Scan(&rs).Error
	if err != nil {
		return cardrefund.CardRefund{}, false, fmt.Errorf("lease of card refund %d: %w", id, err)
	}
	if len(rs) == 0 {
		c, err := s.Get(ctx, id)
		return c, false, err
	}
	return rs[0].refund(), true, nil
}

// Schedule implements cardrefund.Store.
func (s *Store) Schedule(ctx context.Context, id int64, owner string, next time.Time, checked bool, now time.Time) error {
	vals := map[string]any{"next_check_at": next.UTC(), "lease_until": nil, "lease_owner": "", "updated_at": now.UTC()}
	if checked {
		vals["last_checked_at"], vals["checks"] = now.UTC(), gorm.Expr("checks + 1")
	}
	res := s.db.Gorm.WithContext(bg(ctx)).Model(&row{}).Where("id = ? AND lease_owner = ?", id, owner).Updates(vals)
	if res.Error != nil {
		return fmt.Errorf("schedule card refund %d: %w", id, res.Error)
	}
	return nil
}

// Note implements cardrefund.Store: in one transaction, the row's reason
// (conditional on its status) and, when it was still in that status, the
// event; bankRef fills the row's bank reference only where it is empty
// (a reference the bank gave before stays).
func (s *Store) Note(ctx context.Context, id int64, status cardrefund.Status, actor cardrefund.Actor, reason cardrefund.Reason, bankRef string, now time.Time) (bool, error) {
	noted := false
	vals := map[string]any{"status_reason": string(reason), "updated_at": now.UTC()}
	if bankRef != "" {
		vals["bank_reference"] = gorm.Expr("CASE WHEN bank_reference = '' THEN ? ELSE bank_reference END", cut(bankRef, 100))
	}
	err := s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		res := tx.Model(&row{}).Where("id = ? AND status = ?", id, string(status)).Updates(vals)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		noted = true
		return tx.Create(&eventRow{CardRefundID: id, FromStatus: string(status), ToStatus: string(status), Actor: string(actor),
			Reason: string(reason), CreatedAt: now.UTC()}).Error
	})
	if err != nil {
		return false, fmt.Errorf("note on card refund %d: %w", id, err)
	}
	return noted, nil
}

// Move implements cardrefund.Store: the lifecycle's one writer.
func (s *Store) Move(ctx context.Context, m cardrefund.Move) (cardrefund.CardRefund, error) {
	needLease, err := cardrefund.EdgeNeedsLease(m.From, m.To, m.Actor)
	if err != nil {
		return cardrefund.CardRefund{}, err
	}
	if needLease && m.Lease == "" {
		return cardrefund.CardRefund{}, fmt.Errorf("%w: %s → %s needs the lease", cardrefund.ErrIllegalTransition, m.From, m.To)
	}
	now := m.Now.UTC()
	var out row
	var queued int64
	err = s.db.Tx(bg(ctx), func(tx *gorm.DB) error {
		set := []string{"status = ?", "status_reason = ?", "updated_at = ?"}
		args := []any{string(m.To), string(m.Reason), now}
		if !m.KeepLease {
			set = append(set, "lease_until = NULL", "lease_owner = ''")
		}
		switch {
		case m.Sent:
			set, args = append(set, "attempts = attempts + 1", "submitted_at = ?"), append(args, now)
		case m.From == cardrefund.StatusSubmitted && m.To == cardrefund.StatusHeld:
			set = append(set, "attempts = attempts - 1") // certainly not sent
		}
		if m.BankCode != nil {
			set, args = append(set, "bank_code = ?"), append(args, *m.BankCode)
		}
		if m.BankReference != "" {
			set, args = append(set, "bank_reference = ?"), append(args, cut(m.BankReference, 100))
		}
		if m.To.Terminal() {
			set, args = append(set, "next_check_at = NULL", "resolved_at = ?"), append(args, now)
		} else if m.NextCheckAt != nil {
			set, args = append(set, "next_check_at = ?"), append(args, m.NextCheckAt.UTC())
		}
		where := "id = ? AND status = ?"
		args = append(args, m.CardRefund.ID, string(m.From))
		if needLease {
			where += " AND lease_owner = ?"
			args = append(args, m.Lease)
		}
		var rs []row
		if err := tx.Raw(`UPDATE card_refunds SET `+strings.Join(set, ", ")+` WHERE `+where+` RETURNING *`, args...).Scan(&rs).Error; err != nil {
			return fmt.Errorf("card refund %s %s → %s: %w", m.CardRefund.PublicID, m.From, m.To, err)
		}
		if len(rs) == 0 {
			return cardrefund.ErrNotMoved
		}
		out = rs[0]
		ev := eventRow{CardRefundID: out.ID, FromStatus: string(m.From), ToStatus: string(m.To), Actor: string(m.Actor),
			Reason: string(m.Reason), BankCode: m.BankCode, CreatedAt: now}
		if m.AdminID != 0 {
			ev.AdminID = &m.AdminID
		}
		if err := tx.Create(&ev).Error; err != nil {
			return fmt.Errorf("event of card refund %s: %w", out.PublicID, err)
		}
		if err := s.money(tx, out, m.To, now); err != nil {
			return err
		}
		if m.To == cardrefund.StatusRefunded {
			n, err := webhook.Enqueue(tx, webhook.Event{UserID: out.UserID, TopUpID: out.TopUpID, Type: webhook.TypeRefunded,
				TopUp: m.TopUpView, CardRefund: cardrefund.ViewOf(out.refund(), &now), CreatedAt: now})
			if err != nil {
				return err
			}
			queued = n
		}
		if m.Audit != nil {
			return audit.Record(tx, *m.Audit)
		}
		return nil
	})
	if err != nil {
		return cardrefund.CardRefund{}, err
	}
	if queued > 0 && s.queued != nil {
		s.queued()
	}
	return out.refund(), nil
}

// money writes a move's money in its transaction: to refunded, the hold
// captured into card refunds in flight and moved on to the top-up's
// gateway's clearing slot (its locks taken first, in the ledger's one
// order); to failed, the hold released.
func (s *Store) money(tx *gorm.DB, r row, to cardrefund.Status, now time.Time) error {
	switch to {
	case cardrefund.StatusRefunded:
		wallet, err := s.ledger.WalletAccount(tx, r.WalletID)
		if err != nil {
			return err
		}
		clearing, err := s.ledger.ClearingAccount(tx, r.Gateway, r.TopUpID)
		if err != nil {
			return err
		}
		if err := s.ledger.LockAccounts(tx, wallet, s.inFlight, clearing); err != nil {
			return err
		}
		note := "card refund " + r.PublicID
		if _, err := s.ledger.CaptureInFor(tx, r.HoldID, r.AmountRials, s.inFlight, ledger.KindCardRefund, note, r.TopUpID, now); err != nil &&
			!errors.Is(err, ledger.ErrDuplicate) {
			return fmt.Errorf("capture of card refund %s: %w", r.PublicID, err)
		}
		if _, err := s.ledger.Post(tx, ledger.Entry{Kind: ledger.KindCardRefund, Reference: "card_refund:" + r.PublicID,
			TopUpID: r.TopUpID, Note: note, Postings: ledger.Transfer(s.inFlight, clearing, r.AmountRials), At: now}); err != nil {
			return fmt.Errorf("card refund %s to the clearing side: %w", r.PublicID, err)
		}
	case cardrefund.StatusFailed:
		if _, err := s.ledger.ReleaseIn(tx, r.HoldID, now); err != nil && !errors.Is(err, ledger.ErrDuplicate) {
			return fmt.Errorf("release of card refund %s: %w", r.PublicID, err)
		}
	}
	return nil
}

// ClaimDue implements cardrefund.Store: due card refunds (held or
// submitted, lease free, next check past) taken and pushed forward in one
// transaction (SKIP LOCKED on PostgreSQL).
func (s *Store) ClaimDue(ctx context.Context, now, until time.Time, batch int) ([]int64, error) {
	var ids []int64
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		q := tx.Model(&row{}).Select("id").Where("status IN ?", []string{string(cardrefund.StatusHeld), string(cardrefund.StatusSubmitted)}).
			Where("(lease_until IS NULL OR lease_until < ?)", now.UTC()).
			Where("(next_check_at IS NULL OR next_check_at <= ?)", now.UTC()).Order("next_check_at").Limit(batch)
		if err := s.db.SkipLocked(q).Find(&ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		return tx.Model(&row{}).Where("id IN ?", ids).Update("next_check_at", until.UTC()).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim due card refunds: %w", err)
	}
	return ids, nil
}

// Unclaim implements cardrefund.Store.
func (s *Store) Unclaim(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.db.Gorm.WithContext(bg(ctx)).Model(&row{}).Where("id IN ?", ids).Update("next_check_at", at.UTC()).Error; err != nil {
		return fmt.Errorf("give back card refunds: %w", err)
	}
	return nil
}

// cut is s at most n bytes, at a character boundary.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "")
	for len(s) > n {
		s = s[:n]
		s = strings.ToValidUTF8(s, "")
	}
	return s
}
