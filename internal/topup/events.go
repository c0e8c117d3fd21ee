package topup

import "time"

// Actor names who takes a transition.
type Actor string

const (
	ActorSubmit    Actor = "submit"    // the top-up form's submit (web or API)
	ActorCallback  Actor = "callback"  // the bank's return to our callback URL
	ActorWorker    Actor = "worker"    // the background resolver
	ActorReconcile Actor = "reconcile" // reconciliation with the gateway's unverified list
	ActorAdmin     Actor = "admin"     // an admin's recorded action
)

// Reason is why a payment changed status: a code that pages and the admin
// console translate. Raw errors go to logs only.
type Reason string

const (
	ReasonRequestOK          Reason = "request_ok"              // the bank gave us an authority
	ReasonRequestFailed      Reason = "request_failed"          // the bank could not start the payment (no money taken)
	ReasonRequestRefused     Reason = "request_refused"         // the bank refused to start it (no money taken)
	ReasonGatewayUnavailable Reason = "gateway_unavailable"     // breaker open: the bank was not asked (no money taken)
	ReasonDuplicateAuthority Reason = "duplicate_authority"     // the bank handed out an authority we already hold
	ReasonAbandonedSubmit    Reason = "abandoned_submit"        // the submit died before the bank answered (no authority)
	ReasonVerifiedPaid       Reason = "verified_paid"           // verify answered paid (100)
	ReasonAlreadyVerified    Reason = "already_verified"        // verify answered already verified (101)
	ReasonVerifyUnknown      Reason = "verify_unknown"          // verify/inquiry timed out or failed: outcome unknown
	ReasonBankCancelled      Reason = "bank_cancelled"          // the bank says the payment was not completed (FAILED)
	ReasonBankExpired        Reason = "bank_expired"            // FAILED after the bank's page expired (the payer ran out of time)
	ReasonBankReversed       Reason = "bank_reversed"           // the bank says the payment was reversed
	ReasonNotPaidAfterLife   Reason = "not_paid_after_lifetime" // still unpaid at the bank after the authority's lifetime
	ReasonAmountMismatch     Reason = "amount_mismatch"         // the bank reports another amount than ours
	ReasonVerifyRejected     Reason = "verify_rejected"         // the gateway refused the verify itself
	ReasonNoRefID            Reason = "no_ref_id"               // paid, but the bank gave no reference
	ReasonRefIDReused        Reason = "ref_id_reused"           // the bank's reference belongs to another payment
	ReasonUnknownTooLong     Reason = "unknown_too_long"        // outcome still unknown at the deadline
	ReasonReturnedToPayer    Reason = "returned_to_payer"       // still unknown when the gateway's verify window closed: the bank returned it to the payer
	ReasonReopened           Reason = "reopened"                // a payment that ended here is asked about again
	ReasonAuthorityRecovered Reason = "authority_recovered"     // reconciliation found our payment by its callback URL
	ReasonClosedByAdmin      Reason = "closed_by_admin"         // an admin closed it with a written note
	ReasonCreditFailed       Reason = "credit_failed"           // verified by the bank, but crediting it kept failing
	ReasonSettleUnknown      Reason = "settle_unknown"          // before settling was a status (migration 00018): verified, settle unknown, kept pending_verification
	ReasonSettleRefused      Reason = "settle_refused"          // verified, but the bank refused to settle it (Mellat)
	ReasonSettled            Reason = "settled"                 // the bank settled it (Mellat 0, or 45: settled before): credited
	ReasonSettleWindowClosed Reason = "settle_window_closed"    // verified, settle still unknown when the gateway's settle window closed
	ReasonReceiptUnconfirmed Reason = "receipt_unconfirmed"     // the payment's receipt is a callback's word the bank never tied to it (SEP), or its verify on its own answered a fresh success
	ReasonReversedToCard     Reason = "reversed_to_card"        // verified but not creditable: our reverse returned it to the payer's card (the bank accepted it, or its record says reversed)
	ReasonReverseRefused     Reason = "reverse_refused"         // verified but not creditable: the bank refused our reverse
	ReasonReverseClosed      Reason = "reverse_window_closed"   // verified but not creditable: the reverse window closed before the bank reversed it
	ReasonReverseDiffers     Reason = "reverse_differs"         // verified but not creditable: the bank's record of our reverse says neither reversed nor standing
	ReasonSettleContradicted Reason = "settle_contradicted"     // the bank refused our reverse as settled (Mellat 45), then refused the settle again: a person decides; never reopened, reversed again or credited by the machine
)

// Event is one status change of a payment (table payment_events,
// append-only), written in the same transaction as the change.
type Event struct {
	ID          int64
	TopUpID     int64
	FromStatus  Status
	ToStatus    Status
	Actor       Actor
	Reason      Reason
	GatewayCode *int
	AdminID     *int64
	CreatedAt   time.Time
}

// Observer learns of every committed status change and credit (metrics),
// each with the payment's gateway. It must not block.
type Observer interface {
	Transitioned(gateway string, from, to Status, actor Actor)
	Credited(gateway string, amountRials int64)
	// CreditFailed: a bank-verified payment's credit failed (rolled
	// back); escalated when it went to review for it.
	CreditFailed(gateway string, escalated bool)
}

// OutboxObserver is an Observer that also hears of moves (credits among
// them) the partners' webhook outbox refused (ErrOutbox): a failure of
// ours, not the bank's, with an alert of its own.
type OutboxObserver interface {
	OutboxFailed(gateway string)
}

// bankAnswer reports whether a payment ended with this reason on the
// bank's own answer to a check (rather than on a deadline or a person).
func (r Reason) bankAnswer() bool {
	switch r {
	case ReasonBankCancelled, ReasonBankExpired, ReasonBankReversed, ReasonAmountMismatch, ReasonVerifyRejected, ReasonNoRefID, ReasonRefIDReused,
		ReasonSettleRefused, ReasonSettleContradicted, ReasonReceiptUnconfirmed:
		return true
	}
	return false
}
