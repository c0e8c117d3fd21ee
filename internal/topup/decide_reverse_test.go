package topup_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/topup"
)

// allStatuses is every status a payment can have.
var allStatuses = []topup.Status{topup.StatusCreated, topup.StatusAwaitingPayment, topup.StatusPendingVerification,
	topup.StatusSettling, topup.StatusReversing, topup.StatusCredited, topup.StatusFailed, topup.StatusNeedsReview}

// A verified payment that cannot be credited is reversed, exactly once:
// at a gateway that reverses (CanReverse) within its window, the check,
// the settle and a reused reference move it to reversing (the worker
// sends the reverse at once: next check now); elsewhere, past the window
// or without a receipt to name, it goes to review as before. The
// worker's turn (StepReverse) sends the reverse only with no intent
// standing, settles a lost answer by the bank's record, and resends only
// on the record's proof, long after the call could land. Nothing
// reopens or credits it. Every row's edge counts for
// TestDecideReachesEveryEdge.
func testDecideReverse(t *testing.T, l *edgeLog) {
	rr := rules
	rr.ReverseWindow, rr.ReverseLands = 50*time.Minute, 2*time.Minute
	receipt := "GmshtyjwKSu3hdpXS2YbIK7uD1r5Rf"
	open := func(st topup.Status) topup.TopUp {
		return topup.TopUp{ID: 1, AmountRials: 50_000, Status: st, CreatedAt: t0.Add(-10 * time.Minute), Receipt: &receipt, Authority: ptr("tok")}
	}

	t.Run("check", func(t *testing.T) {
		answers := []struct {
			name   string
			verify gateway.VerifyResult
			reason topup.Reason
		}{
			{"paid another amount", gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, RefID: 7003, AmountRials: 40_000}, topup.ReasonAmountMismatch},
			{"amount mismatch (SEP: verified another amount)", gateway.VerifyResult{Outcome: gateway.VerifyAmountMismatch, Code: 0}, topup.ReasonAmountMismatch},
			{"paid without reference (no RRN)", gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, AmountRials: 50_000}, topup.ReasonNoRefID},
			{"fresh success on a receipt alone", gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, RefID: 7005, AmountRials: 50_000, ReceiptAlone: true}, topup.ReasonReceiptUnconfirmed},
		}
		for _, a := range answers {
			for _, st := range allStatuses {
				p := open(st)
				for _, lost := range []bool{false, true} {
					in := topup.Input{Step: topup.StepCheck, Actor: topup.ActorCallback, TopUp: p, Now: t0, Rules: rr, Verify: a.verify,
						CanReverse: true, LeaseLost: lost}
					d := topup.Decide(in)
					name := fmt.Sprintf("%s from %s (lease lost %v)", a.name, st, lost)
					switch {
					case lost:
						if d.Action != topup.ActionNone {
							t.Errorf("%s: %+v, want nothing written", name, d)
						}
					case st == topup.StatusAwaitingPayment || st == topup.StatusPendingVerification || st == topup.StatusSettling:
						// settling: verified again (its facts predate 00018),
						// never settled: reversed before settle.
						if d.Action != topup.ActionMove || d.To != topup.StatusReversing || d.Reason != a.reason ||
							d.NextCheckAt == nil || !d.NextCheckAt.Equal(t0) || d.ClearReceipt || !d.Checked {
							t.Errorf("%s: %+v, want reversing (%s), the worker due now, the receipt kept", name, d, a.reason)
						}
						l.took(t, st, d, topup.ActorCallback)
						l.took(t, st, d, topup.ActorWorker)
					case d.To == topup.StatusReversing || d.Action == topup.ActionCredit:
						t.Errorf("%s: %+v: only an open payment becomes reversing, and none is credited", name, d)
					}
					// Not reversible: review, as before.
					for _, why := range []struct {
						name string
						in   topup.Input
					}{
						{"gateway cannot reverse", func() topup.Input { x := in; x.CanReverse = false; return x }()},
						{"no window", func() topup.Input { x := in; x.Rules.ReverseWindow = 0; return x }()},
						{"window closed", func() topup.Input { x := in; x.Now = p.CreatedAt.Add(45 * time.Minute); return x }()},
						{"no receipt to name", func() topup.Input { x := in; x.TopUp.Receipt = nil; return x }()},
					} {
						d := topup.Decide(why.in)
						if d.To == topup.StatusReversing || d.Action == topup.ActionCredit {
							t.Errorf("%s, %s: %+v, want no reverse", name, why.name, d)
						}
						if !lost && (st == topup.StatusAwaitingPayment || st == topup.StatusPendingVerification || st == topup.StatusSettling) &&
							(d.Action != topup.ActionMove || d.To != topup.StatusNeedsReview || d.Reason != a.reason) {
							t.Errorf("%s, %s: %+v, want review (%s)", name, why.name, d, a.reason)
						}
					}
				}
			}
		}
		// The window counts from the top-up's creation less the margin.
		p := open(topup.StatusPendingVerification)
		until := topup.ReverseUntil(p, rr)
		if want := p.CreatedAt.Add(50*time.Minute - topup.ReverseMargin); !until.Equal(want) {
			t.Errorf("ReverseUntil = %v, want %v", until, want)
		}
		if got := topup.ReverseUntil(p, rules); !got.IsZero() {
			t.Errorf("ReverseUntil without a window = %v, want zero", got)
		}
		// A payment credited as usual is never reversed.
		paid := gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, RefID: 7001, AmountRials: 50_000}
		if d := topup.Decide(topup.Input{Step: topup.StepCheck, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rr, Verify: paid, CanReverse: true}); d.Action != topup.ActionCredit {
			t.Errorf("paid: %+v, want credit", d)
		}
	})

	t.Run("settle", func(t *testing.T) {
		ref, amount := int64(9001), int64(50_000)
		for _, st := range allStatuses {
			p := open(st)
			p.RefID, p.VerifiedAmountRials = &ref, &amount
			for _, tt := range []struct {
				name   string
				settle gateway.SettleResult
				can    bool
				to     topup.Status
				reason topup.Reason
			}{
				{"refused, reversible", gateway.SettleResult{Outcome: gateway.SettleRefused, Code: 46}, true, topup.StatusReversing, topup.ReasonSettleRefused},
				{"refused, no reverse", gateway.SettleResult{Outcome: gateway.SettleRefused, Code: 46}, false, topup.StatusNeedsReview, topup.ReasonSettleRefused},
				{"reversed by the bank (48)", gateway.SettleResult{Outcome: gateway.SettleReversed, Code: 48}, true, topup.StatusFailed, topup.ReasonBankReversed},
			} {
				d := topup.Decide(topup.Input{Step: topup.StepSettle, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rr, NeedsSettle: true,
					Settle: tt.settle, CanReverse: tt.can})
				if st != topup.StatusSettling {
					if d.Action != topup.ActionNone {
						t.Errorf("%s from %s: %+v, want nothing", tt.name, st, d)
					}
					continue
				}
				if d.Action != topup.ActionMove || d.To != tt.to || d.Reason != tt.reason {
					t.Errorf("%s: %+v, want %s (%s)", tt.name, d, tt.to, tt.reason)
				}
				if tt.to == topup.StatusReversing && (d.NextCheckAt == nil || !d.NextCheckAt.Equal(t0)) {
					t.Errorf("%s: next check %v, want now", tt.name, d.NextCheckAt)
				}
				l.took(t, st, d, topup.ActorWorker)
			}
		}
	})

	t.Run("reference reused", func(t *testing.T) {
		for _, st := range allStatuses {
			for _, lost := range []bool{false, true} {
				d := topup.Decide(topup.Input{Step: topup.StepRefReused, Actor: topup.ActorReconcile, TopUp: open(st), Now: t0, Rules: rr,
					CanReverse: true, LeaseLost: lost})
				switch {
				case st.Terminal() && st != topup.StatusFailed && st != topup.StatusNeedsReview, st == topup.StatusReversing, st == topup.StatusCreated:
					if d.Action != topup.ActionNone {
						t.Errorf("%s (lost %v): %+v, want nothing", st, lost, d)
					}
				case st == topup.StatusFailed:
					if d.To != topup.StatusNeedsReview {
						t.Errorf("failed: %+v, want review (never reversing without the lease)", d)
					}
				case (st == topup.StatusAwaitingPayment || st == topup.StatusPendingVerification || st == topup.StatusSettling) && !lost:
					if d.Action != topup.ActionMove || d.To != topup.StatusReversing || d.Reason != topup.ReasonRefIDReused {
						t.Errorf("%s: %+v, want reversing (ref_id_reused)", st, d)
					}
					l.took(t, st, d, topup.ActorReconcile)
				}
			}
		}
	})

	t.Run("worker's turn", func(t *testing.T) {
		sent := t0.Add(-time.Minute)
		rejected := &gateway.RejectedError{Op: "reverse", Code: -6, Message: "too late"}
		transient := &gateway.TransientError{Op: "reverse", HTTPStatus: 504, Err: errors.New("time-out")}
		notSent := fmt.Errorf("sep: %w", gateway.ErrUnavailable)
		for _, st := range allStatuses {
			for _, tt := range []struct {
				name      string
				p         func(topup.TopUp) topup.TopUp
				in        func(topup.Input) topup.Input
				action    topup.Action
				to        topup.Status
				reason    topup.Reason
				clearSent bool
				next      time.Time
			}{
				{"not sent, window open", nil, nil, topup.ActionReverse, "", "", false, time.Time{}},
				{"not sent, window closed", nil, func(in topup.Input) topup.Input { in.Now = t0.Add(40 * time.Minute); return in },
					topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseClosed, false, time.Time{}},
				{"not sent, the gateway can no longer", nil, func(in topup.Input) topup.Input { in.CanReverse = false; return in },
					topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseClosed, false, time.Time{}},
				{"answer: accepted", withSent(t0), func(in topup.Input) topup.Input { in.ReverseSent = true; return in },
					topup.ActionMove, topup.StatusFailed, topup.ReasonReversedToCard, false, time.Time{}},
				{"answer: refused", withSent(t0), func(in topup.Input) topup.Input { in.ReverseSent, in.ReverseErr = true, rejected; return in },
					topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, false, time.Time{}},
				{"answer: lost", withSent(t0), func(in topup.Input) topup.Input { in.ReverseSent, in.ReverseErr = true, transient; return in },
					topup.ActionKeep, topup.StatusReversing, "", false, t0.Add(recheck)},
				{"answer: certainly not sent", withSent(t0), func(in topup.Input) topup.Input { in.ReverseSent, in.ReverseErr = true, notSent; return in },
					topup.ActionKeep, topup.StatusReversing, "", true, t0.Add(recheck)},
				{"sent, the record not asked", withSent(sent), nil, topup.ActionNone, "", "", false, time.Time{}},
				{"record: reversed", withSent(sent), look(gateway.RefundState{Outcome: gateway.RefundDone, Code: 5}, nil),
					topup.ActionMove, topup.StatusFailed, topup.ReasonReversedToCard, false, time.Time{}},
				{"record: differs", withSent(sent), look(gateway.RefundState{Outcome: gateway.RefundDiffers, Code: -6}, nil),
					topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseDiffers, false, time.Time{}},
				{"record: standing, the call may still land", withSent(sent), look(gateway.RefundState{Outcome: gateway.RefundNotDone, Code: 2}, nil),
					topup.ActionKeep, topup.StatusReversing, "", false, sent.Add(2 * time.Minute)},
				{"record: standing, long after the call", withSent(t0.Add(-5 * time.Minute)), look(gateway.RefundState{Outcome: gateway.RefundNotDone, Code: 2}, nil),
					topup.ActionKeep, topup.StatusReversing, "", true, t0},
				{"record: error", withSent(sent), look(gateway.RefundState{}, transient),
					topup.ActionKeep, topup.StatusReversing, "", false, t0.Add(recheck)},
				{"record: error past MaxUnknown", withSent(t0.Add(-3 * time.Hour)), look(gateway.RefundState{}, transient),
					topup.ActionMove, topup.StatusNeedsReview, topup.ReasonUnknownTooLong, false, time.Time{}},
			} {
				p := open(st)
				if tt.p != nil {
					p = tt.p(p)
				}
				in := topup.Input{Step: topup.StepReverse, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rr, CanReverse: true}
				if tt.in != nil {
					in = tt.in(in)
				}
				d := topup.Decide(in)
				name := fmt.Sprintf("%s, %s", st, tt.name)
				if st != topup.StatusReversing {
					if d.Action != topup.ActionNone {
						t.Errorf("%s: %+v, want nothing: only a reversing payment is reversed", name, d)
					}
					continue
				}
				if d.Action != tt.action || d.To != tt.to || d.Reason != tt.reason || d.ClearReverseSent != tt.clearSent {
					t.Errorf("%s: %+v, want %s %s (%s), clear intent %v", name, d, tt.action, tt.to, tt.reason, tt.clearSent)
				}
				if !tt.next.IsZero() && (d.NextCheckAt == nil || !d.NextCheckAt.Equal(tt.next)) {
					t.Errorf("%s: next check %v, want %v", name, d.NextCheckAt, tt.next)
				}
				l.took(t, st, d, topup.ActorWorker)
				// Only the worker, holding the lease, takes a turn.
				for _, other := range []topup.Actor{topup.ActorCallback, topup.ActorReconcile, topup.ActorAdmin} {
					in := in
					in.Actor = other
					if d := topup.Decide(in); d.Action != topup.ActionNone {
						t.Errorf("%s by %s: %+v, want nothing", name, other, d)
					}
				}
				in.LeaseLost = true
				if d := topup.Decide(in); d.Action != topup.ActionNone {
					t.Errorf("%s, lease lost: %+v, want nothing", name, d)
				}
			}
		}
	})

	t.Run("reverse refused as settled", func(t *testing.T) {
		testReverseRefusedAsSettled(t, l, open(topup.StatusReversing), rr)
	})

	t.Run("never reopened, never credited", func(t *testing.T) {
		ended := []topup.TopUp{}
		for _, r := range []topup.Reason{topup.ReasonReversedToCard, topup.ReasonReverseRefused, topup.ReasonReverseClosed, topup.ReasonReverseDiffers,
			topup.ReasonSettleContradicted} {
			for _, st := range []topup.Status{topup.StatusFailed, topup.StatusNeedsReview} {
				p := open(st)
				p.StatusReason = string(r)
				ended = append(ended, p)
			}
		}
		unknown := open(topup.StatusNeedsReview)
		unknown.StatusReason, unknown.ReverseSentAt = string(topup.ReasonUnknownTooLong), ptr(t0.Add(-3*time.Hour))
		// Closed by an admin after its reverse went out unanswered.
		closed := open(topup.StatusFailed)
		closed.StatusReason, closed.ReverseSentAt = string(topup.ReasonClosedByAdmin), ptr(t0.Add(-3*time.Hour))
		// Closed by an admin (StepClose) from review after its reverse
		// ended it: refused, differing, unknown, and its window closed
		// with the reverse never sent (or its intent dropped on the
		// bank's record that the sale stands): reverse_sent_at NULL.
		reviewed := []topup.TopUp{unknown}
		// And a settle refused after the bank refused the reverse as
		// settled (settle_contradicted: its intent was dropped on the way
		// back to settling, reverse_sent_at NULL).
		for _, r := range []topup.Reason{topup.ReasonReverseRefused, topup.ReasonReverseDiffers, topup.ReasonReverseClosed, topup.ReasonSettleContradicted} {
			p := open(topup.StatusNeedsReview)
			p.StatusReason = string(r)
			if r != topup.ReasonReverseClosed && r != topup.ReasonSettleContradicted {
				p.ReverseSentAt = ptr(t0.Add(-3 * time.Hour))
			}
			reviewed = append(reviewed, p)
		}
		for _, p := range reviewed {
			d := topup.Decide(topup.Input{Step: topup.StepClose, Actor: topup.ActorAdmin, TopUp: p, Now: t0, Rules: rr})
			if d.Action != topup.ActionMove || d.To != topup.StatusFailed {
				t.Fatalf("admin close of %s (%s): %+v", p.Status, p.StatusReason, d)
			}
			l.took(t, p.Status, d, topup.ActorAdmin)
			p.Status, p.StatusReason = d.To, string(d.Reason)
			ended = append(ended, p)
		}
		ended = append(ended, unknown, closed, open(topup.StatusReversing))
		for _, p := range ended {
			if p.Status != topup.StatusReversing && !topup.ReverseEnded(p) {
				// AdminRecheck refuses it (ErrNothingToAsk) on this alone.
				t.Errorf("%s (%s, reverse sent %v): not ReverseEnded", p.Status, p.StatusReason, p.ReverseSentAt != nil)
			}
			for _, a := range []topup.Actor{topup.ActorCallback, topup.ActorReconcile, topup.ActorAdmin, topup.ActorWorker} {
				for _, now := range []bool{false, true} {
					if d := topup.Decide(topup.Input{Step: topup.StepReopen, Actor: a, TopUp: p, Now: t0, Rules: rr, CheckNow: now}); d.Action != topup.ActionNone {
						t.Errorf("%s (%s) reopened by %s: %+v", p.Status, p.StatusReason, a, d)
					}
				}
			}
			cb := topup.Callback{Authority: "tok", Receipt: receipt, Recorded: true, First: true}
			if d := topup.Decide(topup.Input{Step: topup.StepCallback, Actor: topup.ActorCallback, TopUp: p, Now: t0, Rules: rr, Callback: cb}); d.Action != topup.ActionNone {
				t.Errorf("%s (%s): a callback %+v, want the row as the answer", p.Status, p.StatusReason, d)
			}
		}
		if _, err := topup.EdgeNeedsLease(topup.StatusReversing, topup.StatusCredited, topup.ActorWorker); err == nil {
			t.Error("reversing → credited is an edge")
		}
		for _, st := range allStatuses {
			if _, err := topup.EdgeNeedsLease(st, topup.StatusReversing, topup.ActorAdmin); err == nil && st != topup.StatusAwaitingPayment &&
				st != topup.StatusPendingVerification && st != topup.StatusSettling {
				t.Errorf("%s → reversing is an edge", st)
			}
		}
		// A credit that fails on a reversing payment (another actor's
		// verify whose lease ran out) is counted, never retried here.
		d := topup.Decide(topup.Input{Step: topup.StepCreditFailed, Actor: topup.ActorReconcile, TopUp: open(topup.StatusReversing), Now: t0, Rules: rr})
		if d.Action != topup.ActionKeep || d.To != topup.StatusReversing || d.NextCheckAt != nil {
			t.Errorf("credit failed on a reversing payment: %+v", d)
		}
		if topup.StatusReversing.Public() != topup.StatusPendingVerification || topup.StatusReversing.Terminal() {
			t.Error("reversing is pending to payers and partners, and not terminal")
		}
	})
}

func withSent(at time.Time) func(topup.TopUp) topup.TopUp {
	return func(p topup.TopUp) topup.TopUp { p.ReverseSentAt = &at; return p }
}

func look(st gateway.RefundState, err error) func(topup.Input) topup.Input {
	return func(in topup.Input) topup.Input {
		in.ReverseLooked, in.ReverseState, in.ReverseStateErr = true, st, err
		return in
	}
}

// saleSettled is a gateway's refusal that says the sale is settled (as
// Mellat's bpReversalRequest 45 does: SaleSettled), still a
// *gateway.RejectedError to errors.As.
type saleSettled struct{ *gateway.RejectedError }

func (e saleSettled) Unwrap() error     { return e.RejectedError }
func (e saleSettled) SaleSettled() bool { return true }

// settledUnknown says SaleSettled on an answer that is no refusal.
type settledUnknown struct{ *gateway.TransientError }

func (e settledUnknown) Unwrap() error   { return e.TransientError }
func (settledUnknown) SaleSettled() bool { return true }

// A reverse of a payment whose settle was refused, refused by the bank
// because the sale is settled (Mellat 45: two settles raced), sends it
// back to settling — only when it carries the verified facts for its own
// amount (Verified) and its reverse's reason is settle_refused — with the
// intent dropped and the settle asked after the pacing window; every
// other refusal, and that refusal of any other reversing payment, goes to
// review as before. Back in settling, a settle 45 credits the verified
// amount; a settle refused again goes to review, never to a second
// reverse.
func testReverseRefusedAsSettled(t *testing.T, l *edgeLog, base topup.TopUp, rr topup.Rules) {
	ref, amount, other := int64(9001), base.AmountRials, base.AmountRials-1
	settled := saleSettled{&gateway.RejectedError{Op: "reversal", Code: 45, Message: "already settled"}}
	plain45 := &gateway.RejectedError{Op: "reversal", Code: 45, Message: "already settled"}
	refused := &gateway.RejectedError{Op: "reversal", Code: 54, Message: "refused"}
	// SaleSettled on an answer that is no refusal says nothing: unknown.
	unknown := settledUnknown{&gateway.TransientError{Op: "reversal", Err: errors.New("time-out")}}
	verified := func(reason topup.Reason) func(topup.TopUp) topup.TopUp {
		return func(p topup.TopUp) topup.TopUp {
			p.StatusReason, p.RefID, p.VerifiedAmountRials, p.CardPANMasked = string(reason), &ref, &amount, "610433******0003"
			p.ReverseSentAt = ptr(t0)
			return p
		}
	}
	then := func(f, g func(topup.TopUp) topup.TopUp) func(topup.TopUp) topup.TopUp {
		return func(p topup.TopUp) topup.TopUp { return g(f(p)) }
	}
	for _, tt := range []struct {
		name   string
		p      func(topup.TopUp) topup.TopUp
		err    error
		action topup.Action
		to     topup.Status
		reason topup.Reason
		code   int
	}{
		{"settle refused, verified, 45 settled", verified(topup.ReasonSettleRefused), settled,
			topup.ActionMove, topup.StatusSettling, topup.ReasonSettled, 45},
		{"settle refused, verified, 45 settled (wrapped)", verified(topup.ReasonSettleRefused), fmt.Errorf("mellat bpReversalRequest: %w", settled),
			topup.ActionMove, topup.StatusSettling, topup.ReasonSettled, 45},
		{"settle refused, verified, 45 not said to be settled", verified(topup.ReasonSettleRefused), plain45,
			topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, 45},
		{"settle refused, verified, another refusal", verified(topup.ReasonSettleRefused), refused,
			topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, 54},
		{"settle refused, verified, unknown saying settled", verified(topup.ReasonSettleRefused), unknown,
			topup.ActionKeep, topup.StatusReversing, "", 0},
		{"settle refused, no reference", then(verified(topup.ReasonSettleRefused), func(p topup.TopUp) topup.TopUp { p.RefID = nil; return p }), settled,
			topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, 45},
		{"settle refused, another amount verified", then(verified(topup.ReasonSettleRefused), func(p topup.TopUp) topup.TopUp { p.VerifiedAmountRials = &other; return p }), settled,
			topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, 45},
		{"reference reused, 45 settled", verified(topup.ReasonRefIDReused), settled,
			topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, 45},
		{"amount mismatch, 45 settled", verified(topup.ReasonAmountMismatch), settled,
			topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, 45},
		{"no reference, 45 settled", verified(topup.ReasonNoRefID), settled,
			topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, 45},
		{"receipt alone, 45 settled", verified(topup.ReasonReceiptUnconfirmed), settled,
			topup.ActionMove, topup.StatusNeedsReview, topup.ReasonReverseRefused, 45},
	} {
		p := tt.p(base)
		in := topup.Input{Step: topup.StepReverse, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rr, CanReverse: true,
			ReverseSent: true, ReverseErr: tt.err}
		d := topup.Decide(in)
		if d.Action != tt.action || d.To != tt.to || d.Reason != tt.reason || (tt.code != 0 && deref(d.GatewayCode) != tt.code) {
			t.Errorf("%s: %+v, want %s %s (%s, code %d)", tt.name, d, tt.action, tt.to, tt.reason, tt.code)
		}
		back := d.To == topup.StatusSettling
		if back != d.ClearReverseSent {
			t.Errorf("%s: clear intent %v, want it dropped only when back to settling", tt.name, d.ClearReverseSent)
		}
		if back && (d.NextCheckAt == nil || !d.NextCheckAt.Equal(t0.Add(recheck)) || !d.Checked || !d.CountAttempt) {
			t.Errorf("%s: %+v, want the reverse counted and the settle asked after the pacing window", tt.name, d)
		}
		l.took(t, p.Status, d, topup.ActorWorker)
		// Only the worker, holding the lease, on a reversing payment.
		for _, st := range allStatuses {
			x := in
			x.TopUp.Status = st
			if d := topup.Decide(x); st != topup.StatusReversing && d.Action != topup.ActionNone {
				t.Errorf("%s from %s: %+v, want nothing", tt.name, st, d)
			}
		}
		for _, other := range []topup.Actor{topup.ActorCallback, topup.ActorReconcile, topup.ActorAdmin} {
			x := in
			x.Actor = other
			if d := topup.Decide(x); d.Action != topup.ActionNone {
				t.Errorf("%s by %s: %+v, want nothing", tt.name, other, d)
			}
		}
		in.LeaseLost = true
		if d := topup.Decide(in); d.Action != topup.ActionNone {
			t.Errorf("%s, lease lost: %+v, want nothing", tt.name, d)
		}
	}
	if n, err := topup.EdgeNeedsLease(topup.StatusReversing, topup.StatusSettling, topup.ActorWorker); err != nil || !n {
		t.Errorf("reversing → settling: lease %v, %v; want the worker's edge under the lease", n, err)
	}
	for _, a := range []topup.Actor{topup.ActorSubmit, topup.ActorCallback, topup.ActorReconcile, topup.ActorAdmin} {
		if _, err := topup.EdgeNeedsLease(topup.StatusReversing, topup.StatusSettling, a); err == nil {
			t.Errorf("reversing → settling by %s", a)
		}
	}

	// Back in settling (reason settled, the intent dropped): the settle
	// decides, as for any settling payment, except that a refusal goes
	// to review, never reversed again.
	p := verified(topup.ReasonSettled)(base)
	p.Status, p.ReverseSentAt = topup.StatusSettling, nil
	for _, tt := range []struct {
		name   string
		settle gateway.SettleResult
		err    error
		action topup.Action
		to     topup.Status
		reason topup.Reason
	}{
		{"settled before (45)", gateway.SettleResult{Outcome: gateway.SettleAlready, Code: 45}, nil, topup.ActionCredit, topup.StatusCredited, topup.ReasonSettled},
		{"settled (0)", gateway.SettleResult{Outcome: gateway.SettleDone, Code: 0}, nil, topup.ActionCredit, topup.StatusCredited, topup.ReasonSettled},
		{"unknown", gateway.SettleResult{}, &gateway.TransientError{Op: "settle", Err: errors.New("time-out")}, topup.ActionKeep, topup.StatusSettling, ""},
		{"refused again", gateway.SettleResult{Outcome: gateway.SettleRefused, Code: 46}, nil, topup.ActionMove, topup.StatusNeedsReview, topup.ReasonSettleContradicted},
		{"reversed (48)", gateway.SettleResult{Outcome: gateway.SettleReversed, Code: 48}, nil, topup.ActionMove, topup.StatusFailed, topup.ReasonBankReversed},
	} {
		d := topup.Decide(topup.Input{Step: topup.StepSettle, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rr, NeedsSettle: true,
			Settle: tt.settle, SettleErr: tt.err, CanReverse: true})
		if d.Action != tt.action || d.To != tt.to || d.Reason != tt.reason {
			t.Errorf("back in settling, %s: %+v, want %s %s (%s)", tt.name, d, tt.action, tt.to, tt.reason)
		}
		if d.Action == topup.ActionCredit && (d.CreditedRials != amount || d.RefID != ref) {
			t.Errorf("back in settling, %s: credits %d (ref %d), want the verified %d (ref %d)", tt.name, d.CreditedRials, d.RefID, amount, ref)
		}
		l.took(t, p.Status, d, topup.ActorWorker)
	}
}
