package pay

import (
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
)

// Why a failed payment failed, as its page says it: one true sentence per
// cause (message keys "result.failed." + cause).
const (
	causeCancelled   = "cancelled"   // the payer cancelled at the bank, or the bank did not complete it
	causeRefused     = "refused"     // the bank refused to start the payment
	causeUnavailable = "unavailable" // the bank could not be reached: the payment never started
	causeExpired     = "expired"     // the time to pay at the bank ran out (the bank's page expired, or the worker's deadline)
	causeReversed    = "reversed"    // the bank reversed the payment
	causeClosed      = "closed"      // an admin closed it after checking with the bank
	causeGeneric     = "generic"     // any other or an older reason: claims nothing it cannot know
)

// failureCause maps a failed payment's reason code to what its page says.
// A reason this version does not know (or an older free-text one) gets the
// generic sentence, which promises nothing about the money.
func failureCause(reason string) string {
	if topupread.ClosedByAdmin(topup.StatusFailed, topup.Reason(reason)) {
		// closed_by_admin, or the reverse's end an admin's close keeps
		// (StepClose: so that nothing reopens it); the admin's page of
		// the top-up says the same.
		return causeClosed
	}
	switch topup.Reason(reason) {
	case topup.ReasonBankCancelled:
		return causeCancelled
	case topup.ReasonRequestRefused:
		return causeRefused
	case topup.ReasonRequestFailed, topup.ReasonGatewayUnavailable, topup.ReasonAbandonedSubmit, topup.ReasonDuplicateAuthority:
		return causeUnavailable
	case topup.ReasonNotPaidAfterLife, topup.ReasonBankExpired:
		return causeExpired
	case topup.ReasonBankReversed, topup.ReasonReversedToCard:
		// Reversed by the bank, or at our request (a verified payment we
		// could not credit): on its way back to the card.
		return causeReversed
	}
	return causeGeneric
}
