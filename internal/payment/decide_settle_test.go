package payment_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/payment"
)

// Settle is a state of ours (Mellat): a verified payment of a settling
// gateway is settled before it is credited; only settle 0 or 45 credits;
// an unknown settle keeps it open (pending_verification, settle_unknown,
// asked again after the pacing window: verify answers 43, settle again);
// reversed fails it; any other refusal goes to review. Lease lost: the
// settle is still asked and a settled payment still credited, nothing
// else is written.
func TestDecideSettle(t *testing.T) {
	paid := gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, RefID: 9001, AmountRials: 50_000}
	again := gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 43, RefID: 9001, AmountRials: 50_000}
	timeout := &gateway.TransientError{Op: "settle", Err: errors.New("time-out")}
	for _, tt := range []struct {
		name    string
		verify  gateway.VerifyResult
		settled bool
		settle  gateway.SettleResult
		err     error
		action  payment.Action
		to      payment.Status
		reason  payment.Reason
	}{
		{"verified, settle not asked", paid, false, gateway.SettleResult{}, nil, payment.ActionSettle, "", ""},
		{"verified before, settle not asked", again, false, gateway.SettleResult{}, nil, payment.ActionSettle, "", ""},
		{"settled", paid, true, gateway.SettleResult{Outcome: gateway.SettleDone}, nil, payment.ActionCredit, payment.StatusCredited, payment.ReasonVerifiedPaid},
		{"43 then 45", again, true, gateway.SettleResult{Outcome: gateway.SettleAlready, Code: 45}, nil, payment.ActionCredit, payment.StatusCredited, payment.ReasonAlreadyVerified},
		{"settle unknown", paid, true, gateway.SettleResult{}, timeout, payment.ActionMove, payment.StatusPendingVerification, payment.ReasonSettleUnknown},
		{"settle reversed", paid, true, gateway.SettleResult{Outcome: gateway.SettleReversed, Code: 48}, nil, payment.ActionMove, payment.StatusFailed, payment.ReasonBankReversed},
		{"settle refused", paid, true, gateway.SettleResult{Outcome: gateway.SettleRefused, Code: 47}, nil, payment.ActionMove, payment.StatusNeedsReview, payment.ReasonSettleRefused},
	} {
		for _, lost := range []bool{false, true} {
			p := payment.Payment{ID: 1, AmountRials: 50_000, Status: payment.StatusAwaitingPayment, CreatedAt: t0.Add(-time.Minute)}
			d := payment.Decide(payment.Input{Step: payment.StepCheck, Actor: payment.ActorCallback, Payment: p, Now: t0, Rules: rules,
				LeaseLost: lost, Verify: tt.verify, NeedsSettle: true, Settled: tt.settled, Settle: tt.settle, SettleErr: tt.err})
			want := tt.action
			if lost && want == payment.ActionMove {
				want = payment.ActionNone
			}
			if d.Action != want || (want != payment.ActionNone && want != payment.ActionSettle && (d.To != tt.to || d.Reason != tt.reason)) {
				t.Errorf("%s (lease lost %v): %+v, want %s %s %s", tt.name, lost, d, want, tt.to, tt.reason)
			}
			if d.Action == payment.ActionCredit && (d.RefID != 9001 || d.CreditedRials != 50_000) {
				t.Errorf("%s: credit %+v", tt.name, d)
			}
			if tt.err != nil && !lost && (d.NextCheckAt == nil || !d.NextCheckAt.Equal(t0.Add(recheck))) {
				t.Errorf("%s: next check %v, want after the pacing window", tt.name, d.NextCheckAt)
			}
		}
	}
	// A gateway without settle credits on verify alone.
	p := payment.Payment{ID: 1, AmountRials: 50_000, Status: payment.StatusAwaitingPayment}
	if d := payment.Decide(payment.Input{Step: payment.StepCheck, Actor: payment.ActorWorker, Payment: p, Now: t0, Rules: rules, Verify: paid}); d.Action != payment.ActionCredit {
		t.Errorf("no settle: %+v", d)
	}
}

// VerifyNoSale (Mellat without a SaleReferenceId): a payer who came back
// without one did not pay (failed, bank_cancelled); before the payer came
// back the payment waits (the payer may be on the bank's page).
func TestDecideNoSale(t *testing.T) {
	vr := gateway.VerifyResult{Outcome: gateway.VerifyNoSale, Code: 42}
	returned := t0.Add(-time.Second)
	for _, tt := range []struct {
		name     string
		returned *time.Time
		action   payment.Action
		to       payment.Status
	}{
		{"came back", &returned, payment.ActionMove, payment.StatusFailed},
		{"not back yet", nil, payment.ActionKeep, payment.StatusAwaitingPayment},
	} {
		p := payment.Payment{ID: 1, AmountRials: 50_000, Status: payment.StatusAwaitingPayment, ReturnedAt: tt.returned}
		d := payment.Decide(payment.Input{Step: payment.StepCheck, Actor: payment.ActorCallback, Payment: p, Now: t0, Rules: rules, Verify: vr})
		if d.Action != tt.action || d.To != tt.to || d.Action == payment.ActionInquire {
			t.Errorf("%s: %+v", tt.name, d)
		}
		if tt.to == payment.StatusFailed && d.Reason != payment.ReasonBankCancelled {
			t.Errorf("%s: reason %s", tt.name, d.Reason)
		}
	}
}

// A verified payment whose settle is unknown is not "returned to the
// payer" when the gateway's verify window closes (the bank does not
// return a verified payment): only MaxUnknown sends it to review.
func TestSettleUnknownOutlivesTheVerifyWindow(t *testing.T) {
	r := rules
	r.VerifyDeadline = 20 * time.Minute
	p := payment.Payment{ID: 1, AmountRials: 50_000, Status: payment.StatusPendingVerification, CreatedAt: t0.Add(-time.Hour),
		OpenedAt: ptr(t0.Add(-time.Hour)), StatusReason: string(payment.ReasonSettleUnknown)}
	if to, reason, ok := payment.Expiry(p, t0, r); ok {
		t.Fatalf("settle unknown after an hour: %s %s", to, reason)
	}
	if to, reason, ok := payment.Expiry(p, t0.Add(2*time.Hour), r); !ok || to != payment.StatusNeedsReview || reason != payment.ReasonUnknownTooLong {
		t.Fatalf("settle unknown after three hours: %s %s %v", to, reason, ok)
	}
	p.StatusReason = string(payment.ReasonVerifyUnknown)
	if _, reason, ok := payment.Expiry(p, t0, r); !ok || reason != payment.ReasonReturnedToPayer {
		t.Fatalf("verify unknown after an hour: %s %v", reason, ok)
	}
}
