package payment

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
)

// UnresolvedRow is an open or needs-review payment with its owner.
type UnresolvedRow struct {
	Payment
	Email string
}

// Unresolved lists payments that are not credited or failed, oldest
// first: what admins watch.
func (s *Service) Unresolved(ctx context.Context, limit int) ([]UnresolvedRow, error) {
	var rows []UnresolvedRow
	err := s.db.Gorm.WithContext(ctx).Table("payments").
		Select("payments.*, users.email AS email").
		Joins("JOIN users ON users.id = payments.user_id").
		Where("payments.status IN ?", []Status{StatusCreated, StatusAwaitingPayment, StatusPendingVerification, StatusNeedsReview}).
		Order("payments.created_at").Limit(limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("unresolved payments: %w", err)
	}
	return rows, nil
}

// StatusCounts counts payments by status.
func (s *Service) StatusCounts(ctx context.Context) (map[Status]int64, error) {
	var rows []struct {
		Status Status
		N      int64
	}
	if err := s.db.Gorm.WithContext(ctx).Model(&Payment{}).Select("status, COUNT(*) AS n").Group("status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count payments: %w", err)
	}
	out := map[Status]int64{}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// Admin action errors.
var (
	ErrNotUnderReview = errors.New("payment is not under review")
	ErrNoteRequired   = errors.New("a note saying why is required")
)

// AdminRecheck asks the bank again about a payment under review. A paid
// answer credits it (once); any other answer leaves it under review. The
// action is recorded either way.
func (s *Service) AdminRecheck(ctx context.Context, publicID string, adminID int64) (Payment, error) {
	p, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return p, err
	}
	if p.Status != StatusNeedsReview {
		return p, ErrNotUnderReview
	}
	after, err := s.recheck(ctx, p)
	if err != nil {
		return after, err
	}
	return after, s.recordAction(ctx, p, adminID, audit.ActionRecheck, "", after.Status)
}

// AdminCloseFailed ends a payment under review as failed, with a note: for
// when the bank confirms (by phone, by statement) that no money of the
// payer is held. Should the bank later verify it as paid after all, it is
// still credited (a bank-verified payment always is).
func (s *Service) AdminCloseFailed(ctx context.Context, publicID string, adminID int64, note string) (Payment, error) {
	note = strings.TrimSpace(note)
	if note == "" || len(note) > 1000 {
		return Payment{}, ErrNoteRequired
	}
	p, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return p, err
	}
	now := s.clock()
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Payment{}).Where("id = ? AND status = ? AND (lease_until IS NULL OR lease_until < ?)", p.ID, StatusNeedsReview, now).
			Updates(map[string]any{"status": StatusFailed, "status_reason": truncate("closed by an admin: "+note, 500),
				"resolved_at": now, "updated_at": now, "next_check_at": nil})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotUnderReview
		}
		return audit.Record(tx, audit.Entry{PaymentID: &p.ID, AdminID: adminID, Action: audit.ActionCloseFailed, Note: note,
			FromStatus: string(p.Status), ToStatus: string(StatusFailed), Result: audit.ResultDone, CreatedAt: now})
	})
	if err != nil {
		return p, err
	}
	s.log.Warn("admin closed a payment under review as failed", "payment", p.PublicID, "admin", adminID)
	return s.reload(ctx, p.ID)
}

func (s *Service) recordAction(ctx context.Context, p Payment, adminID int64, action audit.Action, note string, to Status) error {
	err := audit.Record(s.db.Gorm.WithContext(context.WithoutCancel(ctx)), audit.Entry{PaymentID: &p.ID, AdminID: adminID,
		Action: action, Note: note, FromStatus: string(p.Status), ToStatus: string(to), Result: audit.ResultDone, CreatedAt: s.clock()})
	if err != nil {
		return fmt.Errorf("record admin action on %s: %w", p.PublicID, err)
	}
	return nil
}

// OpenForUser lists the user's payments whose outcome is not known yet,
// newest first (the wallet page shows them as in progress).
func (s *Service) OpenForUser(ctx context.Context, userID int64, limit int) ([]Payment, error) {
	var out []Payment
	err := s.db.Gorm.WithContext(ctx).Where("user_id = ? AND status IN ?", userID,
		[]Status{StatusAwaitingPayment, StatusPendingVerification, StatusNeedsReview}).
		Order("id DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("open payments of user %d: %w", userID, err)
	}
	return out, nil
}
