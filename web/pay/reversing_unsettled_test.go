package pay

import (
	"testing"

	"github.com/kifpool/kifpool/internal/topup"
)

// A top-up reversing because its settle was refused, with the bank's
// verified facts for its own amount, may yet be credited (the bank may
// refuse the reverse as settled): its page promises neither outcome. Any
// other reversing top-up is on its way back to the card.
func TestReversingUnsettledOnlyForARefusedSettle(t *testing.T) {
	ref, amount, other := int64(9001), int64(150_000), int64(149_990)
	for _, tc := range []struct {
		name      string
		status    topup.Status
		reason    topup.Reason
		ref       *int64
		verified  *int64
		reversing bool
		unsettled bool
	}{
		{"settle refused, verified", topup.StatusReversing, topup.ReasonSettleRefused, &ref, &amount, true, true},
		{"settle refused, no reference", topup.StatusReversing, topup.ReasonSettleRefused, nil, &amount, true, false},
		{"settle refused, another amount verified", topup.StatusReversing, topup.ReasonSettleRefused, &ref, &other, true, false},
		{"amount mismatch", topup.StatusReversing, topup.ReasonAmountMismatch, &ref, &amount, true, false},
		{"reference reused", topup.StatusReversing, topup.ReasonRefIDReused, &ref, &amount, true, false},
		{"settling", topup.StatusSettling, topup.ReasonSettleRefused, &ref, &amount, false, false},
		{"under review", topup.StatusNeedsReview, topup.ReasonSettleContradicted, &ref, &amount, false, false},
	} {
		v := topUpView(topup.TopUp{PublicID: "p", AmountRials: amount, Status: tc.status, StatusReason: string(tc.reason),
			RefID: tc.ref, VerifiedAmountRials: tc.verified})
		if v.Reversing != tc.reversing || v.ReversingUnsettled != tc.unsettled {
			t.Errorf("%s: reversing %v, unsettled %v; want %v, %v", tc.name, v.Reversing, v.ReversingUnsettled, tc.reversing, tc.unsettled)
		}
		if want := "status.pending_verification"; tc.unsettled && v.StatusKey() != want {
			t.Errorf("%s: status %s, want %s", tc.name, v.StatusKey(), want)
		}
	}
}
