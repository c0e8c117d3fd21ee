package topup

import (
	"errors"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/lifecycle"
)

// The decision core. Every choice the payment lifecycle makes about a
// status — what the bank's answers mean, when the worker's deadlines have
// passed, when a payment is checked next, what resolved_at a payment
// shows — is a pure function of what was read and what the bank said:
// no database, no clock, no gateway here. The use cases (resolve.go,
// worker.go, reconcile.go, admin.go) read, ask the bank, call Decide and
// hand its Decision to the store, whose conditional statements guarantee
// that it is applied only to the row as it was read (the status, the
// lease).

// Step is what happened to a payment that needs a decision.
type Step string

const (
	// StepRequest: the gateway answered (or failed) our request for a
	// transaction (submit).
	StepRequest Step = "request"
	// StepCheck: the bank was asked: verify, and after "not paid" the
	// inquiry. A decision may ask for the inquiry first (ActionInquire).
	StepCheck Step = "check"
	// StepReopen: a failed or needs-review payment is to be asked about
	// again (callback, reconciliation, admin).
	StepReopen Step = "reopen"
	// StepRecover: reconciliation found the authority of a payment that
	// never stored it.
	StepRecover Step = "recover"
	// StepClose: an admin closes a payment under review as failed.
	StepClose Step = "close"
	// StepDeadline: the worker looks at a payment it did not (or could
	// not) ask the bank about: its deadlines, or a submit that died.
	StepDeadline Step = "deadline"
	// StepCreditFailed: the bank verified the payment, but its credit (the
	// move, the ledger entry, the balance) failed and was rolled back.
	StepCreditFailed Step = "credit_failed"
	// StepRefReused: the bank verified the payment with a reference that
	// already belongs to another payment (unique(gateway, ref_id) refused
	// the credit); Payment is the row as it stands after that refusal.
	StepRefReused Step = "ref_reused"
	// StepTokenReceipt: at a gateway whose record of our token names the
	// receipt its verify takes (SEP's receipt of the token names the
	// RefNum; GatewayRules.ReceiptLife), that record was asked first,
	// before any verify (Token, TokenErr). The decision says whether to
	// verify (ActionVerify), with the receipt to keep on the row first
	// (KeepReceipt), or what the answer means on its own.
	StepTokenReceipt Step = "token_receipt"
	// StepCallback: the payer came back from the bank (Callback): what
	// its token and receipt may do, and whether the bank is asked now
	// (decide_callback.go).
	StepCallback Step = "callback"
	// StepSettle: the bank was asked to settle a payment it verified
	// (Mellat); Payment carries the verified facts (Verified), as its
	// settling row or as the verify just gave them.
	StepSettle Step = "settle"
	// StepReverse: the worker's turn on a reversing payment (a verified
	// payment that cannot be credited): before its one reverse is sent
	// (ReverseSentAt unset, nothing asked: may it still go?), the
	// answer to that reverse (ReverseSent, ReverseErr), or, once it was
	// sent and its answer lost, the bank's record of it (ReverseLooked,
	// ReverseState, ReverseStateErr).
	StepReverse Step = "reverse"
)

// Action is what a decision asks the caller to do.
type Action string

const (
	// ActionNone: nothing to write; the row is the answer.
	ActionNone Action = "none"
	// ActionInquire: ask the bank for the authority's state, then decide
	// again with the answer.
	ActionInquire Action = "inquire"
	// ActionKeep: the status stays; write the decision's fields and give
	// the lease back.
	ActionKeep Action = "keep"
	// ActionMove: take the edge from the payment's status to To.
	ActionMove Action = "move"
	// ActionCredit: take the edge to credited and credit the wallet.
	ActionCredit Action = "credit"
	// ActionVerify: ask the bank's verify now (StepTokenReceipt), after
	// keeping the decision's KeepReceipt on the row when it names one; a
	// verify names only a receipt the row holds.
	ActionVerify Action = "verify"
	// ActionSettle: the bank verified the payment and its gateway settles
	// (Mellat): move it to settling (To, with the verified facts and the
	// verify's record) unless it is settling already, ask the bank to
	// settle it and decide with the answer (StepSettle). Only a settled
	// payment is credited.
	ActionSettle Action = "settle"
	// ActionReverse (StepReverse): send the payment's one reverse now:
	// write the intent (ReverseSentAt) first, then call the gateway's
	// Reverse once, and decide with its answer.
	ActionReverse Action = "reverse"
)

// ReverseMargin: a reverse is sent only while at least this much of the
// gateway's reverse window is left (the call takes time, our clock is not
// the bank's, and the window counts from the payment at the bank, which
// the top-up's creation precedes).
const ReverseMargin = 5 * time.Minute

// Rules are the time rules a decision applies.
type Rules struct {
	// RecheckDelay: the bank is asked about a payment at most once per
	// this (PENDING_RECHECK_AFTER).
	RecheckDelay time.Duration
	// The worker's deadlines (zero: not applied): a payment the bank has
	// not seen paid AuthorityLifetime after it opened fails; one whose
	// outcome is still unknown MaxUnknown after it opened goes to review;
	// a "created" payment older than StaleCreated (its submit died) fails.
	AuthorityLifetime time.Duration
	MaxUnknown        time.Duration
	StaleCreated      time.Duration
	// VerifyDeadline is the payment's gateway's verify window (0: not
	// documented): a payment whose outcome is still unknown this long
	// after the sale (the payer's first return, else its creation:
	// saleBy) has been returned to the payer by the bank, so
	// it goes to review (returned_to_payer) without waiting for
	// MaxUnknown.
	VerifyDeadline time.Duration
	// CallbackOnly: the gateway's verify needs the callback's data and
	// nothing else gives it (Mellat's SaleReferenceId): a payment whose
	// payer never came back has no outcome the bank can be asked for. It
	// waits for its callback until VerifyDeadline, then goes to review
	// (returned_to_payer: money the bank took unverified it returns by
	// itself), not failed at AuthorityLifetime (failed needs the bank's
	// word).
	CallbackOnly bool
	// SettleWindow is the payment's gateway's settle window (0: none
	// documented): a settling payment whose settle is still unknown this
	// long after it began settling (opened_at) goes to review
	// (settle_window_closed); MaxUnknown, when shorter, ends it first.
	SettleWindow time.Duration
	// MaxCreditFailures: a bank-verified payment whose credit failed this
	// many times goes to review instead of being retried (0: never).
	MaxCreditFailures int
	// ReverseWindow is the payment's gateway's reverse window (0: none,
	// or the gateway cannot reverse): a verified payment that cannot be
	// credited is reversed while ReverseUntil has not passed, else it
	// goes to review.
	ReverseWindow time.Duration
	// ReverseLands: how long after a reverse was sent its call may still
	// be in flight (the lease it was sent under): the bank's record that
	// it holds no reversal is believed only after that.
	ReverseLands time.Duration
}

// Input is everything a decision depends on.
type Input struct {
	Step  Step
	Actor Actor
	TopUp TopUp // as read (or as the lease was taken)
	Now   time.Time
	Rules Rules
	// LeaseLost: the actor does not (or no longer) hold the payment's
	// lease. Only the bank's verify still counts then (a bank-verified
	// payment is always credited); everything else is the row's to say.
	LeaseLost bool

	// StepRequest: the gateway's answer.
	Request    gateway.RequestResult
	RequestErr error

	// StepCheck: the verify's answer and, once asked, the inquiry's.
	Verify     gateway.VerifyResult
	VerifyErr  error
	Inquired   bool
	Inquiry    gateway.InquiryResult
	InquiryErr error
	// CandidateReceipt: the verify was asked with a receipt another
	// payment holds on a callback's word (at a gateway whose verify binds
	// it to our order: Mellat's sale order); a verify that confirms the
	// payment confirms that receipt for it (Decision.TakeReceipt).
	CandidateReceipt string
	// NeedsSettle: the payment's gateway settles verified payments
	// (Mellat): the money is ours only once settled.
	NeedsSettle bool
	// StepSettle: the settle's answer.
	Settle    gateway.SettleResult
	SettleErr error

	// CanReverse: the payment's gateway reverses a verified payment
	// (Ops.Reverse, and Ops.RefundStatus to ask what became of one):
	// with Rules.ReverseWindow, a verified payment that cannot be
	// credited becomes reversing rather than needs_review (StepCheck,
	// StepSettle, StepRefReused).
	CanReverse bool
	// StepReverse: the reverse's answer (ReverseSent: it was called), or
	// the bank's record of it (ReverseLooked).
	ReverseSent     bool
	ReverseErr      error
	ReverseLooked   bool
	ReverseState    gateway.RefundState
	ReverseStateErr error

	// StepTokenReceipt: the bank's record of our token (SEP's receipt,
	// asked as the inquiry) and, once its receipt was to be kept,
	// whether keeping it failed (another payment holds it confirmed, or
	// the write failed): then no verify may name it.
	Token           gateway.InquiryResult
	TokenErr        error
	TokenKeepFailed bool

	// StepCallback: the callback as parsed, and what its receipt found.
	Callback Callback

	// StepReopen: ask the bank at once (else the worker asks when the
	// pacing window ends).
	CheckNow bool
	// StepRecover: the authority the bank lists.
	Authority string
}

// Decision is what to do, as the store applies it.
type Decision struct {
	Action      Action
	To          Status // ActionMove, ActionCredit
	Reason      Reason
	GatewayCode *int
	// Checked: the bank was asked now (last_checked_at); CountAttempt: the
	// call reached it (attempts+1; an open breaker spends no attempt).
	Checked      bool
	CountAttempt bool
	// NextCheckAt: when the worker checks next (nil: unchanged; a move to
	// an ended status clears it).
	NextCheckAt *time.Time
	// OpenedAt: the payment becomes open again now (the worker's
	// deadlines count from here).
	OpenedAt *time.Time
	// KeepLease: the mover goes on working under the lease (a reopen that
	// asks the bank at once).
	KeepLease bool
	// Authority to store with the move (request, recovery).
	Authority string
	// Credit: the bank's verified facts (ActionCredit).
	RefID         int64
	CreditedRials int64
	CardPANMasked string
	// Deadline: the move is a deadline's (not the bank's answer).
	Deadline bool
	// CountCreditFailure: one more failed credit (credit_failures).
	CountCreditFailure bool
	// ClearReceipt: the bank found no sale for the kept callback receipt;
	// the move drops it (Fields.ClearReceipt).
	ClearReceipt bool
	// ClearReverseSent (StepReverse): nothing of the sent reverse can
	// still land and the bank holds none (or it was never sent): the
	// intent is dropped, and the next turn decides again whether to send.
	ClearReverseSent bool
	// TakeReceipt (ActionCredit, ActionSettle): the bank confirmed, for
	// this payment, the receipt another payment held on a callback's
	// word (Input.CandidateReceipt): this payment takes it before the
	// credit or the settle (Store.TakeReceipt).
	TakeReceipt string
	// KeepReceipt (ActionVerify): the receipt the bank's record of our
	// token names, to be kept on the row as the bank's (ReceiptFromBank)
	// before the verify that names it; (ActionKeepReceipt) the callback's,
	// kept as the callback's.
	KeepReceipt string

	// A callback's decision (StepCallback). Refusal: why it is refused
	// (ActionRefuse). CandidateReceipt: a receipt another payment holds
	// on a callback's word, asked about for this payment (kept only when
	// the bank confirms it here). FirstReturn: try the first return's
	// one-statement claim. Paced: the claim obeys the pacing window.
	// CheckNow (ActionReopen): ask the bank under the reopen's lease.
	Refusal          error
	CandidateReceipt string
	FirstReturn      bool
	Paced            bool
	CheckNow         bool
}

// Decide is the decision core: one pure function from what was read and
// what the bank said to what happens next.
func Decide(in Input) Decision {
	switch in.Step {
	case StepRequest:
		return decideRequest(in)
	case StepCheck:
		d := decideCheck(in)
		if in.LeaseLost && d.Action != ActionCredit && d.Action != ActionInquire && d.Action != ActionSettle {
			// Only a credit is taken without the lease; the row as another
			// actor left it is the answer.
			return Decision{Action: ActionNone}
		}
		if d.Action == ActionCredit || d.Action == ActionSettle {
			// A receipt asked about on the payer's word is this payment's
			// only once the bank verified the payment with it.
			d.TakeReceipt = in.CandidateReceipt
		}
		return d
	case StepReopen:
		return decideReopen(in)
	case StepRecover:
		if in.LeaseLost || in.TopUp.Authority != nil || (in.TopUp.Status != StatusCreated && in.TopUp.Status != StatusFailed) {
			return Decision{Action: ActionNone}
		}
		now := in.Now
		return Decision{Action: ActionMove, To: StatusPendingVerification, Reason: ReasonAuthorityRecovered,
			Authority: in.Authority, OpenedAt: &now, NextCheckAt: &now, KeepLease: true}
	case StepClose:
		if in.LeaseLost || in.TopUp.Status != StatusNeedsReview {
			return Decision{Action: ActionNone}
		}
		if r := Reason(in.TopUp.StatusReason); reverseEndReason(r) {
			// Its reverse ended it (refused, its window closed — perhaps
			// never sent —, or the bank's record differs): it keeps that
			// reason, so that it stays ended by its reverse (ReverseEnded)
			// and nothing reopens or credits it after the admin may have
			// refunded the payer by hand. The admin's note is in the audit
			// log, the close in its event (actor admin).
			return Decision{Action: ActionMove, To: StatusFailed, Reason: r}
		}
		return Decision{Action: ActionMove, To: StatusFailed, Reason: ReasonClosedByAdmin}
	case StepCreditFailed:
		return decideCreditFailed(in)
	case StepRefReused:
		return decideRefReused(in)
	case StepTokenReceipt:
		return decideTokenReceipt(in)
	case StepCallback:
		return decideCallback(in)
	case StepReverse:
		return decideReverse(in)
	case StepSettle:
		d := decideSettle(in)
		if in.LeaseLost && d.Action != ActionCredit {
			// A settled payment is credited, lease or not; anything else
			// is the lease holder's to write.
			return Decision{Action: ActionNone}
		}
		return d
	case StepDeadline:
		if in.TopUp.Status == StatusCreated {
			if in.TopUp.Authority == nil && in.Rules.StaleCreated > 0 && !in.TopUp.CreatedAt.After(in.Now.Add(-in.Rules.StaleCreated)) {
				return Decision{Action: ActionMove, To: StatusFailed, Reason: ReasonAbandonedSubmit, Deadline: true}
			}
			return Decision{Action: ActionNone}
		}
		if in.LeaseLost || in.Actor != ActorWorker {
			return Decision{Action: ActionNone}
		}
		if to, reason, ok := Expiry(in.TopUp, in.Now, in.Rules); ok {
			return Decision{Action: ActionMove, To: to, Reason: reason, Deadline: true,
				ClearReceipt: in.TopUp.Receipt != nil && !KeepsReceiptAtDeadline(in.TopUp, to, in.Rules)}
		}
		return Decision{Action: ActionNone}
	}
	return Decision{Action: ActionNone}
}

// decideRequest: the gateway's answer to our request. No authority reached
// the payer on an error, so no money can have been taken.
func decideRequest(in Input) Decision {
	if in.TopUp.Status != StatusCreated {
		return Decision{Action: ActionNone}
	}
	if err := in.RequestErr; err != nil {
		reason := ReasonRequestFailed
		switch {
		case errors.Is(err, gateway.ErrUnavailable):
			reason = ReasonGatewayUnavailable
		case gateway.IsRejected(err):
			reason = ReasonRequestRefused
		}
		return Decision{Action: ActionMove, To: StatusFailed, Reason: reason, GatewayCode: rejectedCode(err)}
	}
	code := in.Request.Code
	return Decision{Action: ActionMove, To: StatusAwaitingPayment, Reason: ReasonRequestOK, GatewayCode: &code,
		Authority: in.Request.Authority}
}

// decideCheck: what the bank's answers to one check mean. "Failed" needs
// the bank's definite word (verify "not paid" confirmed by the inquiry's
// FAILED/REVERSED); a time-out, an error or a state we do not know keeps
// the payment open; only verify 100/101 with a reference credits.
func decideCheck(in Input) Decision {
	now := in.Now
	next := now.Add(in.Rules.RecheckDelay)
	d := Decision{Checked: true, CountAttempt: !errors.Is(in.VerifyErr, gateway.ErrUnavailable)}
	settling := in.TopUp.Status == StatusSettling
	stay := func(to Status, reason Reason, code *int) Decision {
		if settling && to == StatusFailed && reason != ReasonBankReversed {
			// The bank verified a settling payment: only its word that
			// the payment was reversed fails it; any other "not paid"
			// contradicts the verify, and a person looks.
			to = StatusNeedsReview
		}
		d.To, d.Reason, d.GatewayCode = to, reason, code
		// Failed on the bank's word: a kept callback receipt named no
		// paid sale of ours, and is dropped with the move (see NoSale).
		d.ClearReceipt = to == StatusFailed && in.TopUp.Receipt != nil
		d.Action = ActionMove
		if in.TopUp.Status == to {
			d.Action = ActionKeep
		}
		return d
	}
	unknown := func() Decision {
		d.NextCheckAt = &next
		if settling {
			return stay(StatusSettling, ReasonVerifyUnknown, nil)
		}
		return stay(StatusPendingVerification, ReasonVerifyUnknown, nil)
	}
	// notCreditable: the bank verified the payment (the money is the
	// merchant's) but it cannot be credited: reversed while its window
	// is open (the worker sends the one reverse at once), else a person
	// looks.
	notCreditable := func(reason Reason, code *int) Decision {
		if Reversible(in) {
			d.Action, d.To, d.Reason, d.GatewayCode, d.NextCheckAt = ActionMove, StatusReversing, reason, code, &now
			return d
		}
		return stay(StatusNeedsReview, reason, code)
	}
	if err := in.VerifyErr; err != nil {
		if gateway.IsRejected(err) {
			return stay(StatusNeedsReview, ReasonVerifyRejected, rejectedCode(err))
		}
		return unknown() // a time-out is not a failure
	}
	vr := in.Verify
	code := vr.Code
	switch vr.Outcome {
	case gateway.VerifyReceiptUnconfirmed:
		// Nothing the bank keeps ties the kept receipt to this payment
		// (a callback's word, maybe another payment's sale) and its
		// verify would name no token: not asked, never credited. The
		// receipt is dropped with the move (it blocks no other payment).
		d = stay(StatusNeedsReview, ReasonReceiptUnconfirmed, &code)
		d.ClearReceipt = in.TopUp.Receipt != nil
		return d
	case gateway.VerifyPaid, gateway.VerifyAlreadyVerified:
		if vr.ReceiptAlone && vr.Outcome == gateway.VerifyPaid {
			// A receipt verified on its own, the bank's record of our token
			// gone: "already verified" is ours, but a fresh success does
			// not say whose sale it was. Never credited: reversed (the
			// verify made it the merchant's), else a person looks.
			return notCreditable(ReasonReceiptUnconfirmed, &code)
		}
		if vr.RefID <= 0 {
			return notCreditable(ReasonNoRefID, &code)
		}
		if vr.AmountRials != in.TopUp.AmountRials {
			// The bank verified another amount (or did not say which):
			// never credit a different amount; reversed, else a person
			// looks.
			return notCreditable(ReasonAmountMismatch, &code)
		}
		d.Action, d.To, d.GatewayCode = ActionCredit, StatusCredited, &code
		d.Reason = ReasonVerifiedPaid
		if vr.Outcome == gateway.VerifyAlreadyVerified {
			d.Reason = ReasonAlreadyVerified
		}
		// The bank verified exactly our amount.
		d.RefID, d.CreditedRials, d.CardPANMasked = vr.RefID, in.TopUp.AmountRials, vr.CardPANMasked
		if in.NeedsSettle {
			// Settle is a state of ours: verified is not yet ours. The
			// payment becomes settling with the verified facts (and the
			// settle window counts from now); the settle's answer is
			// StepSettle's.
			d.Action, d.To = ActionSettle, StatusSettling
			if !settling {
				d.OpenedAt = &now
			}
		}
		return d
	case gateway.VerifyNotPaid:
		if !in.Inquired {
			// A payer still on the bank page also gets "not paid": ask the
			// bank for the authority's state before failing anything.
			return Decision{Action: ActionInquire}
		}
		switch {
		case in.InquiryErr != nil:
			return unknown()
		case in.Inquiry.Status == gateway.InquiryInBank:
			// The payer is still at the bank: nothing changes; look again later.
			d.Action, d.To, d.NextCheckAt = ActionKeep, in.TopUp.Status, &next
			return d
		case in.Inquiry.Status == gateway.InquiryFailed:
			if vr.NotPaid == gateway.NotPaidExpired {
				// The bank's page expired before the payer paid: the
				// driver tells it from a cancel (VerifyResult.NotPaid).
				return stay(StatusFailed, ReasonBankExpired, &code)
			}
			return stay(StatusFailed, ReasonBankCancelled, &code)
		case in.Inquiry.Status == gateway.InquiryReversed:
			return stay(StatusFailed, ReasonBankReversed, &code)
		}
		// PAID/VERIFIED contradict the verify; a state we do not know is
		// not the bank's definite word either: keep asking.
		return unknown()
	case gateway.VerifyAmountMismatch:
		// At a gateway that reverses (SEP), the verify succeeded for
		// another amount: the money is the merchant's, and it is
		// reversed. Elsewhere (Zarinpal -50) nothing was verified.
		return notCreditable(ReasonAmountMismatch, &code)
	case gateway.VerifyNoSale:
		// No sale the bank could verify, and no inquiry can say more
		// (Mellat without a SaleReferenceId). A payer who came back from
		// the bank without one did not pay: the callback is the bank's one
		// channel for the sale, and money it took unverified it returns by
		// itself. A late callback with a sale reopens the payment. Before
		// the payer came back, the payer may still be on the bank's page:
		// look again later (the worker's authority lifetime ends it).
		//
		// A kept receipt the bank found no sale for is dropped with the
		// move: a callback's receipt is the payer's claim until the bank
		// confirms it, and one that names no sale of ours (forged, or
		// another payment's) must not hold the unique (gateway, receipt)
		// against the real callback of this payment or of the other one.
		// The real one then reopens the payment (a first receipt).
		if vr.NotPaid == gateway.NotPaidReversed {
			// The bank's definite word: paid, then returned to the card
			// (Mellat's 48). Its payer hears the money is on its way back.
			return stay(StatusFailed, ReasonBankReversed, &code)
		}
		if in.TopUp.ReturnedAt != nil {
			return stay(StatusFailed, ReasonBankCancelled, &code)
		}
		d.Action, d.To, d.NextCheckAt = ActionKeep, in.TopUp.Status, &next
		if vr.NoCall {
			// Nothing was asked (no sale named yet): nothing is counted,
			// and the next look is when the gateway's window closes.
			d.Checked, d.CountAttempt = false, false
			if at, ok := WaitsForCallback(in.TopUp, in.Rules); ok && at.After(next) {
				d.NextCheckAt = &at
			}
		}
		return d
	}
	return stay(StatusNeedsReview, ReasonVerifyRejected, &code)
}

// decideTokenReceipt: what the bank's record of our token (SEP's receipt
// of the token), asked before any verify, lets the check do. Its verify
// names a receipt and no token, so it may name only a receipt the row
// holds: one the bank's record names now, kept first as the bank's (a
// crash after that verify leaves it on the row for the next check's
// "already verified", the bank having forgotten the token's record), or,
// once the bank no longer keeps that record, one it confirmed before. A
// payer who pays between this answer and the verify is the next check's:
// the verify must not learn a receipt the row does not hold. So:
//   - paid, naming a receipt: keep it, then verify (ActionVerify,
//     KeepReceipt); if it could not be kept, the outcome is unknown;
//   - still at the bank: nothing changes, look again later;
//   - cancelled, failed or reversed (final at the bank): verify, which
//     says why (a cancel, an expired page);
//   - forgotten (verified, reversed, or past its hour): a receipt the bank
//     confirmed is verified on its own (only "already verified", "too
//     late" or "reversed" count: gateway.VerifyResult.ReceiptAlone); a
//     callback's alone is never verified: review, receipt_unconfirmed,
//     and it is dropped; with none, nothing can be asked (unknown);
//   - an error or a state we do not know: unknown.
func decideTokenReceipt(in Input) Decision {
	p := in.TopUp
	if in.LeaseLost || !p.Status.open() || p.Status == StatusSettling {
		return Decision{Action: ActionNone}
	}
	next := in.Now.Add(in.Rules.RecheckDelay)
	d := Decision{Checked: true, CountAttempt: !errors.Is(in.TokenErr, gateway.ErrUnavailable)}
	move := func(to Status, reason Reason, code *int) Decision {
		d.Action, d.To, d.Reason, d.GatewayCode = ActionMove, to, reason, code
		if p.Status == to {
			d.Action = ActionKeep
		}
		return d
	}
	unknown := func() Decision {
		d.NextCheckAt = &next
		return move(StatusPendingVerification, ReasonVerifyUnknown, nil)
	}
	if in.TokenErr != nil {
		return unknown()
	}
	code := in.Token.Code
	switch in.Token.Status {
	case gateway.InquiryPaid:
		if in.Token.Receipt == "" || in.TokenKeepFailed {
			return unknown()
		}
		return Decision{Action: ActionVerify, KeepReceipt: in.Token.Receipt}
	case gateway.InquiryInBank:
		d.Action, d.To, d.NextCheckAt = ActionKeep, p.Status, &next
		return d
	case gateway.InquiryFailed, gateway.InquiryReversed:
		return Decision{Action: ActionVerify}
	case gateway.InquiryGone:
		switch {
		case p.Receipt == nil:
			return unknown()
		case !p.ReceiptConfirmed():
			d = move(StatusNeedsReview, ReasonReceiptUnconfirmed, &code)
			d.ClearReceipt = true
			return d
		}
		return Decision{Action: ActionVerify}
	}
	return unknown()
}

// decideSettle: the bank's answer to the settle of a verified payment
// (Mellat). Settle 0 or 45 (settled before) credits the facts the verify
// gave; a time-out, an error or an open breaker keeps the payment
// settling, asked again after the pacing window (settle is idempotent at
// the bank: 45); 48 (reversed) fails it; any other definite refusal is
// reversed while the window is open (settle_refused), else goes to review
// — to review always for a payment back from reversing because the bank
// refused its reverse as settled (reason settled: settledAgain), as
// settle_contradicted, which nothing reopens (ReverseEnded), so that
// settle and reverse never take turns.
func decideSettle(in Input) Decision {
	p := in.TopUp
	if !Verified(p) {
		return Decision{Action: ActionNone} // nothing verified to settle
	}
	now := in.Now
	next := now.Add(in.Rules.RecheckDelay)
	d := Decision{Checked: true, CountAttempt: !errors.Is(in.SettleErr, gateway.ErrUnavailable)}
	code := in.Settle.Code
	switch {
	case in.SettleErr != nil:
		if p.Status != StatusSettling {
			return Decision{Action: ActionNone}
		}
		d.Action, d.To, d.NextCheckAt = ActionKeep, StatusSettling, &next
		return d
	case in.Settle.Done():
		d.Action, d.To, d.Reason, d.GatewayCode = ActionCredit, StatusCredited, ReasonSettled, &code
		d.RefID, d.CreditedRials, d.CardPANMasked = *p.RefID, p.AmountRials, p.CardPANMasked
		return d
	case p.Status != StatusSettling:
		return Decision{Action: ActionNone} // only a settling payment ends on a settle's word
	case in.Settle.Outcome == gateway.SettleReversed:
		d.Action, d.To, d.Reason, d.GatewayCode = ActionMove, StatusFailed, ReasonBankReversed, &code
	case Reason(p.StatusReason) == ReasonSettled:
		// Back from reversing on the bank's word that the sale is settled
		// (settledAgain), and now its settle is refused again: the bank
		// contradicts itself. A person looks, under a reason of its own
		// that a reverse's end gives (reverseEndReason): nothing reopens
		// it (a callback, reconciliation, an admin's recheck), so that
		// settle and reverse never take turns, and an admin's close
		// keeps it.
		d.Action, d.To, d.Reason, d.GatewayCode = ActionMove, StatusNeedsReview, ReasonSettleContradicted, &code
	case Reversible(in):
		// Verified, never settled: the merchant holds the money until the
		// bank returns it; reversed (before settle) while the window is
		// open.
		d.Action, d.To, d.Reason, d.GatewayCode, d.NextCheckAt = ActionMove, StatusReversing, ReasonSettleRefused, &code, &now
	default:
		d.Action, d.To, d.Reason, d.GatewayCode = ActionMove, StatusNeedsReview, ReasonSettleRefused, &code
	}
	return d
}

// Verified reports whether p carries the bank's verified facts for its own
// amount (a reference, the verified amount): a settling payment that does
// is settled without asking verify again; one that does not (kept before
// migration 00018) is verified again first (43) for them.
func Verified(p TopUp) bool {
	return p.RefID != nil && *p.RefID > 0 && p.VerifiedAmountRials != nil && *p.VerifiedAmountRials == p.AmountRials
}

// decideReopen: a failed or needs-review payment moves back to
// pending_verification before the bank is asked again, so that a crash
// after the bank verified it cannot leave it ended (the worker finishes an
// open payment). Without CheckNow the worker asks when the pacing window
// ends.
func decideReopen(in Input) Decision {
	p := in.TopUp
	if in.LeaseLost || (p.Status != StatusFailed && p.Status != StatusNeedsReview) {
		return Decision{Action: ActionNone}
	}
	if ReverseEnded(p) {
		// Our reverse ended it (returned to the card, or refused, or
		// unknown at its window): asked again, the bank answers "already
		// verified" for a sale it reversed or that we could not credit,
		// and a receipt verified on its own would be credited. Nobody
		// reopens it; an admin closes one under review.
		return Decision{Action: ActionNone}
	}
	if in.Actor == ActorCallback && !CallbackMayReopen(p) {
		return Decision{Action: ActionNone} // the admin's decision stands
	}
	now := in.Now
	next := now
	if !in.CheckNow && p.LastCheckedAt != nil {
		next = p.LastCheckedAt.Add(in.Rules.RecheckDelay)
	}
	return Decision{Action: ActionMove, To: StatusPendingVerification, Reason: ReasonReopened,
		OpenedAt: &now, NextCheckAt: &next, KeepLease: in.CheckNow}
}

// decideCreditFailed: a credit that failed is counted and tried again
// after the pacing window (the bank keeps answering 101 "already
// verified"); one that keeps failing goes to review with its own reason,
// so that it is not retried, and the bank asked, forever (N6).
func decideCreditFailed(in Input) Decision {
	p := in.TopUp
	next := in.Now.Add(in.Rules.RecheckDelay)
	d := Decision{Action: ActionKeep, To: p.Status, CountCreditFailure: true}
	if p.Status == StatusFailed {
		// Another actor failed it (on a stale view, the verifier's lease
		// ran out) while the bank verified it: the bank holds money for
		// it, so it never stays failed; like a reused reference, this edge
		// is taken without the lease. A person looks.
		d.Action, d.To, d.Reason = ActionMove, StatusNeedsReview, ReasonCreditFailed
		return d
	}
	if !p.Status.open() || in.LeaseLost {
		return d // ended meanwhile: counted, nothing to retry here
	}
	d.NextCheckAt = &next
	if in.Rules.MaxCreditFailures > 0 && p.CreditFailures+1 >= in.Rules.MaxCreditFailures {
		d.Action, d.To, d.Reason, d.NextCheckAt = ActionMove, StatusNeedsReview, ReasonCreditFailed, nil
	}
	return d
}

// decideRefReused: a payment the bank verified with another payment's
// reference is never credited (one credit per bank payment); it is a case
// for a person. Like a credit, it is taken from failed without the lease
// (the verifier's ran out and another actor ended the payment on a stale
// view): the bank holds money for it, so it must not stay failed. An open
// payment moves under the lease only; without it, its holder hears the
// same from the bank. Under review already, only the check is recorded.
func decideRefReused(in Input) Decision {
	p := in.TopUp
	d := Decision{Action: ActionMove, To: StatusNeedsReview, Reason: ReasonRefIDReused, Checked: true, CountAttempt: true}
	switch {
	case p.Status == StatusFailed:
		return d
	case p.Status.open() && !in.LeaseLost:
		if Reversible(in) {
			// Verified for this payment's own receipt, never creditable:
			// reversed while the window is open.
			now := in.Now
			d.To, d.NextCheckAt = StatusReversing, &now
		}
		return d
	case p.Status == StatusNeedsReview && !in.LeaseLost:
		return Decision{Action: ActionKeep, To: p.Status, Checked: true, CountAttempt: true}
	}
	return Decision{Action: ActionNone}
}

// Expiry reports the worker's deadline that a payment has passed: failed
// (never seen paid within the authority's lifetime) for awaiting_payment, needs_review (unknown too long) for
// pending_verification, and for awaiting_payment of a CallbackOnly
// gateway without a callback, needs_review at the gateway's window;
// needs_review (settle window closed, or unknown too long) for settling.
// saleBy is the latest the payer can have paid at the bank, from which
// its verify window counts: the payer's first return (the bank sends the
// browser back once the sale is made), else the top-up's creation. The
// bank's window closes no later than that, and counting from creation
// would give up on a payer who paid late in the page's life while the
// bank still takes the verify; a verify after the bank's own deadline is
// answered by the bank (returned: the word to end it on).
func saleBy(p TopUp) time.Time {
	if p.ReturnedAt != nil && p.ReturnedAt.After(p.CreatedAt) {
		return *p.ReturnedAt
	}
	return p.CreatedAt
}

// Deadlines count from opened_at (creation, the last reopen, or for
// settling the verify that began it).
func Expiry(p TopUp, now time.Time, r Rules) (Status, Reason, bool) {
	status := p.Status
	opened := p.CreatedAt
	if p.OpenedAt != nil {
		opened = *p.OpenedAt
	}
	age := now.Sub(opened)
	switch {
	case status == StatusAwaitingPayment && r.CallbackOnly && r.VerifyDeadline > 0 && p.ReturnedAt == nil && p.Receipt == nil:
		// No callback, no word from the bank: only its window ends it,
		// counted from the payment at the bank.
		if now.Sub(p.CreatedAt) > r.VerifyDeadline {
			return StatusNeedsReview, ReasonReturnedToPayer, true
		}
		return "", "", false
	case status == StatusAwaitingPayment && r.AuthorityLifetime > 0 && age > r.AuthorityLifetime:
		return StatusFailed, ReasonNotPaidAfterLife, true
	case status == StatusPendingVerification && r.VerifyDeadline > 0 && now.Sub(saleBy(p)) > r.VerifyDeadline &&
		Reason(p.StatusReason) != ReasonSettleUnknown && p.RefID == nil:
		// The bank's window counts from the payment at the bank, which a
		// reopen here does not move (saleBy). A payment the bank verified and whose
		// settle is unknown (Mellat) is past that window's reach: the bank
		// does not return a verified payment; it waits for settle (and
		// MaxUnknown below). Nor is one the bank verified (a reference on
		// the row): the merchant kept that money.
		if Reason(p.StatusReason) == ReasonVerifyUnknown {
			// A verify went out and its answer never came: the bank may
			// have verified it and kept the money, so the payer is not
			// told it went back (unknown, for a person and
			// reconciliation to settle).
			return StatusNeedsReview, ReasonUnknownTooLong, true
		}
		return StatusNeedsReview, ReasonReturnedToPayer, true
	case status == StatusPendingVerification && r.MaxUnknown > 0 && age > r.MaxUnknown:
		return StatusNeedsReview, ReasonUnknownTooLong, true
	case status == StatusSettling && r.SettleWindow > 0 && age > r.SettleWindow && (r.MaxUnknown <= 0 || r.SettleWindow <= r.MaxUnknown):
		// Settling counts from the verify that began it (opened_at): the
		// gateway's settle window closed with the settle still unknown.
		return StatusNeedsReview, ReasonSettleWindowClosed, true
	case status == StatusSettling && r.MaxUnknown > 0 && age > r.MaxUnknown:
		return StatusNeedsReview, ReasonUnknownTooLong, true
	}
	return "", "", false
}

// KeepsReceiptAtDeadline reports whether a deadline's move of p to `to`
// keeps p's unconfirmed receipt (pure). A receipt the bank never
// confirmed is dropped with every move that ends the payment
// (Fields.ClearReceipt drops only an unconfirmed one): it must hold no
// other payment's. Except the one a verify went out with and never heard
// back about, at a gateway whose sale can be asked about only by it
// (Rules.CallbackOnly: Mellat's SaleReferenceId), on its way to review:
// the bank may have verified the sale, and that receipt is all that lets
// an admin's recheck or reconciliation ask (dropped, a recheck made no
// call and failed the payment, bank_cancelled, on no word, and the sale
// was never settled). Should it be another payment's, that payment's own
// verify takes it (Decision.TakeReceipt).
func KeepsReceiptAtDeadline(p TopUp, to Status, r Rules) bool {
	return to == StatusNeedsReview && r.CallbackOnly && p.Receipt != nil && Reason(p.StatusReason) == ReasonVerifyUnknown
}

// NewReceiptTooSoon reports whether a callback bringing receipt to p
// must be refused, nothing kept: a receipt p does not hold yet, on a
// payment not credited whose first callback came before and whose bank
// was asked within the pacing window. A receipt is kept only to be
// checked at once; kept unchecked, a forged one would hold another
// payment's receipt against that payment's real callback until the
// worker asks. The very first callback is always checked at once.
func NewReceiptTooSoon(p TopUp, receipt string, now time.Time, recheck time.Duration) bool {
	return receipt != "" && p.Receipt == nil && p.Status != StatusCredited && p.ReturnedAt != nil &&
		!DueForCheck(p, now, recheck)
}

// WaitsForCallback reports whether nothing can be asked about p until
// its payer comes back — at a gateway whose verify needs the callback's
// data (Rules.CallbackOnly: Mellat's SaleReferenceId), an awaiting
// payment with no callback and no receipt — and when to look at it next:
// just after the gateway's verify window closes, when Expiry sends it to
// review. A check before then would make no bank call, and counts none.
func WaitsForCallback(p TopUp, r Rules) (time.Time, bool) {
	if !r.CallbackOnly || r.VerifyDeadline <= 0 || p.Status != StatusAwaitingPayment || p.ReturnedAt != nil || p.Receipt != nil {
		return time.Time{}, false
	}
	return p.CreatedAt.Add(r.VerifyDeadline + time.Second), true
}

// PageTime is how long the payer had the bank's page when a check is
// made at now: from the payment's creation (the authority is asked for
// at once) to the payer's first return, or to now when they never came
// back (gateway.VerifyInput.PageTime). Zero when unknown.
func PageTime(p TopUp, now time.Time) time.Duration {
	end := now
	if p.ReturnedAt != nil {
		end = *p.ReturnedAt
	}
	if p.CreatedAt.IsZero() || !end.After(p.CreatedAt) {
		return 0
	}
	return end.Sub(p.CreatedAt)
}

// DueForCheck reports whether the bank may be asked about p at now: at
// most once per RecheckDelay.
func DueForCheck(p TopUp, now time.Time, recheck time.Duration) bool {
	return p.LastCheckedAt == nil || !now.Before(p.LastCheckedAt.Add(recheck))
}

// Backoff is the delay before the worker's next check after n attempts:
// exponential from base, capped at maxDelay, with jitter (a number in
// [0,1)) placing it in [50%, 100%].
func Backoff(n int, base, maxDelay time.Duration, jitter float64) time.Duration {
	return lifecycle.Backoff(n, base, maxDelay, jitter)
}

// NextCheck is when the worker checks a still-open payment next: after
// the back-off, never sooner than the pacing window after the last check.
func NextCheck(p TopUp, now time.Time, backoff, recheck time.Duration) time.Time {
	return lifecycle.NextCheck(p.LastCheckedAt, now, backoff, recheck)
}

// ResolvedAt is the resolved_at of a move from → to (an ended status) at
// now, given the payment's events newest first: when the payment reached
// the outcome it will show. A reopen only asks the bank again about an
// outcome: when a reopened payment ends in the very status it was
// reopened from (failed again, under review again), the check confirmed
// that outcome, and the payment keeps the time it first reached it —
// across any number of such reopens — so a failed page says when the
// payment failed, not when a late callback last made us ask. Any other end
// (credited, or failed after review, or review after failed) is a new
// outcome at now.
//
// A reopen is the only edge from failed or needs_review to
// pending_verification, and no event is written while the payment stays
// pending_verification, so only moves from pending_verification to failed
// or needs_review need the events (NeedsEvents).
func ResolvedAt(from, to Status, now time.Time, newestFirst []Event) time.Time {
	if !ResolvedAtNeedsEvents(from, to) {
		return now
	}
	at := now
	// Newest first: (reopen from to, the move into to), repeated.
	for i := 0; i+1 < len(newestFirst); i += 2 {
		reopen, into := newestFirst[i], newestFirst[i+1]
		if reopen.FromStatus != to || reopen.ToStatus != StatusPendingVerification || into.ToStatus != to {
			break
		}
		at = into.CreatedAt
	}
	return at
}

// CallbackMayReopen reports whether a callback may reopen an ended
// payment p and ask the bank about it: not one an admin closed as failed
// (closed_by_admin). A callback proves nothing, and anyone holding the
// return link can send one: it must not undo a person's decision. The
// admin's "ask the bank now" and reconciliation (the bank's own list or
// receipt) still can.
func CallbackMayReopen(p TopUp) bool {
	return !(p.Status == StatusFailed && Reason(p.StatusReason) == ReasonClosedByAdmin) && !ReverseEnded(p)
}

// ReverseEnded reports whether p ended on its reverse (reversing →
// failed or needs_review, and an admin's close of one under review since):
// it is never reopened (decideReopen).
func ReverseEnded(p TopUp) bool {
	if p.Status != StatusFailed && p.Status != StatusNeedsReview {
		return false
	}
	// Ended by its reverse's reason (which an admin's close keeps:
	// StepClose), or a reverse was sent (its answer unknown, or closed by
	// an admin since): never reopened towards a credit. The reason alone
	// marks one whose reverse was never sent (reverse_window_closed,
	// reverse_sent_at NULL).
	return reverseEndReason(Reason(p.StatusReason)) || p.ReverseSentAt != nil
}

// reverseEndReason reports whether r is a reason only a reverse's end
// gives (decideReverse; and decideSettle's settle_contradicted: a settle
// refused after the bank refused the reverse as settled).
func reverseEndReason(r Reason) bool {
	switch r {
	case ReasonReversedToCard, ReasonReverseRefused, ReasonReverseClosed, ReasonReverseDiffers, ReasonSettleContradicted:
		return true
	}
	return false
}

// ReverseUntil is when a reverse of p can last be sent: its gateway's
// window (rules) counted from the top-up's creation, which precedes the
// payment at the bank (so it closes early, never late), less
// ReverseMargin. Zero when the gateway has no window.
func ReverseUntil(p TopUp, r Rules) time.Time {
	if r.ReverseWindow <= 0 {
		return time.Time{}
	}
	return p.CreatedAt.Add(r.ReverseWindow - ReverseMargin)
}

// Reversible reports whether a verified payment that cannot be credited
// is to be reversed now (pure): its gateway can (Input.CanReverse), its
// window is open, it is open here (the caller's to move), and it holds
// the receipt the reverse names (SEP's RefNum, Mellat's SaleReferenceId).
func Reversible(in Input) bool {
	p := in.TopUp
	return in.CanReverse && in.Rules.ReverseWindow > 0 && p.Status.open() && p.Receipt != nil &&
		in.Now.Before(ReverseUntil(p, in.Rules))
}

// decideReverse: the worker's turn on a reversing payment, under its
// lease. The reverse is sent once: its intent (ReverseSentAt) is written
// before the call, and while it stands the bank's record (RefundStatus)
// is asked instead of the reverse. So:
//   - not sent yet: sent (ActionReverse) while the window is open and the
//     gateway can; else review (reverse_window_closed);
//   - its answer: accepted → failed (reversed_to_card: on its way back
//     to the card); refused because the sale is settled, for a verified
//     payment whose settle was refused → settling again (settled: the
//     next settle answers 45 and credits it; settledAgain); any other
//     refusal → review (reverse_refused); certainly not
//     sent (an open breaker) → the intent dropped, sent at the next turn
//     if still in time; anything else (a time-out, a 5xx, "already
//     reversed") is unknown → the record is asked later;
//   - the record: reversed → failed (reversed_to_card); standing (not
//     reversed), once the call cannot still land (Rules.ReverseLands) →
//     the intent dropped (the next turn sends it again if still in time,
//     else review); differing → review (reverse_differs); an error →
//     asked again, and past MaxUnknown since the send, review.
func decideReverse(in Input) Decision {
	p := in.TopUp
	if p.Status != StatusReversing || in.LeaseLost || in.Actor != ActorWorker {
		return Decision{Action: ActionNone}
	}
	now := in.Now
	next := now.Add(in.Rules.RecheckDelay)
	move := func(to Status, reason Reason, code *int) Decision {
		return Decision{Action: ActionMove, To: to, Reason: reason, GatewayCode: code, Checked: true, CountAttempt: true}
	}
	keep := func(at time.Time, clear bool) Decision {
		return Decision{Action: ActionKeep, To: StatusReversing, NextCheckAt: &at, ClearReverseSent: clear}
	}
	switch {
	case in.ReverseSent:
		var rej *gateway.RejectedError
		switch err := in.ReverseErr; {
		case err == nil:
			return move(StatusFailed, ReasonReversedToCard, nil)
		case errors.As(err, &rej):
			code := rej.Code
			if settledAgain(p, err) {
				// Refused because the sale is settled (Mellat 45: two
				// settles raced, and the one we heard was refused): the
				// merchant has the money. Settling again, the intent
				// dropped (nothing was reversed): the next settle answers
				// 45 and credits the verified facts, once.
				d := move(StatusSettling, ReasonSettled, &code)
				d.ClearReverseSent, d.NextCheckAt = true, &next
				return d
			}
			return move(StatusNeedsReview, ReasonReverseRefused, &code)
		case errors.Is(err, gateway.ErrUnavailable) || errors.Is(err, gateway.ErrRefundNotSent):
			d := keep(next, true) // never sent: nothing can land
			return d
		}
		d := keep(next, false)
		d.Checked, d.CountAttempt = true, true
		return d
	case p.ReverseSentAt == nil:
		if !in.CanReverse || !now.Before(ReverseUntil(p, in.Rules)) {
			return Decision{Action: ActionMove, To: StatusNeedsReview, Reason: ReasonReverseClosed}
		}
		return Decision{Action: ActionReverse}
	case !in.ReverseLooked:
		return Decision{Action: ActionNone} // the record is to be asked first
	}
	sent := *p.ReverseSentAt
	if err := in.ReverseStateErr; err != nil {
		if in.Rules.MaxUnknown > 0 && now.Sub(sent) > in.Rules.MaxUnknown {
			return Decision{Action: ActionMove, To: StatusNeedsReview, Reason: ReasonUnknownTooLong}
		}
		d := keep(next, false)
		d.Checked, d.CountAttempt = true, !errors.Is(err, gateway.ErrUnavailable)
		return d
	}
	code := in.ReverseState.Code
	switch in.ReverseState.Outcome {
	case gateway.RefundDone:
		return move(StatusFailed, ReasonReversedToCard, &code)
	case gateway.RefundNotDone:
		landed := sent.Add(in.Rules.ReverseLands)
		if now.Before(landed) {
			d := keep(maxT(next, landed), false)
			d.Checked, d.CountAttempt = true, true
			return d
		}
		// The bank holds the sale as standing, long after the call could
		// land: it was not made. The next turn sends it while in time.
		d := keep(now, true)
		d.Checked, d.CountAttempt = true, true
		return d
	}
	return move(StatusNeedsReview, ReasonReverseDiffers, &code)
}

// settledAgain reports whether the reversing payment p, whose reverse
// the bank refused with err, goes back to settling (pure): the bank
// refused because the sale is settled — the driver's refusal says so
// with a SaleSettled method (Mellat's bpReversalRequest 45), as net.Error
// says Timeout —, p carries the bank's verified facts for its own amount
// (Verified), and it is reversing because its settle was refused
// (settle_refused), not reversing a sale it must never credit (another
// amount, a reference another payment holds, …): that one goes to review
// as any refusal.
func settledAgain(p TopUp, err error) bool {
	var s interface{ SaleSettled() bool }
	return ReversingUnsettled(p) && errors.As(err, &s) && s.SaleSettled()
}

// ReversingUnsettled reports whether p is reversing because the bank
// verified it for its own amount (Verified) and refused its settle
// (settle_refused): its reverse may yet be refused as settled, and then
// it is credited (settledAgain), so its payer is promised neither
// outcome.
func ReversingUnsettled(p TopUp) bool {
	return p.Status == StatusReversing && Reason(p.StatusReason) == ReasonSettleRefused && Verified(p)
}

func maxT(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// OutcomeUnchanged reports whether a move from → to only confirms the
// outcome the payment showed before it was last reopened (failed again,
// under review again), given its events newest first: its public outcome
// does not change, so partners hear nothing new (no webhook). Any other
// move into an ended status is a new outcome.
func OutcomeUnchanged(from, to Status, newestFirst []Event) bool {
	if !ResolvedAtNeedsEvents(from, to) || len(newestFirst) == 0 {
		return false
	}
	last := newestFirst[0]
	return last.FromStatus == to && last.ToStatus == StatusPendingVerification
}

// ResolvedAtNeedsEvents reports whether ResolvedAt of a move from → to
// depends on the payment's events.
func ResolvedAtNeedsEvents(from, to Status) bool {
	return from == StatusPendingVerification && to.Terminal() && to != StatusCredited
}
