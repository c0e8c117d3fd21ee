package payment

import (
	"context"
	"fmt"
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
