package withdrawal

import (
	"time"

	"github.com/kifpool/kifpool/internal/payout"
)

// Decision is what a provider's answer means for a withdrawal: a move
// (To, or none), what to write, and what to do next. Decisions are pure:
// the tests hold every answer against every status in a table.
type Decision struct {
	// To is the status to move to ("" for none).
	To     Status
	Reason Reason
	// Then is a second move after To (a payout found returned before we
	// knew it was paid: paid, then returned).
	Then Status
	// State is the provider state to record ("" leaves it).
	State ProviderState
	Ref   string
	// Resubmit: send the order again now (the provider took nothing, or
	// keeps one payout per id).
	Resubmit bool
	// Anomaly: the answer contradicts what we know and no edge can say
	// so (a paid withdrawal the provider calls failed, or does not
	// know): logged, and reconciliation reports it.
	Anomaly string
	// Lost: the provider had the payout (its word on record: in
	// progress, transferred) and does not know it now. The time it has
	// not known it counts from now (UnknownSince), unless it counts
	// already for the same word (Contradiction; another word starts the
	// count again); any word of its that knows the payout again (State)
	// ends the count. An admin's close as failed waits for UnknownReviewAfter
	// of it (DecideClose): an inquiry that forgets payouts once they
	// leave its queue is no word that the payout failed.
	Lost bool
	// Contradiction is the word that contradicted it (with Lost): kept
	// on the row, the latest one heard, so that the admin's page offers
	// a close as failed only where DecideClose may allow it (FailMayGo).
	Contradiction Contradiction
}

// DecideSubmit is what a submit's answer means (err is the submit's
// error, following payout.Provider's contract). resend: an earlier submit
// of this payout has an unknown outcome (the provider may hold it, and
// pay it). A refusal of this one, for good or for now, or this one never
// sent, says nothing of that one: the outcome stays unknown, asked about
// until the provider knows the payout, or a person looks
// (UnknownReviewAfter); never failed, its money never released, on the
// word of a call about another submit.
func DecideSubmit(res payout.Submitted, err error, resend bool) Decision {
	if err == nil {
		return Decision{State: ProviderInProgress, Ref: res.Ref}
	}
	if resend {
		return Decision{State: ProviderUnknown}
	}
	if refused, forNow := payout.IsRefused(err); refused {
		if forNow {
			return Decision{State: ProviderNotTaken}
		}
		return Decision{To: StatusFailed, Reason: ReasonRefused, State: ProviderFailed}
	}
	if payout.NotSent(err) {
		return Decision{State: ProviderNotTaken}
	}
	return Decision{State: ProviderUnknown}
}

// Policy is what decisions depend on besides the answer.
type Policy struct {
	// IdempotentSubmit: the provider keeps one payout per id.
	IdempotentSubmit bool
	// UnknownReviewAfter: how long an unknown outcome may last before a
	// person looks (without IdempotentSubmit).
	UnknownReviewAfter time.Duration
	// InProgressReviewAfter: how long after its first submit a payout may
	// stay in progress at the provider (Paya settles in cycles, none on
	// holidays) before a person looks; 0: never. Its money stays held,
	// and the worker keeps asking: the provider's word still ends it.
	InProgressReviewAfter time.Duration
}

// DecideStatus is what the provider's word on the payout of w means, at
// now.
func DecideStatus(w Withdrawal, st payout.Status, p Policy, now time.Time) Decision {
	open := w.Status == StatusSubmitted || w.Status == StatusNeedsReview
	switch st.State {
	case payout.StateTransferred:
		if w.Status == StatusPaid {
			return Decision{State: ProviderTransferred, Ref: st.Ref}
		}
		if !open {
			return Decision{Anomaly: "transferred while " + string(w.Status)}
		}
		if st.AmountRials != 0 && st.AmountRials != w.AmountRials {
			return disagree(w, st)
		}
		return Decision{To: StatusPaid, Reason: ReasonTransferred, State: ProviderTransferred, Ref: st.Ref}
	case payout.StateReturned:
		switch {
		case w.Status == StatusPaid:
			return Decision{To: StatusReturned, Reason: ReasonReturned, State: ProviderReturned, Ref: st.Ref}
		case open:
			// Transferred and returned before we heard of either: both
			// moves, in order, each with its money.
			return Decision{To: StatusPaid, Reason: ReasonTransferred, Then: StatusReturned, State: ProviderReturned, Ref: st.Ref}
		}
		return Decision{Anomaly: "returned while " + string(w.Status)}
	case payout.StateFailed:
		if open && w.ProviderState == ProviderTransferred {
			// It said it transferred it (for another amount: in review):
			// failed now contradicts that, and the money may have left.
			// A person decides; the word stays, and the time it has
			// contradicted it counts (Lost): an admin's close as failed
			// waits until its "failed" has stood for UnknownReviewAfter
			// (DecideClose).
			return Decision{Anomaly: "failed after it said transferred", Lost: true, Contradiction: ContradictionFailed}
		}
		if open {
			return Decision{To: StatusFailed, Reason: ReasonProviderFailed, State: ProviderFailed}
		}
		return Decision{Anomaly: "failed while " + string(w.Status)}
	case payout.StateInProgress:
		if w.Status == StatusPaid {
			return Decision{Anomaly: "in progress while paid"}
		}
		if w.ProviderState == ProviderTransferred {
			// Never overwritten by a vaguer word (an unknown state string
			// reads as in progress): it keeps the close as failed away.
			// Its word "transferred" is written again (the same), which
			// ends the count of a contradiction heard before (unknown_since:
			// a "failed" then must stand anew before a close as failed).
			return Decision{Anomaly: "in progress after it said transferred", State: ProviderTransferred}
		}
		if inProgressTooLong(w, p, now) {
			// Still not paid, days after it was sent: a person looks
			// (the provider's panel, its support), its money held. The
			// word stays in progress, so that no one closes it as failed
			// under the provider (a transfer sent is not called back).
			return Decision{To: StatusNeedsReview, Reason: ReasonInProgressTooLong, State: ProviderInProgress, Ref: st.Ref}
		}
		return Decision{State: ProviderInProgress, Ref: st.Ref}
	case payout.StateNotFound:
		switch {
		case w.Status == StatusPaid:
			return Decision{Anomaly: "not found while paid"}
		case w.ProviderState == ProviderInProgress || w.ProviderState == ProviderTransferred:
			// It had it, and now does not know it: a person looks, and
			// the time it has not known it counts (Lost).
			if w.Status == StatusSubmitted {
				return Decision{To: StatusNeedsReview, Reason: ReasonContradiction, Lost: true, Contradiction: ContradictionNotFound}
			}
			return Decision{Lost: true, Contradiction: ContradictionNotFound}
		case w.Status != StatusSubmitted:
			// In review: a person decides; nothing is sent from there.
			return Decision{}
		case w.ProviderState == ProviderNotTaken:
			return DecideNotTaken(w, p, now)
		case unknownTooLong(w, p, now):
			return Decision{To: StatusNeedsReview, Reason: ReasonUnknownTooLong}
		case p.IdempotentSubmit:
			// Never taken, or not recorded yet: the same id again is one
			// payout whatever happened.
			return Decision{Resubmit: true}
		}
		return Decision{}
	}
	return Decision{}
}

// DecideUnanswered is what a status question that got no answer means:
// nothing (ask again later), unless the submit's outcome has been unknown
// for UnknownReviewAfter, or its provider's last word, in progress, is
// InProgressReviewAfter old, when a person looks: a provider whose status
// cannot be read (or who is no longer configured) must not hold the
// money with no one able to act.
func DecideUnanswered(w Withdrawal, p Policy, now time.Time) Decision {
	switch {
	case unknownTooLong(w, p, now):
		return Decision{To: StatusNeedsReview, Reason: ReasonUnknownTooLong}
	case w.ProviderState == ProviderInProgress && inProgressTooLong(w, p, now):
		return Decision{To: StatusNeedsReview, Reason: ReasonInProgressTooLong}
	}
	return Decision{}
}

// inProgressTooLong: w is submitted, and was first submitted
// InProgressReviewAfter ago or longer (0: never too long).
func inProgressTooLong(w Withdrawal, p Policy, now time.Time) bool {
	return w.Status == StatusSubmitted && p.InProgressReviewAfter > 0 && w.SubmittedAt != nil &&
		now.Sub(*w.SubmittedAt) >= p.InProgressReviewAfter
}

// unknownTooLong: w was submitted, and its outcome has been unknown for
// UnknownReviewAfter or longer.
func unknownTooLong(w Withdrawal, p Policy, now time.Time) bool {
	return w.Status == StatusSubmitted && w.ProviderState == ProviderUnknown && w.UnknownSince != nil &&
		now.Sub(*w.UnknownSince) >= p.UnknownReviewAfter
}

// disagree is the provider's word that it transferred w for another
// amount: a person looks (never failed: the money left), with the
// provider's word recorded, so that the review may close it only as paid
// (Service.AdminPay, on its "transferred" again then), never as failed,
// which would pay the amount twice, unless the provider says for certain
// then that it failed it (DecideClose).
func disagree(w Withdrawal, st payout.Status) Decision {
	if w.Status == StatusSubmitted {
		return Decision{To: StatusNeedsReview, Reason: ReasonAmountDisagrees, State: ProviderTransferred, Ref: st.Ref}
	}
	if w.ProviderState == ProviderTransferred {
		// The word on record, said again at every check while a person
		// looks: nothing new, and no error logged each time.
		return Decision{State: ProviderTransferred, Ref: st.Ref}
	}
	return Decision{Anomaly: "amount disagrees", State: ProviderTransferred, Ref: st.Ref}
}

// Heard is the provider's answer to the question asked just before an
// admin's close (Service.AdminFail, Service.AdminPay).
type Heard struct {
	// Answered: it answered. False: an error, its breaker open, or its
	// provider no longer offered (not asked).
	Answered bool
	// Unoffered: its provider is not offered now (not in PAYOUTS: not
	// asked): the word on record is the last one heard.
	Unoffered bool
	// State is its word on the payout, when it answered.
	State payout.State
}

// DecideClose is whether an admin may close w, under review, as to
// (StatusFailed or StatusPaid), at now, on h, the provider's answer
// asked just before (already recorded on w, the lease held): nil, or the
// refusal. The answer now is judged, not a stale word on the row:
//   - paid needs the provider's word now that it transferred the payout
//     (ErrPaidUnconfirmed otherwise: no answer, in progress, not found,
//     failed); the hold would be captured for money that never left. Its
//     provider not offered now (Heard.Unoffered), the word on record
//     stands, only when nothing contradicted it since (UnknownSince).
//   - failed is allowed on its definite "failed" now; after an older
//     "transferred" only once that "failed" itself has stood for
//     UnknownReviewAfter (ErrFailedAfterTransferred; a "not found"
//     before it is not counted). Otherwise "transferred" on record refuses it
//     (ErrProviderPaid); "in progress" on record refuses it
//     (ErrProviderHasIt), and so does a payout it had and now does not
//     know until it has not known it for UnknownReviewAfter
//     (ErrProviderForgot: its inquiry may forget payouts it still pays);
//     a submit whose outcome it never told us is not failed without an
//     answer (ErrProviderUnreachable). Anything else (it does not know a
//     payout it never said it had, it never took it) is the admin's
//     judgement.
func DecideClose(w Withdrawal, to Status, h Heard, p Policy, now time.Time) error {
	said := func(st payout.State) bool { return h.Answered && h.State == st }
	if to == StatusPaid {
		// Its word now, or, its provider not offered now (not asked), its
		// last word when nothing contradicted it since (refused, the hold
		// would stay until the provider is configured again).
		if w.ProviderState == ProviderTransferred && (said(payout.StateTransferred) || h.Unoffered && w.UnknownSince == nil) {
			return nil
		}
		return ErrPaidUnconfirmed
	}
	switch {
	case w.ProviderState == ProviderTransferred && said(payout.StateFailed):
		// It said the money left, and now that it failed: a flapping or
		// stale inquiry would pay the amount twice if believed at once.
		// Its "failed" must have stood for UnknownReviewAfter: the word
		// on the row is "failed" (Contradiction), counted since it was
		// first heard in a row (UnknownSince: Lost; another word heard
		// starts the count again), never a "not found" older than it.
		if w.Contradiction == ContradictionFailed && w.UnknownSince != nil && now.Sub(*w.UnknownSince) >= p.UnknownReviewAfter {
			return nil
		}
		return ErrFailedAfterTransferred
	case said(payout.StateFailed):
		return nil
	case w.ProviderState == ProviderTransferred:
		return ErrProviderPaid
	case w.ProviderState == ProviderInProgress && said(payout.StateNotFound):
		if w.UnknownSince != nil && now.Sub(*w.UnknownSince) >= p.UnknownReviewAfter {
			return nil
		}
		return ErrProviderForgot
	case w.ProviderState == ProviderInProgress:
		return ErrProviderHasIt
	case w.ProviderState == ProviderUnknown && !h.Answered:
		return ErrProviderUnreachable
	}
	return nil
}

// FailMayGo reports whether DecideClose may let an admin close w as
// failed, as far as its row tells: the admin's page offers the close only
// then (a hint; DecideClose, on the provider's word asked just before,
// stays the guard). Under review, and, once the provider said it
// transferred it, only after it contradicted that with "failed" (the
// close waits until that has stood for UnknownReviewAfter and the
// provider says it again then). After "not found" (its latest
// contradiction) a close as failed is always refused (ErrProviderPaid:
// it needs "failed" now): the admin asks the provider, whose word the
// worker hears at its next check. A row whose contradiction was not
// recorded (ContradictionNone: from before migration 00058, until its
// next check) is offered, as it was; its close waits
// (ErrFailedAfterTransferred) until the worker has recorded "failed",
// whose count then starts.
func FailMayGo(w Withdrawal) bool {
	if w.Status != StatusNeedsReview {
		return false
	}
	if w.ProviderState != ProviderTransferred {
		return true
	}
	return w.UnknownSince != nil && w.Contradiction != ContradictionNotFound
}

// DecideNotTaken is what a submitted withdrawal the provider has not
// taken (every submit refused for now: its balance short, our address
// not allowed, its own pause) calls for at now: sent again, until it has
// waited UnknownReviewAfter since it was first submitted; then a person
// looks, who may close it as failed (nothing was taken, so nothing can
// be paid twice). Without it the money stayed held, sent again and again
// with no one able to act (the owner may not cancel what was sent).
func DecideNotTaken(w Withdrawal, p Policy, now time.Time) Decision {
	if w.Status == StatusSubmitted && w.SubmittedAt != nil && now.Sub(*w.SubmittedAt) >= p.UnknownReviewAfter {
		return Decision{To: StatusNeedsReview, Reason: ReasonNotTakenTooLong}
	}
	return Decision{Resubmit: true}
}
