package webhook

import (
	"context"
	"fmt"
)

// ClaimReturn records that the payer of payment paymentID is being handed
// over to its return_url, and reports whether this call is the one that
// does it: the first for the payment, on any instance (the insert is the
// claim; a second finds the row and writes nothing). Only the bank's first
// return of a payment redirects off-site; a later visit of the same link
// shows a page naming the destination, so that no link of ours is an
// open redirect for as long as it lives.
func (s *Service) ClaimReturn(ctx context.Context, topUpID int64) (bool, error) {
	res := s.db.Gorm.WithContext(ctx).Exec(
		`INSERT INTO return_handovers (topup_id, handed_at) VALUES (?, ?) ON CONFLICT (topup_id) DO NOTHING`,
		topUpID, s.now().UTC())
	if res.Error != nil {
		return false, fmt.Errorf("return hand-over of payment %d: %w", topUpID, res.Error)
	}
	return res.RowsAffected == 1, nil
}
