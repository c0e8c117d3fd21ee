package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// reversalOf is the entry that reverses t (as Reverse makes it), written
// directly: what a caller bypassing Reverse would send.
func reversalOf(t ledger.Transaction, at time.Time) ledger.Entry {
	ps := make([]ledger.Posting, len(t.Postings))
	for i, p := range t.Postings {
		ps[i] = ledger.Posting{AccountID: p.AccountID, AmountRials: -p.AmountRials}
	}
	return ledger.Entry{Kind: ledger.KindReversal, Reference: ledger.ReversalReference(t.ID), ReversesID: t.ID, Postings: ps, At: at}
}

// A reversal is never reversed, whichever way the entry comes: Write,
// Post in a caller's transaction, and a group of Write calls. Nothing is
// written, and the refusal is ErrReversalReversed (not an unknown
// outcome, not a missing account).
func TestReversalOfReversalRefusedOnWrite(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(50_000), b.wallet(0)
		orig := b.write(ledger.KindTransfer, "tr-1", ledger.Transfer(a, c, 20_000))
		rev, err := b.l.Reverse(ctx, orig.ID, "", b.now)
		if err != nil {
			t.Fatal(err)
		}
		e := reversalOf(rev, b.now)
		if _, err := b.l.Write(ctx, e); !errors.Is(err, ledger.ErrReversalReversed) {
			t.Fatalf("Write of a reversal of a reversal: %v, want ErrReversalReversed", err)
		}
		err = db.Tx(ctx, func(tx *gorm.DB) error {
			_, err := b.l.Post(tx, e)
			return err
		})
		if !errors.Is(err, ledger.ErrReversalReversed) {
			t.Fatalf("Post of a reversal of a reversal: %v, want ErrReversalReversed", err)
		}
		if _, err := b.l.Reverse(ctx, rev.ID, "", b.now); !errors.Is(err, ledger.ErrReversalReversed) {
			t.Fatalf("Reverse of a reversal: %v, want ErrReversalReversed", err)
		}
		// In a group (PostgreSQL): refused there, the other movement of
		// the group written.
		y, z := b.wallet(1_000), b.wallet(0)
		g := newGate()
		b.grouping(g)
		got := b.inOneGroup(g, transferEntry("blocker", y, z, 1_000, b.now),
			[]ledger.Entry{e, transferEntry("g-ok", a, c, 1_000, b.now)})
		if !errors.Is(got[0].err, ledger.ErrReversalReversed) {
			t.Errorf("a reversal of a reversal in a group: %v, want ErrReversalReversed", got[0].err)
		}
		if got[1].err != nil {
			t.Errorf("its group's other movement: %v", got[1].err)
		}
		if n := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE reverses_id = ?`, rev.ID); n != 0 {
			t.Fatalf("%d reversals of the reversal written", n)
		}
		b.figures(a, 49_000, 0)
		b.figures(c, 1_000, 0)
		b.check()
	})
}

// dyingCtx is a context that is alive for its first alive calls of Err
// and ended from then on (its Done closed then): one that ends at a
// chosen step of Write, here just after the dispatcher found it alive and
// handed its movement back to be written alone.
type dyingCtx struct {
	context.Context
	mu    sync.Mutex
	alive int
	done  chan struct{}
}

func (c *dyingCtx) Done() <-chan struct{} { return c.done }

func (c *dyingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.alive > 0 {
		c.alive--
		return nil
	}
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	return context.Canceled
}

// A movement the group commit hands back to be written alone, whose
// caller's context has ended meanwhile, is never sent: Write returns the
// context's error at once (not ErrOutcomeUnknown), and nothing is written.
func TestGroupAloneEndedContextIsNotSent(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	b := newBook(t, db)
	a, c := b.wallet(10_000), b.wallet(0)
	b.l = ledger.New(db, ledger.GroupCommit(64))
	t.Cleanup(b.l.Close)
	// Err is called alive by Write's own check and then by the dispatcher.
	ctx := &dyingCtx{Context: context.Background(), alive: 2, done: make(chan struct{})}
	_, err := b.l.Write(ctx, transferEntry("alone-ended", a, c, 1_000, b.now))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ledger.ErrOutcomeUnknown) {
		t.Fatalf("Write alone with its context ended: %v, want context.Canceled and no ErrOutcomeUnknown", err)
	}
	if _, err := b.l.ByReference(context.Background(), ledger.KindTransfer, "alone-ended"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the movement was written: %v", err)
	}
	if n := ledger.InFlight(b.l); n != 0 {
		t.Errorf("%d accounts left in flight", n)
	}
	b.figures(a, 10_000, 0)
	b.figures(c, 0, 0)
}

// ExpireDue goes past holds it cannot end: with a whole batch of them due
// first, a hold due after them is still expired, in the same call.
func TestExpireDueGoesPastFailingHolds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		broken, fine := b.wallet(100_000), b.wallet(100_000)
		hold := func(account int64, ref string, after time.Duration) ledger.Hold {
			t.Helper()
			h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: account, AmountRials: 1_000, Reason: "test", Reference: ref,
				ExpiresAt: b.now.Add(after), Now: b.now})
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		bad1, bad2 := hold(broken, "bad-1", time.Minute), hold(broken, "bad-2", 2*time.Minute)
		good := hold(fine, "good", 3*time.Minute)
		// The broken account's held figure off its holds: neither of its
		// holds can end (the guard refuses held < 0).
		if err := db.Gorm.Exec(`UPDATE ledger_accounts SET held_rials = 0 WHERE id = ?`, broken).Error; err != nil {
			t.Fatal(err)
		}
		n, err := b.l.ExpireDue(ctx, b.now.Add(time.Hour), 2)
		if n != 1 {
			t.Fatalf("ExpireDue ended %d holds (%v), want the one due after the two that cannot end", n, err)
		}
		for _, h := range []ledger.Hold{bad1, bad2} {
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("expire hold %d:", h.ID)) {
				t.Errorf("hold %d, which cannot end, not reported: %v", h.ID, err)
			}
		}
		got, err := b.l.HoldBy(ctx, "test", good.Reference)
		if err != nil || got.Status != ledger.HoldExpired {
			t.Fatalf("hold due after the failing ones: %+v, %v", got, err)
		}
		for _, h := range []ledger.Hold{bad1, bad2} {
			if got, err := b.l.HoldBy(ctx, "test", h.Reference); err != nil || got.Status != ledger.HoldOpen {
				t.Errorf("hold %s: %+v, %v", h.Reference, got, err)
			}
		}
		b.figures(fine, 100_000, 0)
	})
}

// A hold's retry under its reason and reference with another expiry is
// not a replay: ErrReferenceReused, with the first hold. The same expiry,
// to the precision the database keeps, is a replay.
func TestHoldRetryWithAnotherExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a := b.wallet(10_000)
		r := ledger.HoldRequest{AccountID: a, AmountRials: 1_000, Reason: "test", Reference: "h-1",
			ExpiresAt: b.now.Add(time.Hour + 123_456_789*time.Nanosecond), Now: b.now}
		first, err := b.l.Hold(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := b.l.Hold(ctx, r); !errors.Is(err, ledger.ErrDuplicate) || again.ID != first.ID {
			t.Fatalf("the same hold again: %+v, %v; want the first and ErrDuplicate", again, err)
		}
		later := r
		later.ExpiresAt = r.ExpiresAt.Add(time.Hour)
		got, err := b.l.Hold(ctx, later)
		if !errors.Is(err, ledger.ErrReferenceReused) || errors.Is(err, ledger.ErrDuplicate) || got.ID != first.ID {
			t.Fatalf("the hold with another expiry: %+v, %v; want the first and ErrReferenceReused", got, err)
		}
		if d := got.ExpiresAt.Sub(first.ExpiresAt); d <= -time.Microsecond || d >= time.Microsecond {
			t.Errorf("the first hold's expiry changed: %s, was %s", got.ExpiresAt, first.ExpiresAt)
		}
		b.figures(a, 10_000, 1_000)
	})
}
