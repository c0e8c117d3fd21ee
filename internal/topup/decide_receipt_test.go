package topup_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/topup"
)

// TestDecideReceipts: every receipt case of issue 31 items 1–4 as a row
// of the pure decision, without a database: the callback's token and
// receipt against the row's receipt and its provenance and another
// payment's hold (StepCallback), the bank's record of our token before
// any verify (StepTokenReceipt), a receipt verified on its own
// (StepCheck), and the worker's deadlines (StepDeadline).
func TestDecideReceipts(t *testing.T) {
	auth := "S0000000000000000000000000000000001"
	other := "S0000000000000000000000000000000002"
	const refA, refB = "RefNumOfA00000000000000000001", "RefNumOfB00000000000000000002"
	bank, callback := topup.ReceiptFromBank, topup.ReceiptFromCallback
	lastCheck := t0.Add(-5 * time.Second) // within the pacing window
	longAgo := t0.Add(-time.Hour)
	returned := t0.Add(-time.Minute)
	// pay is a SEP payment as read: its status, reason, when its bank was
	// last asked, whether its payer came back, its receipt and source.
	pay := func(st topup.Status, reason topup.Reason, checked *time.Time, back bool, receipt string, src *topup.ReceiptSource) topup.TopUp {
		p := topup.TopUp{ID: 1, Gateway: "sep", AmountRials: 50_000, Status: st, StatusReason: string(reason), Authority: &auth,
			CreatedAt: t0.Add(-10 * time.Minute), OpenedAt: ptr(t0.Add(-10 * time.Minute)), LastCheckedAt: checked}
		if back {
			p.ReturnedAt = &returned
		}
		if receipt != "" {
			p.Receipt, p.ReceiptSource = &receipt, src
		}
		return p
	}
	awaiting := pay(topup.StatusAwaitingPayment, topup.ReasonRequestOK, nil, false, "", nil)
	callbackRules := topup.Rules{RecheckDelay: recheck}
	cb := func(p topup.TopUp, c topup.Callback) topup.Input {
		if c.Authority == "" {
			c.Authority = auth
		}
		return topup.Input{Step: topup.StepCallback, Actor: topup.ActorCallback, TopUp: p, Now: t0, Rules: callbackRules, Callback: c}
	}
	recorded := func(first bool) topup.Callback { return topup.Callback{Recorded: true, First: first} }
	with := func(c topup.Callback, receipt string) topup.Callback { c.Receipt = receipt; return c }
	token := func(p topup.TopUp, ir gateway.InquiryResult, err error, keepFailed bool) topup.Input {
		return topup.Input{Step: topup.StepTokenReceipt, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules,
			Token: ir, TokenErr: err, TokenKeepFailed: keepFailed}
	}
	check := func(p topup.TopUp, vr gateway.VerifyResult) topup.Input {
		return topup.Input{Step: topup.StepCheck, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules, Verify: vr}
	}
	paidToken := gateway.InquiryResult{Code: 0, Status: gateway.InquiryPaid, Receipt: refA}
	gone := gateway.InquiryResult{Code: 404, Status: gateway.InquiryGone}
	pending := pay(topup.StatusPendingVerification, topup.ReasonVerifyUnknown, &longAgo, true, "", nil)
	adminClosed := pay(topup.StatusFailed, topup.ReasonClosedByAdmin, &longAgo, true, "", nil)
	next := t0.Add(recheck)

	type want struct {
		action    topup.Action
		to        topup.Status
		reason    topup.Reason
		refusal   error
		keep      string // KeepReceipt
		candidate string
		take      string // TakeReceipt
		first     bool   // FirstReturn
		paced     bool
		checkNow  bool
		clear     bool // ClearReceipt
		next      *time.Time
	}
	rows := []struct {
		name string
		in   topup.Input
		want want
	}{
		// ---- the callback (StepCallback) ----
		{"another token: refused", cb(awaiting, topup.Callback{Authority: other, Receipt: refA}),
			want{action: topup.ActionRefuse, refusal: topup.ErrAuthorityMismatch}},
		{"first callback with a receipt: kept as the callback's, then decided again", cb(awaiting, topup.Callback{Receipt: refA}),
			want{action: topup.ActionKeepReceipt, keep: refA}},
		{"the receipt kept: the first return is claimed and checked at once",
			cb(pay(topup.StatusAwaitingPayment, topup.ReasonRequestOK, nil, false, refA, &callback), topup.Callback{Receipt: refA, KeptNow: true}),
			want{action: topup.ActionVerify, first: true}},
		{"a receipt the bank confirmed for another payment: a replay, refused (item 2)",
			cb(awaiting, topup.Callback{Receipt: refB, Holder: topup.HoldConfirmed}),
			want{action: topup.ActionRefuse, refusal: topup.ErrReceiptReused}},
		{"a receipt another payment holds on a callback's word: asked about for this one, not kept (item 2)",
			cb(awaiting, topup.Callback{Receipt: refB, Holder: topup.HoldUnconfirmed}),
			want{action: topup.ActionVerify, first: true, candidate: refB}},
		{"a second, different receipt: refused",
			cb(pay(topup.StatusPendingVerification, topup.ReasonVerifyUnknown, &longAgo, true, refA, &callback), with(recorded(false), refB)),
			want{action: topup.ActionRefuse, refusal: topup.ErrReceiptMismatch}},
		{"a new receipt within the pacing window, not the first return: refused, never kept unchecked (item 2)",
			cb(pay(topup.StatusPendingVerification, topup.ReasonVerifyUnknown, &lastCheck, true, "", nil), topup.Callback{Receipt: refB}),
			want{action: topup.ActionRefuse, refusal: topup.ErrReceiptTooSoon}},
		{"a new receipt after the window: kept, then checked at once",
			cb(pay(topup.StatusPendingVerification, topup.ReasonVerifyUnknown, &longAgo, true, "", nil), topup.Callback{Receipt: refB}),
			want{action: topup.ActionKeepReceipt, keep: refB}},
		{"a new receipt on a failed payment after the window: reopened and asked now, paced",
			cb(pay(topup.StatusFailed, topup.ReasonBankCancelled, &longAgo, true, refB, &callback), topup.Callback{Receipt: refB, KeptNow: true, Recorded: true}),
			want{action: topup.ActionReopen, checkNow: true, paced: true}},
		{"the bank cancelled it moments ago, a duplicate callback: the row answers",
			cb(pay(topup.StatusFailed, topup.ReasonBankCancelled, &lastCheck, true, "", nil), recorded(false)),
			want{action: topup.ActionNone}},
		{"the bank's word moments ago, but a first receipt now (Mellat back with a sale): reopened, asked now",
			cb(pay(topup.StatusFailed, topup.ReasonBankCancelled, &lastCheck, true, refA, &callback), topup.Callback{Receipt: refA, KeptNow: true, Recorded: true, First: true}),
			want{action: topup.ActionReopen, checkNow: true}},
		{"a failed payment asked within the window: reopened, the worker asks when it ends",
			cb(pay(topup.StatusFailed, topup.ReasonNotPaidAfterLife, &lastCheck, true, "", nil), recorded(false)),
			want{action: topup.ActionReopen, paced: true}},
		{"an admin closed it: the row answers, nothing reopened or asked (item 4)",
			cb(adminClosed, recorded(false)),
			want{action: topup.ActionNone}},
		{"an admin closed it, a callback brings a receipt: nothing kept, nothing asked (item 4)",
			cb(adminClosed, topup.Callback{Receipt: refA}),
			want{action: topup.ActionRecordReturn}},
		{"an admin closed it, the return recorded: the row answers",
			cb(adminClosed, with(recorded(false), refA)),
			want{action: topup.ActionNone}},
		{"credited: the row answers, no receipt kept",
			cb(pay(topup.StatusCredited, topup.ReasonVerifiedPaid, &longAgo, true, "", nil), topup.Callback{Receipt: refA}),
			want{action: topup.ActionNone}},
		{"credited, the same receipt again: the row answers",
			cb(pay(topup.StatusCredited, topup.ReasonVerifiedPaid, &longAgo, true, refA, &bank), topup.Callback{Receipt: refA}),
			want{action: topup.ActionNone}},
		{"open, its bank asked moments ago: the row answers",
			cb(pay(topup.StatusPendingVerification, topup.ReasonVerifyUnknown, &lastCheck, true, "", nil), recorded(false)),
			want{action: topup.ActionNone}},
		{"open, due: checked, paced",
			cb(pending, recorded(false)),
			want{action: topup.ActionVerify, paced: true}},
		{"open, the first return not claimed in one statement (held): recorded, then checked unpaced",
			cb(pay(topup.StatusAwaitingPayment, topup.ReasonRequestOK, &lastCheck, false, "", nil), recorded(true)),
			want{action: topup.ActionVerify}},

		// ---- the bank's record of our token, before any verify (StepTokenReceipt) ----
		{"the token's receipt names a RefNum: kept as the bank's, then verified", token(awaiting, paidToken, nil, false),
			want{action: topup.ActionVerify, keep: refA}},
		{"the token's receipt names another RefNum than the callback's: the bank's is kept (item 2)",
			token(pay(topup.StatusAwaitingPayment, topup.ReasonRequestOK, nil, true, refB, &callback), paidToken, nil, false),
			want{action: topup.ActionVerify, keep: refA}},
		{"the bank's RefNum could not be kept: never verified, unknown", token(awaiting, paidToken, nil, true),
			want{action: topup.ActionMove, to: topup.StatusPendingVerification, reason: topup.ReasonVerifyUnknown, next: &next}},
		{"paid, no RefNum named: unknown", token(awaiting, gateway.InquiryResult{Status: gateway.InquiryPaid}, nil, false),
			want{action: topup.ActionMove, to: topup.StatusPendingVerification, reason: topup.ReasonVerifyUnknown, next: &next}},
		{"the payer is still at the bank (and may pay before a verify): nothing verified, look again",
			token(awaiting, gateway.InquiryResult{Status: gateway.InquiryInBank}, nil, false),
			want{action: topup.ActionKeep, to: topup.StatusAwaitingPayment, next: &next}},
		{"the token's receipt cannot be read: unknown, nothing verified",
			token(awaiting, gateway.InquiryResult{}, &gateway.TransientError{Op: "inquiry", Err: errors.New("time-out")}, false),
			want{action: topup.ActionMove, to: topup.StatusPendingVerification, reason: topup.ReasonVerifyUnknown, next: &next}},
		{"cancelled at the bank: verify says why", token(awaiting, gateway.InquiryResult{Status: gateway.InquiryFailed}, nil, false),
			want{action: topup.ActionVerify}},
		{"forgotten, a RefNum the bank confirmed: verified on its own (item 1)",
			token(pay(topup.StatusPendingVerification, topup.ReasonVerifyUnknown, &longAgo, true, refA, &bank), gone, nil, false),
			want{action: topup.ActionVerify}},
		{"forgotten, a callback's RefNum alone: never verified, review, dropped (item 1)",
			token(pay(topup.StatusPendingVerification, topup.ReasonVerifyUnknown, &longAgo, true, refB, &callback), gone, nil, false),
			want{action: topup.ActionMove, to: topup.StatusNeedsReview, reason: topup.ReasonReceiptUnconfirmed, clear: true}},
		{"forgotten, no RefNum: nothing to verify, unknown", token(pending, gone, nil, false),
			want{action: topup.ActionKeep, to: topup.StatusPendingVerification, reason: topup.ReasonVerifyUnknown, next: &next}},

		// ---- a receipt verified on its own (StepCheck) ----
		{"a confirmed receipt alone, fresh success: never credited, review (item 1)",
			check(pending, gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, RefID: 9, AmountRials: 50_000, ReceiptAlone: true}),
			want{action: topup.ActionMove, to: topup.StatusNeedsReview, reason: topup.ReasonReceiptUnconfirmed}},
		{"a confirmed receipt alone, already verified: credited (item 1)",
			check(pending, gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 2, RefID: 9, AmountRials: 50_000, ReceiptAlone: true}),
			want{action: topup.ActionCredit, to: topup.StatusCredited, reason: topup.ReasonAlreadyVerified}},
		{"a confirmed receipt alone, too late or reversed: review, the bank's code (item 1)",
			check(pending, gateway.VerifyResult{Outcome: gateway.VerifyInvalid, Code: -6}),
			want{action: topup.ActionMove, to: topup.StatusNeedsReview, reason: topup.ReasonVerifyRejected}},
		{"the driver refuses an unconfirmed receipt: review, dropped (item 1)",
			check(pay(topup.StatusPendingVerification, topup.ReasonVerifyUnknown, &longAgo, true, refB, &callback),
				gateway.VerifyResult{Outcome: gateway.VerifyReceiptUnconfirmed, Code: 404}),
			want{action: topup.ActionMove, to: topup.StatusNeedsReview, reason: topup.ReasonReceiptUnconfirmed, clear: true}},
		{"a receipt another payment holds unconfirmed, verified for this payment: taken (item 2)",
			topup.Input{Step: topup.StepCheck, Actor: topup.ActorCallback, TopUp: pending, Now: t0, Rules: rules, CandidateReceipt: refB,
				Verify: gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, RefID: 9, AmountRials: 50_000}, NeedsSettle: true},
			want{action: topup.ActionSettle, to: topup.StatusSettling, reason: topup.ReasonVerifiedPaid, take: refB}},
		{"a receipt another payment holds unconfirmed, not paid here: not taken (item 2)",
			topup.Input{Step: topup.StepCheck, Actor: topup.ActorCallback, TopUp: pending, Now: t0, Rules: rules, CandidateReceipt: refB,
				Verify: gateway.VerifyResult{Outcome: gateway.VerifyNoSale, Code: 25}},
			want{action: topup.ActionMove, to: topup.StatusFailed, reason: topup.ReasonBankCancelled}},
		{"Mellat without a callback: no call, nothing counted, next look at the window (item 3)",
			topup.Input{Step: topup.StepCheck, Actor: topup.ActorWorker, Now: t0,
				TopUp:  pay(topup.StatusAwaitingPayment, topup.ReasonRequestOK, nil, false, "", nil),
				Rules:  topup.Rules{RecheckDelay: recheck, CallbackOnly: true, VerifyDeadline: 20 * time.Minute},
				Verify: gateway.VerifyResult{Outcome: gateway.VerifyNoSale, NoCall: true}},
			want{action: topup.ActionKeep, to: topup.StatusAwaitingPayment, next: ptr(t0.Add(10*time.Minute + time.Second))}},
	}
	for _, r := range rows {
		d := topup.Decide(r.in)
		w := r.want
		got := fmt.Sprintf("%s to=%q reason=%q refusal=%v keep=%q candidate=%q take=%q first=%v paced=%v now=%v clear=%v",
			d.Action, d.To, d.Reason, d.Refusal, d.KeepReceipt, d.CandidateReceipt, d.TakeReceipt, d.FirstReturn, d.Paced, d.CheckNow, d.ClearReceipt)
		wanted := fmt.Sprintf("%s to=%q reason=%q refusal=%v keep=%q candidate=%q take=%q first=%v paced=%v now=%v clear=%v",
			w.action, w.to, w.reason, w.refusal, w.keep, w.candidate, w.take, w.first, w.paced, w.checkNow, w.clear)
		if got != wanted || !errors.Is(d.Refusal, w.refusal) {
			t.Errorf("%s:\n got %s\nwant %s", r.name, got, wanted)
		}
		if w.next != nil && (d.NextCheckAt == nil || !d.NextCheckAt.Equal(*w.next)) {
			t.Errorf("%s: next check %v, want %v", r.name, d.NextCheckAt, *w.next)
		}
	}
}

// TestVerifiedIsNeverReturnedToPayer (item 1): a payment the bank
// verified (a reference on the row) is never sent to review as
// returned_to_payer when its gateway's verify window closes: the merchant
// kept that money. One the bank never verified is.
func TestVerifiedIsNeverReturnedToPayer(t *testing.T) {
	auth := "S0000000000000000000000000000000001"
	r := topup.Rules{RecheckDelay: recheck, MaxUnknown: 2 * time.Hour, VerifyDeadline: 30 * time.Minute}
	for _, verified := range []bool{false, true} {
		for _, age := range []time.Duration{time.Hour, 3 * time.Hour} {
			p := topup.TopUp{ID: 1, Gateway: "sep", AmountRials: 50_000, Status: topup.StatusPendingVerification, Authority: &auth,
				CreatedAt: t0.Add(-age), OpenedAt: ptr(t0.Add(-age))}
			if verified {
				p.RefID = ptr(int64(77))
			}
			d := topup.Decide(topup.Input{Step: topup.StepDeadline, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: r})
			switch {
			case verified && d.Reason == topup.ReasonReturnedToPayer:
				t.Errorf("verified, %v old: %+v; never returned_to_payer", age, d)
			case !verified && (d.Action != topup.ActionMove || d.Reason != topup.ReasonReturnedToPayer):
				t.Errorf("not verified, %v old: %+v; want returned_to_payer", age, d)
			case verified && age > r.MaxUnknown && d.Reason != topup.ReasonUnknownTooLong:
				t.Errorf("verified, %v old: %+v; want unknown_too_long", age, d)
			}
		}
	}
}
