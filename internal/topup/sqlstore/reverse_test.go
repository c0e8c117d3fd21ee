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

// A reversing payment goes back to settling (its reverse refused as
// settled) only when it is reversing because its settle was refused and
// carries the bank's verified facts for its own amount: Move's UPDATE is
// conditional on both, so that the next settle credits those facts. Its
// reverse's intent is dropped with the move (the credit refuses a payment
// whose intent stands), and the credit then takes it, once.
func TestBackToSettlingOnlyVerifiedSettleRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		move := func(p topup.TopUp, to topup.Status, reason topup.Reason, tok string, fields topup.Fields) (topup.TopUp, error) {
			code := 45
			return f.st.Move(ctx, topup.Move{TopUpID: p.ID, PublicID: p.PublicID, From: p.Status, To: to, Actor: topup.ActorWorker,
				Reason: reason, GatewayCode: &code, Lease: tok, Now: f.now, Fields: fields})
		}
		// reversing sets up a reversing payment with its reverse's
		// intent: reason, and the verified facts (ref 0: none; amount
		// the verified amount).
		reversing := func(reason topup.Reason, ref, amount int64) topup.TopUp {
			p := f.topUp(topup.StatusPendingVerification)
			tok := f.claim(p.ID, []topup.Status{p.Status})
			fields := topup.Fields{VerifiedAmountRials: &amount}
			if ref != 0 {
				fields.RefID = &ref
			}
			p, err := move(p, topup.StatusSettling, topup.ReasonVerifiedPaid, tok, fields)
			if err != nil {
				t.Fatal(err)
			}
			tok = f.claim(p.ID, []topup.Status{topup.StatusSettling})
			if p, err = move(p, topup.StatusReversing, reason, tok, topup.Fields{}); err != nil {
				t.Fatal(err)
			}
			tok = f.claim(p.ID, []topup.Status{topup.StatusReversing})
			if p, err = f.st.MarkReverseSent(ctx, p.ID, tok, f.now); err != nil {
				t.Fatal(err)
			}
			p.LeaseOwner = tok
			return p
		}
		ref := 9100 + seq.Add(1)
		for _, tt := range []struct {
			name   string
			reason topup.Reason
			ref    int64
			amount int64
		}{
			{"reversing for a reference reused", topup.ReasonRefIDReused, ref, 50_000},
			{"reversing for another amount", topup.ReasonAmountMismatch, ref + 1, 50_000},
			{"settle refused without a reference", topup.ReasonSettleRefused, 0, 50_000},
			{"settle refused, another amount verified", topup.ReasonSettleRefused, ref + 2, 40_000},
		} {
			p := reversing(tt.reason, tt.ref, tt.amount)
			if _, err := move(p, topup.StatusSettling, topup.ReasonSettled, p.LeaseOwner, topup.Fields{ClearReverseSent: true}); !errors.Is(err, topup.ErrNotMoved) {
				t.Errorf("%s: back to settling: %v, want ErrNotMoved", tt.name, err)
			}
			if got, _ := f.st.Get(ctx, p.ID); got.Status != topup.StatusReversing || got.ReverseSentAt == nil || len(f.events(p.ID)) != 4 {
				t.Errorf("%s: after the refused move: %+v, want reversing with its intent, no event", tt.name, got)
			}
		}

		p := reversing(topup.ReasonSettleRefused, ref+3, 50_000)
		// Without the lease, nothing.
		if _, err := move(p, topup.StatusSettling, topup.ReasonSettled, "not-the-holder", topup.Fields{ClearReverseSent: true}); !errors.Is(err, topup.ErrNotMoved) {
			t.Fatalf("without the lease: %v, want ErrNotMoved", err)
		}
		next := f.now.Add(20 * time.Second)
		got, err := move(p, topup.StatusSettling, topup.ReasonSettled, p.LeaseOwner, topup.Fields{ClearReverseSent: true, NextCheckAt: &next})
		if err != nil || got.Status != topup.StatusSettling || got.ReverseSentAt != nil || got.LeaseOwner != "" || got.ResolvedAt != nil ||
			got.NextCheckAt == nil || !got.NextCheckAt.Equal(next) {
			t.Fatalf("back to settling: %+v, %v", got, err)
		}
		evs := f.events(p.ID)
		if last := evs[len(evs)-1]; last.FromStatus != topup.StatusReversing || last.ToStatus != topup.StatusSettling ||
			last.Reason != topup.ReasonSettled || last.GatewayCode == nil || *last.GatewayCode != 45 {
			t.Fatalf("event %+v", last)
		}
		amount, r := got.AmountRials, ref+3
		out, was, err := f.st.Credit(ctx, topup.Move{TopUpID: p.ID, PublicID: p.PublicID, From: topup.StatusSettling, To: topup.StatusCredited,
			Actor: topup.ActorWorker, Reason: topup.ReasonSettled, Now: f.now,
			Fields: topup.Fields{RefID: &r, VerifiedAmountRials: &amount}}, f.wallet.ID, nil)
		if err != nil || was != topup.StatusSettling || out.Status != topup.StatusCredited {
			t.Fatalf("credit after settling again: %+v, %s, %v", out, was, err)
		}
		if _, _, err := f.st.Credit(ctx, topup.Move{TopUpID: p.ID, PublicID: p.PublicID, From: topup.StatusSettling, To: topup.StatusCredited,
			Actor: topup.ActorWorker, Reason: topup.ReasonSettled, Now: f.now,
			Fields: topup.Fields{RefID: &r, VerifiedAmountRials: &amount}}, f.wallet.ID, nil); err == nil {
			t.Fatal("credited twice")
		}
	})
}
