package payment_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/payment"
)

// The decision core is a pure function: these tests need no database, no
// gateway and no clock, and run in milliseconds.

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const recheck = 20 * time.Second

var rules = payment.Rules{RecheckDelay: recheck, AuthorityLifetime: 20 * time.Minute, MaxUnknown: 2 * time.Hour, StaleCreated: time.Minute, MaxCreditFailures: 3}

func ptr[T any](v T) *T { return &v }

// edgeLog collects the edges the table tests reach, and checks each one
// is an edge of the transition table that the actor may take.
type edgeLog struct {
	table   map[string]payment.Edge
	reached map[string]bool
}

func newEdgeLog() *edgeLog {
	l := &edgeLog{table: map[string]payment.Edge{}, reached: map[string]bool{}}
	for _, e := range payment.Transitions() {
		l.table[string(e.From)+" → "+string(e.To)] = e
	}
	return l
}

func (l *edgeLog) took(t *testing.T, from payment.Status, d payment.Decision, actor payment.Actor) {
	t.Helper()
	if d.Action != payment.ActionMove && d.Action != payment.ActionCredit {
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
		action  payment.Action // inquire, credit, or "" for a status outcome
		to      payment.Status // "" = stays (the payer is at the bank)
		reason  payment.Reason
		code    *int
		next    bool // schedules the next check after the pacing window
		attempt bool // counts an attempt
	}
	want := func(a answer, q inquiry) outcome {
		switch a.name {
		case "paid":
			return outcome{action: payment.ActionCredit, to: payment.StatusCredited, reason: payment.ReasonVerifiedPaid, code: ptr(100), attempt: true}
		case "already verified":
			return outcome{action: payment.ActionCredit, to: payment.StatusCredited, reason: payment.ReasonAlreadyVerified, code: ptr(101), attempt: true}
		case "already verified, receipt alone":
			return outcome{action: payment.ActionCredit, to: payment.StatusCredited, reason: payment.ReasonAlreadyVerified, code: ptr(2), attempt: true}
		case "receipt unconfirmed":
			return outcome{to: payment.StatusNeedsReview, reason: payment.ReasonReceiptUnconfirmed, code: ptr(404), attempt: true}
		case "paid, receipt alone":
			return outcome{to: payment.StatusNeedsReview, reason: payment.ReasonReceiptUnconfirmed, code: ptr(0), attempt: true}
		case "paid without reference":
			return outcome{to: payment.StatusNeedsReview, reason: payment.ReasonNoRefID, code: ptr(100), attempt: true}
		case "amount mismatch":
			return outcome{to: payment.StatusNeedsReview, reason: payment.ReasonAmountMismatch, code: ptr(-50), attempt: true}
		case "paid another amount":
			// Never credit an amount the bank did not verify as ours.
			return outcome{to: payment.StatusNeedsReview, reason: payment.ReasonAmountMismatch, code: ptr(100), attempt: true}
		case "already verified, amount not said":
			return outcome{to: payment.StatusNeedsReview, reason: payment.ReasonAmountMismatch, code: ptr(201), attempt: true}
		case "invalid":
			return outcome{to: payment.StatusNeedsReview, reason: payment.ReasonVerifyRejected, code: ptr(-54), attempt: true}
		case "rejected":
			return outcome{to: payment.StatusNeedsReview, reason: payment.ReasonVerifyRejected, code: ptr(-11), attempt: true}
		case "time-out", "refused for this payment (-12)":
			return outcome{to: payment.StatusPendingVerification, reason: payment.ReasonVerifyUnknown, next: true, attempt: true}
		case "breaker open":
			return outcome{to: payment.StatusPendingVerification, reason: payment.ReasonVerifyUnknown, next: true}
		}
		// not paid: only the inquiry's definite word fails it.
		switch q.name {
		case "not asked":
			return outcome{action: payment.ActionInquire}
		case "IN_BANK":
			return outcome{next: true, attempt: true}
		case "FAILED":
			// The bank's page expired (the driver tells it from a cancel):
			// the time ran out; otherwise the payer cancelled, or the driver
			// cannot tell.
			if a.verify.NotPaid == gateway.NotPaidExpired {
				return outcome{to: payment.StatusFailed, reason: payment.ReasonBankExpired, code: ptr(-51), attempt: true}
			}
			return outcome{to: payment.StatusFailed, reason: payment.ReasonBankCancelled, code: ptr(-51), attempt: true}
		case "REVERSED":
			return outcome{to: payment.StatusFailed, reason: payment.ReasonBankReversed, code: ptr(-51), attempt: true}
		}
		return outcome{to: payment.StatusPendingVerification, reason: payment.ReasonVerifyUnknown, next: true, attempt: true}
	}
	statuses := []payment.Status{payment.StatusAwaitingPayment, payment.StatusPendingVerification, payment.StatusFailed, payment.StatusNeedsReview}
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
					p := payment.Payment{ID: 1, AmountRials: 50_000, Status: st, CreatedAt: t0.Add(-time.Hour), OpenedAt: ptr(t0.Add(-time.Minute))}
					in := payment.Input{Step: payment.StepCheck, Actor: payment.ActorWorker, Payment: p, Now: t0, Rules: rules, LeaseLost: lost,
						Verify: a.verify, VerifyErr: a.verifyErr, Inquired: q.asked, Inquiry: q.res, InquiryErr: q.err}
					d := payment.Decide(in)
					w := want(a, q)
					switch {
					case w.action == payment.ActionInquire:
						if d.Action != payment.ActionInquire {
							t.Errorf("%s: %+v, want the inquiry asked first", name, d)
						}
						continue
					case w.action == payment.ActionCredit:
						// A bank-verified payment is always credited, lease or not.
						if d.Action != payment.ActionCredit || d.To != payment.StatusCredited || d.Reason != w.reason ||
							d.RefID != a.verify.RefID || d.CreditedRials != p.AmountRials || d.CardPANMasked != a.verify.CardPANMasked {
							t.Errorf("%s: %+v, want credit of %d with ref %d", name, d, p.AmountRials, a.verify.RefID)
						}
					case lost:
						if d.Action != payment.ActionNone {
							t.Errorf("%s: %+v, want nothing (only a credit is taken without the lease)", name, d)
						}
						continue
					case w.to == "" || w.to == st:
						if d.Action != payment.ActionKeep {
							t.Errorf("%s: %+v, want the status kept", name, d)
						}
					default:
						if d.Action != payment.ActionMove || d.To != w.to || d.Reason != w.reason {
							t.Errorf("%s: %+v, want %s (%s)", name, d, w.to, w.reason)
						}
					}
					if d.Action == payment.ActionMove && fmt.Sprint(deref(d.GatewayCode)) != fmt.Sprint(deref(w.code)) {
						t.Errorf("%s: gateway code %v, want %v", name, deref(d.GatewayCode), deref(w.code))
					}
					if !d.Checked || d.CountAttempt != w.attempt {
						t.Errorf("%s: checked %v attempt %v, want checked, attempt %v", name, d.Checked, d.CountAttempt, w.attempt)
					}
					if w.next != (d.NextCheckAt != nil) || d.NextCheckAt != nil && !d.NextCheckAt.Equal(t0.Add(recheck)) {
						t.Errorf("%s: next check %v, want one at +%v: %v", name, d.NextCheckAt, recheck, w.next)
					}
					l.took(t, st, d, payment.ActorWorker)
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
	created := payment.Payment{ID: 1, Status: payment.StatusCreated, CreatedAt: t0.Add(-2 * time.Minute)}
	auth := "S0000000000000000000000000000000001"
	withAuth := created
	withAuth.Authority = &auth
	lastCheck := t0.Add(-5 * time.Second)
	failed := payment.Payment{ID: 1, Status: payment.StatusFailed, Authority: &auth, LastCheckedAt: &lastCheck, CreatedAt: t0.Add(-time.Hour)}
	review := failed
	review.Status = payment.StatusNeedsReview
	credited := failed
	credited.Status = payment.StatusCredited
	adminClosed := failed
	adminClosed.StatusReason = string(payment.ReasonClosedByAdmin)
	open := func(st payment.Status, age time.Duration) payment.Payment {
		return payment.Payment{ID: 1, Status: st, Authority: &auth, CreatedAt: t0.Add(-3 * time.Hour), OpenedAt: ptr(t0.Add(-age))}
	}
	type row struct {
		name string
		in   payment.Input
		want payment.Decision // compared: Action, To, Reason, gateway code, NextCheckAt, OpenedAt, KeepLease, Authority
	}
	now := t0
	rows := []row{
		{"request ok", payment.Input{Step: payment.StepRequest, Actor: payment.ActorSubmit, Payment: created,
			Request: gateway.RequestResult{Authority: auth, Code: 100}},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusAwaitingPayment, Reason: payment.ReasonRequestOK, GatewayCode: ptr(100), Authority: auth}},
		{"request refused", payment.Input{Step: payment.StepRequest, Actor: payment.ActorSubmit, Payment: created,
			RequestErr: &gateway.RejectedError{Op: "request", Code: -9}},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusFailed, Reason: payment.ReasonRequestRefused, GatewayCode: ptr(-9)}},
		{"request time-out", payment.Input{Step: payment.StepRequest, Actor: payment.ActorSubmit, Payment: created,
			RequestErr: &gateway.TransientError{Op: "request", Err: errors.New("time-out")}},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusFailed, Reason: payment.ReasonRequestFailed}},
		{"request with the breaker open", payment.Input{Step: payment.StepRequest, Actor: payment.ActorSubmit, Payment: created,
			RequestErr: gateway.ErrUnavailable},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusFailed, Reason: payment.ReasonGatewayUnavailable}},
		{"request answered after another submit ended it", payment.Input{Step: payment.StepRequest, Actor: payment.ActorSubmit, Payment: failed,
			Request: gateway.RequestResult{Authority: auth, Code: 100}}, payment.Decision{Action: payment.ActionNone}},

		{"reopen failed, ask now", payment.Input{Step: payment.StepReopen, Actor: payment.ActorCallback, Payment: failed, CheckNow: true},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusPendingVerification, Reason: payment.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"reopen failed, paced: the worker asks when the window ends", payment.Input{Step: payment.StepReopen, Actor: payment.ActorCallback, Payment: failed},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusPendingVerification, Reason: payment.ReasonReopened, NextCheckAt: ptr(lastCheck.Add(recheck)), OpenedAt: &now}},
		{"reopen needs_review (admin)", payment.Input{Step: payment.StepReopen, Actor: payment.ActorAdmin, Payment: review, CheckNow: true},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusPendingVerification, Reason: payment.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"reopen needs_review (reconcile)", payment.Input{Step: payment.StepReopen, Actor: payment.ActorReconcile, Payment: review, CheckNow: true},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusPendingVerification, Reason: payment.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"the worker reopens a failed payment whose payer came back", payment.Input{Step: payment.StepReopen, Actor: payment.ActorWorker, Payment: failed, CheckNow: true},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusPendingVerification, Reason: payment.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		// Issue 31 item 4: a callback does not undo an admin's close; the
		// admin's own recheck still reopens it.
		{"a callback does not reopen a payment an admin closed", payment.Input{Step: payment.StepReopen, Actor: payment.ActorCallback, Payment: adminClosed, CheckNow: true},
			payment.Decision{Action: payment.ActionNone}},
		{"an admin reopens a payment an admin closed", payment.Input{Step: payment.StepReopen, Actor: payment.ActorAdmin, Payment: adminClosed, CheckNow: true},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusPendingVerification, Reason: payment.ReasonReopened, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"reopen credited: nothing", payment.Input{Step: payment.StepReopen, Actor: payment.ActorCallback, Payment: credited, CheckNow: true},
			payment.Decision{Action: payment.ActionNone}},
		{"reopen without the lease: nothing", payment.Input{Step: payment.StepReopen, Actor: payment.ActorCallback, Payment: failed, LeaseLost: true},
			payment.Decision{Action: payment.ActionNone}},

		{"recover the authority of a created payment", payment.Input{Step: payment.StepRecover, Actor: payment.ActorReconcile, Payment: created, Authority: auth},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusPendingVerification, Reason: payment.ReasonAuthorityRecovered, Authority: auth, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"recover the authority of a failed payment", payment.Input{Step: payment.StepRecover, Actor: payment.ActorReconcile,
			Payment: payment.Payment{ID: 1, Status: payment.StatusFailed}, Authority: auth},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusPendingVerification, Reason: payment.ReasonAuthorityRecovered, Authority: auth, NextCheckAt: &now, OpenedAt: &now, KeepLease: true}},
		{"recover: it has an authority already", payment.Input{Step: payment.StepRecover, Actor: payment.ActorReconcile, Payment: withAuth, Authority: auth},
			payment.Decision{Action: payment.ActionNone}},

		{"admin closes a payment under review", payment.Input{Step: payment.StepClose, Actor: payment.ActorAdmin, Payment: review},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusFailed, Reason: payment.ReasonClosedByAdmin}},
		{"admin close of a failed payment: nothing", payment.Input{Step: payment.StepClose, Actor: payment.ActorAdmin, Payment: failed},
			payment.Decision{Action: payment.ActionNone}},
		{"admin close without the lease: nothing", payment.Input{Step: payment.StepClose, Actor: payment.ActorAdmin, Payment: review, LeaseLost: true},
			payment.Decision{Action: payment.ActionNone}},

		{"stale created (the submit died)", payment.Input{Step: payment.StepDeadline, Actor: payment.ActorWorker, Payment: created},
			payment.Decision{Action: payment.ActionMove, To: payment.StatusFailed, Reason: payment.ReasonAbandonedSubmit}},
		{"created, not stale yet", payment.Input{Step: payment.StepDeadline, Actor: payment.ActorWorker,
			Payment: payment.Payment{ID: 1, Status: payment.StatusCreated, CreatedAt: t0.Add(-59 * time.Second)}},
			payment.Decision{Action: payment.ActionNone}},
		{"created with an authority is not stale", payment.Input{Step: payment.StepDeadline, Actor: payment.ActorWorker, Payment: withAuth},
			payment.Decision{Action: payment.ActionNone}},
	}
	// A credit of a bank-verified payment that failed: counted and retried
	// after the window; at the third failure, to review (N6).
	for _, st := range []payment.Status{payment.StatusAwaitingPayment, payment.StatusPendingVerification, payment.StatusFailed} {
		for failures := range 3 {
			p := open(st, time.Minute)
			p.CreditFailures = failures
			want := payment.Decision{Action: payment.ActionKeep, To: st}
			switch {
			case st == payment.StatusFailed:
				// Ended failed by another actor while the bank verified it
				// (issue 31): never left failed, a person looks.
				want = payment.Decision{Action: payment.ActionMove, To: payment.StatusNeedsReview, Reason: payment.ReasonCreditFailed}
			case failures == 2:
				want = payment.Decision{Action: payment.ActionMove, To: payment.StatusNeedsReview, Reason: payment.ReasonCreditFailed}
			default:
				want.NextCheckAt = ptr(t0.Add(recheck))
			}
			rows = append(rows, row{fmt.Sprintf("credit failed %s after %d failures", st, failures),
				payment.Input{Step: payment.StepCreditFailed, Actor: payment.ActorCallback, Payment: p}, want})
		}
	}
	// The bank verified a payment with another payment's reference: never
	// credited, never left failed; to review, from failed without the
	// lease too; from an open status only under the lease.
	for _, st := range []payment.Status{payment.StatusAwaitingPayment, payment.StatusPendingVerification, payment.StatusFailed,
		payment.StatusNeedsReview, payment.StatusCredited} {
		for _, lost := range []bool{false, true} {
			want := payment.Decision{Action: payment.ActionNone}
			switch {
			case st == payment.StatusFailed, !st.Terminal() && !lost:
				want = payment.Decision{Action: payment.ActionMove, To: payment.StatusNeedsReview, Reason: payment.ReasonRefIDReused}
			case st == payment.StatusNeedsReview && !lost:
				want = payment.Decision{Action: payment.ActionKeep, To: st}
			}
			for _, actor := range []payment.Actor{payment.ActorCallback, payment.ActorWorker, payment.ActorReconcile, payment.ActorAdmin} {
				rows = append(rows, row{fmt.Sprintf("reference reused, %s, lease lost %v, by %s", st, lost, actor),
					payment.Input{Step: payment.StepRefReused, Actor: actor, Payment: open(st, time.Minute), LeaseLost: lost}, want})
			}
		}
	}
	// The worker's deadlines: status × age since opened × lease.
	for _, st := range []payment.Status{payment.StatusAwaitingPayment, payment.StatusPendingVerification} {
		for _, age := range []time.Duration{time.Minute, 20 * time.Minute, 20*time.Minute + time.Second, 2 * time.Hour, 2*time.Hour + time.Second} {
			for _, lost := range []bool{false, true} {
				want := payment.Decision{Action: payment.ActionNone}
				switch {
				case lost:
				case st == payment.StatusAwaitingPayment && age > 20*time.Minute:
					want = payment.Decision{Action: payment.ActionMove, To: payment.StatusFailed, Reason: payment.ReasonNotPaidAfterLife}
				case st == payment.StatusPendingVerification && age > 2*time.Hour:
					want = payment.Decision{Action: payment.ActionMove, To: payment.StatusNeedsReview, Reason: payment.ReasonUnknownTooLong}
				}
				rows = append(rows, row{fmt.Sprintf("deadline %s opened %v ago, lease lost %v", st, age, lost),
					payment.Input{Step: payment.StepDeadline, Actor: payment.ActorWorker, Payment: open(st, age), LeaseLost: lost}, want})
			}
		}
	}
	for _, r := range rows {
		r.in.Now, r.in.Rules = t0, rules
		d := payment.Decide(r.in)
		if d.Action != r.want.Action || d.To != r.want.To || d.Reason != r.want.Reason || d.Authority != r.want.Authority ||
			d.KeepLease != r.want.KeepLease || fmt.Sprint(deref(d.GatewayCode)) != fmt.Sprint(deref(r.want.GatewayCode)) ||
			fmt.Sprint(d.NextCheckAt) != fmt.Sprint(r.want.NextCheckAt) || fmt.Sprint(d.OpenedAt) != fmt.Sprint(r.want.OpenedAt) {
			t.Errorf("%s:\n got %+v\nwant %+v", r.name, d, r.want)
		}
		if r.in.Step == payment.StepCreditFailed && !d.CountCreditFailure {
			t.Errorf("%s: the failure is not counted", r.name)
		}
		l.took(t, r.in.Payment.Status, d, r.in.Actor)
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
		got := payment.Backoff(c.n, base, maxD, c.jitter)
		if got.Round(time.Millisecond) != c.want.Round(time.Millisecond) {
			t.Errorf("Backoff(%d, jitter %v) = %v, want %v", c.n, c.jitter, got, c.want)
		}
	}
	p := payment.Payment{}
	if got := payment.NextCheck(p, t0, 5*time.Second, recheck); !got.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("never checked: next %v", got)
	}
	p.LastCheckedAt = ptr(t0.Add(-time.Second))
	if got := payment.NextCheck(p, t0, 5*time.Second, recheck); !got.Equal(t0.Add(19 * time.Second)) {
		t.Errorf("checked a second ago: next %v, want the pacing window's end", got)
	}
	if payment.DueForCheck(p, t0, recheck) || !payment.DueForCheck(p, t0.Add(19*time.Second), recheck) || !payment.DueForCheck(payment.Payment{}, t0, recheck) {
		t.Error("DueForCheck does not follow the pacing window")
	}
}

// resolved_at, decided from the events newest first.
func TestResolvedAtDecision(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	ev := func(from, to payment.Status, m int) payment.Event {
		return payment.Event{FromStatus: from, ToStatus: to, CreatedAt: at(m)}
	}
	const (
		aw = payment.StatusAwaitingPayment
		pv = payment.StatusPendingVerification
		fa = payment.StatusFailed
		nr = payment.StatusNeedsReview
		cr = payment.StatusCredited
	)
	for _, c := range []struct {
		name     string
		from, to payment.Status
		events   []payment.Event // newest first
		want     time.Time
	}{
		{"first failure", aw, fa, nil, at(100)},
		{"credited after a reopen: now", pv, cr, []payment.Event{ev(fa, pv, 5), ev(aw, fa, 1)}, at(100)},
		{"failed again after a reopen: the first failure", pv, fa, []payment.Event{ev(fa, pv, 5), ev(aw, fa, 1)}, at(1)},
		{"failed again after two reopens", pv, fa, []payment.Event{ev(fa, pv, 9), ev(pv, fa, 7), ev(fa, pv, 5), ev(aw, fa, 1)}, at(1)},
		{"review after failed: a new outcome", pv, nr, []payment.Event{ev(fa, pv, 5), ev(aw, fa, 1)}, at(100)},
		{"failed after review: a new outcome", pv, fa, []payment.Event{ev(nr, pv, 5), ev(aw, nr, 1)}, at(100)},
		{"review again", pv, nr, []payment.Event{ev(nr, pv, 5), ev(pv, nr, 2), ev(aw, pv, 1)}, at(2)},
		{"no reopen: now", pv, fa, []payment.Event{ev(aw, pv, 5)}, at(100)},
	} {
		if got := payment.ResolvedAt(c.from, c.to, at(100), c.events); !got.Equal(c.want) {
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
		p    payment.Payment
		want time.Duration
	}{
		{"never came back", payment.Payment{CreatedAt: created}, 20 * time.Minute},
		{"came back", payment.Payment{CreatedAt: created, ReturnedAt: ptr(created.Add(90 * time.Second))}, 90 * time.Second},
		{"unknown creation", payment.Payment{}, 0},
		{"a clock behind the row", payment.Payment{CreatedAt: t0.Add(time.Second)}, 0},
	} {
		if got := payment.PageTime(tt.p, t0); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestGatewayVerifyDeadline: a payment still unknown when its gateway's
// verify window (from its creation, which a reopen does not move) has
// closed was returned to the payer by the bank: review, with that reason,
// before WORKER_MAX_UNKNOWN; a payment awaiting payment keeps its own
// rule, and without a documented window nothing changes.
func TestGatewayVerifyDeadline(t *testing.T) {
	r := payment.Rules{AuthorityLifetime: 40 * time.Minute, MaxUnknown: 2 * time.Hour}
	for _, tt := range []struct {
		name     string
		status   payment.Status
		deadline time.Duration
		created  time.Duration // ago
		opened   time.Duration // ago (a reopen)
		to       payment.Status
		reason   payment.Reason
	}{
		{"unknown past the window", payment.StatusPendingVerification, 20 * time.Minute, 21 * time.Minute, 21 * time.Minute, payment.StatusNeedsReview, payment.ReasonReturnedToPayer},
		{"unknown within the window", payment.StatusPendingVerification, 20 * time.Minute, 19 * time.Minute, 19 * time.Minute, "", ""},
		{"reopened lately, created long ago", payment.StatusPendingVerification, 20 * time.Minute, 50 * time.Minute, time.Minute, payment.StatusNeedsReview, payment.ReasonReturnedToPayer},
		{"no documented window", payment.StatusPendingVerification, 0, 50 * time.Minute, 50 * time.Minute, "", ""},
		{"no documented window, past max unknown", payment.StatusPendingVerification, 0, 3 * time.Hour, 3 * time.Hour, payment.StatusNeedsReview, payment.ReasonUnknownTooLong},
		{"awaiting payment keeps its lifetime rule", payment.StatusAwaitingPayment, 20 * time.Minute, 30 * time.Minute, 30 * time.Minute, "", ""},
	} {
		rules := r
		rules.VerifyDeadline = tt.deadline
		p := payment.Payment{ID: 1, Status: tt.status, CreatedAt: t0.Add(-tt.created), OpenedAt: ptr(t0.Add(-tt.opened))}
		d := payment.Decide(payment.Input{Step: payment.StepDeadline, Actor: payment.ActorWorker, Payment: p, Now: t0, Rules: rules})
		if tt.to == "" {
			if d.Action != payment.ActionNone {
				t.Errorf("%s: %+v, want nothing", tt.name, d)
			}
			continue
		}
		if d.Action != payment.ActionMove || d.To != tt.to || d.Reason != tt.reason {
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
		to           payment.Status
		reason       payment.Reason
	}{
		{"no callback, window open, lifetime passed", 10 * time.Minute, true, 15 * time.Minute, false, false, "", ""},
		{"no callback, window closed", 10 * time.Minute, true, 21 * time.Minute, false, false, payment.StatusNeedsReview, payment.ReasonReturnedToPayer},
		{"no callback, window closed, lifetime longer", time.Hour, true, 21 * time.Minute, false, false, payment.StatusNeedsReview, payment.ReasonReturnedToPayer},
		{"no callback, at the window's end exactly", time.Hour, true, 20 * time.Minute, false, false, "", ""},
		{"came back without a sale: the lifetime rule", 10 * time.Minute, true, 15 * time.Minute, true, false, payment.StatusFailed, payment.ReasonNotPaidAfterLife},
		{"a kept receipt: the lifetime rule", 10 * time.Minute, true, 15 * time.Minute, false, true, payment.StatusFailed, payment.ReasonNotPaidAfterLife},
		{"a receipt of the token stands in (SEP)", 10 * time.Minute, false, 15 * time.Minute, false, false, payment.StatusFailed, payment.ReasonNotPaidAfterLife},
		{"a receipt of the token, past the window", time.Hour, false, 25 * time.Minute, false, false, "", ""},
	} {
		rules := payment.Rules{AuthorityLifetime: tt.lifetime, MaxUnknown: 2 * time.Hour, VerifyDeadline: window, CallbackOnly: tt.callbackOnly}
		p := payment.Payment{ID: 1, Status: payment.StatusAwaitingPayment, CreatedAt: t0.Add(-tt.created)}
		if tt.returned {
			p.ReturnedAt = ptr(t0.Add(-time.Minute))
		}
		if tt.receipt {
			p.Receipt = ptr("123456789")
		}
		d := payment.Decide(payment.Input{Step: payment.StepDeadline, Actor: payment.ActorWorker, Payment: p, Now: t0, Rules: rules})
		if tt.to == "" {
			if d.Action != payment.ActionNone {
				t.Errorf("%s: %+v, want nothing", tt.name, d)
			}
			continue
		}
		if d.Action != payment.ActionMove || d.To != tt.to || d.Reason != tt.reason || !d.Deadline {
			t.Errorf("%s: %+v, want %s (%s)", tt.name, d, tt.to, tt.reason)
		}
	}
}

// TestPickGateway: the preferred gateway when healthy, else the next
// healthy one after it in order (wrapping); an unknown one is refused;
// none healthy is the gateway failure.
func TestPickGateway(t *testing.T) {
	offers := []payment.GatewayOffer{{Name: "zarinpal", Healthy: true}, {Name: "zibal", Healthy: false}, {Name: "sep", Healthy: true}}
	for _, tt := range []struct {
		preferred, want string
		err             error
	}{
		{"", "zarinpal", nil},
		{"zarinpal", "zarinpal", nil},
		{"zibal", "sep", nil},
		{"sep", "sep", nil},
		{"paypal", "", payment.ErrUnknownGateway},
	} {
		got, err := payment.PickGateway(offers, tt.preferred)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("PickGateway(%q) = %q, %v; want %q, %v", tt.preferred, got, err, tt.want, tt.err)
		}
	}
	down := []payment.GatewayOffer{{Name: "zarinpal"}, {Name: "zibal", Healthy: true}}
	if got, _ := payment.PickGateway(down, ""); got != "zibal" {
		t.Errorf("first down: %q, want zibal", got)
	}
	if got, _ := payment.PickGateway(down, "zibal"); got != "zibal" {
		t.Errorf("zibal preferred: %q", got)
	}
	if _, err := payment.PickGateway([]payment.GatewayOffer{{Name: "zarinpal"}}, ""); !errors.Is(err, payment.ErrGatewayFailed) || !errors.Is(err, gateway.ErrUnavailable) {
		t.Errorf("all down: %v, want ErrGatewayFailed", err)
	}
	if _, err := payment.PickGateway(nil, ""); !errors.Is(err, payment.ErrGatewayFailed) {
		t.Errorf("none offered: %v, want ErrGatewayFailed", err)
	}
}
