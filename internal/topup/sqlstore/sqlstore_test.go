package sqlstore_test

// The store's contract, on SQLite and PostgreSQL: each writing method is
// one transaction guarded by one conditional statement, and the guard
// holds under races (many goroutines at once, as many instances would).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
)

var seq atomic.Int64

type fixture struct {
	t      *testing.T
	db     *store.DB
	st     *sqlstore.Store
	wallet wallet.Wallet
	user   int64
	now    time.Time
}

func newFixture(t *testing.T, db *store.DB) *fixture {
	t.Helper()
	ctx := context.Background()
	u, err := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, fmt.Sprintf("store%d@example.com", seq.Add(1)), "correct horse", "", "fa")
	if err != nil {
		t.Fatal(err)
	}
	w, err := wallet.NewService(db, nil).ForUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, db: db, st: sqlstore.New(db), wallet: w, user: u.ID, now: time.Now().UTC().Truncate(time.Millisecond)}
}

// payment creates a payment and takes it through the state machine to st
// (awaiting_payment, pending_verification, failed or needs_review).
func (f *fixture) topUp(st topup.Status) topup.TopUp {
	f.t.Helper()
	ctx := context.Background()
	n := seq.Add(1)
	p := topup.TopUp{PublicID: fmt.Sprintf("p%023d", n), UserID: f.user, WalletID: f.wallet.ID, AmountRials: 50_000, Gateway: "fake",
		FormToken: formtoken.New(), Status: topup.StatusCreated, CreatedAt: f.now, UpdatedAt: f.now, OpenedAt: &f.now}
	if err := f.st.Create(ctx, &p); err != nil {
		f.t.Fatal(err)
	}
	auth := fmt.Sprintf("S%035d", n)
	p = f.move(p, topup.StatusAwaitingPayment, topup.ActorSubmit, "", topup.Fields{Authority: &auth})
	if st == topup.StatusAwaitingPayment {
		return p
	}
	tok := f.claim(p.ID, []topup.Status{p.Status})
	switch st {
	case topup.StatusPendingVerification:
		return f.move(p, st, topup.ActorWorker, tok, topup.Fields{})
	case topup.StatusFailed, topup.StatusNeedsReview:
		return f.move(p, st, topup.ActorWorker, tok, topup.Fields{})
	}
	f.t.Fatalf("cannot make a %s payment", st)
	return p
}

func (f *fixture) move(p topup.TopUp, to topup.Status, actor topup.Actor, tok string, fields topup.Fields) topup.TopUp {
	f.t.Helper()
	out, err := f.st.Move(context.Background(), topup.Move{TopUpID: p.ID, PublicID: p.PublicID, From: p.Status, To: to,
		Actor: actor, Reason: "test", Lease: tok, Now: f.now, Fields: fields})
	if err != nil {
		f.t.Fatalf("move %s → %s: %v", p.Status, to, err)
	}
	return out
}

func (f *fixture) claim(id int64, statuses []topup.Status) string {
	f.t.Helper()
	tok := fmt.Sprintf("tok%d", seq.Add(1))
	_, ok, err := f.st.Claim(context.Background(), topup.Claim{ID: id, Statuses: statuses, Token: tok, Now: f.now, Until: f.now.Add(time.Minute)})
	if err != nil || !ok {
		f.t.Fatalf("claim: %v, %v", ok, err)
	}
	return tok
}

func (f *fixture) events(id int64) []topup.Event {
	f.t.Helper()
	evs, err := f.st.EventsOf(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return evs
}

// race runs fn n times at once and counts the calls that reported true.
func race(n int, fn func(i int) bool) int {
	var wg sync.WaitGroup
	var won atomic.Int64
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if fn(i) {
				won.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	return int(won.Load())
}

func TestClaim(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		p := f.topUp(topup.StatusAwaitingPayment)
		open := []topup.Status{topup.StatusAwaitingPayment, topup.StatusPendingVerification}

		// Many claimers at once: exactly one lease.
		if won := race(8, func(i int) bool {
			_, ok, err := f.st.Claim(ctx, topup.Claim{ID: p.ID, Statuses: open, Token: fmt.Sprint("t", i), Now: f.now, Until: f.now.Add(time.Minute)})
			if err != nil {
				t.Error(err)
			}
			return ok
		}); won != 1 {
			t.Fatalf("%d claimers took the lease, want 1", won)
		}
		// Held and live: refused, the row is returned as it stands.
		cur, ok, err := f.st.Claim(ctx, topup.Claim{ID: p.ID, Statuses: open, Token: "late", Now: f.now.Add(59 * time.Second), Until: f.now.Add(2 * time.Minute)})
		if err != nil || ok || cur.ID != p.ID || cur.LeaseOwner == "late" || cur.LeaseOwner == "" {
			t.Fatalf("claim of a held lease = %v, %v, owner %q", ok, err, cur.LeaseOwner)
		}
		// Expired: taken over.
		if _, ok, err := f.st.Claim(ctx, topup.Claim{ID: p.ID, Statuses: open, Token: "next", Now: f.now.Add(61 * time.Second), Until: f.now.Add(2 * time.Minute)}); err != nil || !ok {
			t.Fatalf("claim of an expired lease = %v, %v", ok, err)
		}
		// A status not asked for: refused.
		q := f.topUp(topup.StatusAwaitingPayment)
		if _, ok, _ := f.st.Claim(ctx, topup.Claim{ID: q.ID, Statuses: []topup.Status{topup.StatusFailed}, Token: "x", Now: f.now, Until: f.now.Add(time.Minute)}); ok {
			t.Fatal("claimed a payment in another status")
		}
		// Pacing in the claiming statement: checked 5 s ago, window 20 s.
		checked := f.now.Add(-5 * time.Second)
		if _, err := f.st.Release(ctx, q.ID, "", topup.Fields{LastCheckedAt: &checked}); err != nil {
			t.Fatal(err)
		}
		since := f.now.Add(-20 * time.Second)
		if won := race(8, func(i int) bool {
			_, ok, _ := f.st.Claim(ctx, topup.Claim{ID: q.ID, Statuses: open, Token: fmt.Sprint("p", i), Now: f.now, Until: f.now.Add(time.Minute), NotCheckedSince: &since})
			return ok
		}); won != 0 {
			t.Fatalf("%d paced claims inside the window, want 0", won)
		}
		since = f.now.Add(-time.Second)
		if _, ok, _ := f.st.Claim(ctx, topup.Claim{ID: q.ID, Statuses: open, Token: "after", Now: f.now, Until: f.now.Add(time.Minute), NotCheckedSince: &since}); !ok {
			t.Fatal("a paced claim after the window was refused")
		}
		// The first callback's claim: once only, and it records the return.
		r := f.topUp(topup.StatusAwaitingPayment)
		if won := race(8, func(i int) bool {
			_, ok, _ := f.st.Claim(ctx, topup.Claim{ID: r.ID, Statuses: open, Token: fmt.Sprint("f", i), Now: f.now.Add(-2 * time.Minute), Until: f.now.Add(-time.Minute), FirstReturn: true})
			return ok
		}); won != 1 {
			t.Fatalf("%d first-return claims, want 1", won)
		}
		got, _ := f.st.Get(ctx, r.ID)
		if got.ReturnedAt == nil {
			t.Fatal("the first return was not recorded")
		}
		if _, ok, _ := f.st.Claim(ctx, topup.Claim{ID: r.ID, Statuses: open, Token: "again", Now: f.now, Until: f.now.Add(time.Minute), FirstReturn: true}); ok {
			t.Fatal("a second first-return claim (lease expired) was taken")
		}
		if first, err := f.st.MarkReturned(ctx, r.ID, f.now); err != nil || first {
			t.Fatalf("MarkReturned after the first = %v, %v", first, err)
		}
		topuptest.CheckInvariants(t, db)
	})
}

func TestMove(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		p := f.topUp(topup.StatusAwaitingPayment)
		tok := f.claim(p.ID, []topup.Status{p.Status})
		m := topup.Move{TopUpID: p.ID, From: p.Status, To: topup.StatusFailed, Actor: topup.ActorWorker, Reason: topup.ReasonBankCancelled, Now: f.now}
		// An edge that needs the lease: refused without it, and with another.
		if _, err := f.st.Move(ctx, m); !errors.Is(err, topup.ErrIllegalTransition) {
			t.Fatalf("move without a lease = %v", err)
		}
		m.Lease = "not-ours"
		if _, err := f.st.Move(ctx, m); !errors.Is(err, topup.ErrNotMoved) {
			t.Fatalf("move with another lease = %v", err)
		}
		// An edge the table lacks, or an actor it does not allow.
		bad := m
		bad.To, bad.Lease = topup.StatusCreated, tok
		if _, err := f.st.Move(ctx, bad); !errors.Is(err, topup.ErrIllegalTransition) {
			t.Fatalf("illegal move = %v", err)
		}
		// Many movers from the same status at once: one moves, one event.
		m.Lease = tok
		if won := race(8, func(int) bool {
			_, err := f.st.Move(ctx, m)
			if err != nil && !errors.Is(err, topup.ErrNotMoved) {
				t.Error(err)
			}
			return err == nil
		}); won != 1 {
			t.Fatalf("%d movers moved, want 1", won)
		}
		got, _ := f.st.Get(ctx, p.ID)
		if got.Status != topup.StatusFailed || got.LeaseOwner != "" || got.ResolvedAt == nil || got.NextCheckAt != nil {
			t.Fatalf("row after the move: %+v", got)
		}
		if evs := f.events(p.ID); len(evs) != 2 || evs[1].ToStatus != topup.StatusFailed || evs[1].Reason != topup.ReasonBankCancelled {
			t.Fatalf("events = %+v", evs)
		}
		// A duplicate authority is ErrDuplicate and changes nothing.
		q := f.topUp(topup.StatusAwaitingPayment)
		dup := q.Authority
		r := topup.TopUp{PublicID: "zzzzzzzzzzzzzzzzzzzzzzzz", UserID: f.user, WalletID: f.wallet.ID, AmountRials: 1000, Gateway: "fake",
			FormToken: formtoken.New(), Status: topup.StatusCreated, CreatedAt: f.now, UpdatedAt: f.now}
		if err := f.st.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Move(ctx, topup.Move{TopUpID: r.ID, From: topup.StatusCreated, To: topup.StatusAwaitingPayment, Actor: topup.ActorSubmit,
			Now: f.now, Fields: topup.Fields{Authority: dup}}); !errors.Is(err, topup.ErrDuplicate) {
			t.Fatalf("duplicate authority = %v", err)
		}
		if evs := f.events(r.ID); len(evs) != 0 {
			t.Fatalf("events of the refused move = %+v", evs)
		}
		// A second payment of one form: ErrDuplicate.
		again := r
		again.ID, again.PublicID = 0, "yyyyyyyyyyyyyyyyyyyyyyyy"
		if err := f.st.Create(ctx, &again); !errors.Is(err, topup.ErrDuplicate) {
			t.Fatalf("second payment of a form = %v", err)
		}
		// An admin's close writes its audit row in the move's transaction.
		n := f.topUp(topup.StatusNeedsReview)
		ntok := f.claim(n.ID, []topup.Status{n.Status})
		admin := f.user
		if _, err := f.st.Move(ctx, topup.Move{TopUpID: n.ID, From: n.Status, To: topup.StatusFailed, Actor: topup.ActorAdmin, AdminID: &admin,
			Reason: topup.ReasonClosedByAdmin, Lease: ntok, Now: f.now, Audit: &audit.Entry{TopUpID: &n.ID, AdminID: admin, Action: audit.ActionCloseFailed,
				Note: "the bank confirmed by phone", FromStatus: "needs_review", ToStatus: "failed", Result: audit.ResultDone, CreatedAt: f.now}}); err != nil {
			t.Fatal(err)
		}
		var audited int64
		db.Gorm.Raw(`SELECT COUNT(*) FROM admin_actions WHERE topup_id = ? AND admin_id = ?`, n.ID, admin).Scan(&audited)
		if got, _ := f.st.Get(ctx, n.ID); got.Status != topup.StatusFailed || audited != 1 {
			t.Fatalf("closed: status %s, audit rows %d", got.Status, audited)
		}
		topuptest.CheckInvariants(t, db)
	})
}

func TestCredit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		credit := func(p topup.TopUp, ref int64) topup.Move {
			amount := p.AmountRials
			return topup.Move{TopUpID: p.ID, PublicID: p.PublicID, From: p.Status, To: topup.StatusCredited, Actor: topup.ActorCallback,
				Reason: topup.ReasonVerifiedPaid, Now: f.now, Fields: topup.Fields{RefID: &ref, VerifiedAmountRials: &amount}}
		}
		// Many verifiers hear "paid" at once: one credit, one ledger entry.
		p := f.topUp(topup.StatusPendingVerification)
		call := resilient.Call{Ref: p.PublicID, Gateway: "fake", Operation: "verify", Attempt: 1, StartedAt: f.now,
			Duration: 1234 * time.Millisecond, Outcome: "ok", Error: "bad \x00 byte \xff" + strings.Repeat("ش", 400)}
		if won := race(8, func(int) bool {
			_, _, err := f.st.Credit(ctx, credit(p, 7001), f.wallet.ID, []resilient.Call{call})
			if err != nil && !errors.Is(err, topup.ErrNotMoved) && !errors.Is(err, wallet.ErrAlreadyCredited) {
				t.Error(err)
			}
			return err == nil
		}); won != 1 {
			t.Fatalf("%d credits, want 1", won)
		}
		w, _ := wallet.NewService(db, nil).ForUser(ctx, f.user)
		if w.BalanceRials != p.AmountRials {
			t.Fatalf("balance %d, want %d", w.BalanceRials, p.AmountRials)
		}
		// The verify's attempt was written with the credit, cleaned.
		calls, err := f.st.CallsOf(ctx, p.ID)
		if err != nil || len(calls) != 1 || calls[0].DurationMS != 1234 || strings.Contains(calls[0].Error, "\x00") || len(calls[0].Error) > 500 {
			t.Fatalf("calls = %+v, %v", calls, err)
		}
		// The lease ran out and another actor failed it: the bank's verify
		// still credits, from the status the row has.
		q := f.topUp(topup.StatusPendingVerification)
		stale := q
		tok := f.claim(q.ID, []topup.Status{q.Status})
		f.move(q, topup.StatusFailed, topup.ActorWorker, tok, topup.Fields{})
		out, was, err := f.st.Credit(ctx, credit(stale, 7002), f.wallet.ID, nil)
		if err != nil || was != topup.StatusFailed || out.Status != topup.StatusCredited {
			t.Fatalf("credit of a payment failed meanwhile = %v, %s, %v", out.Status, was, err)
		}
		// Credited already: ErrNotMoved, nothing written.
		if _, _, err := f.st.Credit(ctx, credit(stale, 7002), f.wallet.ID, nil); !errors.Is(err, topup.ErrNotMoved) {
			t.Fatalf("second credit = %v", err)
		}
		// The bank's reference belongs to another payment: ErrDuplicate,
		// rolled back whole.
		r := f.topUp(topup.StatusAwaitingPayment)
		if _, _, err := f.st.Credit(ctx, credit(r, 7001), f.wallet.ID, []resilient.Call{call}); !errors.Is(err, topup.ErrDuplicate) {
			t.Fatalf("credit with a reused reference = %v", err)
		}
		if got, _ := f.st.Get(ctx, r.ID); got.Status != topup.StatusAwaitingPayment {
			t.Fatalf("status after the refused credit: %s", got.Status)
		}
		if calls, _ := f.st.CallsOf(ctx, r.ID); len(calls) != 0 {
			t.Fatalf("calls of the refused credit: %+v", calls)
		}
		topuptest.CheckInvariants(t, db)
	})
}

func TestClaimDue(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		want := map[int64]bool{}
		for range 6 {
			want[f.topUp(topup.StatusPendingVerification).ID] = true
		}
		young := f.topUp(topup.StatusAwaitingPayment) // not abandoned yet
		var mu sync.Mutex
		got := map[int64]int{}
		race(4, func(int) bool {
			ids, err := f.st.ClaimDue(ctx, topup.DueClaim{Now: f.now.Add(time.Second), AbandonedBefore: f.now.Add(-time.Minute), Until: f.now.Add(time.Hour), Batch: 3})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				got[id]++
			}
			return true
		})
		for id, n := range got {
			if n != 1 || !want[id] {
				t.Errorf("payment %d claimed %d times (due: %v)", id, n, want[id])
			}
		}
		if len(got) != len(want) || got[young.ID] != 0 {
			t.Errorf("claimed %v, want each of %v once", got, want)
		}
		// Claimed: not due again until Until; unclaimed: due at once.
		ids, _ := f.st.ClaimDue(ctx, topup.DueClaim{Now: f.now.Add(2 * time.Second), AbandonedBefore: f.now.Add(-time.Minute), Until: f.now.Add(time.Hour), Batch: 10})
		if len(ids) != 0 {
			t.Fatalf("claimed again: %v", ids)
		}
		var all []int64
		for id := range want {
			all = append(all, id)
		}
		if err := f.st.Unclaim(ctx, all, f.now.Add(time.Hour), f.now); err != nil {
			t.Fatal(err)
		}
		ids, _ = f.st.ClaimDue(ctx, topup.DueClaim{Now: f.now.Add(2 * time.Second), AbandonedBefore: f.now.Add(-time.Minute), Until: f.now.Add(time.Hour), Batch: 10})
		if len(ids) != len(want) {
			t.Fatalf("after unclaim: %v", ids)
		}

		// Failed at the lifetime with the payer back within the window:
		// claimed (once); back before the window, or failed on the bank's
		// word: not.
		failed := func(reason topup.Reason, returned time.Time) topup.TopUp {
			p := f.topUp(topup.StatusAwaitingPayment)
			tok := f.claim(p.ID, []topup.Status{p.Status})
			p, err := f.st.Move(ctx, topup.Move{TopUpID: p.ID, From: p.Status, To: topup.StatusFailed, Actor: topup.ActorWorker,
				Reason: reason, Lease: tok, Now: f.now})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.MarkReturned(ctx, p.ID, returned); err != nil {
				t.Fatal(err)
			}
			return p
		}
		back := failed(topup.ReasonNotPaidAfterLife, f.now.Add(-10*time.Minute))
		failed(topup.ReasonNotPaidAfterLife, f.now.Add(-40*time.Minute))
		failed(topup.ReasonBankCancelled, f.now.Add(-10*time.Minute))
		claim := topup.DueClaim{Now: f.now.Add(3 * time.Second), AbandonedBefore: f.now.Add(-time.Hour), ReturnedSince: f.now.Add(-30 * time.Minute),
			Until: f.now.Add(time.Hour), Batch: 10}
		ids, err := f.st.ClaimDue(ctx, claim)
		if err != nil || len(ids) != 1 || ids[0] != back.ID {
			t.Fatalf("failed payments claimed: %v, %v; want only %d", ids, err, back.ID)
		}
		if ids, _ := f.st.ClaimDue(ctx, claim); len(ids) != 0 {
			t.Fatalf("claimed twice: %v", ids)
		}
	})
}

// A failed credit is counted in the release that records it.
// The worker's writes of a next check (Schedule, Unclaim) move only the
// one its claim wrote (or its own check under the claim): a next check
// another actor set since (a callback, an admin, another instance) stands,
// and that is no error. A claim's time finer than the databases keep
// (nanoseconds) still matches, as does the row's own read of it.
func TestScheduleAndUnclaimLeaveAnotherActorsNextCheck(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		mine, theirs, back, theirsBack := f.topUp(topup.StatusPendingVerification), f.topUp(topup.StatusPendingVerification),
			f.topUp(topup.StatusPendingVerification), f.topUp(topup.StatusPendingVerification)
		until := f.now.Add(time.Hour + 1_234_567*time.Nanosecond)
		ids, err := f.st.ClaimDue(ctx, topup.DueClaim{Now: f.now.Add(time.Second), AbandonedBefore: f.now.Add(-time.Minute), Until: until, Batch: 10})
		if err != nil || len(ids) != 4 {
			t.Fatalf("claim: %v %v", ids, err)
		}
		// Another actor (a callback) sets a next check, under the lease.
		other := f.now.Add(3 * time.Second)
		for _, p := range []topup.TopUp{theirs, theirsBack} {
			tok := f.claim(p.ID, []topup.Status{p.Status})
			if _, err := f.st.Release(ctx, p.ID, tok, topup.Fields{NextCheckAt: &other}); err != nil {
				t.Fatal(err)
			}
		}
		next := func(id int64) time.Time {
			t.Helper()
			p, err := f.st.Get(ctx, id)
			if err != nil || p.NextCheckAt == nil {
				t.Fatalf("payment %d: next %v, %v", id, p.NextCheckAt, err)
			}
			return *p.NextCheckAt
		}
		at := f.now.Add(5 * time.Minute)
		if ok, err := f.st.Schedule(ctx, mine.ID, until, at); err != nil || !ok {
			t.Fatalf("schedule of the claim's own: %v %v", ok, err)
		}
		if got := next(mine.ID); !got.Equal(at) {
			t.Errorf("scheduled %s, want %s", got, at)
		}
		if ok, err := f.st.Schedule(ctx, theirs.ID, until, at); err != nil || ok {
			t.Fatalf("schedule over another actor's: %v %v, want false and no error", ok, err)
		}
		if got := next(theirs.ID); !got.Equal(other) {
			t.Errorf("next check %s, want the other actor's %s kept", got, other)
		}
		// From the next check as read back (the worker's own check's).
		later := at.Add(time.Minute)
		if ok, err := f.st.Schedule(ctx, mine.ID, next(mine.ID), later); err != nil || !ok {
			t.Fatalf("schedule from the row's own read: %v %v", ok, err)
		}
		if got := next(mine.ID); !got.Equal(later) {
			t.Errorf("scheduled %s, want %s", got, later)
		}
		if err := f.st.Unclaim(ctx, []int64{back.ID, theirsBack.ID}, until, f.now); err != nil {
			t.Fatal(err)
		}
		if got := next(back.ID); !got.Equal(f.now) {
			t.Errorf("unclaimed: next check %s, want %s", got, f.now)
		}
		if got := next(theirsBack.ID); !got.Equal(other) {
			t.Errorf("unclaimed over another actor's: next check %s, want the other actor's %s kept", got, other)
		}
	})
}

func TestCountCreditFailure(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		p := f.topUp(topup.StatusPendingVerification)
		for i := 1; i <= 2; i++ {
			tok := f.claim(p.ID, []topup.Status{p.Status})
			got, err := f.st.Release(ctx, p.ID, tok, topup.Fields{CountCreditFailure: true})
			if err != nil || got.CreditFailures != i || got.LeaseOwner != "" {
				t.Fatalf("release %d: failures %d, owner %q, %v", i, got.CreditFailures, got.LeaseOwner, err)
			}
			f.now = f.now.Add(2 * time.Minute)
		}
	})
}

// The partners' outbox is written by the one writer in the move's own
// transaction: one row per event-worthy move (credited, failed,
// needs_review) per subscribed endpoint, none for other moves, none when
// the move rolls back, one when many verifiers race to credit; its body
// holds the top-up as the API shows it.
func TestOutboxWrittenWithMove(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		hooks, err := webhook.New(db, nil, webhook.Options{SessionSecret: []byte("0123456789abcdef0123456789abcdef"), AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := hooks.Create(ctx, f.user, "http://127.0.0.1:1/all", webhook.Types(), nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := hooks.Create(ctx, f.user, "http://127.0.0.1:1/credits", []string{webhook.TypeCredited}, nil); err != nil {
			t.Fatal(err)
		}
		rows := func(pid int64, typ string) []webhook.Delivery {
			var out []webhook.Delivery
			if err := db.Gorm.Where("topup_id = ? AND type = ?", pid, typ).Order("id").Find(&out).Error; err != nil {
				t.Fatal(err)
			}
			return out
		}
		credit := func(p topup.TopUp, ref int64) topup.Move {
			amount := p.AmountRials
			return topup.Move{TopUpID: p.ID, PublicID: p.PublicID, From: p.Status, To: topup.StatusCredited, Actor: topup.ActorCallback,
				Reason: topup.ReasonVerifiedPaid, Now: f.now, Fields: topup.Fields{RefID: &ref, VerifiedAmountRials: &amount}}
		}
		p := f.topUp(topup.StatusPendingVerification)
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_deliveries WHERE topup_id = ?`, p.ID); n != 0 {
			t.Fatalf("%d rows for moves to open statuses", n)
		}
		race(8, func(int) bool {
			_, _, err := f.st.Credit(ctx, credit(p, 9001), f.wallet.ID, nil)
			return err == nil
		})
		got := rows(p.ID, webhook.TypeCredited)
		if len(got) != 2 || got[0].EventID != got[1].EventID || got[0].EndpointID == got[1].EndpointID {
			t.Fatalf("credit rows %+v: want one event for each of the two endpoints", got)
		}
		var body struct {
			EventID string          `json:"event_id"`
			Type    string          `json:"type"`
			TopUp   topup.TopUpView `json:"topup"`
		}
		if err := json.Unmarshal([]byte(got[0].Body), &body); err != nil {
			t.Fatal(err)
		}
		cp, _ := f.st.Get(ctx, p.ID)
		want := topup.ViewOf(cp, &f.now, nil)
		if body.EventID != got[0].EventID || body.Type != webhook.TypeCredited || body.TopUp.ID != want.ID || body.TopUp.Status != "credited" ||
			body.TopUp.RefID == nil || *body.TopUp.RefID != 9001 || body.TopUp.CreditedAt == nil || !body.TopUp.CreditedAt.Equal(f.now) {
			t.Fatalf("body %+v, want top-up %+v", body, want)
		}
		// A refused credit (reference of another payment) rolls back with
		// its event.
		r := f.topUp(topup.StatusAwaitingPayment)
		if _, _, err := f.st.Credit(ctx, credit(r, 9001), f.wallet.ID, nil); !errors.Is(err, topup.ErrDuplicate) {
			t.Fatalf("credit with a reused reference = %v", err)
		}
		if n := len(rows(r.ID, webhook.TypeCredited)); n != 0 {
			t.Fatalf("%d event rows of a rolled-back credit", n)
		}
		// Failed and needs_review: only the endpoint subscribed to them.
		fl := f.topUp(topup.StatusFailed)
		nr := f.topUp(topup.StatusNeedsReview)
		if a, b := len(rows(fl.ID, webhook.TypeFailed)), len(rows(nr.ID, webhook.TypeNeedsReview)); a != 1 || b != 1 {
			t.Fatalf("failed rows %d, needs_review rows %d; want 1 and 1", a, b)
		}
		topuptest.CheckInvariants(t, db)
	})
}

// CreateAdmitted: many inserts of one payer at once are admitted one at a
// time (each reads the usage of those committed before it), a refusal
// writes nothing, and a form submitted before is a duplicate whatever the
// quota says.
func TestCreateAdmitted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		refused := errors.New("over the limit")
		atMost := func(n int64) topup.Quota {
			return topup.Quota{Since: f.now.Add(-time.Hour), Admit: func(u topup.Usage) error {
				if u.SinceCount >= n || u.OpenRials != u.SinceRials {
					return refused
				}
				return nil
			}}
		}
		newTopUp := func(token string) topup.TopUp {
			n := seq.Add(1)
			return topup.TopUp{PublicID: fmt.Sprintf("q%023d", n), UserID: f.user, WalletID: f.wallet.ID, AmountRials: 50_000, Gateway: "fake",
				FormToken: token, Status: topup.StatusCreated, CreatedAt: f.now, UpdatedAt: f.now, OpenedAt: &f.now}
		}
		var errs sync.Map
		won := race(16, func(i int) bool {
			p := newTopUp(formtoken.New())
			err := f.st.CreateAdmitted(ctx, &p, atMost(5))
			if err != nil && !errors.Is(err, refused) {
				errs.Store(i, err)
			}
			return err == nil
		})
		errs.Range(func(k, v any) bool { t.Errorf("insert %v: %v", k, v); return true })
		var n int64
		db.Gorm.Raw(`SELECT COUNT(*) FROM topups WHERE user_id = ?`, f.user).Scan(&n)
		if won != 5 || n != 5 {
			t.Fatalf("%d admitted, %d rows; want exactly 5", won, n)
		}
		// A repeat of an admitted form is a duplicate, not a refusal.
		var token string
		db.Gorm.Raw(`SELECT form_token FROM topups WHERE user_id = ? LIMIT 1`, f.user).Scan(&token)
		p := newTopUp(token)
		if err := f.st.CreateAdmitted(ctx, &p, atMost(5)); !errors.Is(err, topup.ErrDuplicate) {
			t.Fatalf("repeat of a form: %v, want ErrDuplicate", err)
		}
		// The balance is read from the locked wallet row.
		p = newTopUp(formtoken.New())
		err := f.st.CreateAdmitted(ctx, &p, topup.Quota{Since: f.now, Admit: func(u topup.Usage) error {
			if u.BalanceRials != f.wallet.BalanceRials || u.OpenRials != 5*50_000 {
				return fmt.Errorf("usage %+v", u)
			}
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// Dismiss notes the payer's "I won't pay this one" once, only for the
// payer's own payment, and changes no payment.
func TestDismiss(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		mine := f.topUp(topup.StatusAwaitingPayment)
		other := f.topUp(topup.StatusAwaitingPayment)
		noted := func(id int64) (n int64) {
			t.Helper()
			if err := db.Gorm.Raw(`SELECT COUNT(*) FROM dismissed_topups WHERE topup_id = ?`, id).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		for range 2 { // twice: the second changes nothing and is no error
			if err := f.st.Dismiss(ctx, f.user, mine.ID, f.now); err != nil {
				t.Fatal(err)
			}
		}
		if n := noted(mine.ID); n != 1 {
			t.Fatalf("own payment dismissed %d times, want 1", n)
		}
		// Someone else's user id names no payment of theirs: nothing noted.
		if err := f.st.Dismiss(ctx, f.user+1_000_000, other.ID, f.now); err != nil {
			t.Fatal(err)
		}
		if n := noted(other.ID); n != 0 {
			t.Fatalf("another user's dismissal noted %d rows, want 0", n)
		}
		got, err := f.st.Get(ctx, mine.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != topup.StatusAwaitingPayment || !got.UpdatedAt.Equal(mine.UpdatedAt) || len(f.events(mine.ID)) != len(f.events(other.ID)) {
			t.Fatalf("dismissal changed the payment: %+v", got)
		}
	})
}

// OnWebhookQueued's callback (the sender's kick) runs after a committed
// move that queued deliveries, and only then: a payer without endpoints
// (most credits) wakes no sender, nor does a credit rolled back.
func TestWebhookKickOnlyWhenQueued(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		var kicks atomic.Int64
		f.st = sqlstore.New(db).OnWebhookQueued(func() { kicks.Add(1) })
		credit := func(p topup.TopUp, ref int64) error {
			amount := p.AmountRials
			_, _, err := f.st.Credit(ctx, topup.Move{TopUpID: p.ID, PublicID: p.PublicID, From: p.Status, To: topup.StatusCredited,
				Actor: topup.ActorCallback, Reason: topup.ReasonVerifiedPaid, Now: f.now,
				Fields: topup.Fields{RefID: &ref, VerifiedAmountRials: &amount}}, f.wallet.ID, nil)
			return err
		}
		f.topUp(topup.StatusFailed) // a move to failed: an event type, no endpoint
		if err := credit(f.topUp(topup.StatusAwaitingPayment), 7001); err != nil {
			t.Fatal(err)
		}
		if n := kicks.Load(); n != 0 {
			t.Fatalf("%d kicks for moves that queued nothing", n)
		}
		hooks, err := webhook.New(db, nil, webhook.Options{SessionSecret: []byte("0123456789abcdef0123456789abcdef"), AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := hooks.Create(ctx, f.user, "http://127.0.0.1:1/credits", []string{webhook.TypeCredited}, nil); err != nil {
			t.Fatal(err)
		}
		if err := credit(f.topUp(topup.StatusAwaitingPayment), 7002); err != nil {
			t.Fatal(err)
		}
		if n := kicks.Load(); n != 1 {
			t.Fatalf("%d kicks after a credit that queued a delivery, want 1", n)
		}
		// Refused (the reference is another payment's): rolled back, its
		// delivery with it; no kick.
		if err := credit(f.topUp(topup.StatusAwaitingPayment), 7002); !errors.Is(err, topup.ErrDuplicate) {
			t.Fatalf("credit with a reused reference = %v", err)
		}
		if n := kicks.Load(); n != 1 {
			t.Fatalf("%d kicks after a rolled-back credit, want still 1", n)
		}
	})
}

// TestRecentUncredited: reconciliation's list of a gateway's payments
// not credited — open, failed or under review — created since a time;
// another gateway's and older ones are not listed.
func TestRecentUncredited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		want := map[int64]bool{}
		for _, st := range []topup.Status{topup.StatusAwaitingPayment, topup.StatusPendingVerification, topup.StatusFailed, topup.StatusNeedsReview} {
			want[f.topUp(st).ID] = true
		}
		batch := func(gw string, since time.Time) topup.ReconcileBatch {
			return topup.ReconcileBatch{Gateway: gw, Since: since, Hot: f.now.Add(-time.Second), Limit: 100}
		}
		got, err := f.st.RecentUncredited(ctx, batch("fake", f.now.Add(-time.Minute)))
		if err != nil || len(got) != len(want) {
			t.Fatalf("listed %d, %v; want %d", len(got), err, len(want))
		}
		for _, p := range got {
			if !want[p.ID] || p.Authority == nil {
				t.Errorf("listed %d (%s)", p.ID, p.Status)
			}
		}
		if got, err := f.st.RecentUncredited(ctx, batch("other", f.now.Add(-time.Minute))); err != nil || len(got) != 0 {
			t.Errorf("another gateway: %d, %v", len(got), err)
		}
		if got, err := f.st.RecentUncredited(ctx, topup.ReconcileBatch{Gateway: "fake", Since: f.now.Add(time.Second), Hot: f.now.Add(time.Second), Limit: 100}); err != nil || len(got) != 0 {
			t.Errorf("created before since: %d, %v", len(got), err)
		}
	})
}

// TestReconcileListsRotate: reconciliation's lists take the hot payments
// (created since the batch's Hot) first at every read, newest first; then
// the others, those looked at least recently first (never, then longest
// ago), so that more payments than one run reads are all looked at over
// the runs. Recording a look changes nothing else about the payment.
// RecentUnsure keeps only the ended payments whose end was not the
// bank's word.
func TestReconcileListsRotate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		ids := func(ps []topup.TopUp) map[int64]bool {
			out := map[int64]bool{}
			for _, p := range ps {
				out[p.ID] = true
			}
			return out
		}
		all := map[int64]bool{}
		for _, st := range []topup.Status{topup.StatusFailed, topup.StatusFailed, topup.StatusNeedsReview, topup.StatusFailed} {
			all[f.topUp(st).ID] = true
		}
		since := f.now.Add(-time.Minute)
		// Every payment was made at f.now: none is hot.
		cold := topup.ReconcileBatch{Gateway: "fake", Since: since, Hot: f.now.Add(time.Second), Limit: 2}
		type lister func(context.Context, topup.ReconcileBatch) ([]topup.TopUp, error)
		looks := 0
		readIn := func(list lister, b topup.ReconcileBatch) map[int64]bool {
			t.Helper()
			looks++
			at := f.now.Add(time.Duration(looks) * time.Hour)
			got, err := list(ctx, b)
			if err != nil || len(got) != 2 {
				t.Fatalf("listed %d, %v; want 2", len(got), err)
			}
			before, _ := f.st.Get(ctx, got[0].ID)
			if err := f.st.Reconciled(ctx, []int64{got[0].ID, got[1].ID}, at); err != nil {
				t.Fatal(err)
			}
			after, _ := f.st.Get(ctx, got[0].ID)
			if after.ReconciledAt == nil || !after.ReconciledAt.Equal(at) || !after.UpdatedAt.Equal(before.UpdatedAt) || after.Status != before.Status {
				t.Fatalf("recorded look: %+v, was %+v", after, before)
			}
			return ids(got)
		}
		read := func(list lister) map[int64]bool { t.Helper(); return readIn(list, cold) }
		for _, lister := range []lister{f.st.RecentEnded, f.st.RecentUncredited} {
			first := read(lister)
			second := read(lister)
			for id := range first {
				if second[id] {
					t.Fatalf("%d read twice before the others once: %v then %v", id, first, second)
				}
			}
			if len(first)+len(second) != len(all) {
				t.Fatalf("two reads took %v and %v of %v", first, second, all)
			}
			if third := read(lister); fmt.Sprint(third) != fmt.Sprint(first) {
				t.Fatalf("third read %v, want the longest ago looked at %v", third, first)
			}
			// Hot (every payment made since Hot): the newest two at every
			// read, looked at or not.
			hot := cold
			hot.Hot = since
			if a, b := readIn(lister, hot), readIn(lister, hot); fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("hot reads %v then %v, want the newest both times", a, b)
			}
		}
		// RecentUnsure: under review; failed at the page's lifetime since
		// lifetimeSince; not a failure on the bank's word, nor an old one.
		review, recent, old, definite := f.topUp(topup.StatusNeedsReview), f.topUp(topup.StatusFailed), f.topUp(topup.StatusFailed), f.topUp(topup.StatusFailed)
		for _, c := range []struct {
			p      topup.TopUp
			reason topup.Reason
			ended  time.Time
		}{{recent, topup.ReasonNotPaidAfterLife, f.now}, {old, topup.ReasonNotPaidAfterLife, f.now.Add(-2 * time.Hour)}, {definite, topup.ReasonBankCancelled, f.now}} {
			if err := db.Gorm.Exec(`UPDATE topups SET status_reason = ?, resolved_at = ? WHERE id = ?`, string(c.reason), c.ended, c.p.ID).Error; err != nil {
				t.Fatal(err)
			}
		}
		got, err := f.st.RecentUnsure(ctx, topup.ReconcileBatch{Gateway: "fake", Since: since, Hot: since, Limit: 100}, f.now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(got); !g[review.ID] || !g[recent.ID] || g[old.ID] || g[definite.ID] {
			t.Fatalf("unsure %v: want %d and %d, not %d (ended long ago) or %d (the bank's word)", g, review.ID, recent.ID, old.ID, definite.ID)
		}
		if got, err := f.st.RecentUnsure(ctx, topup.ReconcileBatch{Gateway: "other", Since: since, Hot: since, Limit: 100}, f.now.Add(-time.Hour)); err != nil || len(got) != 0 {
			t.Errorf("another gateway: %d, %v", len(got), err)
		}
	})
}

// Receipt provenance (issue 31): a receipt is kept with where it came
// from; a bank's receipt confirms the same one kept from a callback;
// TakeReceipt takes a receipt only from a holder whose hold the bank never
// confirmed, in one transaction, many takers at once winning once; and
// ClearReceipt drops only an unconfirmed receipt.
func TestReceiptProvenance(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		source := func(p topup.TopUp) string {
			if p.ReceiptSource == nil {
				return ""
			}
			return string(*p.ReceiptSource)
		}
		a, b := f.topUp(topup.StatusAwaitingPayment), f.topUp(topup.StatusAwaitingPayment)
		got, err := f.st.KeepReceipt(ctx, a.ID, "R1", topup.ReceiptFromCallback)
		if err != nil || got.ReceiptString() != "R1" || source(got) != "callback" || got.ReceiptConfirmed() {
			t.Fatalf("kept from a callback: %q %q confirmed %v, %v", got.ReceiptString(), source(got), got.ReceiptConfirmed(), err)
		}
		if _, err := f.st.KeepReceipt(ctx, b.ID, "R1", topup.ReceiptFromCallback); !errors.Is(err, topup.ErrDuplicate) {
			t.Fatalf("another payment's receipt: %v, want ErrDuplicate", err)
		}
		if h, found, err := f.st.ReceiptHolder(ctx, "fake", "R1"); err != nil || !found || h.ID != a.ID {
			t.Fatalf("holder of R1: %d %v %v", h.ID, found, err)
		}
		// Many takers at once: one wins, the receipt moves once.
		takers := []topup.TopUp{b, f.topUp(topup.StatusAwaitingPayment), f.topUp(topup.StatusPendingVerification)}
		won := race(len(takers), func(i int) bool {
			_, err := f.st.TakeReceipt(ctx, takers[i].ID, "R1")
			return err == nil
		})
		if won != 1 {
			t.Fatalf("%d takers won, want 1", won)
		}
		h, _, _ := f.st.ReceiptHolder(ctx, "fake", "R1")
		if h.ID == a.ID || source(h) != "bank" || !h.ReceiptConfirmed() {
			t.Fatalf("after the take: holder %d %q", h.ID, source(h))
		}
		if ra, _ := f.st.Get(ctx, a.ID); ra.Receipt != nil || ra.ReceiptSource != nil {
			t.Fatalf("A still holds %q (%q)", ra.ReceiptString(), source(ra))
		}
		// A confirmed hold is not taken.
		if _, err := f.st.TakeReceipt(ctx, a.ID, "R1"); !errors.Is(err, topup.ErrNotMoved) {
			t.Fatalf("take of a confirmed hold: %v, want ErrNotMoved", err)
		}
		// The bank's word confirms the same receipt kept from a callback.
		c := f.topUp(topup.StatusAwaitingPayment)
		if _, err := f.st.KeepReceipt(ctx, c.ID, "R2", topup.ReceiptFromCallback); err != nil {
			t.Fatal(err)
		}
		if got, err := f.st.KeepReceipt(ctx, c.ID, "R2", topup.ReceiptFromBank); err != nil || source(got) != "bank" {
			t.Fatalf("confirmed: %q, %v", source(got), err)
		}
		// ClearReceipt drops an unconfirmed receipt only.
		d := f.topUp(topup.StatusAwaitingPayment)
		if _, err := f.st.KeepReceipt(ctx, d.ID, "R3", topup.ReceiptFromCallback); err != nil {
			t.Fatal(err)
		}
		for _, p := range []topup.TopUp{c, d} {
			tok := f.claim(p.ID, []topup.Status{topup.StatusAwaitingPayment})
			p, _ = f.st.Get(ctx, p.ID)
			moved := f.move(p, topup.StatusFailed, topup.ActorWorker, tok, topup.Fields{ClearReceipt: true})
			if p.ID == c.ID && (moved.ReceiptString() != "R2" || source(moved) != "bank") {
				t.Errorf("a confirmed receipt was dropped: %q %q", moved.ReceiptString(), source(moved))
			}
			if p.ID == d.ID && (moved.Receipt != nil || moved.ReceiptSource != nil) {
				t.Errorf("an unconfirmed receipt was kept: %q %q", moved.ReceiptString(), source(moved))
			}
		}
	})
}
