package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
)

// gate holds a grouping ledger's goroutine at its first group until
// opened: the Write calls started meanwhile wait in its queue, and are
// taken as one group when it opens.
type gate struct {
	entered, open chan struct{}
	once          sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) before() {
	g.once.Do(func() { close(g.entered) })
	<-g.open
}

// grouping switches b to a ledger with group commit held at g (on SQLite
// a ledger without it: GroupCommit does nothing there), closed with the
// test.
func (b *book) grouping(g *gate) {
	b.t.Helper()
	b.l = ledger.NewBeforeGroup(b.db, g.before, ledger.GroupCommit(64))
	b.t.Cleanup(b.l.Close)
	if ledger.Grouping(b.l) != (b.db.Dialect == store.Postgres) {
		b.t.Fatalf("grouping on %s: %v", b.db.Dialect, ledger.Grouping(b.l))
	}
}

type outcome struct {
	t   ledger.Transaction
	err error
}

// inOneGroup writes es at once through b's grouping ledger so that they
// make one group: a first transfer (blocker, written alone) is taken and
// held at the gate, es queue behind it, and the gate opens once all of them
// wait. Without grouping (SQLite) they simply run at once.
func (b *book) inOneGroup(g *gate, blocker ledger.Entry, es []ledger.Entry) []outcome {
	b.t.Helper()
	return b.inOneGroupCtx(context.Background(), g, blocker, es)
}

// inOneGroupCtx is inOneGroup with es written under ctx.
func (b *book) inOneGroupCtx(ctx context.Context, g *gate, blocker ledger.Entry, es []ledger.Entry) []outcome {
	b.t.Helper()
	grouping := ledger.Grouping(b.l)
	var wg sync.WaitGroup
	var blockErr error
	wg.Go(func() { _, blockErr = b.l.Write(context.Background(), blocker) })
	if grouping {
		<-g.entered
	}
	out := make([]outcome, len(es))
	for i, e := range es {
		wg.Go(func() {
			t, err := b.l.Write(ctx, e)
			out[i] = outcome{t, err}
		})
	}
	if grouping {
		testwait.Eventually(b.t, 10*time.Second, "every write queued", func() bool { return ledger.Queued(b.l) == len(es) })
	}
	close(g.open)
	wg.Wait()
	if blockErr != nil {
		b.t.Fatalf("the first write: %v", blockErr)
	}
	return out
}

// lockAccount holds account id's row lock in a transaction of its own,
// until the returned lock is rolled back (at the latest when the test
// ends), and returns that transaction's backend pid (PostgreSQL).
func (b *book) lockAccount(db *store.DB, id int64) (lock *gorm.DB, holder int64) {
	b.t.Helper()
	lock = db.Gorm.Begin()
	b.t.Cleanup(func() { lock.Rollback() })
	if err := lock.Raw(`SELECT pg_backend_pid()`).Row().Scan(&holder); err != nil {
		b.t.Fatal(err)
	}
	if err := lock.Exec(`SELECT id FROM ledger_accounts WHERE id = ? FOR UPDATE`, id).Error; err != nil {
		b.t.Fatal(err)
	}
	return lock, holder
}

// waitsOn is the condition of pg_stat_activity's backends of this test's
// own schema (storetest's application_name) that wait for a lock held by
// backend ?: another package's backend can wait on holder too (a CREATE
// INDEX CONCURRENTLY in its migration waits for every open transaction of
// the database), and must be neither counted nor ended.
const waitsOn = `?::int = ANY(pg_blocking_pids(pid)) AND application_name = current_setting('application_name')`

// endBlocked ends (pg_terminate_backend: a FATAL) the backend that waits
// for a lock held by backend holder, once one does: only what waits
// behind the test's own lock, never another test's backend.
func (b *book) endBlocked(db *store.DB, holder int64) error {
	return testwait.Until(10*time.Second, "a backend waits for the lock", func() bool {
		var ended bool
		_ = db.Gorm.Raw(`SELECT COALESCE(bool_or(pg_terminate_backend(pid)), FALSE) FROM pg_stat_activity
			WHERE `+waitsOn, holder).Row().Scan(&ended)
		return ended
	})
}

// againOnce writes e again, a replay if it was written, and checks that
// it is written exactly once.
func (b *book) againOnce(e ledger.Entry) {
	b.t.Helper()
	if _, err := b.l.Write(context.Background(), e); err != nil && !errors.Is(err, ledger.ErrDuplicate) {
		b.t.Errorf("%s again: %v", e.Reference, err)
	}
	if k := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE reference = ?`, e.Reference); k != 1 {
		b.t.Errorf("%s written %d times, want 1", e.Reference, k)
	}
}

func transferEntry(ref string, from, to, rials int64, at time.Time) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindTransfer, Reference: ref, Postings: ledger.Transfer(from, to, rials), At: at}
}

// One group of transfers: each gets its own outcome, as if written alone.
// A refused one (balance short, an account missing) writes nothing and
// spoils no other; the same reference twice in the group is one transfer
// and a replay; a reference committed before is a replay, or, with
// another body, ErrReferenceReused.
func TestGroupKeepsEachOutcome(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		a, c, d, e, f := b.wallet(100_000), b.wallet(0), b.wallet(1_000), b.wallet(50_000), b.wallet(0)
		y, z := b.wallet(1_000), b.wallet(0)
		pre := b.write(ledger.KindTransfer, "pre-1", ledger.Transfer(a, c, 1_000))
		g := newGate()
		b.grouping(g)
		es := []ledger.Entry{
			transferEntry("g-ok-1", a, c, 10_000, b.now),
			transferEntry("g-short", d, f, 1_001, b.now),
			transferEntry("g-missing", c, 999_999, 5, b.now),
			transferEntry("g-ok-2", e, f, 20_000, b.now),
			transferEntry("g-twice", e, c, 5_000, b.now),
			transferEntry("g-twice", e, c, 5_000, b.now),
			transferEntry("pre-1", a, c, 1_000, b.now),
			transferEntry("pre-1", a, c, 2_000, b.now),
			transferEntry("g-exact", d, f, 1_000, b.now),
		}
		got := b.inOneGroup(g, transferEntry("blocker", y, z, 1_000, b.now), es)
		for i, want := range []error{nil, ledger.ErrInsufficientFunds, ledger.ErrAccountNotFound, nil} {
			if !errors.Is(got[i].err, want) || (want == nil) != (got[i].err == nil) {
				t.Errorf("%s: %v, want %v", es[i].Reference, got[i].err, want)
			}
		}
		for _, i := range []int{0, 3, 8} {
			if got[i].err != nil || got[i].t.ID == 0 || len(got[i].t.Postings) != 2 {
				t.Errorf("%s: %+v, %v", es[i].Reference, got[i].t, got[i].err)
			}
		}
		if got[0].err == nil && (got[0].t.Postings[0].AccountID != a || got[0].t.Postings[0].BalanceAfterRials != 89_000 ||
			got[0].t.Postings[1].BalanceAfterRials < 11_000) {
			t.Errorf("g-ok-1's postings %+v", got[0].t.Postings)
		}
		// The same reference twice in one group: one transfer, one replay
		// answering with it.
		first, second := got[4], got[5]
		if first.err != nil {
			first, second = second, first
		}
		if first.err != nil || !errors.Is(second.err, ledger.ErrDuplicate) || second.t.ID != first.t.ID || first.t.ID == 0 {
			t.Errorf("g-twice: %+v %v and %+v %v: want one transfer and its replay", first.t, first.err, second.t, second.err)
		}
		if !errors.Is(got[6].err, ledger.ErrDuplicate) || got[6].t.ID != pre.ID {
			t.Errorf("a replay of pre-1: %+v, %v", got[6].t, got[6].err)
		}
		if !errors.Is(got[7].err, ledger.ErrReferenceReused) || got[7].t.ID != pre.ID {
			t.Errorf("pre-1 with another amount: %+v, %v", got[7].t, got[7].err)
		}
		for _, ref := range []string{"g-short", "g-missing"} {
			if _, err := b.l.ByReference(context.Background(), ledger.KindTransfer, ref); !errors.Is(err, ledger.ErrNotFound) {
				t.Errorf("refused %s: %v", ref, err)
			}
		}
		if n := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE reference = 'g-twice'`); n != 1 {
			t.Errorf("g-twice written %d times", n)
		}
		b.figures(a, 89_000, 0)
		b.figures(c, 16_000, 0)
		b.figures(d, 0, 0)
		b.figures(e, 25_000, 0)
		b.figures(f, 21_000, 0)
		b.figures(z, 1_000, 0)
		if groups, n := b.l.GroupStats(); db.Dialect == store.Postgres && (groups != 1 || n != int64(len(es))) {
			t.Errorf("%d groups of %d movements; want one of %d", groups, n, len(es))
		}
		b.check()
	})
}

// A statement that raises (here a reversal of no transaction: a foreign
// key) ends the group's transaction: nothing of it is committed, and each
// movement is written alone, with its own outcome.
func TestGroupWithAnErrorWritesEachAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		a, c, y, z := b.wallet(100_000), b.wallet(0), b.wallet(1_000), b.wallet(0)
		g := newGate()
		b.grouping(g)
		es := []ledger.Entry{
			transferEntry("ok-1", a, c, 1_000, b.now),
			{Kind: ledger.KindReversal, Reference: "reversal:999999", ReversesID: 999_999, Postings: ledger.Transfer(a, c, 7), At: b.now},
			transferEntry("ok-2", a, c, 500, b.now),
		}
		got := b.inOneGroup(g, transferEntry("blocker", y, z, 1_000, b.now), es)
		if got[0].err != nil || got[2].err != nil || got[1].err == nil {
			t.Fatalf("outcomes %v, %v, %v: want the two transfers written, the reversal refused", got[0].err, got[1].err, got[2].err)
		}
		b.figures(a, 98_500, 0)
		b.figures(c, 1_500, 0)
		if groups, _ := b.l.GroupStats(); groups != 0 {
			t.Errorf("%d groups committed; want none", groups)
		}
		b.check()
	})
}

// A call whose context ends while it waits in the queue returns at once
// and is never written.
func TestGroupWithdrawsACancelledCall(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		a, c, y, z := b.wallet(100_000), b.wallet(0), b.wallet(1_000), b.wallet(0)
		g := newGate()
		b.grouping(g)
		ctx, cancel := context.WithCancel(context.Background())
		if !ledger.Grouping(b.l) {
			cancel()
			if _, err := b.l.Write(ctx, transferEntry("cancelled", a, c, 1_000, b.now)); err == nil {
				t.Fatal("a cancelled write went through")
			}
			b.figures(a, 100_000, 0)
			return
		}
		var wg sync.WaitGroup
		var blockErr error
		wg.Go(func() { _, blockErr = b.l.Write(context.Background(), transferEntry("blocker", y, z, 1_000, b.now)) })
		<-g.entered
		done := make(chan error, 1)
		go func() {
			_, err := b.l.Write(ctx, transferEntry("cancelled", a, c, 1_000, b.now))
			done <- err
		}()
		testwait.Eventually(t, 10*time.Second, "the write queued", func() bool { return ledger.Queued(b.l) == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled write: %v", err)
		}
		close(g.open)
		wg.Wait()
		if blockErr != nil {
			t.Fatal(blockErr)
		}
		// A later write goes through the same goroutine: the withdrawn one
		// was skipped, not written.
		b.write(ledger.KindTransfer, "after", ledger.Transfer(a, c, 1))
		testwait.Eventually(t, 10*time.Second, "no account left in flight", func() bool { return ledger.InFlight(b.l) == 0 })
		if _, err := b.l.ByReference(context.Background(), ledger.KindTransfer, "cancelled"); !errors.Is(err, ledger.ErrNotFound) {
			t.Fatalf("the cancelled write: %v", err)
		}
		b.check()
	})
}

// Concurrent A→B and B→A through group commit never deadlock, and the
// balances are exact; draining a balance never takes it below zero. Both
// with every movement sent to the group writer, and as New routes them
// (a movement with an account in flight grouped, the others alone).
func TestGroupedTransfersConcurrently(t *testing.T) {
	for _, all := range []bool{true, false} {
		t.Run(fmt.Sprintf("all grouped %v", all), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) { groupedConcurrently(t, db, all) })
		})
	}
}

func groupedConcurrently(t *testing.T, db *store.DB, all bool) {
	b := newBook(t, db)
	ctx := context.Background()
	a, c := b.wallet(1_000_000), b.wallet(1_000_000)
	d, f := b.wallet(10_000), b.wallet(0)
	if all {
		g := newGate()
		close(g.open)
		b.grouping(g)
	} else {
		b.l = ledger.New(db, ledger.GroupCommit(64))
		t.Cleanup(b.l.Close)
	}
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i := range n {
		wg.Go(func() {
			_, err := b.l.Write(ctx, transferEntry(fmt.Sprintf("ab-%d", i), a, c, 1_000, b.now))
			errs <- err
		})
		wg.Go(func() {
			_, err := b.l.Write(ctx, transferEntry(fmt.Sprintf("ba-%d", i), c, a, 3_000, b.now))
			errs <- err
		})
		wg.Go(func() {
			_, err := b.l.Write(ctx, transferEntry(fmt.Sprintf("d-%d", i), d, f, 1_000, b.now))
			if errors.Is(err, ledger.ErrInsufficientFunds) {
				err = nil
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.figures(a, 1_000_000+n*2_000, 0)
	b.figures(c, 1_000_000-n*2_000, 0)
	b.figures(d, 0, 0)
	b.figures(f, 10_000, 0)
	if k := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE reference LIKE 'd-%'`); k != 10 {
		t.Errorf("%d drains written; want 10", k)
	}
	testwait.Eventually(t, 10*time.Second, "no account left in flight", func() bool { return ledger.InFlight(b.l) == 0 })
	groups, moved := b.l.GroupStats()
	t.Logf("%d groups of %d movements", groups, moved)
	b.l.Close()
	b.l.Close()
	// After Close, a write is written alone.
	b.write(ledger.KindTransfer, "after-close", ledger.Transfer(a, c, 1))
	b.check()
}

// A caller whose context ends once its movement is taken into a group
// waits for the group: it is told the committed movement, or, when the
// group rolled back and its own write alone is then refused by its ended
// context, an error, with nothing written. Never an error while the money
// moved (a caller that took it for "not written" would move it again).
func TestGroupCancelledAfterTaken(t *testing.T) {
	for _, tc := range []struct {
		name        string
		wantWritten bool
	}{
		{"the group commits", true},
		{"the group rolls back", false}, // its partner raises: each written alone
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				b := newBook(t, db)
				a, c, p, q, y, z := b.wallet(100_000), b.wallet(0), b.wallet(5_000), b.wallet(0), b.wallet(1_000), b.wallet(0)
				first, second := newGate(), newGate()
				calls := 0 // the group writer's goroutine only
				b.l = ledger.NewBeforeGroup(db, func() {
					calls++
					switch calls {
					case 1:
						first.before()
					case 2:
						second.before()
					}
				}, ledger.GroupCommit(64))
				t.Cleanup(b.l.Close)
				if !ledger.Grouping(b.l) {
					t.Skip("group commit is PostgreSQL's")
				}
				partner := transferEntry("partner", p, q, 1_000, b.now)
				if !tc.wantWritten {
					partner = ledger.Entry{Kind: ledger.KindReversal, Reference: "reversal:999999", ReversesID: 999_999,
						Postings: ledger.Transfer(p, q, 7), At: b.now}
				}
				var wg sync.WaitGroup
				var blockErr, partnerErr error
				wg.Go(func() { _, blockErr = b.l.Write(context.Background(), transferEntry("blocker", y, z, 1_000, b.now)) })
				<-first.entered // the blocker taken, held before it is written
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan outcome, 1)
				target := transferEntry("taken", a, c, 1_000, b.now)
				go func() {
					tr, err := b.l.Write(ctx, target)
					done <- outcome{tr, err}
				}()
				wg.Go(func() { _, partnerErr = b.l.Write(context.Background(), partner) })
				testwait.Eventually(t, 10*time.Second, "both routed to the group writer", func() bool { return ledger.WaitingForWriter(b.l) == 2 })
				close(first.open)
				<-second.entered // both taken as one group, held before it is written
				cancel()
				close(second.open)
				got := <-done
				wg.Wait()
				if blockErr != nil {
					t.Fatalf("the blocker: %v", blockErr)
				}
				if tc.wantWritten && partnerErr != nil {
					t.Fatalf("the partner: %v", partnerErr)
				}
				testwait.Eventually(t, 10*time.Second, "no account left in flight", func() bool { return ledger.InFlight(b.l) == 0 })
				n := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'transfer' AND reference = 'taken'`)
				switch {
				case errors.Is(got.err, ledger.ErrOutcomeUnknown):
					t.Fatalf("told unknown with the group's outcome known: %v", got.err)
				case tc.wantWritten && (got.err != nil || got.t.ID == 0 || n != 1):
					t.Fatalf("a movement taken and committed: %+v, %v, written %d times", got.t, got.err, n)
				case !tc.wantWritten && (got.err == nil || n != 0):
					t.Fatalf("a movement of a rolled-back group, its caller gone: %+v, %v, written %d times", got.t, got.err, n)
				}
				if tc.wantWritten {
					// Its caller's retry is a replay: the money moved once.
					again, err := b.l.Write(context.Background(), target)
					if !errors.Is(err, ledger.ErrDuplicate) || again.ID != got.t.ID {
						t.Fatalf("the retry: %+v, %v", again, err)
					}
					b.figures(a, 99_000, 0)
					b.figures(c, 1_000, 0)
				} else {
					b.figures(a, 100_000, 0)
					b.figures(c, 0, 0)
				}
				b.check()
			})
		})
	}
}

// A group whose round trip outlives its time (here its statement waits for
// a row lock the test holds) is answered ErrOutcomeUnknown, alone or in a
// group: its statements were sent, and PostgreSQL commits them once the
// lock is free. A retry under the same reference is then a replay: the
// money moves once.
func TestGroupTimeoutIsUnknown(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("a group of %d", n), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				b := newBook(t, db)
				a, c, p, q, y, z := b.wallet(100_000), b.wallet(0), b.wallet(5_000), b.wallet(0), b.wallet(1_000), b.wallet(0)
				g := newGate()
				b.l = ledger.NewBeforeGroup(db, g.before, ledger.GroupCommit(64), ledger.GroupTimeout(2*time.Second))
				t.Cleanup(b.l.Close)
				if !ledger.Grouping(b.l) {
					t.Skip("group commit is PostgreSQL's")
				}
				lock := db.Gorm.Begin()
				defer lock.Rollback()
				if err := lock.Exec(`SELECT id FROM ledger_accounts WHERE id = ? FOR UPDATE`, a).Error; err != nil {
					t.Fatal(err)
				}
				es := []ledger.Entry{transferEntry("late-1", a, c, 1_000, b.now), transferEntry("late-2", p, q, 1_000, b.now)}[:n]
				got := b.inOneGroup(g, transferEntry("blocker", y, z, 1_000, b.now), es)
				for i, o := range got {
					if !errors.Is(o.err, ledger.ErrOutcomeUnknown) {
						t.Errorf("%s: %+v, %v; want ErrOutcomeUnknown", es[i].Reference, o.t, o.err)
					}
				}
				if err := lock.Rollback().Error; err != nil {
					t.Fatal(err)
				}
				retry := ledger.New(db)
				for _, e := range es {
					if _, err := retry.Write(context.Background(), e); err != nil && !errors.Is(err, ledger.ErrDuplicate) {
						t.Errorf("%s again: %v", e.Reference, err)
					}
					if k := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'transfer' AND reference = ?`, e.Reference); k != 1 {
						t.Errorf("%s written %d times", e.Reference, k)
					}
				}
				b.figures(a, 99_000, 0)
				b.figures(c, 1_000, 0)
				if n == 2 {
					b.figures(p, 4_000, 0)
					b.figures(q, 1_000, 0)
				}
				b.check()
			})
		})
	}
}

// Close while movements wait for the group writer writes them first, each
// caller told its own outcome, then stops; a Write after it is written
// alone.
func TestGroupCloseWritesWhatWaits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		a, c, y, z := b.wallet(100_000), b.wallet(0), b.wallet(1_000), b.wallet(0)
		g := newGate()
		b.grouping(g)
		if !ledger.Grouping(b.l) {
			t.Skip("group commit is PostgreSQL's")
		}
		var wg sync.WaitGroup
		var blockErr error
		wg.Go(func() { _, blockErr = b.l.Write(context.Background(), transferEntry("blocker", y, z, 1_000, b.now)) })
		<-g.entered
		const n = 5
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = b.l.Write(context.Background(), transferEntry(fmt.Sprintf("waits-%d", i), a, c, 1_000, b.now))
			})
		}
		testwait.Eventually(t, 10*time.Second, "every write queued", func() bool { return ledger.Queued(b.l) == n })
		closed := make(chan struct{})
		go func() { b.l.Close(); close(closed) }()
		close(g.open)
		<-closed
		wg.Wait()
		if blockErr != nil {
			t.Fatal(blockErr)
		}
		for i, err := range errs {
			if err != nil {
				t.Errorf("waits-%d: %v", i, err)
			}
		}
		b.write(ledger.KindTransfer, "after-close", ledger.Transfer(a, c, 1_000))
		b.figures(a, 100_000-(n+1)*1_000, 0)
		b.figures(c, (n+1)*1_000, 0)
		b.check()
	})
}

// The same group ended (FATAL), its callers gone meanwhile (their
// contexts ended while the group waited): they cannot write again, and
// the session may have ended after the commit, so each looks its movement
// up and, not finding it, answers ErrOutcomeUnknown, never "not sent".
// Written again, each is written once.
func TestGroupEndedCallersGoneIsUnknown(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	b := newBook(t, db)
	a, c, p, q, y, z := b.wallet(100_000), b.wallet(0), b.wallet(5_000), b.wallet(0), b.wallet(1_000), b.wallet(0)
	g := newGate()
	b.grouping(g)
	lock, holder := b.lockAccount(db, a)
	ctx, gone := context.WithCancel(context.Background())
	defer gone()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		// The group waits for the lock: its callers go, then its session
		// is ended.
		if err := testwait.Until(10*time.Second, "the group waits", func() bool {
			var n int64
			_ = db.Gorm.Raw(`SELECT COUNT(*) FROM pg_stat_activity WHERE `+waitsOn, holder).Scan(&n).Error
			return n != 0
		}); err != nil {
			t.Error(err)
		}
		gone()
		if err := b.endBlocked(db, holder); err != nil {
			t.Error(err)
		}
	}()
	es := []ledger.Entry{transferEntry("gone-1", a, c, 1_000, b.now), transferEntry("gone-2", p, q, 1_000, b.now)}
	got := b.inOneGroupCtx(ctx, g, transferEntry("blocker", y, z, 1_000, b.now), es)
	<-ended
	if err := lock.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	for i, o := range got {
		if !errors.Is(o.err, ledger.ErrOutcomeUnknown) {
			t.Errorf("%s: %v; want ErrOutcomeUnknown", es[i].Reference, o.err)
		}
	}
	for _, e := range es {
		b.againOnce(e)
	}
	b.figures(a, 99_000, 0)
	b.figures(c, 1_000, 0)
	b.figures(p, 4_000, 0)
	b.figures(q, 1_000, 0)
	b.check()
}

// A group whose connection PostgreSQL ends before its commit (here its
// backend terminated while it waits for a row lock the test holds) wrote
// nothing, and is known to have written nothing: each movement is written
// alone by its caller, once, not answered ErrOutcomeUnknown.
func TestGroupEndedBeforeItsCommitWritesEachAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		a, c, p, q, y, z := b.wallet(100_000), b.wallet(0), b.wallet(5_000), b.wallet(0), b.wallet(1_000), b.wallet(0)
		g := newGate()
		b.grouping(g)
		if !ledger.Grouping(b.l) {
			t.Skip("group commit is PostgreSQL's")
		}
		lock := db.Gorm.Begin()
		defer lock.Rollback()
		if err := lock.Exec(`SELECT id FROM ledger_accounts WHERE id = ? FOR UPDATE`, a).Error; err != nil {
			t.Fatal(err)
		}
		freed := make(chan struct{})
		go func() {
			defer close(freed)
			// The group's backend, once it waits for the lock: terminated.
			// Then the movements, written alone, wait for it: freed.
			waiting := func(like string) (pid int64) {
				_ = db.Gorm.Raw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
					AND application_name = current_setting('application_name') AND query LIKE ? LIMIT 1`, like).Scan(&pid).Error
				return pid
			}
			var pid int64
			if err := testwait.Until(10*time.Second, "the group waits", func() bool { pid = waiting("SELECT id FROM ledger_accounts WHERE id = ANY%"); return pid != 0 }); err != nil {
				t.Error(err)
			}
			db.Gorm.Exec(`SELECT pg_terminate_backend(?)`, pid)
			if err := testwait.Until(10*time.Second, "a movement written alone waits", func() bool { return waiting("WITH lk AS%") != 0 }); err != nil {
				t.Error(err)
			}
			lock.Rollback()
		}()
		es := []ledger.Entry{transferEntry("ended-1", a, c, 1_000, b.now), transferEntry("ended-2", p, q, 1_000, b.now)}
		got := b.inOneGroup(g, transferEntry("blocker", y, z, 1_000, b.now), es)
		<-freed
		for i, o := range got {
			if o.err != nil || o.t.ID == 0 {
				t.Errorf("%s: %+v, %v; want written alone", es[i].Reference, o.t, o.err)
			}
		}
		b.figures(a, 99_000, 0)
		b.figures(c, 1_000, 0)
		b.figures(p, 4_000, 0)
		b.figures(q, 1_000, 0)
		if groups, _ := b.l.GroupStats(); groups != 0 {
			t.Errorf("%d groups committed; want none", groups)
		}
		b.check()
	})
}

// A movement written alone (no group commit) whose caller's context ends
// while its statement waits is not a failure on PostgreSQL: the commit
// may still happen, so it answers ErrOutcomeUnknown, and a retry under
// its reference writes it once. A context that ended before anything was
// sent answers as it is, and nothing is written (both dialects).
func TestWriteAloneEndedMidStatementIsUnknown(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		a, c := b.wallet(100_000), b.wallet(0)
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := b.l.Write(gone, transferEntry("never-sent", a, c, 1_000, b.now))
		if !errors.Is(err, context.Canceled) || errors.Is(err, ledger.ErrOutcomeUnknown) {
			t.Errorf("cancelled before sending: %v; want context.Canceled, not ErrOutcomeUnknown", err)
		}
		if k := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE reference = 'never-sent'`); k != 0 {
			t.Errorf("never-sent written %d times", k)
		}
		if db.Dialect != store.Postgres {
			b.check()
			return // SQLite's transaction rolls back with its context: no unknown
		}
		lock := db.Gorm.Begin()
		defer lock.Rollback()
		if err := lock.Exec(`SELECT id FROM ledger_accounts WHERE id = ? FOR UPDATE`, a).Error; err != nil {
			t.Fatal(err)
		}
		e := transferEntry("ended-mid-statement", a, c, 1_000, b.now)
		short, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer stop()
		if _, err := b.l.Write(short, e); !errors.Is(err, ledger.ErrOutcomeUnknown) {
			t.Errorf("ended while waiting for a lock: %v; want ErrOutcomeUnknown", err)
		}
		if err := lock.Rollback().Error; err != nil {
			t.Fatal(err)
		}
		b.againOnce(e)
		b.figures(a, 99_000, 0)
		b.figures(c, 1_000, 0)
		b.check()
	})
}

// A session PostgreSQL ends (FATAL: an administrator's termination, a
// shutdown) may end after its commit record: a lone Write whose session is
// ended mid-statement is ErrOutcomeUnknown, not a plain failure, and the
// movement written again under its reference is written once.
func TestWriteAloneSessionEndedIsUnknown(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	b := newBook(t, db)
	a, c := b.wallet(100_000), b.wallet(0)
	lock, holder := b.lockAccount(db, a)
	e := transferEntry("session-ended", a, c, 1_000, b.now)
	done := make(chan error, 1)
	go func() {
		_, err := b.l.Write(context.Background(), e)
		done <- err
	}()
	// The Write's backend, waiting for the lock held above: ended.
	if err := b.endBlocked(db, holder); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ledger.ErrOutcomeUnknown) {
			t.Errorf("session ended mid-statement: %v; want ErrOutcomeUnknown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Write did not return after its session was ended")
	}
	if err := lock.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	b.againOnce(e)
	b.figures(a, 99_000, 0)
	b.figures(c, 1_000, 0)
	b.check()
}
