package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

type book struct {
	t   *testing.T
	db  *store.DB
	l   *ledger.Ledger
	now time.Time
	seq int
	gw  int64 // a gateway's clearing account: where test money comes from
}

func newBook(t *testing.T, db *store.DB) *book {
	t.Helper()
	b := &book{t: t, db: db, l: ledger.New(db), now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	var err error
	if b.gw, err = b.l.EnsureAccount(context.Background(), ledger.AccountGateway, ledger.GatewayCode("testbank"), 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// wallet makes a user with a wallet account holding rials (moved in from
// the gateway's clearing account), and returns the account's id.
func (b *book) wallet(rials int64) int64 {
	b.t.Helper()
	b.seq++
	var uid, wid int64
	if err := b.db.Gorm.Raw(`INSERT INTO users (email, password_hash, created_at) VALUES (?, 'x', ?) RETURNING id`,
		fmt.Sprintf("u%d@example.com", b.seq), b.now).Scan(&uid).Error; err != nil {
		b.t.Fatal(err)
	}
	if err := b.db.Gorm.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, b.now, b.now).
		Scan(&wid).Error; err != nil {
		b.t.Fatal(err)
	}
	id, err := ledger.CreateWalletAccount(b.db.Gorm, wid, uid, b.now)
	if err != nil {
		b.t.Fatal(err)
	}
	if rials > 0 {
		b.write(ledger.KindAdjustment, fmt.Sprintf("fund-%d", b.seq), ledger.Transfer(b.gw, id, rials))
	}
	return id
}

func (b *book) write(kind ledger.Kind, ref string, ps []ledger.Posting) ledger.Transaction {
	b.t.Helper()
	tx, err := b.l.Write(context.Background(), ledger.Entry{Kind: kind, Reference: ref, Postings: ps, At: b.now})
	if err != nil {
		b.t.Fatalf("%s %s: %v", kind, ref, err)
	}
	return tx
}

func (b *book) account(id int64) ledger.Account {
	b.t.Helper()
	a, err := b.l.Account(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return a
}

// figures asserts an account's posted and held figures.
func (b *book) figures(id, posted, held int64) {
	b.t.Helper()
	if a := b.account(id); a.PostedRials != posted || a.HeldRials != held {
		b.t.Errorf("account %d: posted %d, held %d; want %d, %d", id, a.PostedRials, a.HeldRials, posted, held)
	}
}

// check runs every rule of kifpool check over the database.
func (b *book) check() {
	b.t.Helper()
	rep, err := integrity.Check(context.Background(), b.db, integrity.Options{NoCallLog: true})
	if err != nil {
		b.t.Fatal(err)
	}
	if !rep.OK() {
		b.t.Fatalf("integrity: %v", rep.Violations())
	}
}

func (b *book) count(q string, args ...any) int64 {
	b.t.Helper()
	var n int64
	if err := b.db.Gorm.Raw(q, args...).Scan(&n).Error; err != nil {
		b.t.Fatal(err)
	}
	return n
}

func TestTransferAndReplay(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(100_000), b.wallet(0)
		tx := b.write(ledger.KindTransfer, "tr-1", ledger.Transfer(a, c, 30_000))
		if len(tx.Postings) != 2 || tx.Postings[0].BalanceAfterRials != 70_000 || tx.Postings[1].BalanceAfterRials != 30_000 {
			t.Fatalf("postings %+v", tx.Postings)
		}
		b.figures(a, 70_000, 0)
		b.figures(c, 30_000, 0)
		// A replay writes nothing and answers with the first transaction.
		again, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "tr-1", Postings: ledger.Transfer(a, c, 30_000), At: b.now})
		if !errors.Is(err, ledger.ErrDuplicate) || again.ID != tx.ID {
			t.Fatalf("replay: %+v, %v", again, err)
		}
		b.figures(a, 70_000, 0)
		b.figures(c, 30_000, 0)
		// More than the available balance: refused, nothing written.
		before := b.count(`SELECT COUNT(*) FROM ledger_transactions`)
		if _, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "tr-2", Postings: ledger.Transfer(a, c, 70_001), At: b.now}); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Fatalf("overdraft: %v", err)
		}
		if n := b.count(`SELECT COUNT(*) FROM ledger_transactions`); n != before {
			t.Fatalf("a refused transfer left %d transactions", n-before)
		}
		b.figures(a, 70_000, 0)
		// Exactly the balance: allowed, down to zero.
		b.write(ledger.KindTransfer, "tr-3", ledger.Transfer(a, c, 70_000))
		b.figures(a, 0, 0)
		b.figures(c, 100_000, 0)
		// The gateway's clearing account goes below zero: it is the outside world.
		if g := b.account(b.gw); g.PostedRials != -100_000 || !g.MayGoNegative {
			t.Fatalf("gateway %+v", g)
		}
		// Unbalanced or one-sided entries never reach the database.
		if _, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "tr-4",
			Postings: []ledger.Posting{{AccountID: a, AmountRials: 5}, {AccountID: c, AmountRials: -4}}, At: b.now}); !errors.Is(err, ledger.ErrUnbalanced) {
			t.Fatalf("unbalanced: %v", err)
		}
		// An unknown account: refused.
		if _, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "tr-5", Postings: ledger.Transfer(c, 999_999, 5), At: b.now}); !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Fatalf("unknown account: %v", err)
		}
		b.check()
	})
}

func TestReversal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(50_000), b.wallet(0)
		orig := b.write(ledger.KindTransfer, "tr-1", ledger.Transfer(a, c, 20_000))
		rev, err := b.l.Reverse(ctx, orig.ID, "sent by mistake", b.now)
		if err != nil {
			t.Fatal(err)
		}
		if rev.Kind != ledger.KindReversal || rev.ReversesID == nil || *rev.ReversesID != orig.ID {
			t.Fatalf("reversal %+v", rev)
		}
		b.figures(a, 50_000, 0)
		b.figures(c, 0, 0)
		// Once only: a second reversal answers with the first.
		again, err := b.l.Reverse(ctx, orig.ID, "again", b.now)
		if !errors.Is(err, ledger.ErrDuplicate) || again.ID != rev.ID {
			t.Fatalf("second reversal: %+v, %v", again, err)
		}
		if _, err := b.l.Reverse(ctx, rev.ID, "", b.now); err == nil {
			t.Fatal("a reversal was reversed")
		}
		// Money spent since cannot be taken back: the reversal is refused.
		spent := b.write(ledger.KindTransfer, "tr-2", ledger.Transfer(a, c, 40_000))
		b.write(ledger.KindTransfer, "tr-3", ledger.Transfer(c, a, 1))
		b.write(ledger.KindTransfer, "tr-4", ledger.Transfer(c, b.wallet(0), 39_999))
		if _, err := b.l.Reverse(ctx, spent.ID, "", b.now); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Fatalf("reversal of spent money: %v", err)
		}
		if n := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE reverses_id = ?`, spent.ID); n != 0 {
			t.Fatalf("a refused reversal left %d rows", n)
		}
		b.check()
	})
}

// An original is reversed at most once. Reverse's fixed reference
// (ReversalReference) makes a second Reverse a replay, answered with the
// first; a reversal under any other reference is refused before anything
// is written, by Write and by Post alike (Validate), so that nothing
// reaches the partial unique index on reverses_id with nothing to answer.
// The index itself, the database's own guard, is then hit directly.
func TestSecondReversalRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(50_000), b.wallet(0)
		orig := b.write(ledger.KindTransfer, "tr-1", ledger.Transfer(a, c, 20_000))
		first, err := b.l.Reverse(ctx, orig.ID, "", b.now)
		if err != nil {
			t.Fatal(err)
		}
		b.write(ledger.KindTransfer, "tr-2", ledger.Transfer(a, c, 20_000)) // c can pay a second reversal
		again, err := b.l.Reverse(ctx, orig.ID, "", b.now)
		if !errors.Is(err, ledger.ErrDuplicate) || again.ID != first.ID {
			t.Fatalf("Reverse again: %d, %v; want the first reversal %d and ErrDuplicate", again.ID, err, first.ID)
		}
		second := ledger.Entry{Kind: ledger.KindReversal, Reference: "manual-reversal-of-tr-1", ReversesID: orig.ID,
			Postings: ledger.Opposite(ledger.Transfer(a, c, 20_000)), At: b.now}
		if _, err := b.l.Write(ctx, second); err == nil || errors.Is(err, ledger.ErrDuplicate) {
			t.Fatalf("Write of a reversal under another reference: %v, want a refusal that is not a replay", err)
		}
		err = db.Tx(ctx, func(tx *gorm.DB) error {
			_, err := b.l.Post(tx, second)
			return err
		})
		if err == nil || errors.Is(err, ledger.ErrDuplicate) {
			t.Fatalf("Post of a reversal under another reference: %v, want a refusal that is not a replay", err)
		}
		// The index: a second transaction reversing orig, inserted as a
		// writer that skipped the ledger's rules would.
		err = db.Gorm.Exec(`INSERT INTO ledger_transactions (kind, reference, reverses_id, note, created_at) VALUES ('reversal', 'by-hand', ?, '', ?)`,
			orig.ID, b.now).Error
		if !store.IsUniqueViolation(err) {
			t.Fatalf("a second reversal inserted directly: %v, want the unique index's refusal", err)
		}
		if n := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE reverses_id = ?`, orig.ID); n != 1 {
			t.Fatalf("transaction %d reversed %d times", orig.ID, n)
		}
		b.figures(a, 30_000, 0)
		b.figures(c, 20_000, 0)
		b.check()
	})
}

// A release is never a transaction (its hold records it): the ledger
// refuses to write one, whichever way it is asked, on both dialects.
func TestReleaseIsNeverWritten(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(50_000), b.wallet(0)
		e := ledger.Entry{Kind: ledger.KindRelease, Reference: "hold:1", Postings: ledger.Transfer(a, c, 1_000), At: b.now}
		if _, err := b.l.Write(ctx, e); err == nil {
			t.Fatal("Write wrote a release")
		}
		e.Reference = "hold:2"
		if err := db.Tx(ctx, func(tx *gorm.DB) error { _, err := b.l.Post(tx, e); return err }); err == nil {
			t.Fatal("Post wrote a release")
		}
		if n := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'release'`); n != 0 {
			t.Fatalf("%d release transactions", n)
		}
		b.figures(a, 50_000, 0)
		b.figures(c, 0, 0)
	})
}

func TestHolds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		payer, merchant := b.wallet(100_000), b.wallet(0)
		h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 60_000, Reason: "charge", Reference: "ch_1",
			ExpiresAt: b.now.Add(time.Hour), Now: b.now})
		if err != nil {
			t.Fatal(err)
		}
		b.figures(payer, 100_000, 60_000)
		// The same hold asked again: the first.
		if again, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 60_000, Reason: "charge", Reference: "ch_1",
			ExpiresAt: b.now.Add(time.Hour), Now: b.now}); !errors.Is(err, ledger.ErrDuplicate) || again.ID != h.ID || again.Status != ledger.HoldOpen {
			t.Fatalf("repeat hold: %+v %v", again, err)
		}
		b.figures(payer, 100_000, 60_000)
		// Held money cannot be spent: 40,000 available.
		if _, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "t1", Postings: ledger.Transfer(payer, merchant, 40_001), At: b.now}); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Fatalf("spending held money: %v", err)
		}
		if _, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 40_001, Reason: "charge", Reference: "ch_2",
			ExpiresAt: b.now.Add(time.Hour), Now: b.now}); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Fatalf("a hold beyond the available balance: %v", err)
		}
		if n := b.count(`SELECT COUNT(*) FROM ledger_holds WHERE reference = 'ch_2'`); n != 0 {
			t.Fatalf("a refused hold left %d rows", n)
		}
		b.check()
		// Capture part: 45,000 to the merchant, the other 15,000 released.
		c, err := b.l.Capture(ctx, h.ID, 45_000, merchant, ledger.KindCapture, b.now)
		if err != nil || c.Status != ledger.HoldCaptured || c.CapturedRials != 45_000 || c.TransactionID == nil {
			t.Fatalf("capture: %+v %v", c, err)
		}
		b.figures(payer, 55_000, 0)
		b.figures(merchant, 45_000, 0)
		// A second capture answers with the first.
		if again, err := b.l.Capture(ctx, h.ID, 60_000, merchant, ledger.KindCapture, b.now); !errors.Is(err, ledger.ErrDuplicate) ||
			again.CapturedRials != 45_000 || *again.TransactionID != *c.TransactionID {
			t.Fatalf("second capture: %+v %v", again, err)
		}
		if _, err := b.l.Release(ctx, h.ID, b.now); !errors.Is(err, ledger.ErrHoldEnded) {
			t.Fatalf("release after capture: %v", err)
		}
		b.figures(payer, 55_000, 0)
		b.figures(merchant, 45_000, 0)
		b.check()

		// Release: once.
		h2, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 5_000, Reason: "withdrawal", Reference: "w_1",
			ExpiresAt: b.now.Add(time.Hour), Now: b.now})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := b.l.Release(ctx, h2.ID, b.now); err != nil || r.Status != ledger.HoldReleased {
			t.Fatalf("release: %+v %v", r, err)
		}
		if _, err := b.l.Release(ctx, h2.ID, b.now); !errors.Is(err, ledger.ErrDuplicate) {
			t.Fatalf("second release: %v", err)
		}
		if _, err := b.l.Capture(ctx, h2.ID, 5_000, merchant, ledger.KindCapture, b.now); !errors.Is(err, ledger.ErrHoldEnded) {
			t.Fatalf("capture after release: %v", err)
		}
		b.figures(payer, 55_000, 0)

		// Expiry: the worker's sweep, and a capture that comes too late.
		h3, _ := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 10_000, Reason: "charge", Reference: "ch_3", ExpiresAt: b.now.Add(time.Minute), Now: b.now})
		h4, _ := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 20_000, Reason: "charge", Reference: "ch_4", ExpiresAt: b.now.Add(time.Hour), Now: b.now})
		b.figures(payer, 55_000, 30_000)
		if n, err := b.l.ExpireDue(ctx, b.now.Add(30*time.Second), 10); err != nil || n != 0 {
			t.Fatalf("expire before time: %d %v", n, err)
		}
		if n, err := b.l.ExpireDue(ctx, b.now.Add(2*time.Minute), 10); err != nil || n != 1 {
			t.Fatalf("expire: %d %v", n, err)
		}
		b.figures(payer, 55_000, 20_000)
		if h, err := b.l.HoldBy(ctx, "charge", "ch_3"); err != nil || h.Status != ledger.HoldExpired || h.ID != h3.ID {
			t.Fatalf("expired hold: %+v %v", h, err)
		}
		late, err := b.l.Capture(ctx, h4.ID, 20_000, merchant, ledger.KindCapture, b.now.Add(2*time.Hour))
		if !errors.Is(err, ledger.ErrHoldEnded) || late.Status != ledger.HoldExpired {
			t.Fatalf("capture after the hold's time: %+v %v", late, err)
		}
		b.figures(payer, 55_000, 0)
		b.figures(merchant, 45_000, 0)
		b.check()
	})
}

// A→B and B→A at the same moment never deadlock (accounts are locked in
// id order), and the balances come out exact.
func TestOppositeTransfersConcurrently(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(1_000_000), b.wallet(1_000_000)
		const n = 100
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := range n {
			wg.Go(func() {
				_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: fmt.Sprintf("ab-%d", i), Postings: ledger.Transfer(a, c, 1_000), At: b.now})
				errs <- err
			})
			wg.Go(func() {
				_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: fmt.Sprintf("ba-%d", i), Postings: ledger.Transfer(c, a, 3_000), At: b.now})
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
		b.check()
	})
}

// Draining one balance from many goroutines never takes it below zero:
// exactly as many transfers succeed as the balance allows.
func TestDrainNeverBelowZero(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(10_000), b.wallet(0)
		const n = 30
		got := race(t, n, func(i int) error {
			_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: fmt.Sprintf("d-%d", i), Postings: ledger.Transfer(a, c, 1_000), At: b.now})
			return err
		}, ledger.ErrInsufficientFunds)
		if got[nil] != 10 || got[ledger.ErrInsufficientFunds] != n-10 {
			t.Fatalf("%d transfers made, %d refused; want 10 and %d", got[nil], got[ledger.ErrInsufficientFunds], n-10)
		}
		b.figures(a, 0, 0)
		b.figures(c, 10_000, 0)
		b.check()
	})
}

// Fifty captures of one hold at once make one capture.
func TestConcurrentCaptures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		payer, merchant := b.wallet(100_000), b.wallet(0)
		h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 80_000, Reason: "charge", Reference: "ch", ExpiresAt: b.now.Add(time.Hour), Now: b.now})
		if err != nil {
			t.Fatal(err)
		}
		got := race(t, 50, func(int) error {
			_, err := b.l.Capture(ctx, h.ID, 50_000, merchant, ledger.KindCapture, b.now)
			return err
		}, ledger.ErrDuplicate)
		if got[nil] != 1 || got[ledger.ErrDuplicate] != 49 {
			t.Fatalf("%d captures, %d replays", got[nil], got[ledger.ErrDuplicate])
		}
		b.figures(payer, 50_000, 0)
		b.figures(merchant, 50_000, 0)
		b.check()
	})
}

// race runs fn(0) … fn(n-1) at once and counts their outcomes: nil, or
// the first of expected each error is; any other error fails the test.
func race(t *testing.T, n int, fn func(i int) error, expected ...error) map[error]int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[error]int{}
	for i := range n {
		wg.Go(func() {
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				got[nil]++
				return
			}
			for _, e := range expected {
				if errors.Is(err, e) {
					got[e]++
					return
				}
			}
			t.Error(err)
		})
	}
	wg.Wait()
	return got
}
