package notify_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/notify"
	"github.com/kifpool/kifpool/internal/topup"
)

// A failed top-up whose payer may have been charged gets the "returns
// within 72 hours" notice; one that never took money does not. A top-up
// an admin closed after its reverse ended keeps the reverse's reason
// (topup.StepClose), and is told as one closed by an admin was.
func TestMayHaveCharged(t *testing.T) {
	for _, tc := range []struct {
		reason topup.Reason
		want   bool
	}{
		{topup.ReasonClosedByAdmin, true},
		{topup.ReasonReversedToCard, true},
		{topup.ReasonReverseRefused, true},
		{topup.ReasonReverseClosed, true},
		{topup.ReasonReverseDiffers, true},
		{topup.ReasonSettleContradicted, true},
		{topup.ReasonBankCancelled, false},
		{topup.ReasonNotPaidAfterLife, false},
		{topup.ReasonRequestRefused, false},
	} {
		if got := notify.MayHaveCharged(string(tc.reason)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.reason, got, tc.want)
		}
	}
}
