package topupread_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
)

// TestClosedByAdmin: a failed top-up is an admin's close when its reason
// is closed_by_admin or a reverse's end the close kept; a reverse's end
// under review is not closed yet, and a reverse that returned the money
// to the card was never closed by anyone.
func TestClosedByAdmin(t *testing.T) {
	for _, c := range []struct {
		status topup.Status
		reason topup.Reason
		want   bool
	}{
		{topup.StatusFailed, topup.ReasonClosedByAdmin, true},
		{topup.StatusFailed, topup.ReasonReverseRefused, true},
		{topup.StatusFailed, topup.ReasonReverseClosed, true},
		{topup.StatusFailed, topup.ReasonReverseDiffers, true},
		{topup.StatusFailed, topup.ReasonSettleContradicted, true},
		{topup.StatusNeedsReview, topup.ReasonSettleContradicted, false},
		{topup.StatusNeedsReview, topup.ReasonReverseRefused, false},
		{topup.StatusNeedsReview, topup.ReasonReverseClosed, false},
		{topup.StatusNeedsReview, topup.ReasonReverseDiffers, false},
		{topup.StatusFailed, topup.ReasonReversedToCard, false},
		{topup.StatusFailed, topup.ReasonBankCancelled, false},
		{topup.StatusFailed, "", false},
		{topup.StatusCredited, topup.ReasonVerifiedPaid, false},
	} {
		if got := topupread.ClosedByAdmin(c.status, c.reason); got != c.want {
			t.Errorf("ClosedByAdmin(%s, %q) = %v, want %v", c.status, c.reason, got, c.want)
		}
	}
}
