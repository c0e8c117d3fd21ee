package topup

import (
	"context"
)

// FormSubmitted reports whether the user has already submitted the top-up
// form with this token (a replay: a double click, a reload of the POST).
// Read-only; one lookup on unique(user_id, form_token).
func (s *Service) FormSubmitted(ctx context.Context, userID int64, formToken string) (bool, error) {
	if !ValidFormToken(formToken) {
		return false, nil
	}
	return s.st.FormSubmitted(ctx, userID, formToken)
}
