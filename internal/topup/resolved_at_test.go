package topup_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// resolved_at is when a payment reached the outcome it shows. A late
// callback reopens an ended payment to ask the bank again; when the bank
// confirms the same outcome (failed again, under review again) the payment
// keeps the time it first got there, however often it is reopened; any
// other end — credited above all — is a new outcome with its own time.
func TestResolvedAtIsWhenTheOutcomeWasReached(t *testing.T) {
	var (
		notPaid  = topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51)
		mismatch = topuptest.VerifyAnswer(gateway.VerifyAmountMismatch, -50)
		failed   = topuptest.Inquiry(gateway.InquiryFailed)
	)
	type step struct {
		verify  topuptest.VerifyFunc
		inquire topuptest.InquireFunc
		want    topup.Status
		// shows is the step whose time resolved_at must be (itself for a
		// new outcome).
		shows int
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"failed, reopened, failed again twice: the first failure's time", []step{
			{notPaid, failed, topup.StatusFailed, 0},
			{notPaid, failed, topup.StatusFailed, 0},
			{notPaid, failed, topup.StatusFailed, 0},
		}},
		{"failed, reopened, credited: when credited", []step{
			{notPaid, failed, topup.StatusFailed, 0},
			{topuptest.Paid(6161), nil, topup.StatusCredited, 1},
		}},
		{"failed twice, then credited: when credited", []step{
			{notPaid, failed, topup.StatusFailed, 0},
			{notPaid, failed, topup.StatusFailed, 0},
			{topuptest.AlreadyVerified(6262), nil, topup.StatusCredited, 2},
		}},
		{"under review, reopened, under review again: the first time", []step{
			{mismatch, nil, topup.StatusNeedsReview, 0},
			{mismatch, nil, topup.StatusNeedsReview, 0},
		}},
		{"under review, reopened, failed: a new outcome", []step{
			{mismatch, nil, topup.StatusNeedsReview, 0},
			{notPaid, failed, topup.StatusFailed, 1},
		}},
		{"failed, under review, failed: each a new outcome", []step{
			{notPaid, failed, topup.StatusFailed, 0},
			{mismatch, nil, topup.StatusNeedsReview, 1},
			{notPaid, failed, topup.StatusFailed, 2},
			{notPaid, failed, topup.StatusFailed, 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db)
				p := e.start(50_000)
				times := make([]time.Time, len(tc.steps))
				for i, st := range tc.steps {
					if i > 0 {
						e.clock.Advance(time.Hour) // a late callback, well past the pacing window
					}
					e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn, f.InquireFn = st.verify, st.inquire })
					got, err := e.back(ctx, p.PublicID, p.AuthorityString())
					if err != nil || got.Status != st.want {
						t.Fatalf("step %d: Return = %s, %v; want %s", i, dump(got), err, st.want)
					}
					r := e.row(p.ID)
					if r.Status != st.want || r.ResolvedAt == nil {
						t.Fatalf("step %d: row %s", i, dump(r))
					}
					times[i] = *r.ResolvedAt
					if want := times[st.shows]; !times[i].Equal(want) {
						t.Errorf("step %d (%s): resolved_at %v, want step %d's %v", i, st.want, times[i], st.shows, want)
					}
					if st.shows == i {
						// A new outcome: the time of its own event, after
						// everything before it.
						evs, err := topuptest.Events(ctx, e.db, p.ID)
						if err != nil {
							t.Fatal(err)
						}
						if last := evs[len(evs)-1]; last.ToStatus != st.want || !last.CreatedAt.Equal(times[i]) {
							t.Errorf("step %d: resolved_at %v, last event %+v", i, times[i], last)
						}
						if i > 0 && !times[i].After(times[i-1]) {
							t.Errorf("step %d: new outcome at %v, not after %v", i, times[i], times[i-1])
						}
					}
				}
				if tc.steps[len(tc.steps)-1].want == topup.StatusCredited {
					e.assertCredited(p, e.row(p.ID).RefIDValue())
				} else {
					e.assertUncredited(p)
				}
				checkInvariants(t, db)
			})
		})
	}
}
