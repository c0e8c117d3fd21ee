package topup_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/topup"
)

// The decision core is a pure function: these tests need no database, no
// gateway and no clock, and run in milliseconds.

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const recheck = 20 * time.Second

var rules = topup.Rules{RecheckDelay: recheck, AuthorityLifetime: 20 * time.Minute, MaxUnknown: 2 * time.Hour, StaleCreated: time.Minute, MaxCreditFailures: 3}

func ptr[T any](v T) *T { return &v }

// edgeLog collects the edges the table tests reach, and checks each one
// is an edge of the transition table that the actor may take.
type edgeLog struct {
	table   map[string]topup.Edge
	reached map[string]bool
}

func newEdgeLog() *edgeLog {
	l := &edgeLog{table: map[string]topup.Edge{}, reached: map[string]bool{}}
	for _, e := range topup.Transitions() {
		l.table[string(e.From)+" → "+string(e.To)] = e
	}
	return l
}

func (l *edgeLog) took(t *testing.T, from topup.Status, d topup.Decision, actor topup.Actor) {
	t.Helper()
	if d.Action != topup.ActionMove && d.Action != topup.ActionCredit {
		return
	}
	key := string(from) + " → " + string(d.To)
	e, ok := l.table[key]
	if !ok {
		t.Errorf("decision %s is not an edge of the transition table", key)
		return
	}
	for _, a := range e.Actors {
		if a == actor {
			l.reached[key] = true
			return
		}
	}
	t.Errorf("decision %s taken by %s, whom the table does not allow", key, actor)
}

// decideLog is shared by the table tests below; TestDecideReachesEveryEdge
// runs them and then checks that every edge was reached.
func TestDecideReachesEveryEdge(t *testing.T) {
	l := newEdgeLog()
	t.Run("check", func(t *testing.T) { testDecideCheck(t, l) })
	t.Run("other steps", func(t *testing.T) { testDecideSteps(t, l) })
	t.Run("settle", func(t *testing.T) { testDecideSettle(t, l) })
	t.Run("reverse", func(t *testing.T) { testDecideReverse(t, l) })
	for key := range l.table {
		if !l.reached[key] {
			t.Errorf("no row of the decision tables takes the edge %s", key)
		}
	}
}

// The answers of one bank check: every verify outcome × every inquiry
// state, from every status a check starts in, with the lease held or lost.
func testDecideCheck(t *testing.T, l *edgeLog) {
	rejected := &gateway.RejectedError{Op: "verify", Code: -11, Message: "merchant not found"}
	transient := &gateway.TransientError{Op: "verify", HTTPStatus: 504, Err: errors.New("time-out")}
	refusal := &gateway.TransientError{Op: "verify", Err: &gateway.PerPaymentRefusal{Code: -12}}
	type answer struct {
		name      string
		verify    gateway.VerifyResult
		verifyErr error
	}
	answers := []answer{
		{"paid", gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, RefID: 7001, CardPANMasked: "603799******1234", AmountRials: 50_000}, nil},
		{"already verified", gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 101, RefID: 7002, AmountRials: 50_000}, nil},
		{"paid without reference", gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, AmountRials: 50_000}, nil},
		{"paid another amount", gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, RefID: 7003, AmountRials: 40_000}, nil},
		{"already verified, amount not said", gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 201, RefID: 7004}, nil},
		{"not paid", gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51}, nil},
		{"not paid (cancelled)", gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51, NotPaid: gateway.NotPaidCancelled}, nil},
		{"not paid (page expired)", gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51, NotPaid: gateway.NotPaidExpired}, nil},
		{"amount mismatch", gateway.VerifyResult{Outcome: gateway.VerifyAmountMismatch, Code: -50}, nil},
		{"invalid", gateway.VerifyResult{Outcome: gateway.VerifyInvalid, Code: -54}, nil},
		// Issue 31 item 1: a receipt nobody confirmed is never verified on
		// its own; a confirmed one verified alone counts only as "already
		// verified", never as a fresh success.
		{"receipt unconfirmed", gateway.VerifyResult{Outcome: gateway.VerifyReceiptUnconfirmed, Code: 404}, nil},
		{"paid, receipt alone", gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 0, RefID: 7005, AmountRials: 50_000, ReceiptAlone: true}, nil},
		{"already verified, receipt alone", gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 2, RefID: 7006, AmountRials: 50_000, ReceiptAlone: true}, nil},
		{"rejected", gateway.VerifyResult{}, rejected},
		{"time-out", gateway.VerifyResult{}, transient},
		{"refused for this payment (-12)", gateway.VerifyResult{}, refusal},
		{"breaker open", gateway.VerifyResult{}, fmt.Errorf("verify: %w", gateway.ErrUnavailable)},
	}
	type inquiry struct {
		name  string
		asked bool
		res   gateway.InquiryResult
		err   error
	}
	inquiries := []inquiry{
		{name: "not asked"},
		{"time-out", true, gateway.InquiryResult{}, transient},
		{"IN_BANK", true, gateway.InquiryResult{Code: 100, Status: gateway.InquiryInBank}, nil},
		{"PAID", true, gateway.InquiryResult{Code: 100, Status: gateway.InquiryPaid}, nil},
		{"VERIFIED", true, gateway.InquiryResult{Code: 100, Status: gateway.InquiryVerified}, nil},
		{"FAILED", true, gateway.InquiryResult{Code: 100, Status: gateway.InquiryFailed}, nil},
		{"REVERSED", true, gateway.InquiryResult{Code: 100, Status: gateway.InquiryReversed}, nil},
		{"a state we do not know", true, gateway.InquiryResult{Code: 100, Status: "SETTLING"}, nil},
	}
	// want is the outcome of an answer pair for an open payment whose
	// lease is held: the status it goes to, the reason, the gateway code.
	type outcome struct {
		action  topup.Action // inquire, credit, or "" for a status outcome
		to      topup.Status // "" = stays (the payer is at the bank)
		reason  topup.Reason
		code    *int
		next    bool // schedules the next check after the pacing window
		attempt bool // counts an attempt
	}
	want := func(a answer, q inquiry) outcome {
		switch a.name {
		case "paid":
			return outcome{action: topup.ActionCredit, to: topup.StatusCredited, reason: topup.ReasonVerifiedPaid, code: ptr(100), attempt: true}
		case "already verified":
			return outcome{action: topup.ActionCredit, to: topup.StatusCredited, reason: topup.ReasonAlreadyVerified, code: ptr(101), attempt: true}
		case "already verified, receipt alone":
			return outcome{action: topup.ActionCredit, to: topup.StatusCredited, reason: topup.ReasonAlreadyVerified, code: ptr(2), attempt: true}
		case "receipt unconfirmed":
			return outcome{to: topup.StatusNeedsReview, reason: topup.ReasonReceiptUnconfirmed, code: ptr(404), attempt: true}
		case "paid, receipt alone":
			return outcome{to: topup.StatusNeedsReview, reason: topup.ReasonReceiptUnconfirmed, code: ptr(0), attempt: true}
		case "paid without reference":
			return outcome{to: topup.StatusNeedsReview, reason: topup.ReasonNoRefID, code: ptr(100), attempt: true}
		case "amount mismatch":
			return outcome{to: topup.StatusNeedsReview, reason: topup.ReasonAmountMismatch, code: ptr(-50), attempt: true}
		case "paid another amount":
			// Never credit an amount the bank did not verify as ours.
			return outcome{to: topup.StatusNeedsReview, reason: topup.ReasonAmountMismatch, code: ptr(100), attempt: true}
		case "already verified, amount not said":
			return outcome{to: topup.StatusNeedsReview, reason: topup.ReasonAmountMismatch, code: ptr(201), attempt: true}
		case "invalid":
			return outcome{to: topup.StatusNeedsReview, reason: topup.ReasonVerifyRejected, code: ptr(-54), attempt: true}
		case "rejected":
			return outcome{to: topup.StatusNeedsReview, reason: topup.ReasonVerifyRejected, code: ptr(-11), attempt: true}
		case "time-out", "refused for this payment (-12)":
			return outcome{to: topup.StatusPendingVerification, reason: topup.ReasonVerifyUnknown, next: true, attempt: true}
		case "breaker open":
			return outcome{to: topup.StatusPendingVerification, reason: topup.ReasonVerifyUnknown, next: true}
		}
		// not paid: only the inquiry's definite word fails it.
		switch q.name {
		case "not asked":
			return outcome{action: topup.ActionInquire}
		case "IN_BANK":
			return outcome{next: true, attempt: true}
		case "FAILED":
			// The bank's page expired (the driver tells it from a cancel):
			// the time ran out; otherwise the payer cancelled, or the driver
			// cannot tell.
			if a.verify.NotPaid == gateway.NotPaidExpired {
				return outcome{to: topup.StatusFailed, reason: topup.ReasonBankExpired, code: ptr(-51), attempt: true}
			}
			return outcome{to: topup.StatusFailed, reason: topup.ReasonBankCancelled, code: ptr(-51), attempt: true}
		case "REVERSED":
			return outcome{to: topup.StatusFailed, reason: topup.ReasonBankReversed, code: ptr(-51), attempt: true}
		}
		return outcome{to: topup.StatusPendingVerification, reason: topup.ReasonVerifyUnknown, next: true, attempt: true}
	}
	statuses := []topup.Status{topup.StatusAwaitingPayment, topup.StatusPendingVerification, topup.StatusFailed, topup.StatusNeedsReview}
	rows := 0
	for _, a := range answers {
		for _, q := range inquiries {
			for _, st := range statuses {
				for _, lost := range []bool{false, true} {
					// A check starts on an open payment under its lease; the
					// row may have been ended meanwhile by an actor that took
					// the lease after ours ran out (failed, needs_review).
					if st.Terminal() && !lost {
						continue
					}
					rows++
					name := fmt.Sprintf("%s/inquiry %s/%s/lease lost %v", a.name, q.name, st, lost)
					p := topup.TopUp{ID: 1, AmountRials: 50_000, Status: st, CreatedAt: t0.Add(-time.Hour), OpenedAt: ptr(t0.Add(-time.Minute))}
					in := topup.Input{Step: topup.StepCheck, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules, LeaseLost: lost,
						Verify: a.verify, VerifyErr: a.verifyErr, Inquired: q.asked, Inquiry: q.res, InquiryErr: q.err}
					d := topup.Decide(in)
					w := want(a, q)
					switch {
					case w.action == topup.ActionInquire:
						if d.Action != topup.ActionInquire {
							t.Errorf("%s: %+v, want the inquiry asked first", name, d)
						}
						continue
					case w.action == topup.ActionCredit:
						// A bank-verified payment is always credited, lease or not.
						if d.Action != topup.ActionCredit || d.To != topup.StatusCredited || d.Reason != w.reason ||
							d.RefID != a.verify.RefID || d.CreditedRials != p.AmountRials || d.CardPANMasked != a.verify.CardPANMasked {
							t.Errorf("%s: %+v, want credit of %d with ref %d", name, d, p.AmountRials, a.verify.RefID)
						}
					case lost:
						if d.Action != topup.ActionNone {
							t.Errorf("%s: %+v, want nothing (only a credit is taken without the lease)", name, d)
						}
						continue
					case w.to == "" || w.to == st:
						if d.Action != topup.ActionKeep {
							t.Errorf("%s: %+v, want the status kept", name, d)
						}
					default:
						if d.Action != topup.ActionMove || d.To != w.to || d.Reason != w.reason {
							t.Errorf("%s: %+v, want %s (%s)", name, d, w.to, w.reason)
						}
					}
					if d.Action == topup.ActionMove && fmt.Sprint(deref(d.GatewayCode)) != fmt.Sprint(deref(w.code)) {
						t.Errorf("%s: gateway code %v, want %v", name, deref(d.GatewayCode), deref(w.code))
					}
					if !d.Checked || d.CountAttempt != w.attempt {
						t.Errorf("%s: checked %v attempt %v, want checked, attempt %v", name, d.Checked, d.CountAttempt, w.attempt)
					}
					if w.next != (d.NextCheckAt != nil) || d.NextCheckAt != nil && !d.NextCheckAt.Equal(t0.Add(recheck)) {
						t.Errorf("%s: next check %v, want one at +%v: %v", name, d.NextCheckAt, recheck, w.next)
					}
					l.took(t, st, d, topup.ActorWorker)
				}
			}
		}
	}
	if rows < 400 {
		t.Errorf("only %d rows", rows)
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// The decisions outside a bank check: the request's answer, reopen,
// recovery, an admin's close, the worker's deadlines × lease state.
func testDecideSteps(t *testing.T, l *edgeLog) {
	created := topup.TopUp{ID: 1, Status: topup.StatusCreated, CreatedAt: t0.Add(-2 * time.Minute)}
	auth := "S0000000000000000000000000000000001"
	withAuth := created
	withAuth.Authority = &auth
	lastCheck := t0.Add(-5 * time.Second)
	failed := topup.TopUp{ID: 1, Status: topup.StatusFailed, Authority: &auth, LastCheckedAt: &lastCheck, CreatedAt: t0.Add(-time.Hour)}
	review := failed
	review.Status = topup.StatusNeedsReview
	credited := failed
	credited.Status = topup.StatusCredited
	adminClosed := failed
	adminClosed.StatusReason = string(topup.ReasonClosedByAdmin)
	open := func(st topup.Status, age time.Duration) topup.TopUp {
		return topup.TopUp{ID: 1, Status: st, Authority: &auth, CreatedAt: t0.Add(-3 * time.Hour), OpenedAt: ptr(t0.Add(-age))}
	}
	type row struct {
		name string
		in   topup.Input
		want topup.Decision // compared: Action, To, Reason, gateway code, NextCheckAt, OpenedAt, KeepLease, Authority
	}
	now := t0
	rows := []row{
		{"request ok", topup.Input{Step: topup.StepRequest, Actor: topup.ActorSubmit, TopUp: created,
			Request: gateway.RequestResult{Authority: auth, Code: 100}},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusAwaitingPayment, Reason: topup.ReasonRequestOK, GatewayCode: ptr(100), Authority: auth}},
		{"request refused", topup.Input{Step: topup.StepRequest, Actor: topup.ActorSubmit, TopUp: created,
			RequestErr: &gateway.RejectedError{Op: "request", Code: -9}},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusFailed, Reason: topup.ReasonRequestRefused, GatewayCode: ptr(-9)}},
		{"request time-out", topup.Input{Step: topup.StepRequest, Actor: topup.ActorSubmit, TopUp: created,
			RequestErr: &gateway.TransientError{Op: "request", Err: errors.New("time-out")}},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusFailed, Reason: topup.ReasonRequestFailed}},
		{"request with the breaker open", topup.Input{Step: topup.StepRequest, Actor: topup.ActorSubmit, TopUp: created,
			RequestErr: gateway.ErrUnavailable},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusFailed, Reason: topup.ReasonGatewayUnavailable}},
		{"request answered after another submit ended it", topup.Input{Step: topup.StepRequest, Actor: topup.ActorSubmit, TopUp: failed,
			Request: gateway.RequestResult{Authority: auth, Code: 100}}, topup.Decision{Action: topup.ActionNone}},

		{"reopen failed, ask now", topup.Input{Step: topup.StepReopen, Actor: topup.ActorCallback, TopUp: failed, CheckNow: true},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusPendingVerification, Reason: topup.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"reopen failed, paced: the worker asks when the window ends", topup.Input{Step: topup.StepReopen, Actor: topup.ActorCallback, TopUp: failed},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusPendingVerification, Reason: topup.ReasonReopened, NextCheckAt: ptr(lastCheck.Add(recheck)), OpenedAt: &now}},
		{"reopen needs_review (admin)", topup.Input{Step: topup.StepReopen, Actor: topup.ActorAdmin, TopUp: review, CheckNow: true},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusPendingVerification, Reason: topup.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"reopen needs_review (reconcile)", topup.Input{Step: topup.StepReopen, Actor: topup.ActorReconcile, TopUp: review, CheckNow: true},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusPendingVerification, Reason: topup.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"the worker reopens a failed payment whose payer came back", topup.Input{Step: topup.StepReopen, Actor: topup.ActorWorker, TopUp: failed, CheckNow: true},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusPendingVerification, Reason: topup.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		// Issue 31 item 4: a callback does not undo an admin's close; the
		// admin's own recheck still reopens it.
		{"a callback does not reopen a payment an admin closed", topup.Input{Step: topup.StepReopen, Actor: topup.ActorCallback, TopUp: adminClosed, CheckNow: true},
			topup.Decision{Action: topup.ActionNone}},
		{"an admin reopens a payment an admin closed", topup.Input{Step: topup.StepReopen, Actor: topup.ActorAdmin, TopUp: adminClosed, CheckNow: true},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusPendingVerification, Reason: topup.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"reopen credited: nothing", topup.Input{Step: topup.StepReopen, Actor: topup.ActorCallback, TopUp: credited, CheckNow: true},
			topup.Decision{Action: topup.ActionNone}},
		{"reopen without the lease: nothing", topup.Input{Step: topup.StepReopen, Actor: topup.ActorCallback, TopUp: failed, LeaseLost: true},
			topup.Decision{Action: topup.ActionNone}},

		{"recover the authority of a created payment", topup.Input{Step: topup.StepRecover, Actor: topup.ActorReconcile, TopUp: created, Authority: auth},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusPendingVerification, Reason: topup.ReasonAuthorityRecovered, Authority: auth, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"recover the authority of a failed payment", topup.Input{Step: topup.StepRecover, Actor: topup.ActorReconcile,
			TopUp: topup.TopUp{ID: 1, Status: topup.StatusFailed}, Authority: auth},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusPendingVerification, Reason: topup.ReasonAuthorityRecovered, Authority: auth, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"recover: it has an authority already", topup.Input{Step: topup.StepRecover, Actor: topup.ActorReconcile, TopUp: withAuth, Authority: auth},
			topup.Decision{Action: topup.ActionNone}},

		{"admin closes a payment under review", topup.Input{Step: topup.StepClose, Actor: topup.ActorAdmin, TopUp: review},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusFailed, Reason: topup.ReasonClosedByAdmin}},
		{"admin close of a failed payment: nothing", topup.Input{Step: topup.StepClose, Actor: topup.ActorAdmin, TopUp: failed},
			topup.Decision{Action: topup.ActionNone}},
		{"admin close without the lease: nothing", topup.Input{Step: topup.StepClose, Actor: topup.ActorAdmin, TopUp: review, LeaseLost: true},
			topup.Decision{Action: topup.ActionNone}},

		{"stale created (the submit died)", topup.Input{Step: topup.StepDeadline, Actor: topup.ActorWorker, TopUp: created},
			topup.Decision{Action: topup.ActionMove, To: topup.StatusFailed, Reason: topup.ReasonAbandonedSubmit}},
		{"created, not stale yet", topup.Input{Step: topup.StepDeadline, Actor: topup.ActorWorker,
			TopUp: topup.TopUp{ID: 1, Status: topup.StatusCreated, CreatedAt: t0.Add(-59 * time.Second)}},
			topup.Decision{Action: topup.ActionNone}},
		{"created with an authority is not stale", topup.Input{Step: topup.StepDeadline, Actor: topup.ActorWorker, TopUp: withAuth},
			topup.Decision{Action: topup.ActionNone}},
	}
	// A credit of a bank-verified payment that failed: counted and retried
	// after the window; at the third failure, to review (N6).
	for _, st := range []topup.Status{topup.StatusAwaitingPayment, topup.StatusPendingVerification, topup.StatusFailed} {
		for failures := range 3 {
			p := open(st, time.Minute)
			p.CreditFailures = failures
			want := topup.Decision{Action: topup.ActionKeep, To: st}
			switch {
			case st == topup.StatusFailed:
				// Ended failed by another actor while the bank verified it
				// (issue 31): never left failed, a person looks.
				want = topup.Decision{Action: topup.ActionMove, To: topup.StatusNeedsReview, Reason: topup.ReasonCreditFailed}
			case failures == 2:
				want = topup.Decision{Action: topup.ActionMove, To: topup.StatusNeedsReview, Reason: topup.ReasonCreditFailed}
			default:
				want.NextCheckAt = ptr(t0.Add(recheck))
			}
			rows = append(rows, row{fmt.Sprintf("credit failed %s after %d failures", st, failures),
				topup.Input{Step: topup.StepCreditFailed, Actor: topup.ActorCallback, TopUp: p}, want})
		}
	}
	// The bank verified a payment with another payment's reference: never
	// credited, never left failed; to review, from failed without the
	// lease too; from an open status only under the lease.
	for _, st := range []topup.Status{topup.StatusAwaitingPayment, topup.StatusPendingVerification, topup.StatusFailed,
		topup.StatusNeedsReview, topup.StatusCredited} {
		for _, lost := range []bool{false, true} {
			want := topup.Decision{Action: topup.ActionNone}
			switch {
			case st == topup.StatusFailed, !st.Terminal() && !lost:
				want = topup.Decision{Action: topup.ActionMove, To: topup.StatusNeedsReview, Reason: topup.ReasonRefIDReused}
			case st == topup.StatusNeedsReview && !lost:
				want = topup.Decision{Action: topup.ActionKeep, To: st}
			}
			for _, actor := range []topup.Actor{topup.ActorCallback, topup.ActorWorker, topup.ActorReconcile, topup.ActorAdmin} {
				rows = append(rows, row{fmt.Sprintf("reference reused, %s, lease lost %v, by %s", st, lost, actor),
					topup.Input{Step: topup.StepRefReused, Actor: actor, TopUp: open(st, time.Minute), LeaseLost: lost}, want})
			}
		}
	}
	// The worker's deadlines: status × age since opened × lease.
	for _, st := range []topup.Status{topup.StatusAwaitingPayment, topup.StatusPendingVerification} {
		for _, age := range []time.Duration{time.Minute, 20 * time.Minute, 20*time.Minute + time.Second, 2 * time.Hour, 2*time.Hour + time.Second} {
			for _, lost := range []bool{false, true} {
				want := topup.Decision{Action: topup.ActionNone}
				switch {
				case lost:
				case st == topup.StatusAwaitingPayment && age > 20*time.Minute:
					want = topup.Decision{Action: topup.ActionMove, To: topup.StatusFailed, Reason: topup.ReasonNotPaidAfterLife}
				case st == topup.StatusPendingVerification && age > 2*time.Hour:
					want = topup.Decision{Action: topup.ActionMove, To: topup.StatusNeedsReview, Reason: topup.ReasonUnknownTooLong}
				}
				rows = append(rows, row{fmt.Sprintf("deadline %s opened %v ago, lease lost %v", st, age, lost),
					topup.Input{Step: topup.StepDeadline, Actor: topup.ActorWorker, TopUp: open(st, age), LeaseLost: lost}, want})
			}
		}
	}
	for _, r := range rows {
		r.in.Now, r.in.Rules = t0, rules
		d := topup.Decide(r.in)
		if d.Action != r.want.Action || d.To != r.want.To || d.Reason != r.want.Reason || d.Authority != r.want.Authority ||
			d.KeepLease != r.want.KeepLease || fmt.Sprint(deref(d.GatewayCode)) != fmt.Sprint(deref(r.want.GatewayCode)) ||
			fmt.Sprint(d.NextCheckAt) != fmt.Sprint(r.want.NextCheckAt) || fmt.Sprint(d.OpenedAt) != fmt.Sprint(r.want.OpenedAt) {
			t.Errorf("%s:\n got %+v\nwant %+v", r.name, d, r.want)
		}
		if r.in.Step == topup.StepCreditFailed && !d.CountCreditFailure {
			t.Errorf("%s: the failure is not counted", r.name)
		}
		l.took(t, r.in.TopUp.Status, d, r.in.Actor)
	}
}

// The worker's schedule: back-off doubles from the base up to the cap,
// with jitter in [50%, 100%], and never comes sooner than the pacing
// window after the last check.
func TestBackoffAndNextCheck(t *testing.T) {
	base, maxD := 10*time.Second, 2*time.Minute
	for _, c := range []struct {
		n      int
		jitter float64
		want   time.Duration
	}{
		{0, 0, 5 * time.Second}, {1, 0, 5 * time.Second}, {1, 0.999999, 10*time.Second - 10*time.Microsecond},
		{2, 0, 10 * time.Second}, {3, 0.5, 30 * time.Second}, {5, 0, time.Minute}, {50, 0, time.Minute}, {50, 1, 2 * time.Minute},
	} {
		got := topup.Backoff(c.n, base, maxD, c.jitter)
		if got.Round(time.Millisecond) != c.want.Round(time.Millisecond) {
			t.Errorf("Backoff(%d, jitter %v) = %v, want %v", c.n, c.jitter, got, c.want)
		}
	}
	p := topup.TopUp{}
	if got := topup.NextCheck(p, t0, 5*time.Second, recheck); !got.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("never checked: next %v", got)
	}
	p.LastCheckedAt = ptr(t0.Add(-time.Second))
	if got := topup.NextCheck(p, t0, 5*time.Second, recheck); !got.Equal(t0.Add(19 * time.Second)) {
		t.Errorf("checked a second ago: next %v, want the pacing window's end", got)
	}
	if topup.DueForCheck(p, t0, recheck) || !topup.DueForCheck(p, t0.Add(19*time.Second), recheck) || !topup.DueForCheck(topup.TopUp{}, t0, recheck) {
		t.Error("DueForCheck does not follow the pacing window")
	}
}

// resolved_at, decided from the events newest first.
func TestResolvedAtDecision(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	ev := func(from, to topup.Status, m int) topup.Event {
		return topup.Event{FromStatus: from, ToStatus: to, CreatedAt: at(m)}
	}
	const (
		aw = topup.StatusAwaitingPayment
		pv = topup.StatusPendingVerification
		fa = topup.StatusFailed
		nr = topup.StatusNeedsReview
		cr = topup.StatusCredited
	)
	for _, c := range []struct {
		name     string
		from, to topup.Status
		events   []topup.Event // newest first
		want     time.Time
	}{
		{"first failure", aw, fa, nil, at(100)},
		{"credited after a reopen: now", pv, cr, []topup.Event{ev(fa, pv, 5), ev(aw, fa, 1)}, at(100)},
		{"failed again after a reopen: the first failure", pv, fa, []topup.Event{ev(fa, pv, 5), ev(aw, fa, 1)}, at(1)},
		{"failed again after two reopens", pv, fa, []topup.Event{ev(fa, pv, 9), ev(pv, fa, 7), ev(fa, pv, 5), ev(aw, fa, 1)}, at(1)},
		{"review after failed: a new outcome", pv, nr, []topup.Event{ev(fa, pv, 5), ev(aw, fa, 1)}, at(100)},
		{"failed after review: a new outcome", pv, fa, []topup.Event{ev(nr, pv, 5), ev(aw, nr, 1)}, at(100)},
		{"review again", pv, nr, []topup.Event{ev(nr, pv, 5), ev(pv, nr, 2), ev(aw, pv, 1)}, at(2)},
		{"no reopen: now", pv, fa, []topup.Event{ev(aw, pv, 5)}, at(100)},
	} {
		if got := topup.ResolvedAt(c.from, c.to, at(100), c.events); !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// PageTime: how long the payer had the bank's page, from the payment's
// creation to their first return, or to now when they never came back.
func TestPageTime(t *testing.T) {
	created := t0.Add(-20 * time.Minute)
	for _, tt := range []struct {
		name string
		p    topup.TopUp
		want time.Duration
	}{
		{"never came back", topup.TopUp{CreatedAt: created}, 20 * time.Minute},
		{"came back", topup.TopUp{CreatedAt: created, ReturnedAt: ptr(created.Add(90 * time.Second))}, 90 * time.Second},
		{"unknown creation", topup.TopUp{}, 0},
		{"a clock behind the row", topup.TopUp{CreatedAt: t0.Add(time.Second)}, 0},
	} {
		if got := topup.PageTime(tt.p, t0); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestGatewayVerifyDeadline: a payment still unknown when its gateway's
// verify window (from the sale: the payer's first return, else its
// creation; a reopen does not move it) has closed was returned to the
// payer by the bank: review, with that reason, before WORKER_MAX_UNKNOWN;
// a payment awaiting payment keeps its own rule, and without a documented
// window nothing changes.
func TestGatewayVerifyDeadline(t *testing.T) {
	r := topup.Rules{AuthorityLifetime: 40 * time.Minute, MaxUnknown: 2 * time.Hour}
	for _, tt := range []struct {
		name     string
		status   topup.Status
		deadline time.Duration
		created  time.Duration // ago
		opened   time.Duration // ago (a reopen)
		returned time.Duration // ago (the payer's first return; 0: none)
		to       topup.Status
		reason   topup.Reason
	}{
		{"unknown past the window", topup.StatusPendingVerification, 20 * time.Minute, 21 * time.Minute, 21 * time.Minute, 0, topup.StatusNeedsReview, topup.ReasonReturnedToPayer},
		{"unknown within the window", topup.StatusPendingVerification, 20 * time.Minute, 19 * time.Minute, 19 * time.Minute, 0, "", ""},
		{"reopened lately, created long ago", topup.StatusPendingVerification, 20 * time.Minute, 50 * time.Minute, time.Minute, 0, topup.StatusNeedsReview, topup.ReasonReturnedToPayer},
		{"no documented window", topup.StatusPendingVerification, 0, 50 * time.Minute, 50 * time.Minute, 0, "", ""},
		{"no documented window, past max unknown", topup.StatusPendingVerification, 0, 3 * time.Hour, 3 * time.Hour, 0, topup.StatusNeedsReview, topup.ReasonUnknownTooLong},
		{"paid late in the page's life: the window from the return", topup.StatusPendingVerification, 20 * time.Minute, 30 * time.Minute, 30 * time.Minute, 15 * time.Minute, "", ""},
		{"paid late in the page's life, the window from the return closed", topup.StatusPendingVerification, 20 * time.Minute, 40 * time.Minute, 40 * time.Minute, 21 * time.Minute, topup.StatusNeedsReview, topup.ReasonReturnedToPayer},
		{"reopened lately, returned long ago", topup.StatusPendingVerification, 20 * time.Minute, 50 * time.Minute, time.Minute, 45 * time.Minute, topup.StatusNeedsReview, topup.ReasonReturnedToPayer},
		{"awaiting payment keeps its lifetime rule", topup.StatusAwaitingPayment, 20 * time.Minute, 30 * time.Minute, 30 * time.Minute, 0, "", ""},
	} {
		rules := r
		rules.VerifyDeadline = tt.deadline
		p := topup.TopUp{ID: 1, Status: tt.status, CreatedAt: t0.Add(-tt.created), OpenedAt: ptr(t0.Add(-tt.opened))}
		if tt.returned > 0 {
			p.ReturnedAt = ptr(t0.Add(-tt.returned))
		}
		d := topup.Decide(topup.Input{Step: topup.StepDeadline, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules})
		if tt.to == "" {
			if d.Action != topup.ActionNone {
				t.Errorf("%s: %+v, want nothing", tt.name, d)
			}
			continue
		}
		if d.Action != topup.ActionMove || d.To != tt.to || d.Reason != tt.reason {
			t.Errorf("%s: %+v, want %s (%s)", tt.name, d, tt.to, tt.reason)
		}
	}
}

// TestCallbackOnlyWindow: a payment of a gateway whose verify needs the
// callback's data and nothing else gives it (Mellat), whose payer never
// came back, has no outcome the bank can be asked for: it waits for its
// callback until the gateway's window closes (from its creation), not
// the authority's lifetime, shorter or longer, and then goes to review as
// returned to the payer. With a callback (came back, or a receipt kept),
// or at a gateway whose receipt of the token stands in for the callback
// (SEP), the lifetime rule stays.
func TestCallbackOnlyWindow(t *testing.T) {
	window := 20 * time.Minute
	for _, tt := range []struct {
		name         string
		lifetime     time.Duration
		callbackOnly bool
		created      time.Duration // ago
		returned     bool
		receipt      bool
		to           topup.Status
		reason       topup.Reason
	}{
		{"no callback, window open, lifetime passed", 10 * time.Minute, true, 15 * time.Minute, false, false, "", ""},
		{"no callback, window closed", 10 * time.Minute, true, 21 * time.Minute, false, false, topup.StatusNeedsReview, topup.ReasonReturnedToPayer},
		{"no callback, window closed, lifetime longer", time.Hour, true, 21 * time.Minute, false, false, topup.StatusNeedsReview, topup.ReasonReturnedToPayer},
		{"no callback, at the window's end exactly", time.Hour, true, 20 * time.Minute, false, false, "", ""},
		{"came back without a sale: the lifetime rule", 10 * time.Minute, true, 15 * time.Minute, true, false, topup.StatusFailed, topup.ReasonNotPaidAfterLife},
		{"a kept receipt: the lifetime rule", 10 * time.Minute, true, 15 * time.Minute, false, true, topup.StatusFailed, topup.ReasonNotPaidAfterLife},
		{"a receipt of the token stands in (SEP)", 10 * time.Minute, false, 15 * time.Minute, false, false, topup.StatusFailed, topup.ReasonNotPaidAfterLife},
		{"a receipt of the token, past the window", time.Hour, false, 25 * time.Minute, false, false, "", ""},
	} {
		rules := topup.Rules{AuthorityLifetime: tt.lifetime, MaxUnknown: 2 * time.Hour, VerifyDeadline: window, CallbackOnly: tt.callbackOnly}
		p := topup.TopUp{ID: 1, Status: topup.StatusAwaitingPayment, CreatedAt: t0.Add(-tt.created)}
		if tt.returned {
			p.ReturnedAt = ptr(t0.Add(-time.Minute))
		}
		if tt.receipt {
			p.Receipt = ptr("123456789")
		}
		d := topup.Decide(topup.Input{Step: topup.StepDeadline, Actor: topup.ActorWorker, TopUp: p, Now: t0, Rules: rules})
		if tt.to == "" {
			if d.Action != topup.ActionNone {
				t.Errorf("%s: %+v, want nothing", tt.name, d)
			}
			continue
		}
		if d.Action != topup.ActionMove || d.To != tt.to || d.Reason != tt.reason || !d.Deadline {
			t.Errorf("%s: %+v, want %s (%s)", tt.name, d, tt.to, tt.reason)
		}
	}
}

// TestPickGateway: the preferred gateway when healthy, else the next
// healthy one after it in order (wrapping); an unknown one is refused;
// none healthy is the gateway failure.
func TestPickGateway(t *testing.T) {
	offers := []topup.GatewayOffer{{Name: "zarinpal", Healthy: true}, {Name: "zibal", Healthy: false}, {Name: "sep", Healthy: true}}
	for _, tt := range []struct {
		preferred, want string
		err             error
	}{
		{"", "zarinpal", nil},
		{"zarinpal", "zarinpal", nil},
		{"zibal", "sep", nil},
		{"sep", "sep", nil},
		{"paypal", "", topup.ErrUnknownGateway},
	} {
		got, err := topup.PickGateway(offers, tt.preferred)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("PickGateway(%q) = %q, %v; want %q, %v", tt.preferred, got, err, tt.want, tt.err)
		}
	}
	down := []topup.GatewayOffer{{Name: "zarinpal"}, {Name: "zibal", Healthy: true}}
	if got, _ := topup.PickGateway(down, ""); got != "zibal" {
		t.Errorf("first down: %q, want zibal", got)
	}
	if got, _ := topup.PickGateway(down, "zibal"); got != "zibal" {
		t.Errorf("zibal preferred: %q", got)
	}
	if _, err := topup.PickGateway([]topup.GatewayOffer{{Name: "zarinpal"}}, ""); !errors.Is(err, topup.ErrGatewayFailed) || !errors.Is(err, gateway.ErrUnavailable) {
		t.Errorf("all down: %v, want ErrGatewayFailed", err)
	}
	if _, err := topup.PickGateway(nil, ""); !errors.Is(err, topup.ErrGatewayFailed) {
		t.Errorf("none offered: %v, want ErrGatewayFailed", err)
	}
}
