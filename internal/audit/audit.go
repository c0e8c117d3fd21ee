// Package audit is the admins' audit log (table admin_actions): one row per
// action an admin took, who, when, on what, and what it did. Rows are only
// ever inserted; nothing in the app updates or deletes them.
package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

// Action names what an admin did.
type Action string

const (
	ActionRecheck        Action = "recheck"         // asked the bank about a payment
	ActionRecheckSkipped Action = "recheck_skipped" // asked, but another actor held the payment: not run
	ActionCloseFailed    Action = "close_failed"    // closed a payment under review as failed, with a note
	ActionReconcile      Action = "reconcile"       // ran reconciliation with the gateway now
	ActionTokenRevoke    Action = "token_revoke"    // revoked a user's API token (TargetUserID: its owner)
	ActionWebhookDisable Action = "webhook_disable" // disabled a user's webhook endpoint (TargetUserID: its owner)
	ActionWebhookResend  Action = "webhook_resend"  // queued a webhook delivery again (PaymentID: its top-up)
	ActionWebhookEnable  Action = "webhook_enable"  // enabled again a webhook endpoint an admin disabled, or cleared its failing mark (TargetUserID: its owner)
	ActionGatewaySwitch  Action = "gateway_switch"  // switched a gateway off or on for new top-ups (Note: which, how, why)
	// Withdrawals and bank accounts (TargetUserID: the owner; Note: which
	// one and the admin's note).
	ActionWithdrawalApprove  Action = "withdrawal_approve"   // approved a withdrawal waiting for review
	ActionWithdrawalReject   Action = "withdrawal_reject"    // rejected one: its amount released
	ActionWithdrawalFail     Action = "withdrawal_fail"      // closed one under review as failed after checking with the provider
	ActionWithdrawalPaid     Action = "withdrawal_paid"      // closed one under review as paid, on the provider's word that it transferred it
	ActionBankAccountApprove Action = "bank_account_approve" // verified a bank account the provider's inquiry could not
	ActionBankAccountReject  Action = "bank_account_reject"  // rejected one
	ActionPayoutReconcile    Action = "payout_reconcile"     // ran the payout reconciliation now
	// Card refunds (TopUpID: the top-up; Note: the card refund's id and the admin's note).
	ActionCardRefund        Action = "card_refund"         // started a refund of a top-up to the card (after the second factor again)
	ActionCardRefundRecheck Action = "card_refund_recheck" // asked the bank again about a card refund under review
	ActionCardRefundConfirm Action = "card_refund_confirm" // closed a card refund under review as made at the bank
	ActionCardRefundClose   Action = "card_refund_close"   // closed a card refund under review as not made
	// Merchants (TargetUserID: the user; Note: the display name).
	ActionMerchant Action = "merchant" // made a user a merchant, or renamed one (after the second factor again)
	// Actions of the operator on the command line (no AdminID).
	ActionCLIPromote  Action = "cli_promote"   // `kifpool user promote` (TargetUserID: who)
	ActionCLIDemote   Action = "cli_demote"    // `kifpool user demote`
	ActionCLIAdmin    Action = "cli_create"    // `kifpool user create --admin`
	ActionCLIReset2FA Action = "cli_reset_2fa" // `kifpool user reset-2fa`
	ActionCLIMerchant Action = "cli_merchant"  // `kifpool merchant create` (TargetUserID: who; Note: the display name)
	// ActionCLISetPassword: `kifpool user set-password` (TargetUserID:
	// whose), the operator's way into any account: recorded as the rest.
	ActionCLISetPassword Action = "cli_set_password"
)

// FromCLI reports whether the action is the operator's on the command
// line, which has no admin behind it.
func (a Action) FromCLI() bool {
	switch a {
	case ActionCLIPromote, ActionCLIDemote, ActionCLIAdmin, ActionCLIReset2FA, ActionCLIMerchant, ActionCLISetPassword:
		return true
	}
	return false
}

// Results of an action.
const (
	ResultDone    = "done"
	ResultSkipped = "skipped"
	// ResultError: the action ran (a recheck reached the bank) and then
	// failed; what the bank said may not be recorded.
	ResultError = "error"
)

// Entry is one row of the audit log.
type Entry struct {
	ID           int64 `gorm:"primaryKey"`
	AdminID      int64 `gorm:"default:null"` // 0 (NULL): the command line
	Action       Action
	TopUpID      *int64
	TargetUserID *int64
	Note         string
	FromStatus   string
	ToStatus     string
	Result       string
	CreatedAt    time.Time
}

// TableName maps Entry to admin_actions.
func (Entry) TableName() string { return "admin_actions" }

// Record inserts e with tx (the caller's transaction, or a plain handle).
func Record(tx *gorm.DB, e Entry) error {
	if e.Action == "" || (e.AdminID == 0) != e.Action.FromCLI() {
		return errors.New("audit: an entry needs an action, and an admin unless it is the command line's")
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now().UTC()
	}
	if err := tx.Create(&e).Error; err != nil {
		return fmt.Errorf("audit %s by admin %d: %w", e.Action, e.AdminID, err)
	}
	return nil
}

// Log reads the audit log.
type Log struct {
	db    *store.DB
	reads *store.ReadPool // nil: List reads db
}

// NewLog returns a reader over db.
func NewLog(db *store.DB) *Log { return &Log{db: db} }

// WithReadPool returns a reader whose list (List, the audit page) reads
// pool (DATABASE_READ_URL, else the primary); Fresh's reads the primary,
// for a top-up's page right after an action
// (docs/design/scaling.md#read-replicas).
func (l *Log) WithReadPool(pool *store.ReadPool) *Log { return &Log{db: l.db, reads: pool} }

// page is the database of a list's read.
func (l *Log) page() *store.DB {
	if l.reads == nil {
		return l.db
	}
	return l.reads.DB()
}

// Fresh returns a reader whose list reads the primary: the entries a
// top-up's page shows right after an admin's action on it, which a
// lagging replica may not have yet.
func (l *Log) Fresh() *Log { return &Log{db: l.db} }

// Query selects entries of the audit log.
type Query struct {
	AdminEmail    string // only this admin's actions ("": every admin's)
	TopUpPublicID string // only actions on this payment ("": all)
	BeforeID      int64  // entries older than this one (0: the newest)
	Limit         int
}

// Listed is an entry with the admin's e-mail, the payment's public id and
// the e-mail of the account acted on (TargetUserID; "" when none, or when
// that user no longer exists).
type Listed struct {
	Entry
	AdminEmail    string
	TopUpPublicID string
	TargetEmail   string
}

// List returns entries matching q, newest first. It only reads: the log
// has no update or delete anywhere in the app.
func (l *Log) List(ctx context.Context, q Query) ([]Listed, error) {
	if q.Limit <= 0 || q.Limit > 500 {
		q.Limit = 100
	}
	tx := l.page().Gorm.WithContext(ctx).Table("admin_actions AS a").
		Select("a.id, COALESCE(a.admin_id, 0) AS admin_id, a.action, a.topup_id, a.target_user_id, a.note, a.from_status, a.to_status, a.result, a.created_at, " +
			"COALESCE(u.email, '') AS admin_email, COALESCE(p.public_id, '') AS topup_public_id, COALESCE(t.email, '') AS target_email").
		Joins("LEFT JOIN users u ON u.id = a.admin_id").
		Joins("LEFT JOIN users t ON t.id = a.target_user_id").
		Joins("LEFT JOIN topups p ON p.id = a.topup_id")
	if q.AdminEmail != "" {
		tx = tx.Where("lower(u.email) = lower(?)", q.AdminEmail)
	}
	if q.TopUpPublicID != "" {
		tx = tx.Where("p.public_id = ?", q.TopUpPublicID)
	}
	if q.BeforeID > 0 {
		tx = tx.Where("a.id < ?", q.BeforeID)
	}
	var out []Listed
	if err := tx.Order("a.id DESC").Limit(q.Limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("list audit log: %w", err)
	}
	return out, nil
}

// Record inserts e (an action that is not part of another transaction).
func (l *Log) Record(ctx context.Context, e Entry) error {
	return Record(l.db.Gorm.WithContext(ctx), e)
}
