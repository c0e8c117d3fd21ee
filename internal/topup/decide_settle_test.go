package topup_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/topup"
)

// Settle is a state of ours (Mellat): verify 0 or 43 (with a reference
// and our amount) moves the payment to settling with the verified facts,
// the settle window counting from then; only settle 0 or 45 credits it;
// an unknown settle keeps it settling (asked again after the pacing
// window: settle alone, 45); 48 (reversed) fails it; any other refusal
// goes to review; the settle window (or WORKER_MAX_UNKNOWN, whichever is
// shorter) sends a still unknown one to review. Lease lost: the settle is
// still asked and a settled payment still credited, nothing else is
// written. Every row's edge counts for TestDecideReachesEveryEdge.
func testDecideSettle(t *testing.T, l *edgeLog) {
	paid := gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, RefID: 9001, AmountRials: 50_000, CardPANMasked: "610433******0003"}
	again := gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 43, RefID: 9001, AmountRials: 50_000}
	timeout := &gateway.TransientError{Op: "settle", Err: errors.New("time-out")}
	ref, amount := int64(9001), int64(50_000)
	settling := topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusSettling, CreatedAt: t0.Add(-time.Hour),
		OpenedAt: ptr(t0.Add(-time.Minute)), RefID: &ref, VerifiedAmountRials: &amount, CardPANMasked: "610433******0003"}
	legacy := settling // settling before migration 00018: no facts on the row
	legacy.RefID, legacy.VerifiedAmountRials, legacy.CardPANMasked = nil, nil, ""

	t.Run("verify", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			from   topup.TopUp
			verify gateway.VerifyResult
			reason topup.Reason
		}{
			{"awaiting, verified", topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusAwaitingPayment, CreatedAt: t0.Add(-time.Minute)}, paid, topup.ReasonVerifiedPaid},
			{"awaiting, verified before (43)", topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusAwaitingPayment, CreatedAt: t0.Add(-time.Minute)}, again, topup.ReasonAlreadyVerified},
			{"pending, verified before (43)", topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusPendingVerification, CreatedAt: t0.Add(-time.Minute)}, again, topup.ReasonAlreadyVerified},
			{"pending, settle unknown before 00018", topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusPendingVerification, CreatedAt: t0.Add(-time.Minute),
				StatusReason: string(topup.ReasonSettleUnknown)}, again, topup.ReasonAlreadyVerified},
			{"settling without facts (before 00018), 43", legacy, again, topup.ReasonAlreadyVerified},
		} {
			for _, lost := range []bool{false, true} {
				d := topup.Decide(topup.Input{Step: topup.StepCheck, Actor: topup.ActorCallback, TopUp: tt.from, Now: t0, Rules: rules,
					LeaseLost: lost, Verify: tt.verify, NeedsSettle: true})
				if d.Action != topup.ActionSettle || d.To != topup.StatusSettling || d.Reason != tt.reason || deref(d.GatewayCode) != tt.verify.Code ||
					d.RefID != 9001 || d.CreditedRials != 50_000 || d.CardPANMasked != tt.verify.CardPANMasked || !d.Checked || !d.CountAttempt {
					t.Errorf("%s (lease lost %v): %+v, want settle: to settling with the verified facts", tt.name, lost, d)
				}
				if fresh := tt.from.Status != topup.StatusSettling; fresh != (d.OpenedAt != nil && d.OpenedAt.Equal(t0)) {
					t.Errorf("%s: opened at %v, want now only when it starts settling", tt.name, d.OpenedAt)
				}
				if !lost && tt.from.Status != topup.StatusSettling {
					l.took(t, tt.from.Status, topup.Decision{Action: topup.ActionMove, To: topup.StatusSettling}, topup.ActorCallback)
				}
			}
		}
		// The gateway without settle credits on verify alone; a verify
		// the credit would refuse is never settled.
		p := topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusAwaitingPayment}
		if d := topup.Decide(topup.Input{Step: topup.StepCheck, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules, Verify: paid}); d.Action != topup.ActionCredit {
			t.Errorf("no settle: %+v", d)
		}
		other := paid
		other.AmountRials = 40_000
		if d := topup.Decide(topup.Input{Step: topup.StepCheck, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules, Verify: other, NeedsSettle: true}); d.Action != topup.ActionMove || d.To != topup.StatusNeedsReview || d.Reason != topup.ReasonAmountMismatch {
			t.Errorf("another amount verified: %+v, want review, never settled", d)
		}
	})

	t.Run("settle", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			settle gateway.SettleResult
			err    error
			action topup.Action
			to     topup.Status
			reason topup.Reason
			code   any
		}{
			{"settled (0)", gateway.SettleResult{Outcome: gateway.SettleDone}, nil, topup.ActionCredit, topup.StatusCredited, topup.ReasonSettled, 0},
			{"settled before (45)", gateway.SettleResult{Outcome: gateway.SettleAlready, Code: 45}, nil, topup.ActionCredit, topup.StatusCredited, topup.ReasonSettled, 45},
			{"time-out", gateway.SettleResult{}, timeout, topup.ActionKeep, topup.StatusSettling, "", nil},
			{"breaker open", gateway.SettleResult{}, fmt.Errorf("settle: %w", gateway.ErrUnavailable), topup.ActionKeep, topup.StatusSettling, "", nil},
			{"reversed (48)", gateway.SettleResult{Outcome: gateway.SettleReversed, Code: 48}, nil, topup.ActionMove, topup.StatusFailed, topup.ReasonBankReversed, 48},
			{"settle not found (47)", gateway.SettleResult{Outcome: gateway.SettleRefused, Code: 47}, nil, topup.ActionMove, topup.StatusNeedsReview, topup.ReasonSettleRefused, 47},
		} {
			for _, lost := range []bool{false, true} {
				d := topup.Decide(topup.Input{Step: topup.StepSettle, Actor: topup.ActorWorker, TopUp: settling, Now: t0, Rules: rules,
					LeaseLost: lost, NeedsSettle: true, Settle: tt.settle, SettleErr: tt.err})
				want := tt.action
				if lost && want != topup.ActionCredit {
					want = topup.ActionNone
				}
				if d.Action != want || (want != topup.ActionNone && (d.To != tt.to || d.Reason != tt.reason)) {
					t.Errorf("%s (lease lost %v): %+v, want %s %s %s", tt.name, lost, d, want, tt.to, tt.reason)
					continue
				}
				if want == topup.ActionNone {
					continue
				}
				if (want == topup.ActionMove || want == topup.ActionCredit) && deref(d.GatewayCode) != tt.code {
					t.Errorf("%s: gateway code %v, want %v", tt.name, deref(d.GatewayCode), tt.code)
				}
				if want == topup.ActionCredit && (d.RefID != 9001 || d.CreditedRials != 50_000 || d.CardPANMasked != settling.CardPANMasked) {
					t.Errorf("%s: credit %+v, want the row's verified facts", tt.name, d)
				}
				if want == topup.ActionKeep && (d.NextCheckAt == nil || !d.NextCheckAt.Equal(t0.Add(recheck))) {
					t.Errorf("%s: next check %v, want after the pacing window", tt.name, d.NextCheckAt)
				}
				if !d.Checked || d.CountAttempt != !errors.Is(tt.err, gateway.ErrUnavailable) {
					t.Errorf("%s: checked %v, attempt %v", tt.name, d.Checked, d.CountAttempt)
				}
				if !lost {
					l.took(t, topup.StatusSettling, d, topup.ActorWorker)
				}
			}
		}
		// Settled, but another actor moved the row meanwhile (the move to
		// settling was not taken): still credited, with the verify's facts.
		moved := settling
		moved.Status = topup.StatusNeedsReview
		if d := topup.Decide(topup.Input{Step: topup.StepSettle, Actor: topup.ActorWorker, TopUp: moved, Now: t0, Rules: rules,
			LeaseLost: true, NeedsSettle: true, Settle: gateway.SettleResult{Outcome: gateway.SettleAlready, Code: 45}}); d.Action != topup.ActionCredit || d.RefID != 9001 {
			t.Errorf("settled after the lease was lost: %+v, want credit", d)
		}
		if d := topup.Decide(topup.Input{Step: topup.StepSettle, Actor: topup.ActorWorker, TopUp: moved, Now: t0, Rules: rules,
			LeaseLost: true, NeedsSettle: true, Settle: gateway.SettleResult{Outcome: gateway.SettleReversed, Code: 48}}); d.Action != topup.ActionNone {
			t.Errorf("reversed after the lease was lost: %+v, want nothing written", d)
		}
		// Nothing verified on the row: nothing to settle.
		if d := topup.Decide(topup.Input{Step: topup.StepSettle, Actor: topup.ActorWorker, TopUp: legacy, Now: t0, Rules: rules,
			NeedsSettle: true, Settle: gateway.SettleResult{Outcome: gateway.SettleDone}}); d.Action != topup.ActionNone {
			t.Errorf("settle without verified facts: %+v, want none", d)
		}
	})

	t.Run("verify again while settling", func(t *testing.T) {
		// A settling payment kept before 00018 is verified again (43) for
		// its facts. The bank's answers other than "verified" never fail
		// it except a reversal: it was verified, a person looks.
		notPaid := gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: 17}
		returned := t0.Add(-time.Minute)
		back := legacy
		back.ReturnedAt = &returned
		for _, tt := range []struct {
			name     string
			p        topup.TopUp
			verify   gateway.VerifyResult
			err      error
			inquired bool
			inquiry  gateway.InquiryStatus
			action   topup.Action
			to       topup.Status
			reason   topup.Reason
		}{
			{"verify time-out", legacy, gateway.VerifyResult{}, timeout, false, "", topup.ActionKeep, topup.StatusSettling, topup.ReasonVerifyUnknown},
			{"not paid, inquiry FAILED", legacy, notPaid, nil, true, gateway.InquiryFailed, topup.ActionMove, topup.StatusNeedsReview, topup.ReasonBankCancelled},
			{"not paid, inquiry REVERSED", legacy, notPaid, nil, true, gateway.InquiryReversed, topup.ActionMove, topup.StatusFailed, topup.ReasonBankReversed},
			{"no sale after the payer came back", back, gateway.VerifyResult{Outcome: gateway.VerifyNoSale, Code: 42}, nil, false, "", topup.ActionMove, topup.StatusNeedsReview, topup.ReasonBankCancelled},
			{"another amount", legacy, gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 43, RefID: 9001, AmountRials: 1}, nil, false, "", topup.ActionMove, topup.StatusNeedsReview, topup.ReasonAmountMismatch},
		} {
			d := topup.Decide(topup.Input{Step: topup.StepCheck, Actor: topup.ActorReconcile, TopUp: tt.p, Now: t0, Rules: rules,
				Verify: tt.verify, VerifyErr: tt.err, NeedsSettle: true, Inquired: tt.inquired, Inquiry: gateway.InquiryResult{Status: tt.inquiry}})
			if d.Action != tt.action || d.To != tt.to || d.Reason != tt.reason {
				t.Errorf("%s: %+v, want %s %s %s", tt.name, d, tt.action, tt.to, tt.reason)
			}
			l.took(t, topup.StatusSettling, d, topup.ActorReconcile)
		}
	})

	t.Run("deadlines", func(t *testing.T) {
		at := func(age time.Duration) topup.TopUp {
			p := settling
			p.CreatedAt, p.OpenedAt = t0.Add(-age-10*time.Minute), ptr(t0.Add(-age))
			return p
		}
		short := rules // WORKER_MAX_UNKNOWN 2h
		short.SettleWindow, short.VerifyDeadline = 3*time.Hour, 20*time.Minute
		long := short
		long.MaxUnknown = 4 * time.Hour
		none := short
		none.SettleWindow = 0
		for _, tt := range []struct {
			name   string
			r      topup.Rules
			age    time.Duration
			reason topup.Reason // "" : stays settling
		}{
			{"within both (the verify window closed long ago)", short, time.Hour, ""},
			{"max unknown shorter than the window", short, 2*time.Hour + time.Second, topup.ReasonUnknownTooLong},
			{"within the window", long, 3 * time.Hour, ""},
			{"the settle window closed", long, 3*time.Hour + time.Second, topup.ReasonSettleWindowClosed},
			{"no settle window", none, 2*time.Hour + time.Second, topup.ReasonUnknownTooLong},
		} {
			for _, lost := range []bool{false, true} {
				d := topup.Decide(topup.Input{Step: topup.StepDeadline, Actor: topup.ActorWorker, TopUp: at(tt.age), Now: t0, Rules: tt.r, LeaseLost: lost})
				switch {
				case tt.reason == "" || lost:
					if d.Action != topup.ActionNone {
						t.Errorf("%s (lease lost %v): %+v, want it to stay settling", tt.name, lost, d)
					}
				case d.Action != topup.ActionMove || d.To != topup.StatusNeedsReview || d.Reason != tt.reason || !d.Deadline:
					t.Errorf("%s: %+v, want review (%s)", tt.name, d, tt.reason)
				default:
					l.took(t, topup.StatusSettling, d, topup.ActorWorker)
				}
			}
		}
	})
}

// A credit of a settled payment that fails is retried (it stays
// settling, the next check settles again: 45) and goes to review at the
// limit, as any bank-verified payment's.
func TestDecideSettlingCreditFailed(t *testing.T) {
	p := topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusSettling}
	d := topup.Decide(topup.Input{Step: topup.StepCreditFailed, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules})
	if d.Action != topup.ActionKeep || d.To != topup.StatusSettling || d.NextCheckAt == nil || !d.CountCreditFailure {
		t.Errorf("first failed credit: %+v", d)
	}
	p.CreditFailures = 2
	d = topup.Decide(topup.Input{Step: topup.StepCreditFailed, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules})
	if d.Action != topup.ActionMove || d.To != topup.StatusNeedsReview || d.Reason != topup.ReasonCreditFailed {
		t.Errorf("third failed credit: %+v", d)
	}
}

// VerifyNoSale (Mellat without a SaleReferenceId, or with one the bank
// knows no sale of ours by): a payer who came back did not pay (failed,
// bank_cancelled), and a kept receipt the bank found no sale for is
// dropped with the move; before the payer came back the payment waits
// (the payer may be on the bank's page).
func TestDecideNoSale(t *testing.T) {
	vr := gateway.VerifyResult{Outcome: gateway.VerifyNoSale, Code: 42}
	returned := t0.Add(-time.Second)
	sale := "184467440737"
	for _, tt := range []struct {
		name     string
		returned *time.Time
		receipt  *string
		action   topup.Action
		to       topup.Status
		clear    bool
	}{
		{"came back without a sale", &returned, nil, topup.ActionMove, topup.StatusFailed, false},
		{"came back with a sale the bank does not know", &returned, &sale, topup.ActionMove, topup.StatusFailed, true},
		{"not back yet", nil, nil, topup.ActionKeep, topup.StatusAwaitingPayment, false},
	} {
		p := topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusAwaitingPayment, ReturnedAt: tt.returned, Receipt: tt.receipt}
		d := topup.Decide(topup.Input{Step: topup.StepCheck, Actor: topup.ActorCallback, TopUp: p, Now: t0, Rules: rules, Verify: vr})
		if d.Action != tt.action || d.To != tt.to || d.Action == topup.ActionInquire || d.ClearReceipt != tt.clear {
			t.Errorf("%s: %+v", tt.name, d)
		}
		if tt.to == topup.StatusFailed && d.Reason != topup.ReasonBankCancelled {
			t.Errorf("%s: reason %s", tt.name, d.Reason)
		}
	}
	// Reversed (Mellat's 48: paid, not verified in time, returned by the
	// bank): failed as reversed, back or not, settling too, so that the
	// payer hears the money is on its way back to the card.
	rev := gateway.VerifyResult{Outcome: gateway.VerifyNoSale, Code: 48, NotPaid: gateway.NotPaidReversed}
	for _, tt := range []struct {
		name     string
		status   topup.Status
		returned *time.Time
	}{
		{"reversed, came back", topup.StatusAwaitingPayment, &returned},
		{"reversed, not back", topup.StatusAwaitingPayment, nil},
		{"reversed while settling", topup.StatusSettling, &returned},
	} {
		p := topup.TopUp{ID: 1, AmountRials: 50_000, Status: tt.status, ReturnedAt: tt.returned, Receipt: &sale}
		d := topup.Decide(topup.Input{Step: topup.StepCheck, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules, Verify: rev})
		if d.Action != topup.ActionMove || d.To != topup.StatusFailed || d.Reason != topup.ReasonBankReversed {
			t.Errorf("%s: %+v", tt.name, d)
		}
	}
}

// A verified payment whose settle is unknown is not "returned to the
// payer" when the gateway's verify window closes (the bank does not
// return a verified payment): only MaxUnknown sends it to review.
func TestSettleUnknownOutlivesTheVerifyWindow(t *testing.T) {
	r := rules
	r.VerifyDeadline = 20 * time.Minute
	p := topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusPendingVerification, CreatedAt: t0.Add(-time.Hour),
		OpenedAt: ptr(t0.Add(-time.Hour)), StatusReason: string(topup.ReasonSettleUnknown)}
	if to, reason, ok := topup.Expiry(p, t0, r); ok {
		t.Fatalf("settle unknown after an hour: %s %s", to, reason)
	}
	if to, reason, ok := topup.Expiry(p, t0.Add(2*time.Hour), r); !ok || to != topup.StatusNeedsReview || reason != topup.ReasonUnknownTooLong {
		t.Fatalf("settle unknown after three hours: %s %s %v", to, reason, ok)
	}
	// A verify whose answer never came: the bank may have kept the
	// money, so not "returned to the payer"; unknown, for a person.
	p.StatusReason = string(topup.ReasonVerifyUnknown)
	if _, reason, ok := topup.Expiry(p, t0, r); !ok || reason != topup.ReasonUnknownTooLong {
		t.Fatalf("verify unknown after an hour: %s %v", reason, ok)
	}
	// Still waiting for the bank's first word (no verify unanswered):
	// its window closed, the bank returned it.
	p.StatusReason = string(topup.ReasonReopened)
	if _, reason, ok := topup.Expiry(p, t0, r); !ok || reason != topup.ReasonReturnedToPayer {
		t.Fatalf("reopened, past the window: %s %v", reason, ok)
	}
}

// A deadline's move to review keeps the receipt a verify went out with
// and never heard back about, at a gateway whose sale can be asked about
// only by it (Mellat); every other unconfirmed receipt goes with the move.
func TestKeepsReceiptAtDeadline(t *testing.T) {
	sale := "184467440737"
	mellat := topup.Rules{CallbackOnly: true}
	for _, c := range []struct {
		name    string
		receipt *string
		reason  topup.Reason
		to      topup.Status
		rules   topup.Rules
		keep    bool
	}{
		{"verify unanswered, to review", &sale, topup.ReasonVerifyUnknown, topup.StatusNeedsReview, mellat, true},
		{"no receipt", nil, topup.ReasonVerifyUnknown, topup.StatusNeedsReview, mellat, false},
		{"never sent to verify", &sale, topup.ReasonReopened, topup.StatusNeedsReview, mellat, false},
		{"to failed", &sale, topup.ReasonVerifyUnknown, topup.StatusFailed, mellat, false},
		{"a gateway with another way to ask", &sale, topup.ReasonVerifyUnknown, topup.StatusNeedsReview, topup.Rules{}, false},
	} {
		p := topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusPendingVerification, Receipt: c.receipt, StatusReason: string(c.reason)}
		if got := topup.KeepsReceiptAtDeadline(p, c.to, c.rules); got != c.keep {
			t.Errorf("%s: keep %v, want %v", c.name, got, c.keep)
		}
	}
}
