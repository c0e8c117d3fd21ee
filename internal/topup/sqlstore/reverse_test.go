package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
)

// A reversing payment's reverse is sent once: MarkReverseSent writes the
// intent only for the lease holder, only while reversing, only when none
// stands; of many racing holders' tries exactly one wins. The intent is
// dropped (ClearReverseSent) only by a decision that proves nothing was
// made, and a reversing payment is claimed by the worker when due.
func TestMarkReverseSent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		p := f.topUp(topup.StatusPendingVerification)
		tok := f.claim(p.ID, []topup.Status{p.Status})
		now := f.now
		p = f.move(p, topup.StatusReversing, topup.ActorWorker, tok, topup.Fields{NextCheckAt: &now})
		if p.Status != topup.StatusReversing || p.ReverseSentAt != nil {
			t.Fatalf("moved: %+v", p)
		}
		if _, err := f.st.MarkReverseSent(ctx, p.ID, "not-the-holder", f.now); !errors.Is(err, topup.ErrNotMoved) {
			t.Fatalf("without the lease: %v, want ErrNotMoved", err)
		}
		ids, err := f.st.ClaimDue(ctx, topup.DueClaim{Now: f.now, AbandonedBefore: f.now, Until: f.now.Add(time.Minute), Batch: 10})
		if err != nil || len(ids) != 1 || ids[0] != p.ID {
			t.Fatalf("the worker's claim: %v, %v; want the reversing payment", ids, err)
		}
		tok = f.claim(p.ID, []topup.Status{topup.StatusReversing})
		if _, err := f.st.MarkReverseSent(ctx, p.ID, tok, f.now.Add(2*time.Minute)); !errors.Is(err, topup.ErrNotMoved) {
			t.Fatalf("past the lease: %v, want ErrNotMoved", err)
		}
		won := race(8, func(int) bool {
			_, err := f.st.MarkReverseSent(ctx, p.ID, tok, f.now)
			if err != nil && !errors.Is(err, topup.ErrNotMoved) {
				t.Error(err)
			}
			return err == nil
		})
		if won != 1 {
			t.Fatalf("%d intents written, want exactly 1", won)
		}
		got, err := f.st.Get(ctx, p.ID)
		if err != nil || got.ReverseSentAt == nil || !got.ReverseSentAt.Equal(f.now) {
			t.Fatalf("after: %+v, %v", got, err)
		}
		// Kept under the lease, the intent stands; dropped only on purpose.
		got, err = f.st.Release(ctx, p.ID, tok, topup.Fields{})
		if err != nil || got.ReverseSentAt == nil {
			t.Fatalf("release: %+v, %v; want the intent kept", got, err)
		}

		tok = f.claim(p.ID, []topup.Status{topup.StatusReversing})
		if got, err = f.st.Release(ctx, p.ID, tok, topup.Fields{ClearReverseSent: true}); err != nil || got.ReverseSentAt != nil {
			t.Fatalf("release clearing the intent: %+v, %v", got, err)
		}
		// Only a reversing payment takes an intent.
		for _, st := range []topup.Status{topup.StatusPendingVerification, topup.StatusNeedsReview} {
			q := f.topUp(st)
			tok := f.claim(q.ID, []topup.Status{st})
			if _, err := f.st.MarkReverseSent(ctx, q.ID, tok, f.now); !errors.Is(err, topup.ErrNotMoved) {
				t.Errorf("%s: %v, want ErrNotMoved", st, err)
			}
		}
		// Never credited from reversing: no such edge.
		if _, _, err := f.st.Credit(ctx, topup.Move{TopUpID: p.ID, PublicID: p.PublicID, From: topup.StatusReversing, To: topup.StatusCredited,
			Actor: topup.ActorCallback, Reason: "test", Now: f.now}, f.wallet.ID, nil); err == nil {
			t.Error("a reversing payment was credited")
		}
		if got, _ := f.st.Get(ctx, p.ID); got.Status != topup.StatusReversing {
			t.Errorf("after the refused credit: %s", got.Status)
		}
		// Reversed (failed, its intent kept), a verifier whose lease ran
		// out mid-call answers late, from the status it read: failed →
		// credited needs no lease, yet its credit is refused, and the
		// money goes back to the card only.
		r := f.topUp(topup.StatusPendingVerification)
		tok = f.claim(r.ID, []topup.Status{r.Status})
		r = f.move(r, topup.StatusReversing, topup.ActorWorker, tok, topup.Fields{NextCheckAt: &now})
		tok = f.claim(r.ID, []topup.Status{topup.StatusReversing})
		if _, err := f.st.MarkReverseSent(ctx, r.ID, tok, f.now); err != nil {
			t.Fatal(err)
		}
		r = f.move(r, topup.StatusFailed, topup.ActorWorker, tok, topup.Fields{})
		ref, amount := int64(9001), r.AmountRials
		if _, _, err := f.st.Credit(ctx, topup.Move{TopUpID: r.ID, PublicID: r.PublicID, From: topup.StatusPendingVerification, To: topup.StatusCredited,
			Actor: topup.ActorCallback, Reason: topup.ReasonVerifiedPaid, Now: f.now,
			Fields: topup.Fields{RefID: &ref, VerifiedAmountRials: &amount}}, f.wallet.ID, nil); !errors.Is(err, topup.ErrReverseSent) {
			t.Fatalf("a late verifier's credit of a reversed payment: %v, want ErrReverseSent", err)
		}
		if got, _ := f.st.Get(ctx, r.ID); got.Status != topup.StatusFailed {
			t.Errorf("after the refused late credit: %s", got.Status)
		}
		// Brought back to pending_verification (an admin's close, then a
		// reopen), its intent still on the row: the credit's first,
		// unlocked statement from the status it read is refused too.
		tok = f.claim(r.ID, []topup.Status{topup.StatusFailed})
		r = f.move(r, topup.StatusPendingVerification, topup.ActorWorker, tok, topup.Fields{})
		if _, _, err := f.st.Credit(ctx, topup.Move{TopUpID: r.ID, PublicID: r.PublicID, From: topup.StatusPendingVerification, To: topup.StatusCredited,
			Actor: topup.ActorCallback, Reason: topup.ReasonVerifiedPaid, Now: f.now,
			Fields: topup.Fields{RefID: &ref, VerifiedAmountRials: &amount}}, f.wallet.ID, nil); !errors.Is(err, topup.ErrReverseSent) {
			t.Fatalf("a reopened payment whose reverse was sent, credited from the status read: %v, want ErrReverseSent", err)
		}
		if got, _ := f.st.Get(ctx, r.ID); got.Status != topup.StatusPendingVerification {
			t.Errorf("after the refused credit: %s", got.Status)
		}
	})
}
