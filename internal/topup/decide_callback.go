package topup

// The callback's decision: what the payer's return from the bank may do
// to a payment, and what its receipt (SEP's RefNum, Mellat's
// SaleReferenceId) may do, as one pure function of the callback as
// parsed, the row as read, where the row's receipt came from, and who
// else holds the callback's receipt. The callback path reads: parse →
// Decide → keep the receipt when the decision says so (one conditional
// UPDATE; refused by another payment's hold, it looks the holder up and
// decides again) → claim → ask the bank → Decide (StepCheck) → one
// conditional write.

// Hold is who else holds a callback's receipt, as the keep found it.
type Hold string

const (
	// HoldNotAsked: the receipt was not refused by another payment's
	// hold (or not yet tried).
	HoldNotAsked Hold = ""
	// HoldUnconfirmed: another payment holds it on a callback's word only
	// (the bank never confirmed it there): this payment's check asks the
	// bank with it, and takes it when the bank confirms it here.
	HoldUnconfirmed Hold = "unconfirmed"
	// HoldConfirmed: another payment holds it and the bank confirmed it
	// there (its record of that token named it, or it verified that
	// payment): a replay, refused. Also a hold gone by the time it was
	// looked up (the payer's retry is decided afresh).
	HoldConfirmed Hold = "confirmed"
)

// Callback is what a callback brought (StepCallback).
type Callback struct {
	// Authority: the token the callback names.
	Authority string
	// Receipt: what verify needs, as the callback carries it ("": none).
	Receipt string
	// Holder: who else holds Receipt (after a keep it refused).
	Holder Hold
	// KeptNow: this callback's Receipt was just kept on the row (Payment
	// is the row after it).
	KeptNow bool
	// Recorded: the return is recorded (returned_at) and the first
	// return's one-statement claim was not taken; First: this callback
	// recorded it (the payment's first return).
	Recorded bool
	First    bool
}

// Actions of a callback's decision (StepCallback), besides ActionNone
// (the row is the answer) and ActionVerify (claim and ask the bank: the
// first return's one-statement claim when FirstReturn, else paced when
// Paced).
const (
	// ActionRefuse: the callback is refused (Refusal), nothing changes.
	ActionRefuse Action = "refuse"
	// ActionKeepReceipt: keep the callback's receipt on the row as the
	// callback's (KeepReceipt), then decide again.
	ActionKeepReceipt Action = "keep_receipt"
	// ActionRecordReturn: record the return (returned_at), then decide
	// again (Callback.Recorded, First).
	ActionRecordReturn Action = "record_return"
	// ActionReopen: reopen the ended payment and ask the bank now
	// (CheckNow), or let the worker ask when the pacing window ends; the
	// claim is paced when Paced.
	ActionReopen Action = "reopen"
)

// decideCallback: what a callback may do (StepCallback).
//
//   - Its token must be the payment's (else refused: ErrAuthorityMismatch).
//   - Its receipt: one the row holds must be the same (else refused:
//     ErrReceiptMismatch). A new one (the row holds none) is refused
//     within the pacing window unless this is the first return
//     (ErrReceiptTooSoon: a receipt is kept only to be checked at once,
//     never left unchecked for the worker); otherwise it is kept as the
//     callback's (ActionKeepReceipt). Another payment's hold refuses the
//     keep: one the bank confirmed there is a replay (ErrReceiptReused);
//     one held on a callback's word only is asked about for this payment
//     (CandidateReceipt), and taken when the bank confirms it here. A
//     credited payment, or one an admin closed, keeps nothing new.
//   - A credited payment: the row is the answer.
//   - An open payment's first return: claimed and checked at once, in one
//     statement (FirstReturn); else, once the return is recorded, checked
//     when due (the first return, or the pacing window passed), paced
//     unless it is the first.
//   - An ended payment (failed, under review): never reopened when an
//     admin closed it (the admin's decision stands; the row is the
//     answer). Otherwise reopened — checked now when due, else by the
//     worker when the window ends — unless the bank itself ended it
//     moments ago and the callback brings nothing new (a duplicate).
func decideCallback(in Input) Decision {
	p, cb := in.TopUp, in.Callback
	if p.Authority == nil || cb.Authority != *p.Authority {
		return Decision{Action: ActionRefuse, Refusal: ErrAuthorityMismatch}
	}
	newReceipt := cb.KeptNow || cb.Holder == HoldUnconfirmed
	d := Decision{}
	switch {
	case cb.Receipt == "" || cb.KeptNow:
	case p.Receipt != nil && *p.Receipt != cb.Receipt:
		return Decision{Action: ActionRefuse, Refusal: ErrReceiptMismatch}
	case p.Receipt != nil || p.Status == StatusCredited || !CallbackMayReopen(p):
		// The same receipt again, or a payment no callback will have
		// checked (credited; closed by an admin): nothing is kept — a
		// receipt is never kept unchecked.
	case NewReceiptTooSoon(p, cb.Receipt, in.Now, in.Rules.RecheckDelay):
		return Decision{Action: ActionRefuse, Refusal: ErrReceiptTooSoon}
	case cb.Holder == HoldConfirmed:
		return Decision{Action: ActionRefuse, Refusal: ErrReceiptReused}
	case cb.Holder == HoldUnconfirmed:
		d.CandidateReceipt = cb.Receipt
	default:
		return Decision{Action: ActionKeepReceipt, KeepReceipt: cb.Receipt}
	}
	if p.Status == StatusCredited {
		d.Action = ActionNone
		return d
	}
	if !cb.Recorded {
		if p.ReturnedAt == nil && p.Status.open() {
			d.Action, d.FirstReturn = ActionVerify, true
			return d
		}
		d.Action = ActionRecordReturn
		return d
	}
	due := cb.First || DueForCheck(p, in.Now, in.Rules.RecheckDelay)
	switch p.Status {
	case StatusFailed, StatusNeedsReview:
		if !CallbackMayReopen(p) {
			// An admin closed it: a callback does not undo a person's
			// decision (docs/design/callback.md); the row is the answer.
			d.Action = ActionNone
			return d
		}
		if !due && !newReceipt && Reason(p.StatusReason).bankAnswer() {
			d.Action = ActionNone // the bank's own word, moments ago
			return d
		}
		d.Action, d.CheckNow, d.Paced = ActionReopen, due, !cb.First
		return d
	case StatusAwaitingPayment, StatusPendingVerification, StatusSettling:
		if !due {
			d.Action = ActionNone // asked moments ago
			return d
		}
		d.Action, d.Paced = ActionVerify, !cb.First
		return d
	}
	d.Action = ActionNone
	return d
}
