package withdrawal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// An admin's close judges the provider's word now, not the word on the
// row. A payout the provider said it transferred for another amount (in
// review, its word "transferred" recorded) and now says it failed: the
// close as failed goes through once that "failed" has stood for
// WITHDRAWAL_UNKNOWN_REVIEW_AFTER (it was refused for ever:
// ErrProviderPaid, the amount held; believed at once, a stale or flapping
// inquiry would pay it twice), and the close as paid is refused (it captured
// the hold for money that never reached the user). The close as paid
// asks the provider first, and needs its "transferred" now: no answer,
// in progress or not found refuse it too.
func TestAdminCloseJudgesTheProvidersWordNow(t *testing.T) {
	const rials = 1_500_000
	for _, tc := range []struct {
		name    string
		word    func(s *worded)
		pay     bool // AdminPay, else AdminFail
		wantErr error
		status  withdrawal.Status
		posted  int64
		held    int64
		state   withdrawal.ProviderState // the provider's word on the row after
		reason  withdrawal.Reason        // the admin's move's reason ("": no move)
		after   time.Duration            // how long after the worker heard the word the admin closes
	}{
		{"failed now, closed as failed at once", func(s *worded) { s.state = payout.StateFailed }, false, withdrawal.ErrFailedAfterTransferred,
			withdrawal.StatusNeedsReview, 50_000_000, rials, withdrawal.ProviderTransferred, "", 0},
		{"failed for a day, closed as failed", func(s *worded) { s.state = payout.StateFailed }, false, nil,
			withdrawal.StatusFailed, 50_000_000, 0, withdrawal.ProviderFailed, withdrawal.ReasonClosedByAdmin, 25 * time.Hour},
		{"failed now, closed as paid", func(s *worded) { s.state = payout.StateFailed }, true, withdrawal.ErrPaidUnconfirmed,
			withdrawal.StatusNeedsReview, 50_000_000, rials, withdrawal.ProviderTransferred, "", 0},
		{"in progress now, closed as paid", func(s *worded) { s.state = payout.StateInProgress }, true, withdrawal.ErrPaidUnconfirmed,
			withdrawal.StatusNeedsReview, 50_000_000, rials, withdrawal.ProviderTransferred, "", 0},
		{"not found now, closed as paid", func(s *worded) { s.state = payout.StateNotFound }, true, withdrawal.ErrPaidUnconfirmed,
			withdrawal.StatusNeedsReview, 50_000_000, rials, withdrawal.ProviderTransferred, "", 0},
		{"no answer, closed as paid", func(s *worded) { s.statusErr = errors.New("connection reset") }, true, withdrawal.ErrPaidUnconfirmed,
			withdrawal.StatusNeedsReview, 50_000_000, rials, withdrawal.ProviderTransferred, "", 0},
		{"not found now, closed as failed", func(s *worded) { s.state = payout.StateNotFound }, false, withdrawal.ErrProviderPaid,
			withdrawal.StatusNeedsReview, 50_000_000, rials, withdrawal.ProviderTransferred, "", 0},
		{"no answer, closed as failed", func(s *worded) { s.statusErr = errors.New("connection reset") }, false, withdrawal.ErrProviderPaid,
			withdrawal.StatusNeedsReview, 50_000_000, rials, withdrawal.ProviderTransferred, "", 0},
		{"transferred now, closed as paid", func(s *worded) { s.paidRials = rials + 10 }, true, nil,
			withdrawal.StatusPaid, 50_000_000 - rials, 0, withdrawal.ProviderTransferred, withdrawal.ReasonPaidByAdmin, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db, "jibit")
				s := e.withWorded("jibit")
				admin, _ := withdrawaltest.User(t, db, "admin@example.com")
				w := e.transferredForAnotherAmount(s, rials)
				tc.word(s)
				// The worker hears it too: a contradiction it only logs.
				e.round(time.Hour)
				if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.ProviderState != withdrawal.ProviderTransferred {
					t.Fatalf("after the worker heard the provider: %+v", w)
				}
				// Its contradicting word is recorded: the admin's page
				// offers a close as failed after "failed", never after
				// "not found" (refused at every press).
				word := map[payout.State]withdrawal.Contradiction{payout.StateFailed: withdrawal.ContradictionFailed,
					payout.StateNotFound: withdrawal.ContradictionNotFound}[s.state]
				if s.statusErr != nil {
					word = withdrawal.ContradictionNone
				}
				if w.Contradiction != word || (w.UnknownSince != nil) != (word != "") ||
					withdrawal.FailMayGo(w) != (word == withdrawal.ContradictionFailed) {
					t.Fatalf("the contradiction recorded: %q since %v (offered %v), want %q", w.Contradiction, w.UnknownSince, withdrawal.FailMayGo(w), word)
				}
				if tc.after > 0 {
					e.round(tc.after)
					if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.ProviderState != withdrawal.ProviderTransferred {
						t.Fatalf("%v after the worker heard the provider: %+v", tc.after, w)
					}
				}
				events := len(withdrawaltest.Events(t, db, w.ID))
				act, action := e.svc.AdminFail, "withdrawal_fail"
				if tc.pay {
					act, action = e.svc.AdminPay, "withdrawal_paid"
				}
				got, err := act(ctx, admin, w.PublicID, "checked the provider's panel")
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Fatalf("close: %v, want %v", err, tc.wantErr)
				}
				if errors.Is(err, withdrawal.ErrPaidUnconfirmed) && !errors.Is(err, withdrawal.ErrProviderNotPaid) {
					t.Fatalf("%v is not ErrProviderNotPaid: the admin's page would not say why", err)
				}
				r := e.get(w)
				if r.Status != tc.status || got.Status != tc.status || r.ProviderState != tc.state || r.LeaseOwner != "" {
					t.Fatalf("after the close: %+v (returned %s), want %s, word %s, no lease", r, got.Status, tc.status, tc.state)
				}
				e.wantWallet(tc.posted, tc.held)
				evs := withdrawaltest.Events(t, db, w.ID)
				wantAudit := int64(0)
				if tc.reason != "" {
					wantAudit = 1
					last := evs[len(evs)-1]
					if len(evs) != events+1 || last.Actor != withdrawal.ActorAdmin || last.ToStatus != tc.status || last.Reason != tc.reason {
						t.Fatalf("events %+v, want one more: the admin's to %s (%s)", evs, tc.status, tc.reason)
					}
				} else if len(evs) != events {
					t.Fatalf("events %+v after a refused close, want %d", evs, events)
				}
				if n := withdrawaltest.AuditActions(t, db, action); n != wantAudit {
					t.Fatalf("%d audit rows of %s, want %d", n, action, wantAudit)
				}
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}

// A payout the provider had (in progress) and now does not know is not
// failed by an admin at once: an inquiry that forgets payouts once they
// leave its queue would have its amount released while it pays it.
// The fail waits until the provider has not known it for
// UnknownReviewAfter (a day here), counted from the first time it was
// heard not to know it (by the worker or by the admin's own question),
// and counted again when the provider knows it in between.
func TestAdminFailOfAPayoutTheProviderForgot(t *testing.T) {
	const rials = 1_500_000
	type step struct {
		advance time.Duration
		state   payout.State // the provider's word ("": the sandbox's, in progress)
		want    error        // the admin's fail
	}
	forgot, has := withdrawal.ErrProviderForgot, withdrawal.ErrProviderHasIt
	for _, tc := range []struct {
		name string
		// workerFirst: the worker heard "not found" first (submitted →
		// needs_review, a contradiction); else an admin's review of a
		// payout in progress.
		workerFirst bool
		steps       []step
	}{
		{"not known since the admin asked", false, []step{
			{0, payout.StateNotFound, forgot},
			{24*time.Hour - time.Second, payout.StateNotFound, forgot},
			{time.Second, payout.StateNotFound, nil},
		}},
		{"not known since the worker asked", true, []step{
			{0, payout.StateNotFound, forgot},
			{23 * time.Hour, payout.StateNotFound, forgot},
			{time.Hour, payout.StateNotFound, nil},
		}},
		{"known again in between", false, []step{
			{0, payout.StateNotFound, forgot},
			{20 * time.Hour, "", has},
			{time.Hour, payout.StateNotFound, forgot},
			{20 * time.Hour, payout.StateNotFound, forgot},
			{4 * time.Hour, payout.StateNotFound, nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db, "jibit")
				s := e.withWorded("jibit")
				admin, _ := withdrawaltest.User(t, db, "admin@example.com")
				w := e.request(rials)
				e.round(time.Second)
				if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderInProgress {
					t.Fatalf("submitted: %+v", w)
				}
				if tc.workerFirst {
					s.state = payout.StateNotFound
					e.round(time.Minute)
					if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.StatusReason != string(withdrawal.ReasonContradiction) {
						t.Fatalf("not found after in progress: %+v", w)
					}
				} else {
					withdrawaltest.ForceNeedsReview(t, db, w.PublicID)
				}
				for i, st := range tc.steps {
					e.clock.Advance(st.advance)
					s.state = st.state
					got, err := e.svc.AdminFail(ctx, admin, w.PublicID, "the panel has no such payout")
					if !errors.Is(err, st.want) || (st.want == nil) != (err == nil) || (st.want != forgot && errors.Is(err, forgot)) {
						t.Fatalf("step %d: %v, want %v", i, err, st.want)
					}
					r := e.get(w)
					if st.want != nil {
						if r.Status != withdrawal.StatusNeedsReview || r.ProviderState != withdrawal.ProviderInProgress || r.LeaseOwner != "" {
							t.Fatalf("step %d, refused: %+v", i, r)
						}
						// Its word recorded with the count, cleared with it
						// when it knows the payout again.
						if word := map[bool]withdrawal.Contradiction{true: withdrawal.ContradictionNotFound}[st.state == payout.StateNotFound]; r.Contradiction != word ||
							(r.UnknownSince != nil) != (word != "") {
							t.Fatalf("step %d: contradiction %q since %v, want %q", i, r.Contradiction, r.UnknownSince, word)
						}
						e.wantWallet(50_000_000, rials)
						if n := withdrawaltest.AuditActions(t, db, "withdrawal_fail"); n != 0 {
							t.Fatalf("step %d: %d audit rows of a refused fail", i, n)
						}
						continue
					}
					if r.Status != withdrawal.StatusFailed || got.Status != withdrawal.StatusFailed {
						t.Fatalf("step %d: %+v", i, r)
					}
				}
				e.wantWallet(50_000_000, 0)
				evs := withdrawaltest.Events(t, db, w.ID)
				if last := evs[len(evs)-1]; last.Actor != withdrawal.ActorAdmin || last.ToStatus != withdrawal.StatusFailed || last.Reason != withdrawal.ReasonClosedByAdmin {
					t.Fatalf("the close's event %+v", last)
				}
				if n := withdrawaltest.AuditActions(t, db, "withdrawal_fail"); n != 1 {
					t.Fatalf("%d audit rows of the fail, want 1", n)
				}
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}

// A "failed" after days of "not found" (both contradicting an older
// "transferred") is counted on its own: the close as failed waits until
// the "failed" itself has stood for UnknownReviewAfter, never going at
// once on the older count of "not found" (a flapping inquiry believed at
// once would pay the amount twice).
func TestFailedAfterNotFoundCountsAgain(t *testing.T) {
	const rials = 1_500_000
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		s := e.withWorded("jibit")
		admin, _ := withdrawaltest.User(t, db, "admin@example.com")
		w := e.transferredForAnotherAmount(s, rials)
		s.state = payout.StateNotFound
		e.round(time.Hour)
		w = e.get(w)
		if w.Contradiction != withdrawal.ContradictionNotFound || w.UnknownSince == nil {
			t.Fatalf("not found: contradiction %q since %v", w.Contradiction, w.UnknownSince)
		}
		notFoundSince := *w.UnknownSince
		e.round(48 * time.Hour)
		s.state = payout.StateFailed
		e.round(time.Hour)
		w = e.get(w)
		if w.Contradiction != withdrawal.ContradictionFailed || w.UnknownSince == nil || !w.UnknownSince.After(notFoundSince) {
			t.Fatalf("failed after not found: contradiction %q since %v, want failed counted again after %v", w.Contradiction, w.UnknownSince, notFoundSince)
		}
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "checked the provider's panel"); !errors.Is(err, withdrawal.ErrFailedAfterTransferred) {
			t.Fatalf("close as failed on a fresh failed: %v, want ErrFailedAfterTransferred", err)
		}
		e.wantWallet(50_000_000, rials)
		e.round(25 * time.Hour)
		if _, err := e.svc.AdminFail(ctx, admin, w.PublicID, "checked the provider's panel"); err != nil {
			t.Fatalf("close as failed after its failed stood a day: %v", err)
		}
		e.wantWallet(50_000_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}

// A count of "not found" from before migration 00058 (no word recorded)
// goes on when the worker hears "not found" again: the word is recorded,
// its time kept, and the admin's close of the forgotten payout waits no
// longer than it would have.
func TestNotFoundCountFromBeforeTheWordGoesOn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		w := e.sentInProgress(1_500_000)
		since := e.clock.Now().Add(-72 * time.Hour).UTC().Truncate(time.Second)
		withdrawaltest.ForceContradicted(t, db, w.PublicID, since)
		e.dropFromBook(w.PublicID)
		e.round(time.Hour)
		w = e.get(w)
		if w.Contradiction != withdrawal.ContradictionNotFound || w.UnknownSince == nil || !w.UnknownSince.Equal(since) {
			t.Fatalf("not found again: contradiction %q since %v, want not_found since %v (the count going on)", w.Contradiction, w.UnknownSince, since)
		}
	})
}

// transferredForAnotherAmount is a withdrawal of rials that the worded
// provider s said it transferred for another amount: under review, the
// word "transferred" on the row; s then answers with its state again.
func (e *env) transferredForAnotherAmount(s *worded, rials int64) withdrawal.Withdrawal {
	e.t.Helper()
	w := e.request(rials)
	e.round(time.Second)
	s.paidRials = rials + 10
	e.round(time.Minute)
	if w = e.get(w); w.Status != withdrawal.StatusNeedsReview || w.ProviderState != withdrawal.ProviderTransferred {
		e.t.Fatalf("transferred for another amount: %+v", w)
	}
	s.paidRials = 0
	return w
}
