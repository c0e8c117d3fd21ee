package payment

import (
	"context"
	"fmt"
)

// FormSubmitted reports whether the user has already submitted the top-up
// form with this token (a replay: a double click, a reload of the POST).
// Read-only; one lookup on unique(user_id, form_token).
func (s *Service) FormSubmitted(ctx context.Context, userID int64, formToken string) (bool, error) {
	if !ValidFormToken(formToken) {
		return false, nil
	}
	var n int64
	err := s.db.Gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM payments WHERE user_id = ? AND form_token = ?`, userID, formToken).Scan(&n).Error
	if err != nil {
		return false, fmt.Errorf("form %s of user %d: %w", formToken, userID, err)
	}
	return n > 0, nil
}
