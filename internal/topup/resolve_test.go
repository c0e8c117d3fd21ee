package topup_test

// Tests of the callback and of resolving a payment with the bank (resolve.go).

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

func TestReturnPaid(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(50_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(123) })

		// Callbacks that do not name this payment change nothing.
		for _, a := range []string{"", topuptest.NewAuthority(), strings.ToLower(p.AuthorityString()), p.AuthorityString() + " "} {
			if _, err := e.back(ctx, p.PublicID, a); !errors.Is(err, topup.ErrAuthorityMismatch) {
				t.Errorf("Return(authority %q) = %v, want ErrAuthorityMismatch", a, err)
			}
		}
		for _, pub := range []string{"aaaaaaaaaaaaaaaaaaaaaaaa", "nope", "", strings.ToUpper(p.PublicID)} {
			if _, err := e.back(ctx, pub, p.AuthorityString()); !errors.Is(err, topup.ErrNotFound) {
				t.Errorf("Return(public id %q) = %v, want ErrNotFound", pub, err)
			}
		}
		if r := e.row(p.ID); r.Status != topup.StatusAwaitingPayment || r.Attempts != 0 || r.LeaseUntil != nil || r.StatusReason != string(topup.ReasonRequestOK) {
			t.Errorf("row after bad callbacks = %s", dump(r))
		}
		if _, ver, _ := e.gw.Counts(); ver != 0 {
			t.Fatalf("%d verifies for bad callbacks", ver)
		}

		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil {
			t.Fatalf("Return: %v", err)
		}
		if got.Status != topup.StatusCredited || got.RefIDValue() != 123 || got.VerifiedAmountRials == nil || *got.VerifiedAmountRials != 50_000 {
			t.Errorf("Return = %s", dump(got))
		}
		e.assertCredited(p, 123)
		if vi := e.gw.VerifyInputs; len(vi) != 1 || vi[0].Authority != p.AuthorityString() || vi[0].AmountRials != 50_000 {
			t.Errorf("verify inputs = %+v, want our authority and amount", vi)
		}
		if b := e.balance(); b != 50_000 {
			t.Errorf("balance = %d, want 50000", b)
		}

		// A repeat callback shows the same result without asking the bank.
		again, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || again.Status != topup.StatusCredited || again.RefIDValue() != 123 || again.ID != p.ID {
			t.Errorf("repeat Return = %s, %v", dump(again), err)
		}
		// Resolve on a stale copy of the open payment changes nothing.
		if r, err := e.svc.Resolve(ctx, p); err != nil || r.Status != topup.StatusCredited {
			t.Errorf("Resolve of a credited payment = %s, %v", dump(r), err)
		}
		if _, ver, _ := e.gw.Counts(); ver != 1 {
			t.Errorf("%d verifies, want 1", ver)
		}
		if b := e.balance(); b != 50_000 {
			t.Errorf("balance after repeats = %d, want 50000", b)
		}
		checkInvariants(t, db)
	})
}

func TestReturnConcurrentCreditsOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.start(80_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				time.Sleep(20 * time.Millisecond) // real time: a slow verify, so that the returns overlap
				if n == 1 {
					return topuptest.Paid(777)(n, in)
				}
				return topuptest.AlreadyVerified(777)(n, in)
			}
		})
		const n = 50
		got := make([]topup.TopUp, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				got[i], errs[i] = e.back(context.Background(), p.PublicID, p.AuthorityString())
			})
		}
		close(start)
		wg.Wait()
		statuses := map[topup.Status]int{}
		for i := range n {
			if errs[i] != nil {
				t.Errorf("callback %d: %v", i, errs[i])
				continue
			}
			statuses[got[i].Status]++
			if got[i].Status == topup.StatusCredited && got[i].RefIDValue() != 777 {
				t.Errorf("callback %d: %s", i, dump(got[i]))
			}
		}
		if statuses[topup.StatusCredited] != n {
			t.Errorf("statuses seen by the callbacks: %v; want all %d credited", statuses, n)
		}
		e.assertCredited(p, 777)
		if b := e.balance(); b != 80_000 {
			t.Errorf("balance = %d, want 80000", b)
		}
		_, ver, _ := e.gw.Counts()
		t.Logf("%d verify calls for %d callbacks", ver, n)
		if ver < 1 || ver > n {
			t.Errorf("%d verify calls", ver)
		}
		checkInvariants(t, db)
	})
}

func TestVerifyUnknownThenResolve(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(40_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.VerifyErr(topuptest.Transient("verify")) })

		before := e.clock.Now()
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil {
			t.Fatalf("Return: %v", err)
		}
		r := e.row(p.ID)
		if got.Status != topup.StatusPendingVerification || r.Status != topup.StatusPendingVerification ||
			r.NextCheckAt == nil || !r.NextCheckAt.After(before) || r.LeaseUntil != nil || r.ResolvedAt != nil ||
			r.Attempts != 1 || !strings.Contains(r.StatusReason, "verify") {
			t.Errorf("after an unknown verify: %s", dump(r))
		}
		e.assertUncredited(p)

		// Reloading the result page before next_check_at does not hammer the bank.
		if again, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || again.Status != topup.StatusPendingVerification {
			t.Errorf("early repeat Return = %s, %v", dump(again), err)
		}
		if _, ver, _ := e.gw.Counts(); ver != 1 {
			t.Errorf("%d verifies, want 1", ver)
		}

		// Later the bank answers: paid.
		e.clock.Advance(time.Minute)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(555) })
		got, err = e.svc.Resolve(ctx, r)
		if err != nil || got.Status != topup.StatusCredited || got.RefIDValue() != 555 {
			t.Fatalf("Resolve = %s, %v", dump(got), err)
		}
		e.assertCredited(p, 555)
		if r := e.row(p.ID); r.Attempts != 2 {
			t.Errorf("attempts = %d, want 2", r.Attempts)
		}
		// Resolving or returning again credits nothing more.
		if again, err := e.svc.Resolve(ctx, r); err != nil || again.Status != topup.StatusCredited {
			t.Errorf("second Resolve = %s, %v", dump(again), err)
		}
		if again, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || again.Status != topup.StatusCredited {
			t.Errorf("Return after credit = %s, %v", dump(again), err)
		}
		if _, ver, _ := e.gw.Counts(); ver != 2 {
			t.Errorf("%d verifies, want 2", ver)
		}
		if b := e.balance(); b != 40_000 {
			t.Errorf("balance = %d, want 40000", b)
		}
		checkInvariants(t, db)
	})
}

func TestVerifyOutcomes(t *testing.T) {
	tests := []struct {
		name          string
		verify        topuptest.VerifyFunc
		inquire       topuptest.InquireFunc
		want          topup.Status
		wantReason    string // the reason code
		wantRef       int64  // credited only
		wantInquiries int
		wantNextCheck bool
		wantResolved  bool
	}{
		{"paid", topuptest.Paid(1001), nil, topup.StatusCredited, "verified_paid", 1001, 0, false, true},
		{"already verified", topuptest.AlreadyVerified(1002), nil, topup.StatusCredited, "already_verified", 1002, 0, false, true},
		{"not paid, bank says failed", topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51), topuptest.Inquiry(gateway.InquiryFailed),
			topup.StatusFailed, "bank_cancelled", 0, 1, false, true},
		{"not paid, bank says reversed", topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51), topuptest.Inquiry(gateway.InquiryReversed),
			topup.StatusFailed, "bank_reversed", 0, 1, false, true},
		{"not paid, payer still at the bank", topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51), topuptest.Inquiry(gateway.InquiryInBank),
			topup.StatusAwaitingPayment, "request_ok", 0, 1, true, false},
		{"not paid, inquiry says paid", topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51), topuptest.Inquiry(gateway.InquiryPaid),
			topup.StatusPendingVerification, "verify_unknown", 0, 1, true, false},
		{"not paid, inquiry unknown", topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51),
			func(string) (gateway.InquiryResult, error) {
				return gateway.InquiryResult{}, topuptest.Transient("inquiry")
			},
			topup.StatusPendingVerification, "verify_unknown", 0, 1, true, false},
		{"amount mismatch", topuptest.VerifyAnswer(gateway.VerifyAmountMismatch, -50), nil,
			topup.StatusNeedsReview, "amount_mismatch", 0, 0, false, true},
		{"invalid", topuptest.VerifyAnswer(gateway.VerifyInvalid, -11), nil,
			topup.StatusNeedsReview, "verify_rejected", 0, 0, false, true},
		{"paid without a reference", topuptest.Paid(0), nil, topup.StatusNeedsReview, "no_ref_id", 0, 0, false, true},
		{"paid with a negative reference", topuptest.Paid(-5), nil, topup.StatusNeedsReview, "no_ref_id", 0, 0, false, true},
		{"verify rejected", topuptest.VerifyErr(&gateway.RejectedError{Op: "verify", Code: -10, Message: "bad merchant"}), nil,
			topup.StatusNeedsReview, "verify_rejected", 0, 0, false, true},
		{"verify unknown", topuptest.VerifyErr(topuptest.Transient("verify")), nil,
			topup.StatusPendingVerification, "verify_unknown", 0, 0, true, false},
		{"breaker open", topuptest.VerifyErr(gateway.ErrUnavailable), nil,
			topup.StatusPendingVerification, "verify_unknown", 0, 0, true, false},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := context.Background()
				e := newEnv(t, db)
				p := e.start(30_000)
				e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn, f.InquireFn = tt.verify, tt.inquire })
				got, err := e.back(ctx, p.PublicID, p.AuthorityString())
				if err != nil {
					t.Fatalf("Return: %v", err)
				}
				r := e.row(p.ID)
				if got.Status != tt.want || r.Status != tt.want {
					t.Fatalf("status: returned %s, row %s; want %s", got.Status, dump(r), tt.want)
				}
				if r.StatusReason != tt.wantReason {
					t.Errorf("status_reason %q, want %q", r.StatusReason, tt.wantReason)
				}
				if (r.NextCheckAt != nil) != tt.wantNextCheck || (r.ResolvedAt != nil) != tt.wantResolved || r.LeaseUntil != nil {
					t.Errorf("row = %s; want next_check_at set %v, resolved %v, no lease", dump(r), tt.wantNextCheck, tt.wantResolved)
				}
				if _, ver, inq := e.gw.Counts(); ver != 1 || inq != tt.wantInquiries {
					t.Errorf("%d verifies, %d inquiries; want 1, %d", ver, inq, tt.wantInquiries)
				}
				if tt.want == topup.StatusCredited {
					e.assertCredited(p, tt.wantRef)
					if b := e.balance(); b != 30_000 {
						t.Errorf("balance = %d, want 30000", b)
					}
				} else {
					e.assertUncredited(p)
					if b := e.balance(); b != 0 {
						t.Errorf("balance = %d, want 0", b)
					}
				}
				// A repeat callback within the pacing window never asks the
				// bank: the outcome the bank just gave stands.
				again, err := e.back(ctx, p.PublicID, p.AuthorityString())
				if err != nil || again.Status != tt.want {
					t.Errorf("repeat Return = %s, %v; want %s", dump(again), err, tt.want)
				}
				if _, ver, _ := e.gw.Counts(); ver != 1 {
					t.Errorf("repeat Return verified again (%d verifies)", ver)
				}
				checkInvariants(t, db)
			})
		}
	})
}

// An early (or forged) callback while the payer is still at the bank must
// not fail the payment: when the payer pays, the real callback credits it.
func TestEarlyCallbackThenPaid(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(30_000)
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = topuptest.VerifyAnswer(gateway.VerifyNotPaid, -51)
			f.InquireFn = topuptest.Inquiry(gateway.InquiryInBank)
		})
		for range 3 {
			got, err := e.back(ctx, p.PublicID, p.AuthorityString())
			if err != nil || got.Status != topup.StatusAwaitingPayment {
				t.Fatalf("early Return = %s, %v", dump(got), err)
			}
		}
		// Only the first callback asked the bank; the others were answered
		// from the row (at most one check per pacing window).
		if _, ver, inq := e.gw.Counts(); ver != 1 || inq != 1 {
			t.Errorf("%d verifies, %d inquiries for 3 early callbacks; want 1, 1", ver, inq)
		}
		e.assertUncredited(p)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(4242) })
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != topup.StatusAwaitingPayment {
			t.Fatalf("Return after paying, within the window = %s, %v; want answered from the row", dump(got), err)
		}
		e.clock.Advance(21 * time.Second) // the pacing window (20s) ends
		got, err = e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("Return after paying = %s, %v", dump(got), err)
		}
		e.assertCredited(p, 4242)
		if r := e.row(p.ID); r.Attempts != 2 {
			t.Errorf("attempts = %d, want 2", r.Attempts)
		}
		if b := e.balance(); b != 30_000 {
			t.Errorf("balance = %d, want 30000", b)
		}
		checkInvariants(t, db)
	})
}

// Two payments the bank confirms with the same reference: only the first is
// credited; the second is a fraud signal for a person.
func TestSameRefIDTwice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p1 := e.start(30_000)
		p2 := e.start(45_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(999) })

		got1, err := e.back(ctx, p1.PublicID, p1.AuthorityString())
		if err != nil || got1.Status != topup.StatusCredited {
			t.Fatalf("first Return = %s, %v", dump(got1), err)
		}
		got2, err := e.back(ctx, p2.PublicID, p2.AuthorityString())
		if err != nil || got2.Status != topup.StatusNeedsReview {
			t.Fatalf("second Return = %s, %v; want needs_review", dump(got2), err)
		}
		e.assertCredited(p1, 999)
		e.assertUncredited(p2)
		r2 := e.row(p2.ID)
		if r2.RefID != nil || r2.StatusReason != string(topup.ReasonRefIDReused) || r2.ResolvedAt == nil || r2.LeaseUntil != nil {
			t.Errorf("second payment = %s", dump(r2))
		}
		// A repeat of the second callback after the pacing window asks the
		// bank again, and it stays in review, crediting nothing.
		e.clock.Advance(21 * time.Second)
		if again, err := e.back(ctx, p2.PublicID, p2.AuthorityString()); err != nil || again.Status != topup.StatusNeedsReview {
			t.Errorf("repeat Return = %s, %v", dump(again), err)
		}
		if n := e.count(`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'topup'`); n != 1 {
			t.Errorf("%d ledger entries, want 1", n)
		}
		if b := e.balance(); b != 30_000 {
			t.Errorf("balance = %d, want 30000 (credited once)", b)
		}
		if _, ver, _ := e.gw.Counts(); ver != 3 {
			t.Errorf("%d verifies, want 3", ver)
		}
		checkInvariants(t, db)
	})
}

// A verification lease held by another actor makes a callback wait (bounded)
// and leaves the payment alone; a lease whose holder died is taken over.
func TestReturnRespectsLease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnvWith(t, db, func(c *topup.Config) { c.VerifyTimeout = 300 * time.Millisecond })
		p := e.start(30_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(31337) })
		setLease := func(until time.Time) {
			t.Helper()
			if err := db.Gorm.Exec(`UPDATE topups SET lease_until = ? WHERE id = ?`, until.UTC(), p.ID).Error; err != nil {
				t.Fatal(err)
			}
		}
		setLease(e.clock.Now().Add(time.Hour))
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != topup.StatusAwaitingPayment {
			t.Errorf("Return under a live lease = %s, %v", dump(got), err)
		}
		if _, ver, _ := e.gw.Counts(); ver != 0 {
			t.Errorf("verified under another actor's lease (%d verifies)", ver)
		}
		e.assertUncredited(p)

		setLease(e.clock.Now().Add(-time.Second)) // its holder died
		got, err = e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("Return after the lease expired = %s, %v", dump(got), err)
		}
		e.assertCredited(p, 31337)
		if b := e.balance(); b != 30_000 {
			t.Errorf("balance = %d, want 30000", b)
		}
		checkInvariants(t, db)
	})
}

// A bank answer that the payment is paid is never dropped: when another
// actor ended the payment on a stale view while the bank was being asked
// (a deadline, a review), the verified payment is still credited, once.
func TestLateVerifiedAnswerStillCredits(t *testing.T) {
	for _, other := range []topup.Status{topup.StatusNeedsReview, topup.StatusFailed} {
		t.Run(string(other), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db)
				p := e.start(30_000)
				e.gw.Set(func(f *topuptest.Gateway) {
					f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
						// Meanwhile another actor ends it without a verify.
						topuptest.ForceStatus(t, db, p.ID, string(other), "stale deadline")
						return topuptest.Paid(2024)(n, in)
					}
				})
				got, err := e.back(ctx, p.PublicID, p.AuthorityString())
				if err != nil || got.Status != topup.StatusCredited {
					t.Fatalf("Return = %s, %v; want credited", dump(got), err)
				}
				e.assertCredited(p, 2024)
				var from string
				db.Gorm.Raw(`SELECT from_status FROM topup_events WHERE topup_id = ? AND to_status = 'credited'`, p.ID).Scan(&from)
				if from != string(other) {
					t.Errorf("credit event from %q, want %q (what happened must be on record)", from, other)
				}
				if b := e.balance(); b != 30_000 {
					t.Errorf("balance = %d, want 30000", b)
				}
				// A repeat callback changes nothing.
				if got, _ := e.back(ctx, p.PublicID, p.AuthorityString()); got.Status != topup.StatusCredited || e.balance() != 30_000 {
					t.Errorf("repeat: %s balance %d", dump(got), e.balance())
				}
				checkInvariants(t, db)
			})
		})
	}
}

// The first callback is recorded (returned_at) whichever way it goes: on
// the fast path it is recorded in the statement that takes the lease and
// the bank is asked at once; when another actor holds the payment it is
// recorded alone and the callback waits for that actor (bounded by the
// budget) without asking the bank itself.
func TestFirstCallbackIsRecorded(t *testing.T) {
	cases := []struct {
		name         string
		heldByOther  bool
		wantStatus   topup.Status
		wantVerifies int
	}{
		{"nobody holds it: recorded and checked at once", false, topup.StatusCredited, 1},
		{"another actor holds it: recorded, waits for that actor", true, topup.StatusAwaitingPayment, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnvWith(t, db, func(c *topup.Config) { c.VerifyTimeout = 200 * time.Millisecond })
				p := e.start(30_000)
				e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(4242) })
				if tc.heldByOther {
					if err := db.Gorm.Exec(`UPDATE topups SET lease_owner = 'someone-else', lease_until = ? WHERE id = ?`,
						e.clock.Now().Add(time.Hour), p.ID).Error; err != nil {
						t.Fatal(err)
					}
				}
				got, err := e.back(ctx, p.PublicID, p.AuthorityString())
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Return: %v", err)
				}
				if got.Status != tc.wantStatus {
					t.Errorf("status %s, want %s", got.Status, tc.wantStatus)
				}
				r := e.row(p.ID)
				if r.ReturnedAt == nil {
					t.Errorf("the first callback was not recorded: %s", dump(r))
				}
				if _, v, _ := e.gw.Counts(); v != tc.wantVerifies {
					t.Errorf("%d verifies, want %d", v, tc.wantVerifies)
				}
				if tc.heldByOther && (r.LeaseOwner != "someone-else" || r.Status != topup.StatusAwaitingPayment) {
					t.Errorf("the other actor's lease was taken: %s", dump(r))
				}
				if !tc.heldByOther {
					e.assertCredited(p, 4242)
				}
			})
		})
	}
}

// TestVerifiedAnotherAmount: the bank verified a payment, but for another
// amount than ours (or did not say which): nothing is credited, a person
// looks (needs_review, amount_mismatch), and the wallet is unchanged.
func TestVerifiedAnotherAmount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, verified := range []int64{40_000, 0, 500_000} {
			e := newEnv(t, db)
			p := e.start(50_000)
			e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.PaidAmount(987, verified) })
			got, err := e.back(ctx, p.PublicID, p.AuthorityString())
			if err != nil {
				t.Fatalf("Return: %v", err)
			}
			r := e.row(p.ID)
			if got.Status != topup.StatusNeedsReview || r.Status != topup.StatusNeedsReview ||
				r.StatusReason != string(topup.ReasonAmountMismatch) || r.RefID != nil {
				t.Errorf("verified %d of 50,000: %s", verified, dump(r))
			}
			e.assertUncredited(p)
		}
		checkInvariants(t, db)
	})
}

// A bank reference already credited to another payment, verified for a
// payment that went to failed meanwhile (its verifier's lease ran out and
// another actor ended it): the bank holds money for it, so it must not
// stay failed; it goes to review (ref_id_reused) and the lease is given
// back, crediting nothing.
func TestSameRefIDAfterFailedMeanwhile(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p1 := e.start(30_000)
		p2 := e.start(45_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(999) })
		if got, err := e.back(ctx, p1.PublicID, p1.AuthorityString()); err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("first Return = %s, %v", dump(got), err)
		}
		// While the bank is asked about p2, the row is failed by another
		// actor (as the worker's deadline after the lease ran out).
		e.gw.Set(func(f *topuptest.Gateway) {
			f.VerifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				topuptest.ForceStatus(t, db, p2.ID, string(topup.StatusFailed), string(topup.ReasonNotPaidAfterLife))
				return topuptest.Paid(999)(n, in)
			}
		})
		got, err := e.back(ctx, p2.PublicID, p2.AuthorityString())
		if err != nil || got.Status != topup.StatusNeedsReview {
			t.Fatalf("second Return = %s, %v; want needs_review", dump(got), err)
		}
		r2 := e.row(p2.ID)
		if r2.Status != topup.StatusNeedsReview || r2.StatusReason != string(topup.ReasonRefIDReused) || r2.RefID != nil ||
			r2.LeaseUntil != nil || r2.LeaseOwner != "" {
			t.Errorf("second payment = %s (lease %q until %v), want needs_review, ref_id_reused, no reference, no lease",
				dump(r2), r2.LeaseOwner, r2.LeaseUntil)
		}
		e.assertCredited(p1, 999)
		e.assertUncredited(p2)
		if b := e.balance(); b != 30_000 {
			t.Errorf("balance = %d, want 30000 (credited once)", b)
		}
		checkInvariants(t, db)
	})
}
