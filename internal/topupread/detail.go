package topupread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/topup"
)

// Credit is the ledger entry a credited payment booked in its wallet.
type Credit struct {
	ID           int64
	AmountRials  int64
	BalanceAfter int64
	Kind         string
	CreatedAt    time.Time
}

// Event is one status change of a payment, as its timeline shows it.
type Event struct {
	ID          int64
	FromStatus  topup.Status
	ToStatus    topup.Status
	Actor       topup.Actor
	Reason      topup.Reason
	GatewayCode *int
	AdminID     *int64
	CreatedAt   time.Time
}

// Call is one recorded attempt at a bank operation for a payment.
type Call struct {
	ID          int64
	Operation   string
	Attempt     int
	StartedAt   time.Time
	DurationMS  int64 `gorm:"column:duration_ms"`
	HTTPStatus  int
	GatewayCode int
	Outcome     string
}

// Detail is one payment's whole story: the row, its credit (when
// credited), every status change and every bank call, oldest first.
type Detail struct {
	TopUp  topup.TopUp
	Credit *Credit
	Events []Event
	Calls  []Call
}

// Detail reads the payment with public id publicID and its story
// (ErrNotFound when there is none).
func (r *Reader) Detail(ctx context.Context, publicID string) (Detail, error) {
	var d Detail
	if !topup.ValidPublicID(publicID) {
		return d, ErrNotFound
	}
	db := r.db.Gorm.WithContext(ctx)
	err := db.Table("topups").Where("public_id = ?", publicID).Take(&d.TopUp).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return d, ErrNotFound
	}
	if err != nil {
		return d, fmt.Errorf("payment %s: %w", publicID, err)
	}
	id := d.TopUp.ID
	var credits []Credit
	// The top-up's ledger transaction, as the wallet's posting shows it.
	if err := db.Table("ledger_transactions AS t").
		Select("t.id, lp.amount_rials, lp.balance_after_rials AS balance_after, t.kind, t.created_at").
		Joins("JOIN ledger_postings lp ON lp.transaction_id = t.id JOIN ledger_accounts a ON a.id = lp.account_id AND a.kind = 'wallet'").
		Where("t.topup_id = ? AND t.kind = 'topup'", id).Limit(1).Scan(&credits).Error; err != nil {
		return d, fmt.Errorf("ledger entry of payment %s: %w", publicID, err)
	}
	if len(credits) == 1 {
		d.Credit = &credits[0]
	}
	if d.Events, err = r.Events(ctx, id); err != nil {
		return d, err
	}
	if err := db.Table("gateway_calls").
		Select("id, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome").
		Where("topup_id = ?", id).Order("id").Scan(&d.Calls).Error; err != nil {
		return d, fmt.Errorf("bank calls of payment %s: %w", publicID, err)
	}
	return d, nil
}

// Events returns a payment's status changes (by its internal id), oldest
// first.
func (r *Reader) Events(ctx context.Context, topUpID int64) ([]Event, error) {
	var out []Event
	err := r.db.Gorm.WithContext(ctx).Table("topup_events").
		Select("id, from_status, to_status, actor, reason, gateway_code, admin_id, created_at").
		Where("topup_id = ?", topUpID).Order("id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("events of payment %d: %w", topUpID, err)
	}
	return out, nil
}

// ClosedByAdmin reports whether a top-up (or one of its events) in status
// with reason was closed as failed by an admin after review: the reason
// closed_by_admin, or a reverse's end (refused, its window closed, the
// bank's record differs, a settle refused after the reverse was refused
// as settled) that the admin's close keeps so that nothing
// reopens or credits it (topup's StepClose). A reverse's own end puts a
// payment under review, never failed: failed with one of those reasons is
// always an admin's close. The payer's page (web/pay) and the admin's page
// of a top-up (web/admin) say it as closed; neither may say its review is
// still going on.
func ClosedByAdmin(status topup.Status, reason topup.Reason) bool {
	if status != topup.StatusFailed {
		return false
	}
	switch reason {
	case topup.ReasonClosedByAdmin, topup.ReasonReverseRefused, topup.ReasonReverseClosed, topup.ReasonReverseDiffers, topup.ReasonSettleContradicted:
		return true
	}
	return false
}
