package topup_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// settleBank is the fake gateway with a settle (Mellat's shape): verify
// answers 0 the first time and 43 after, each payment with its own
// reference; settle answers from script (nil:
// 0 the first time it settles, 45 after), and the bank's side remembers
// whether the payment is settled.
type settleBank struct {
	*topuptest.Gateway
	mu       sync.Mutex
	settles  int
	settled  map[string]bool
	refs     map[string]int64 // verified at the bank, with its reference
	SettleFn func(n int, settledBefore bool) (gateway.SettleResult, error)
}

func newSettleBank() *settleBank {
	b := &settleBank{Gateway: topuptest.NewGateway(), settled: map[string]bool{}, refs: map[string]int64{}}
	b.GatewayName = "settler"
	b.VerifyFn = func(_ int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
		b.mu.Lock()
		ref, before := b.refs[in.Authority]
		if !before {
			ref = 7700 + int64(len(b.refs)) // the first payment's is 7700
			b.refs[in.Authority] = ref
		}
		b.mu.Unlock()
		code, outcome := 0, gateway.VerifyPaid
		if before {
			code, outcome = 43, gateway.VerifyAlreadyVerified
		}
		return gateway.VerifyResult{Outcome: outcome, Code: code, RefID: ref, CardPANMasked: topuptest.Card, AmountRials: in.AmountRials}, nil
	}
	return b
}

// Ops are the fake's (an open breaker) and settle.
func (b *settleBank) Ops() gateway.Ops {
	ops := b.Gateway.Ops()
	ops.Settle = b.Settle
	return ops
}

// Settle is the bank's settle (gateway.Ops.Settle).
func (b *settleBank) Settle(_ context.Context, in gateway.VerifyInput) (gateway.SettleResult, error) {
	b.mu.Lock()
	b.settles++
	n, before, fn := b.settles, b.settled[in.Authority], b.SettleFn
	b.mu.Unlock()
	if fn != nil {
		return fn(n, before)
	}
	b.settle(in.Authority)
	if before {
		return gateway.SettleResult{Outcome: gateway.SettleAlready, Code: 45}, nil
	}
	return gateway.SettleResult{Outcome: gateway.SettleDone}, nil
}

// settle marks the payment settled at the bank.
func (b *settleBank) settle(authority string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settled[authority] = true
}

func (b *settleBank) counts() (verifies, settles int) {
	_, v, _ := b.Counts()
	b.mu.Lock()
	defer b.mu.Unlock()
	return v, b.settles
}

// settleEnv is env with the settling bank as its one gateway (its settle
// window 3 hours, as Mellat's).
func settleEnv(t *testing.T, db *store.DB) (*env, *settleBank) {
	t.Helper()
	e := newEnv(t, db)
	bank := newSettleBank()
	cfg := topuptest.Config()
	cfg.Gateways = map[string]topup.GatewayRules{"settler": {VerifyDeadline: 20 * time.Minute, SettleWindow: 3 * time.Hour, NeedsCallback: true}}
	e.svc = topup.NewService(sqlstore.New(db), gateway.Set{bank}, e.clock.Now, nil, cfg)
	return e, bank
}

// events lists a payment's edges as "from→to".
func (e *env) edges(id int64) []string {
	e.t.Helper()
	evs, err := topuptest.Events(context.Background(), e.db, id)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.FromStatus)+"→"+string(ev.ToStatus))
	}
	return out
}

// A verified payment whose settle times out is settling with the verified
// facts, not credited; the worker claims it, asks settle alone (no second
// verify), hears 0 and credits it, exactly once; further rounds and
// callbacks change nothing.
func TestSettlingSettledByTheWorker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := settleEnv(t, db)
		p := e.start(50_000)
		bank.SettleFn = func(int, bool) (gateway.SettleResult, error) {
			return gateway.SettleResult{}, topuptest.Transient("settle")
		}
		got, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != topup.StatusSettling {
			t.Fatalf("callback: %s %v, want settling", got.Status, err)
		}
		r := e.row(p.ID)
		if r.RefID == nil || *r.RefID != 7700 || r.VerifiedAmountRials == nil || *r.VerifiedAmountRials != 50_000 ||
			r.LeaseUntil != nil || r.OpenedAt == nil || r.NextCheckAt == nil || e.balance() != 0 {
			t.Fatalf("settling row %s, balance %d", dump(r), e.balance())
		}
		if v, s := bank.counts(); v != 1 || s != 1 {
			t.Fatalf("verifies %d settles %d, want 1 1", v, s)
		}
		topuptest.CheckInvariants(t, db)

		bank.SettleFn = nil
		e.clock.Advance(time.Minute) // past the pacing window and the back-off
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		rr, err := w.RunOnce(ctx)
		if err != nil || rr.Claimed != 1 || rr.Resolved != 1 {
			t.Fatalf("worker round: %+v %v", rr, err)
		}
		e.assertCredited(p, 7700)
		if e.balance() != 50_000 {
			t.Fatalf("balance %d, want 50000", e.balance())
		}
		if v, s := bank.counts(); v != 1 || s != 2 {
			t.Errorf("verifies %d settles %d, want the settle alone asked again (1 2)", v, s)
		}
		want := "created→awaiting_payment awaiting_payment→settling settling→credited"
		if got := join(e.edges(p.ID)); got != want {
			t.Errorf("events %s, want %s", got, want)
		}
		if r := e.row(p.ID); r.StatusReason != string(topup.ReasonSettled) {
			t.Errorf("reason %q, want settled", r.StatusReason)
		}

		// Nothing more: another round, a repeat callback.
		e.clock.Advance(time.Minute)
		if rr, err := w.RunOnce(ctx); err != nil || rr.Claimed != 0 {
			t.Fatalf("second round: %+v %v", rr, err)
		}
		if got, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("repeat callback: %s %v", got.Status, err)
		}
		if e.balance() != 50_000 || len(e.ledgerOf(p.ID)) != 1 {
			t.Fatalf("balance %d, %d ledger entries after the repeats", e.balance(), len(e.ledgerOf(p.ID)))
		}
		topuptest.CheckInvariants(t, db)
	})
}

// A process that dies after the move to settling (before settle, or after
// the bank settled and before the credit) leaves the payment settling
// under a lease nobody will give back: once the lease runs out the worker
// settles it (0, or 45: settled before) and credits it once, without
// verifying it again.
func TestSettlingResumesAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bankSettled bool // the crash came after the bank settled
	}{{"before settle", false}, {"after settle", true}} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e, bank := settleEnv(t, db)
				p := e.start(40_000)
				bank.SettleFn = func(int, bool) (gateway.SettleResult, error) {
					if tc.bankSettled {
						bank.settle(p.AuthorityString())
					}
					panic("the process dies here")
				}
				func() {
					defer func() {
						if recover() == nil {
							t.Fatal("the check did not reach settle")
						}
					}()
					_, _ = e.back(ctx, p.PublicID, p.AuthorityString())
				}()
				r := e.row(p.ID)
				if r.Status != topup.StatusSettling || r.LeaseUntil == nil || r.RefID == nil || e.balance() != 0 {
					t.Fatalf("after the crash: %s, balance %d", dump(r), e.balance())
				}

				bank.SettleFn = nil
				w := e.svc.NewWorker(topuptest.WorkerConfig())
				if rr, err := w.RunOnce(ctx); err != nil || rr.Resolved != 0 {
					t.Fatalf("a round under the dead lease: %+v %v", rr, err)
				}
				e.clock.Advance(time.Minute) // the dead holder's lease runs out
				rr, err := w.RunOnce(ctx)
				if err != nil || rr.Resolved != 1 {
					t.Fatalf("worker round: %+v %v", rr, err)
				}
				e.assertCredited(p, 7700)
				if e.balance() != 40_000 {
					t.Fatalf("balance %d, want 40000 (once)", e.balance())
				}
				if v, s := bank.counts(); v != 1 || s != 2 {
					t.Errorf("verifies %d settles %d, want 1 2", v, s)
				}
				topuptest.CheckInvariants(t, db)
			})
		})
	}
}

// The ways out of settling other than a credit, through the store: 48
// fails it (the balance untouched); a settle still unknown when the
// settle window closes goes to review (settle_window_closed), after the
// worker's last try; a settling payment kept before migration 00018 (no
// facts on the row) is verified again (43) and then settled; a verify
// with another payment's reference goes to review, never settled.
func TestSettlingOtherEnds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := settleEnv(t, db)
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		unknown := func(int, bool) (gateway.SettleResult, error) {
			return gateway.SettleResult{}, topuptest.Transient("settle")
		}

		// Reversed.
		rev := e.start(30_000)
		bank.SettleFn = unknown
		if got, _ := e.back(ctx, rev.PublicID, rev.AuthorityString()); got.Status != topup.StatusSettling {
			t.Fatalf("callback: %s", got.Status)
		}
		bank.SettleFn = func(int, bool) (gateway.SettleResult, error) {
			return gateway.SettleResult{Outcome: gateway.SettleReversed, Code: 48}, nil
		}
		e.clock.Advance(time.Minute)
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if r := e.row(rev.ID); r.Status != topup.StatusFailed || r.StatusReason != string(topup.ReasonBankReversed) || e.balance() != 0 {
			t.Fatalf("reversed: %s, balance %d", dump(r), e.balance())
		}

		// The settle window closes with the settle still unknown.
		late := e.start(20_000)
		bank.SettleFn = unknown
		if got, _ := e.back(ctx, late.PublicID, late.AuthorityString()); got.Status != topup.StatusSettling {
			t.Fatalf("callback: %s", got.Status)
		}
		wc := topuptest.WorkerConfig()
		wc.MaxUnknown = 4 * time.Hour // the window (3 h) is shorter
		w4 := e.svc.NewWorker(wc)
		e.clock.Advance(2 * time.Hour)
		if _, err := w4.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if r := e.row(late.ID); r.Status != topup.StatusSettling {
			t.Fatalf("within the window: %s", dump(r))
		}
		_, before := bank.counts()
		e.clock.Advance(time.Hour + time.Minute)
		if _, err := w4.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if r := e.row(late.ID); r.Status != topup.StatusNeedsReview || r.StatusReason != string(topup.ReasonSettleWindowClosed) {
			t.Fatalf("past the window: %s", dump(r))
		}
		if _, after := bank.counts(); after != before+1 {
			t.Errorf("settles %d → %d: the worker asks once more before the deadline", before, after)
		}

		// Settling without facts (kept before 00018): verify 43, settle 45.
		old := e.start(10_000)
		bank.SettleFn = nil
		bank.settle(old.AuthorityString())
		topuptest.ForceStatus(t, db, old.ID, string(topup.StatusSettling), string(topup.ReasonSettleUnknown))
		v0, s0 := bank.counts()
		got, err := e.svc.Resolve(ctx, e.row(old.ID))
		if err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("legacy settling: %s %v", got.Status, err)
		}
		if v, s := bank.counts(); v != v0+1 || s != s0+1 {
			t.Errorf("legacy settling: verifies +%d settles +%d, want +1 +1", v-v0, s-s0)
		}
		if e.balance() != 10_000 {
			t.Fatalf("balance %d, want 10000 (only the legacy payment credited)", e.balance())
		}

		// Verified with a reference another payment holds: review, never
		// settled (unique(gateway, ref_id) refuses the move to settling).
		dup := e.start(15_000)
		bank.mu.Lock()
		bank.refs[dup.AuthorityString()] = *e.row(old.ID).RefID
		bank.mu.Unlock()
		_, s0 = bank.counts()
		if got, err := e.back(ctx, dup.PublicID, dup.AuthorityString()); err != nil || got.Status != topup.StatusNeedsReview ||
			got.StatusReason != string(topup.ReasonRefIDReused) {
			t.Fatalf("reference reused: %s %s %v", got.Status, got.StatusReason, err)
		}
		if _, s := bank.counts(); s != s0 || e.balance() != 10_000 {
			t.Errorf("reference reused: settled %d more, balance %d", s-s0, e.balance())
		}
		topuptest.CheckInvariants(t, db)
	})
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
