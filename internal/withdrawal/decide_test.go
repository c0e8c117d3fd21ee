package withdrawal_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

// TestDecideSubmit: what a submit's answer means. Only the provider's
// word that it took nothing lets the order go again; a refusal of the
// payout itself fails it; anything else is unknown.
func TestDecideSubmit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		to    withdrawal.Status
		state withdrawal.ProviderState
	}{
		{"accepted", nil, "", withdrawal.ProviderInProgress},
		{"refused for good", payout.Refused("payout_submit", false, 21, "bad iban"), withdrawal.StatusFailed, withdrawal.ProviderFailed},
		{"refused for now", payout.Refused("payout_submit", true, 11, "balance"), "", withdrawal.ProviderNotTaken},
		{"breaker open: never sent", &gateway.TransientError{Op: "payout_submit", Err: gateway.ErrUnavailable}, "", withdrawal.ProviderNotTaken},
		{"time-out", &gateway.TransientError{Op: "payout_submit", Err: errors.New("deadline exceeded")}, "", withdrawal.ProviderUnknown},
		{"5xx", &gateway.TransientError{Op: "payout_submit", HTTPStatus: 502, Err: errors.New("bad gateway")}, "", withdrawal.ProviderUnknown},
		{"an untyped error", errors.New("encode"), "", withdrawal.ProviderUnknown},
	} {
		d := withdrawal.DecideSubmit(payout.Submitted{}, tc.err, false)
		if d.To != tc.to || d.State != tc.state || d.Resubmit {
			t.Errorf("%s: %+v", tc.name, d)
		}
		// Sent again while an earlier submit's outcome is unknown: only
		// an acceptance says anything; every other answer leaves it
		// unknown (the earlier one may be paid).
		want := withdrawal.ProviderUnknown
		if tc.err == nil {
			want = withdrawal.ProviderInProgress
		}
		if d := withdrawal.DecideSubmit(payout.Submitted{}, tc.err, true); d.To != "" || d.State != want || d.Resubmit {
			t.Errorf("%s, sent again: %+v", tc.name, d)
		}
	}
}

// TestDecideUnanswered: a status question without an answer changes
// nothing, until the submit's outcome has been unknown too long.
func TestDecideUnanswered(t *testing.T) {
	now := time.Date(2025, 6, 7, 10, 0, 0, 0, time.UTC)
	long, recent := now.Add(-25*time.Hour), now.Add(-time.Hour)
	p := withdrawal.Policy{IdempotentSubmit: true, UnknownReviewAfter: 24 * time.Hour}
	for _, tc := range []struct {
		name string
		w    withdrawal.Withdrawal
		to   withdrawal.Status
	}{
		{"unknown, recent", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderUnknown, UnknownSince: &recent}, ""},
		{"unknown, too long", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderUnknown, UnknownSince: &long}, withdrawal.StatusNeedsReview},
		{"in progress", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderInProgress}, ""},
		{"in review already", withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview, ProviderState: withdrawal.ProviderUnknown, UnknownSince: &long}, ""},
	} {
		if d := withdrawal.DecideUnanswered(tc.w, p, now); d.To != tc.to {
			t.Errorf("%s: %+v", tc.name, d)
		}
	}
}

// TestDecideStatus: the provider's word against each state of ours.
func TestDecideStatus(t *testing.T) {
	now := time.Date(2025, 6, 7, 10, 0, 0, 0, time.UTC)
	long, recent := now.Add(-25*time.Hour), now.Add(-time.Hour)
	sub := func(ps withdrawal.ProviderState, since *time.Time) withdrawal.Withdrawal {
		return withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: ps, UnknownSince: since, AmountRials: 1000}
	}
	st := func(s payout.State) payout.Status { return payout.Status{State: s} }
	idem := withdrawal.Policy{IdempotentSubmit: true, UnknownReviewAfter: 24 * time.Hour}
	once := withdrawal.Policy{UnknownReviewAfter: 24 * time.Hour}
	for _, tc := range []struct {
		name     string
		w        withdrawal.Withdrawal
		st       payout.Status
		p        withdrawal.Policy
		to, then withdrawal.Status
		resubmit bool
		anomaly  bool
	}{
		{"transferred", sub(withdrawal.ProviderInProgress, nil), st(payout.StateTransferred), once, withdrawal.StatusPaid, "", false, false},
		{"transferred, another amount", sub(withdrawal.ProviderInProgress, nil), payout.Status{State: payout.StateTransferred, AmountRials: 999}, once, withdrawal.StatusNeedsReview, "", false, false},
		{"failed", sub(withdrawal.ProviderInProgress, nil), st(payout.StateFailed), once, withdrawal.StatusFailed, "", false, false},
		{"returned before we knew it paid", sub(withdrawal.ProviderInProgress, nil), st(payout.StateReturned), once, withdrawal.StatusPaid, withdrawal.StatusReturned, false, false},
		{"in progress", sub(withdrawal.ProviderUnknown, &recent), st(payout.StateInProgress), once, "", "", false, false},
		{"not found, unknown, repeatable", sub(withdrawal.ProviderUnknown, &recent), st(payout.StateNotFound), idem, "", "", true, false},
		{"not found, unknown, repeatable, too long", sub(withdrawal.ProviderUnknown, &long), st(payout.StateNotFound), idem, withdrawal.StatusNeedsReview, "", false, false},
		{"review: not found, repeatable", withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview, ProviderState: withdrawal.ProviderUnknown, UnknownSince: &long}, st(payout.StateNotFound), idem, "", "", false, false},
		{"not found, unknown, not repeatable, recent", sub(withdrawal.ProviderUnknown, &recent), st(payout.StateNotFound), once, "", "", false, false},
		{"not found, unknown, not repeatable, too long", sub(withdrawal.ProviderUnknown, &long), st(payout.StateNotFound), once, withdrawal.StatusNeedsReview, "", false, false},
		{"not found, never taken", sub(withdrawal.ProviderNotTaken, nil), st(payout.StateNotFound), once, "", "", true, false},
		{"not found, never taken, a day after its first submit", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderNotTaken, SubmittedAt: &long},
			st(payout.StateNotFound), once, withdrawal.StatusNeedsReview, "", false, false},
		{"review: transferred, another amount", withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview, AmountRials: 1000},
			payout.Status{State: payout.StateTransferred, AmountRials: 999}, once, "", "", false, true},
		{"review: transferred, another amount, the word on record", withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview, AmountRials: 1000,
			ProviderState: withdrawal.ProviderTransferred}, payout.Status{State: payout.StateTransferred, AmountRials: 999}, once, "", "", false, false},
		{"not found after it had it", sub(withdrawal.ProviderInProgress, nil), st(payout.StateNotFound), idem, withdrawal.StatusNeedsReview, "", false, false},
		{"review: transferred", withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview}, st(payout.StateTransferred), once, withdrawal.StatusPaid, "", false, false},
		{"review: failed", withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview}, st(payout.StateFailed), once, withdrawal.StatusFailed, "", false, false},
		{"review: not found", withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview, ProviderState: withdrawal.ProviderUnknown}, st(payout.StateNotFound), once, "", "", false, false},
		{"paid: returned", withdrawal.Withdrawal{Status: withdrawal.StatusPaid}, st(payout.StateReturned), once, withdrawal.StatusReturned, "", false, false},
		{"paid: transferred", withdrawal.Withdrawal{Status: withdrawal.StatusPaid}, st(payout.StateTransferred), once, "", "", false, false},
		{"paid: failed", withdrawal.Withdrawal{Status: withdrawal.StatusPaid}, st(payout.StateFailed), once, "", "", false, true},
		{"paid: not found", withdrawal.Withdrawal{Status: withdrawal.StatusPaid}, st(payout.StateNotFound), idem, "", "", false, true},
		{"cancelled: transferred", withdrawal.Withdrawal{Status: withdrawal.StatusCancelled}, st(payout.StateTransferred), once, "", "", false, true},
	} {
		d := withdrawal.DecideStatus(tc.w, tc.st, tc.p, now)
		if d.To != tc.to || d.Then != tc.then || d.Resubmit != tc.resubmit || (d.Anomaly != "") != tc.anomaly {
			t.Errorf("%s: %+v", tc.name, d)
		}
		if d.To != "" {
			if _, err := withdrawal.EdgeNeedsLease(tc.w.Status, d.To, withdrawal.ActorWorker); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}
}

// TestEveryEdgeHasItsMoney: moving into an ended status ends the hold;
// paid captures it; returned gives it back; nothing else touches money.
func TestEveryEdgeHasItsMoney(t *testing.T) {
	for _, e := range withdrawal.Transitions() {
		m := withdrawal.MoneyOf(e.To)
		switch {
		case e.To.Ended() && e.To != withdrawal.StatusReturned && m != withdrawal.MoneyRelease,
			e.To == withdrawal.StatusPaid && m != withdrawal.MoneyCapture,
			e.To == withdrawal.StatusReturned && m != withdrawal.MoneyReturn,
			e.To.Holding() && m != withdrawal.MoneyNone:
			t.Errorf("%s → %s moves %v", e.From, e.To, m)
		}
		if e.From.Ended() {
			t.Errorf("an edge leaves %s", e.From)
		}
		if !e.Lease && (e.From == withdrawal.StatusSubmitted || e.From == withdrawal.StatusNeedsReview || e.From == withdrawal.StatusPaid) {
			t.Errorf("%s → %s without the lease", e.From, e.To)
		}
	}
	if !withdrawal.ValidPublicID(withdrawal.NewPublicID()) || withdrawal.ValidPublicID("wd_x") {
		t.Error("public ids")
	}
}

// TestDecideKeepsTheProviderPaidWord: a transfer for another amount is
// recorded as the provider's word that the money left (in review, and
// when it comes again in review), so that no one closes it as failed.
func TestDecideKeepsTheProviderPaidWord(t *testing.T) {
	now := time.Date(2025, 6, 7, 10, 0, 0, 0, time.UTC)
	p := withdrawal.Policy{UnknownReviewAfter: 24 * time.Hour}
	other := payout.Status{State: payout.StateTransferred, AmountRials: 999, Ref: "R-1"}
	for _, w := range []withdrawal.Withdrawal{
		{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderInProgress, AmountRials: 1000},
		{Status: withdrawal.StatusNeedsReview, ProviderState: withdrawal.ProviderUnknown, AmountRials: 1000},
	} {
		if d := withdrawal.DecideStatus(w, other, p, now); d.State != withdrawal.ProviderTransferred || d.Ref != "R-1" || d.To == withdrawal.StatusFailed {
			t.Errorf("%s: %+v", w.Status, d)
		}
	}
	// Once said, the word stays: a vaguer one (in progress, as an unknown
	// state reads) or a contradicting "failed" moves nothing and changes
	// no state; a person decides. A return is still applied.
	said := withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview, ProviderState: withdrawal.ProviderTransferred, AmountRials: 1000}
	// (In progress writes the same word "transferred" again: it ends the
	// count of an earlier contradiction.)
	for st, state := range map[payout.State]withdrawal.ProviderState{payout.StateInProgress: withdrawal.ProviderTransferred, payout.StateFailed: ""} {
		if d := withdrawal.DecideStatus(said, payout.Status{State: st}, p, now); d.To != "" || d.State != state || d.Anomaly == "" {
			t.Errorf("%s after transferred: %+v", st, d)
		}
	}
	if d := withdrawal.DecideStatus(said, payout.Status{State: payout.StateReturned}, p, now); d.To != withdrawal.StatusPaid || d.Then != withdrawal.StatusReturned {
		t.Errorf("returned after transferred: %+v", d)
	}
}

// TestDecideNotTaken: a submit refused for now is sent again until a day
// after the first submit, then a person looks.
func TestDecideNotTaken(t *testing.T) {
	now := time.Date(2025, 6, 7, 10, 0, 0, 0, time.UTC)
	p := withdrawal.Policy{UnknownReviewAfter: 24 * time.Hour}
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	for _, tc := range []struct {
		name     string
		w        withdrawal.Withdrawal
		to       withdrawal.Status
		resubmit bool
	}{
		{"an hour after", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderNotTaken, SubmittedAt: at(time.Hour)}, "", true},
		{"just short of a day", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderNotTaken, SubmittedAt: at(24*time.Hour - time.Second)}, "", true},
		{"a day after", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderNotTaken, SubmittedAt: at(24 * time.Hour)}, withdrawal.StatusNeedsReview, false},
		{"no first submit on record", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: withdrawal.ProviderNotTaken}, "", true},
	} {
		d := withdrawal.DecideNotTaken(tc.w, p, now)
		if d.To != tc.to || d.Resubmit != tc.resubmit || (d.To != "" && d.Reason != withdrawal.ReasonNotTakenTooLong) {
			t.Errorf("%s: %+v", tc.name, d)
		}
	}
}

// TestDecideInProgressTooLong: a payout the provider still has in
// progress InProgressReviewAfter after its first submit goes to a person,
// the provider's word kept (in progress: never closed as failed under
// it); in review it is only recorded again. A status question without an
// answer, the last word in progress, goes to a person at the same time
// (a provider that cannot be read, or is no longer configured).
func TestDecideInProgressTooLong(t *testing.T) {
	now := time.Date(2025, 6, 7, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	p := withdrawal.Policy{UnknownReviewAfter: 24 * time.Hour, InProgressReviewAfter: 96 * time.Hour}
	off := withdrawal.Policy{UnknownReviewAfter: 24 * time.Hour}
	w := func(s withdrawal.Status, ps withdrawal.ProviderState, submitted *time.Time) withdrawal.Withdrawal {
		return withdrawal.Withdrawal{Status: s, ProviderState: ps, SubmittedAt: submitted, AmountRials: 1000}
	}
	sub, review := withdrawal.StatusSubmitted, withdrawal.StatusNeedsReview
	inp := withdrawal.ProviderInProgress
	for _, tc := range []struct {
		name    string
		w       withdrawal.Withdrawal
		p       withdrawal.Policy
		to      withdrawal.Status
		state   withdrawal.ProviderState
		anomaly bool
	}{
		{"an hour after", w(sub, inp, at(time.Hour)), p, "", inp, false},
		{"just short of four days", w(sub, inp, at(96*time.Hour-time.Second)), p, "", inp, false},
		{"four days after", w(sub, inp, at(96*time.Hour)), p, review, inp, false},
		{"a week after", w(sub, inp, at(7*24*time.Hour)), p, review, inp, false},
		{"unknown until now, four days after", w(sub, withdrawal.ProviderUnknown, at(97*time.Hour)), p, review, inp, false},
		{"no first submit on record", w(sub, inp, nil), p, "", inp, false},
		{"no review time set", w(sub, inp, at(30*24*time.Hour)), off, "", inp, false},
		{"in review already", w(review, inp, at(30*24*time.Hour)), p, "", inp, false},
		{"in review after it said transferred", w(review, withdrawal.ProviderTransferred, at(30*24*time.Hour)), p, "", withdrawal.ProviderTransferred, true},
		{"paid", w(withdrawal.StatusPaid, withdrawal.ProviderTransferred, at(30*24*time.Hour)), p, "", "", true},
	} {
		d := withdrawal.DecideStatus(tc.w, payout.Status{State: payout.StateInProgress, Ref: "R-9"}, tc.p, now)
		if d.To != tc.to || d.State != tc.state || (d.Anomaly != "") != tc.anomaly || d.Resubmit || d.Then != "" {
			t.Errorf("%s: %+v", tc.name, d)
		}
		if d.To != "" {
			if d.Reason != withdrawal.ReasonInProgressTooLong || d.Ref != "R-9" {
				t.Errorf("%s: %+v", tc.name, d)
			}
			if _, err := withdrawal.EdgeNeedsLease(tc.w.Status, d.To, withdrawal.ActorWorker); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			if withdrawal.MoneyOf(d.To) != withdrawal.MoneyNone {
				t.Errorf("%s: the move to %s moves money", tc.name, d.To)
			}
		}
	}
	for _, tc := range []struct {
		name string
		w    withdrawal.Withdrawal
		p    withdrawal.Policy
		to   withdrawal.Status
	}{
		{"no answer, in progress, recent", w(sub, inp, at(time.Hour)), p, ""},
		{"no answer, in progress, four days after", w(sub, inp, at(96*time.Hour)), p, review},
		{"no answer, in progress, no review time set", w(sub, inp, at(30*24*time.Hour)), off, ""},
		{"no answer, in review already", w(review, inp, at(30*24*time.Hour)), p, ""},
		{"no answer, never taken, four days after", w(sub, withdrawal.ProviderNotTaken, at(96*time.Hour)), p, ""},
	} {
		d := withdrawal.DecideUnanswered(tc.w, tc.p, now)
		if d.To != tc.to || (d.To != "" && d.Reason != withdrawal.ReasonInProgressTooLong) || d.State != "" {
			t.Errorf("%s: %+v", tc.name, d)
		}
	}
}

// TestDecideClose: an admin's close against the provider's word on the
// row and its answer now. Paid needs "transferred" now; failed is allowed
// on "failed" now whatever was said before, and waits a day after a
// payout the provider had stopped being known to it.
func TestDecideClose(t *testing.T) {
	now := time.Date(2025, 6, 7, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	p := withdrawal.Policy{UnknownReviewAfter: 24 * time.Hour}
	rev := func(ps withdrawal.ProviderState, since *time.Time) withdrawal.Withdrawal {
		return withdrawal.Withdrawal{Status: withdrawal.StatusNeedsReview, ProviderState: ps, UnknownSince: since, AmountRials: 1000}
	}
	// revBy is rev with the contradicting word on record (and counted
	// since since).
	revBy := func(ps withdrawal.ProviderState, since *time.Time, c withdrawal.Contradiction) withdrawal.Withdrawal {
		w := rev(ps, since)
		w.Contradiction = c
		return w
	}
	said := func(st payout.State) withdrawal.Heard { return withdrawal.Heard{Answered: true, State: st} }
	silent := withdrawal.Heard{}
	paid, failed := withdrawal.StatusPaid, withdrawal.StatusFailed
	byFailed, byNotFound := withdrawal.ContradictionFailed, withdrawal.ContradictionNotFound
	tr, inp, unk, nt := withdrawal.ProviderTransferred, withdrawal.ProviderInProgress, withdrawal.ProviderUnknown, withdrawal.ProviderNotTaken
	for _, tc := range []struct {
		name string
		w    withdrawal.Withdrawal
		to   withdrawal.Status
		h    withdrawal.Heard
		want error
	}{
		{"paid: transferred now", rev(tr, nil), paid, said(payout.StateTransferred), nil},
		{"paid: failed now after transferred", rev(tr, nil), paid, said(payout.StateFailed), withdrawal.ErrPaidUnconfirmed},
		{"paid: in progress now after transferred", rev(tr, nil), paid, said(payout.StateInProgress), withdrawal.ErrPaidUnconfirmed},
		{"paid: not found now after transferred", rev(tr, nil), paid, said(payout.StateNotFound), withdrawal.ErrPaidUnconfirmed},
		{"paid: no answer after transferred", rev(tr, nil), paid, silent, withdrawal.ErrPaidUnconfirmed},
		{"paid: in progress", rev(inp, nil), paid, said(payout.StateInProgress), withdrawal.ErrPaidUnconfirmed},
		{"failed: failed now after transferred, just heard", revBy(tr, at(0), byFailed), failed, said(payout.StateFailed), withdrawal.ErrFailedAfterTransferred},
		{"failed: failed now after transferred, short of a day", revBy(tr, at(24*time.Hour-time.Second), byFailed), failed, said(payout.StateFailed), withdrawal.ErrFailedAfterTransferred},
		{"failed: failed now after transferred, no time on record", revBy(tr, nil, byFailed), failed, said(payout.StateFailed), withdrawal.ErrFailedAfterTransferred},
		{"failed: failed now after transferred for a day", revBy(tr, at(24*time.Hour), byFailed), failed, said(payout.StateFailed), nil},
		// The count is of "failed": days of "not found" before it (the
		// word on record) let no close as failed go at once.
		{"failed: failed now, not found on record for a month", revBy(tr, at(30*24*time.Hour), byNotFound), failed, said(payout.StateFailed), withdrawal.ErrFailedAfterTransferred},
		{"failed: failed now, no word on record (before 00058)", rev(tr, at(30*24*time.Hour)), failed, said(payout.StateFailed), withdrawal.ErrFailedAfterTransferred},
		{"paid: its provider no longer offered, transferred on record", rev(tr, nil), paid, withdrawal.Heard{Unoffered: true}, nil},
		{"paid: its provider no longer offered, in progress on record", rev(inp, nil), paid, withdrawal.Heard{Unoffered: true}, withdrawal.ErrPaidUnconfirmed},
		{"paid: its provider no longer offered, transferred then contradicted", rev(tr, at(time.Hour)), paid, withdrawal.Heard{Unoffered: true}, withdrawal.ErrPaidUnconfirmed},
		{"failed: not found now after transferred", rev(tr, at(30*24*time.Hour)), failed, said(payout.StateNotFound), withdrawal.ErrProviderPaid},
		{"failed: no answer after transferred", rev(tr, nil), failed, silent, withdrawal.ErrProviderPaid},
		{"failed: in progress now", rev(inp, nil), failed, said(payout.StateInProgress), withdrawal.ErrProviderHasIt},
		{"failed: no answer after in progress", rev(inp, nil), failed, silent, withdrawal.ErrProviderHasIt},
		{"failed: had it, not found just now", rev(inp, at(0)), failed, said(payout.StateNotFound), withdrawal.ErrProviderForgot},
		{"failed: had it, not found for just short of a day", rev(inp, at(24*time.Hour-time.Second)), failed, said(payout.StateNotFound), withdrawal.ErrProviderForgot},
		{"failed: had it, not found for a day", rev(inp, at(24*time.Hour)), failed, said(payout.StateNotFound), nil},
		{"failed: had it, not found, no time on record", rev(inp, nil), failed, said(payout.StateNotFound), withdrawal.ErrProviderForgot},
		{"failed: unknown, not found now", rev(unk, at(time.Hour)), failed, said(payout.StateNotFound), nil},
		{"failed: unknown, no answer", rev(unk, at(48*time.Hour)), failed, silent, withdrawal.ErrProviderUnreachable},
		{"failed: never taken, no answer", rev(nt, nil), failed, silent, nil},
		{"failed: failed on record and now", rev(withdrawal.ProviderFailed, nil), failed, said(payout.StateFailed), nil},
	} {
		err := withdrawal.DecideClose(tc.w, tc.to, tc.h, p, now)
		if err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if !errors.Is(withdrawal.ErrPaidUnconfirmed, withdrawal.ErrProviderNotPaid) || !errors.Is(withdrawal.ErrProviderForgot, withdrawal.ErrProviderHasIt) {
		t.Error("the new refusals are not the ones the admin's page shows")
	}
	// In progress after "transferred": the word is kept (written again),
	// which ends the count of an earlier contradiction.
	if d := withdrawal.DecideStatus(rev(tr, at(time.Hour)), payout.Status{State: payout.StateInProgress}, p, now); d.State != withdrawal.ProviderTransferred || d.To != "" || d.Lost {
		t.Errorf("in progress after transferred: %+v, want the word transferred kept, no move", d)
	}
	// Not found after it had it: the time it has not known it counts
	// (Lost), in review as on the move there.
	for _, w := range []withdrawal.Withdrawal{rev(inp, nil), rev(tr, nil), {Status: withdrawal.StatusSubmitted, ProviderState: inp}} {
		if d := withdrawal.DecideStatus(w, payout.Status{State: payout.StateNotFound}, p, now); !d.Lost || d.State != "" ||
			d.Contradiction != withdrawal.ContradictionNotFound {
			t.Errorf("%s/%s, not found: %+v", w.Status, w.ProviderState, d)
		}
	}
	// Failed after "transferred": counted too, and told apart from "not
	// found" (the page's offer of a close as failed, FailMayGo).
	if d := withdrawal.DecideStatus(rev(tr, nil), payout.Status{State: payout.StateFailed}, p, now); !d.Lost || d.State != "" ||
		d.Contradiction != withdrawal.ContradictionFailed {
		t.Errorf("transferred, failed: %+v", d)
	}
	// The page offers close as failed only where DecideClose may allow
	// it: after "transferred", only once "failed" was its last
	// contradiction (or none recorded, a row from before it was kept).
	by := func(w withdrawal.Withdrawal, c withdrawal.Contradiction) withdrawal.Withdrawal {
		w.Contradiction = c
		return w
	}
	for _, tc := range []struct {
		name string
		w    withdrawal.Withdrawal
		want bool
	}{
		{"transferred", rev(tr, nil), false},
		{"transferred, then failed", by(rev(tr, at(time.Hour)), withdrawal.ContradictionFailed), true},
		{"transferred, then not found", by(rev(tr, at(time.Hour)), withdrawal.ContradictionNotFound), false},
		{"transferred, contradicted, word not recorded", rev(tr, at(time.Hour)), true},
		{"in progress", rev(inp, nil), true},
		{"in progress, then not found", by(rev(inp, at(time.Hour)), withdrawal.ContradictionNotFound), true},
		{"unknown", rev(unk, at(time.Hour)), true},
		{"submitted", withdrawal.Withdrawal{Status: withdrawal.StatusSubmitted, ProviderState: inp}, false},
	} {
		if got := withdrawal.FailMayGo(tc.w); got != tc.want {
			t.Errorf("FailMayGo, %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if d := withdrawal.DecideStatus(rev(unk, at(time.Hour)), payout.Status{State: payout.StateNotFound}, p, now); d.Lost {
		t.Errorf("unknown, not found: %+v", d)
	}
}
