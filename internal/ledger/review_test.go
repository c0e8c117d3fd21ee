package ledger_test

// An adversarial review of the ledger's promises (issue 34): each test
// here broke, or could break, one of them on SQLite or PostgreSQL.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A replay posted inside a caller's transaction (as a top-up's credit is)
// is ErrDuplicate on both dialects, even when the money it moved has been
// spent since: the unique (kind, reference) answers before any balance's
// guard does. (PostgreSQL's one statement used to move the balances
// first and answer ErrInsufficientFunds.)
func TestPostReplayAfterSpendingIsDuplicate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(10_000), b.wallet(0)
		post := func(ref string, ps []ledger.Posting) error {
			return db.Tx(ctx, func(tx *gorm.DB) error {
				_, err := b.l.Post(tx, ledger.Entry{Kind: ledger.KindTransfer, Reference: ref, Postings: ps, At: b.now})
				return err
			})
		}
		if err := post("tr-1", ledger.Transfer(a, c, 10_000)); err != nil {
			t.Fatal(err)
		}
		if err := post("tr-2", ledger.Transfer(c, b.wallet(0), 10_000)); err != nil {
			t.Fatal(err)
		}
		// a has nothing left, and c neither: the replay of tr-1 would
		// overdraw a if it were not refused as a replay first.
		if err := post("tr-1", ledger.Transfer(a, c, 10_000)); !errors.Is(err, ledger.ErrDuplicate) {
			t.Fatalf("replay of a spent transfer: %v, want ErrDuplicate", err)
		}
		b.figures(a, 0, 0)
		b.figures(c, 0, 0)
		// The same with many legs (another shape of statement, another
		// plan on PostgreSQL).
		legs := make([]int64, 6)
		for i := range legs {
			legs[i] = b.wallet(0)
		}
		payer := b.wallet(5_000)
		split := func() []ledger.Posting {
			ps := []ledger.Posting{{AccountID: payer, AmountRials: -5_000}}
			for _, id := range legs[:5] {
				ps = append(ps, ledger.Posting{AccountID: id, AmountRials: 1_000})
			}
			return ps
		}
		if err := post("split", split()); err != nil {
			t.Fatal(err)
		}
		for i, id := range legs[:5] {
			if err := post(fmt.Sprintf("on-%d", i), ledger.Transfer(id, legs[5], 1_000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := post("split", split()); !errors.Is(err, ledger.ErrDuplicate) {
			t.Fatalf("replay of a spent split: %v, want ErrDuplicate", err)
		}
		b.figures(payer, 0, 0)
		b.figures(legs[5], 5_000, 0)
		b.check()
	})
}

// Forty writes of one movement at once: one transaction, every other
// answered with it.
func TestConcurrentReplaysWriteOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(100_000), b.wallet(0)
		var ids sync.Map
		got := race(t, 40, func(i int) error {
			tx, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "once", Postings: ledger.Transfer(a, c, 7_000), At: b.now})
			ids.Store(tx.ID, true)
			return err
		}, ledger.ErrDuplicate)
		if got[nil] != 1 || got[ledger.ErrDuplicate] != 39 {
			t.Fatalf("%d written, %d replays; want 1 and 39", got[nil], got[ledger.ErrDuplicate])
		}
		n := 0
		ids.Range(func(k, _ any) bool { n++; return k.(int64) != 0 })
		if n != 1 {
			t.Fatalf("replays answered with %d different transactions", n)
		}
		b.figures(a, 93_000, 0)
		b.figures(c, 7_000, 0)
		b.check()
	})
}

// Each refusal is reported as what it is, the same on both dialects.
func TestRefusalsAreTyped(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		poor := b.wallet(1_000)
		h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: poor, AmountRials: 500, Reason: "charge", Reference: "h-typed",
			ExpiresAt: b.now.Add(time.Hour), Now: b.now})
		if err != nil {
			t.Fatal(err)
		}
		const missing = 999_999
		cases := []struct {
			name string
			do   func() error
			want error
		}{
			{"a transfer from a short account to no account", func() error {
				_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "x1", Postings: ledger.Transfer(poor, missing, 5_000), At: b.now})
				return err
			}, ledger.ErrAccountNotFound},
			{"a transfer from no account", func() error {
				_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "x2", Postings: ledger.Transfer(missing, poor, 5), At: b.now})
				return err
			}, ledger.ErrAccountNotFound},
			{"a transfer of held money", func() error {
				_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "x3", Postings: ledger.Transfer(poor, b.gw, 501), At: b.now})
				return err
			}, ledger.ErrInsufficientFunds},
			{"a hold on no account", func() error {
				_, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: missing, AmountRials: 5, Reason: "charge", Reference: "x4",
					ExpiresAt: b.now.Add(time.Hour), Now: b.now})
				return err
			}, ledger.ErrAccountNotFound},
			{"a hold beyond the available balance", func() error {
				_, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: poor, AmountRials: 501, Reason: "charge", Reference: "x5",
					ExpiresAt: b.now.Add(time.Hour), Now: b.now})
				return err
			}, ledger.ErrInsufficientFunds},
			{"a capture to no account", func() error {
				_, err := b.l.Capture(ctx, h.ID, 500, missing, ledger.KindCapture, b.now)
				return err
			}, ledger.ErrAccountNotFound},
			{"a capture of more than held", func() error {
				_, err := b.l.Capture(ctx, h.ID, 501, b.gw, ledger.KindCapture, b.now)
				return err
			}, ledger.ErrBadAmount},
			{"a capture of nothing", func() error {
				_, err := b.l.Capture(ctx, h.ID, 0, b.gw, ledger.KindCapture, b.now)
				return err
			}, ledger.ErrBadAmount},
			{"a release of no hold", func() error {
				_, err := b.l.Release(ctx, missing, b.now)
				return err
			}, ledger.ErrNotFound},
			{"a reversal of no transaction", func() error {
				_, err := b.l.Reverse(ctx, missing, "", b.now)
				return err
			}, ledger.ErrNotFound},
		}
		for _, tc := range cases {
			if err := tc.do(); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		}
		// Nothing of the refusals stayed: the hold is open and whole.
		if got, err := b.l.HoldBy(ctx, "charge", "h-typed"); err != nil || got.Status != ledger.HoldOpen {
			t.Fatalf("hold after refused captures: %+v %v", got, err)
		}
		b.figures(poor, 1_000, 500)
		if n := b.count(`SELECT COUNT(*) FROM ledger_holds`); n != 1 {
			t.Fatalf("%d holds, want 1", n)
		}
		b.check()
	})
}

// A hold ends once whichever way: a partial capture releases the rest (a
// release after it is refused), a hold past its time cannot be captured
// (even before the sweep), and an expired one neither captured nor
// released.
func TestHoldEndsOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		payer, merchant := b.wallet(100_000), b.wallet(0)
		hold := func(ref string, rials int64, life time.Duration) ledger.Hold {
			t.Helper()
			h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: rials, Reason: "charge", Reference: ref,
				ExpiresAt: b.now.Add(life), Now: b.now})
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		// Partial capture, then a release of "the rest": refused, the
		// rest was released by the capture.
		h := hold("p", 30_000, time.Hour)
		if _, err := b.l.Capture(ctx, h.ID, 10_000, merchant, ledger.KindCapture, b.now); err != nil {
			t.Fatal(err)
		}
		if _, err := b.l.Release(ctx, h.ID, b.now); !errors.Is(err, ledger.ErrHoldEnded) {
			t.Fatalf("release after a partial capture: %v", err)
		}
		b.figures(payer, 90_000, 0)
		b.figures(merchant, 10_000, 0)
		// Past its time, not yet swept: a capture expires it and is refused;
		// a second capture and a release are refused too.
		h = hold("late", 20_000, time.Minute)
		later := b.now.Add(time.Minute)
		if got, err := b.l.Capture(ctx, h.ID, 20_000, merchant, ledger.KindCapture, later); !errors.Is(err, ledger.ErrHoldEnded) || got.Status != ledger.HoldExpired {
			t.Fatalf("capture at its expiry: %+v %v", got, err)
		}
		if _, err := b.l.Capture(ctx, h.ID, 20_000, merchant, ledger.KindCapture, b.now); !errors.Is(err, ledger.ErrHoldEnded) {
			t.Fatalf("capture after expiry: %v", err)
		}
		if _, err := b.l.Release(ctx, h.ID, b.now); !errors.Is(err, ledger.ErrHoldEnded) {
			t.Fatalf("release after expiry: %v", err)
		}
		if n, err := b.l.ExpireDue(ctx, b.now.Add(time.Hour), 10); err != nil || n != 0 {
			t.Fatalf("sweep after expiry: %d %v", n, err)
		}
		b.figures(payer, 90_000, 0)
		// Double void.
		h = hold("void", 5_000, time.Hour)
		first, err := b.l.Release(ctx, h.ID, b.now)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := b.l.Release(ctx, h.ID, b.now.Add(time.Second)); !errors.Is(err, ledger.ErrDuplicate) || !again.EndedAt.Equal(*first.EndedAt) {
			t.Fatalf("second release: %+v %v", again, err)
		}
		b.figures(payer, 90_000, 0)
		// A hold that has expired when it is made is refused.
		if _, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 5, Reason: "charge", Reference: "dead",
			ExpiresAt: b.now, Now: b.now}); err == nil {
			t.Fatal("a hold expiring as it is made was taken")
		}
		b.figures(payer, 90_000, 0)
		b.check()
	})
}

// Capture, release and the expiry sweep racing for the same holds: each
// hold ends exactly once, and the figures are exactly those endings.
func TestConcurrentHoldEndings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		payer, merchant := b.wallet(1_000_000), b.wallet(0)
		const n = 12
		ids := make([]int64, n)
		for i := range ids {
			h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: payer, AmountRials: 10_000, Reason: "charge", Reference: fmt.Sprintf("r%d", i),
				ExpiresAt: b.now.Add(time.Minute), Now: b.now})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = h.ID
		}
		b.figures(payer, 1_000_000, n*10_000)
		var ended atomic.Int64 // endings the callers were told they made
		race(t, 3*n+2, func(i int) error {
			var err error
			switch {
			case i >= 3*n:
				var k int
				k, err = b.l.ExpireDue(ctx, b.now.Add(2*time.Minute), n)
				ended.Add(int64(k))
				return err
			case i%3 == 0:
				_, err = b.l.Capture(ctx, ids[i/3], 4_000, merchant, ledger.KindCapture, b.now)
			case i%3 == 1:
				_, err = b.l.Release(ctx, ids[i/3], b.now)
			default: // a second capture, of another amount
				_, err = b.l.Capture(ctx, ids[i/3], 9_000, merchant, ledger.KindCapture, b.now)
			}
			if err == nil {
				ended.Add(1)
			}
			return err
		}, ledger.ErrDuplicate, ledger.ErrHoldEnded)
		if ended.Load() != n {
			t.Fatalf("callers were told of %d endings of %d holds", ended.Load(), n)
		}
		var captured int64
		for _, id := range ids {
			var h ledger.Hold
			if err := db.Gorm.Table("ledger_holds").Take(&h, id).Error; err != nil {
				t.Fatal(err)
			}
			if h.Status == ledger.HoldOpen {
				t.Fatalf("hold %d still open", id)
			}
			captured += h.CapturedRials
		}
		b.figures(payer, 1_000_000-captured, 0)
		b.figures(merchant, captured, 0)
		if c := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'capture'`); c != b.count(`SELECT COUNT(*) FROM ledger_holds WHERE status = 'captured'`) {
			t.Fatalf("%d capture transactions for the captured holds", c)
		}
		b.check()
	})
}

// Holds and transfers racing on one account never take its available
// balance below zero: holds count against it.
func TestHoldsAndTransfersNeverOverdraw(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(20_000), b.wallet(0)
		got := race(t, 40, func(i int) error {
			if i%2 == 0 {
				_, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: a, AmountRials: 1_000, Reason: "charge", Reference: fmt.Sprintf("h%d", i),
					ExpiresAt: b.now.Add(time.Hour), Now: b.now})
				return err
			}
			_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: fmt.Sprintf("t%d", i), Postings: ledger.Transfer(a, c, 1_000), At: b.now})
			return err
		}, ledger.ErrInsufficientFunds)
		if got[nil] != 20 || got[ledger.ErrInsufficientFunds] != 20 {
			t.Fatalf("%d made, %d refused; want 20 and 20", got[nil], got[ledger.ErrInsufficientFunds])
		}
		acc := b.account(a)
		if acc.AvailableRials() != 0 || acc.PostedRials+b.account(c).PostedRials != 20_000 {
			t.Fatalf("account %+v", acc)
		}
		b.check()
	})
}

// Many goroutines moving money around a ring of accounts at random, in
// both directions and in three-legged transactions (several accounts
// locked at once), some refused for funds: no deadlock, no error of any
// other kind, and not a rial made or lost.
func TestRandomTransfersConserveMoney(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		const accounts, workers, each = 6, 12, 25
		acc := make([]int64, accounts)
		for i := range acc {
			acc[i] = b.wallet(50_000)
		}
		total := ledgertest.WalletsTotal(t, db)
		var made atomic.Int64
		got := race(t, workers, func(w int) error {
			r := rand.New(rand.NewPCG(uint64(w), 34))
			for i := range each {
				x, y, z := acc[r.IntN(accounts)], acc[r.IntN(accounts)], acc[r.IntN(accounts)]
				amt := int64(1 + r.IntN(30_000))
				ps := ledger.Transfer(x, y, amt)
				if i%3 == 0 {
					ps = append(ps, ledger.Transfer(y, z, amt/2)...)
				}
				if x == y {
					continue
				}
				_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: fmt.Sprintf("w%d-%d", w, i), Postings: ps, At: b.now})
				switch {
				case err == nil:
					made.Add(1)
				case errors.Is(err, ledger.ErrInsufficientFunds), errors.Is(err, ledger.ErrUnbalanced):
				default:
					return err
				}
			}
			return nil
		})
		if got[nil] != workers {
			t.Fatalf("%d of %d workers ended without an unexpected error", got[nil], workers)
		}
		if made.Load() == 0 {
			t.Fatal("no transfer went through")
		}
		if now := ledgertest.WalletsTotal(t, db); now != total {
			t.Fatalf("wallets hold %d rials, had %d", now, total)
		}
		if sum := ledgertest.Total(t, db); sum != 0 {
			t.Fatalf("the accounts sum to %d rials", sum)
		}
		b.check()
	})
}

// Twenty reversals of one transaction at once: one reversal, every other
// answered with it.
func TestConcurrentReversalsReverseOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(50_000), b.wallet(0)
		tr := b.write(ledger.KindTransfer, "tr", ledger.Transfer(a, c, 20_000))
		got := race(t, 20, func(int) error {
			_, err := b.l.Reverse(ctx, tr.ID, "", b.now)
			return err
		}, ledger.ErrDuplicate)
		if got[nil] != 1 || got[ledger.ErrDuplicate] != 19 {
			t.Fatalf("%d reversals, %d replays", got[nil], got[ledger.ErrDuplicate])
		}
		b.figures(a, 50_000, 0)
		b.figures(c, 0, 0)
		if sum := ledgertest.Total(t, db); sum != 0 {
			t.Fatalf("the accounts sum to %d rials", sum)
		}
		b.check()
	})
}

// A reversal cannot take back money that is held since: holds count in
// the available balance a reversal needs.
func TestReversalRefusedWhenHeld(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(30_000), b.wallet(0)
		tr := b.write(ledger.KindTransfer, "tr", ledger.Transfer(a, c, 30_000))
		if _, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: c, AmountRials: 25_000, Reason: "withdrawal", Reference: "w",
			ExpiresAt: b.now.Add(time.Hour), Now: b.now}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.l.Reverse(ctx, tr.ID, "", b.now); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Fatalf("reversal of held money: %v", err)
		}
		b.figures(c, 30_000, 25_000)
		b.check()
	})
}

// A user's history after a hold, a partial capture and a reversal: one
// row per transaction, newest first, each with the posted balance after.
func TestHistoryAfterReversalsAndHolds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		me, other := b.wallet(50_000), b.wallet(0)
		tr := b.write(ledger.KindTransfer, "tr", ledger.Transfer(me, other, 20_000))
		if _, err := b.l.Reverse(ctx, tr.ID, "sent by mistake", b.now); err != nil {
			t.Fatal(err)
		}
		h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: me, AmountRials: 15_000, Reason: "charge", Reference: "c",
			ExpiresAt: b.now.Add(time.Hour), Now: b.now})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.l.Capture(ctx, h.ID, 6_000, other, ledger.KindCapture, b.now); err != nil {
			t.Fatal(err)
		}
		rows, next, err := b.l.History(ctx, me, 0, 10)
		if err != nil || next != 0 {
			t.Fatalf("history: %v, next %d", err, next)
		}
		want := []struct {
			kind          ledger.Kind
			amount, after int64
		}{
			{ledger.KindCapture, -6_000, 44_000},
			{ledger.KindReversal, 20_000, 50_000},
			{ledger.KindTransfer, -20_000, 30_000},
			{ledger.KindAdjustment, 50_000, 50_000},
		}
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
		}
		for i, w := range want {
			if r := rows[i]; r.Kind != w.kind || r.AmountRials != w.amount || r.BalanceAfterRials != w.after {
				t.Errorf("row %d: %s %d after %d; want %s %d after %d", i, r.Kind, r.AmountRials, r.BalanceAfterRials, w.kind, w.amount, w.after)
			}
		}
		if rows[1].ReversesID == nil || *rows[1].ReversesID != tr.ID {
			t.Errorf("the reversal's row does not name transfer %d: %+v", tr.ID, rows[1])
		}
		// Two pages of two.
		p1, next, err := b.l.History(ctx, me, 0, 2)
		if err != nil || len(p1) != 2 || next == 0 {
			t.Fatalf("page 1: %d rows, next %d, %v", len(p1), next, err)
		}
		p2, next, err := b.l.History(ctx, me, next, 2)
		if err != nil || len(p2) != 2 || next != 0 || p2[0].Kind != ledger.KindTransfer {
			t.Fatalf("page 2: %+v, next %d, %v", p2, next, err)
		}
		b.figures(me, 44_000, 0)
		b.check()
	})
}

// canceller cancels a context once n statements have run on its
// database: a write cut off at each point of its way.
type canceller struct {
	mu     sync.Mutex
	left   int
	cancel context.CancelFunc
}

func (c *canceller) arm(n int, cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left, c.cancel = n, cancel
}

func (c *canceller) after(*gorm.DB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel == nil {
		return
	}
	if c.left--; c.left == 0 {
		c.cancel()
		c.cancel = nil
	}
}

func hookCanceller(t *testing.T, db *store.DB) *canceller {
	t.Helper()
	c := &canceller{}
	cb := db.Gorm.Callback()
	for _, err := range []error{
		cb.Row().After("gorm:row").Register("reviewtest:row", c.after),
		cb.Raw().After("gorm:raw").Register("reviewtest:raw", c.after),
		cb.Query().After("gorm:query").Register("reviewtest:query", c.after),
		cb.Create().After("gorm:create").Register("reviewtest:create", c.after),
		cb.Update().After("gorm:update").Register("reviewtest:update", c.after),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// A context cancelled after each statement of a write, a hold, a capture
// and a release: each is all or nothing, and every rule holds after. (A
// write cancelled as its commit's answer comes back can have committed
// and still report the cancellation: the caller cannot know, so it
// retries, and the retry answers with the movement on record.)
func TestCancelledMidWriteLeavesNothingHalfWritten(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c := b.wallet(1_000_000), b.wallet(0)
		cut := hookCanceller(t, db)
		try := func(n int, fn func(ctx context.Context) error) {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			cut.arm(n, cancel)
			_ = fn(cctx) // judged by what the database holds
			cut.arm(0, nil)
		}
		// sent is what a has sent to c; open what a's open hold holds.
		sent := func() int64 {
			return b.count(`SELECT COALESCE(SUM(amount_rials), 0) FROM ledger_postings WHERE account_id = ?`, c)
		}
		for n := 1; n <= 6; n++ {
			ref := fmt.Sprintf("cut-%d", n)
			try(n, func(ctx context.Context) error {
				_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: ref, Postings: ledger.Transfer(a, c, 100), At: b.now})
				return err
			})
			written := b.count(`SELECT COUNT(*) FROM ledger_transactions WHERE reference = ?`, ref)
			_, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: ref, Postings: ledger.Transfer(a, c, 100), At: b.now})
			if (written == 1) != errors.Is(err, ledger.ErrDuplicate) || written == 0 && err != nil {
				t.Fatalf("write cut after %d statements: %d transactions, then the retry: %v", n, written, err)
			}
			b.figures(c, sent(), 0)
			b.check()

			try(n, func(ctx context.Context) error {
				_, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: a, AmountRials: 1_000, Reason: "charge", Reference: ref,
					ExpiresAt: b.now.Add(time.Hour), Now: b.now})
				return err
			})
			b.check()
			h, err := b.l.HoldBy(ctx, "charge", ref)
			if errors.Is(err, ledger.ErrNotFound) {
				b.figures(a, 1_000_000-sent(), 0)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			b.figures(a, 1_000_000-sent(), 1_000)
			try(n, func(ctx context.Context) error {
				_, err := b.l.Capture(ctx, h.ID, 400, c, ledger.KindCapture, b.now)
				return err
			})
			b.check()
			if h, err = b.l.HoldBy(ctx, "charge", ref); err != nil {
				t.Fatal(err)
			}
			switch h.Status {
			case ledger.HoldCaptured:
				b.figures(a, 1_000_000-sent(), 0)
			case ledger.HoldOpen:
				b.figures(a, 1_000_000-sent(), 1_000)
				try(n, func(ctx context.Context) error { _, err := b.l.Release(ctx, h.ID, b.now); return err })
				b.check()
				if _, err := b.l.Release(ctx, h.ID, b.now); err != nil && !errors.Is(err, ledger.ErrDuplicate) {
					t.Fatal(err)
				}
				b.figures(a, 1_000_000-sent(), 0)
			default:
				t.Fatalf("hold %s after a cut capture", h.Status)
			}
			b.figures(c, sent(), 0)
			b.check()
		}
	})
}

// A taken reference with another body is not a replay: the first is
// answered with ErrReferenceReused, not ErrDuplicate (which a caller
// takes for "done"), and nothing moves.
func TestReferenceReusedIsNotAReplay(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		a, c, d := b.wallet(10_000), b.wallet(0), b.wallet(0)
		first := b.write(ledger.KindTransfer, "tr", ledger.Transfer(a, c, 1_000))
		for _, ps := range [][]ledger.Posting{ledger.Transfer(a, c, 2_000), ledger.Transfer(a, d, 1_000), ledger.Transfer(c, a, 1_000)} {
			got, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "tr", Postings: ps, At: b.now})
			if !errors.Is(err, ledger.ErrReferenceReused) || errors.Is(err, ledger.ErrDuplicate) || got.ID != first.ID {
				t.Fatalf("%v under a taken reference: %+v, %v; want the first and ErrReferenceReused", ps, got, err)
			}
		}
		// The same body, its postings in another order: a replay.
		if got, err := b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: "tr", At: b.now.Add(time.Minute),
			Postings: []ledger.Posting{{AccountID: c, AmountRials: 1_000}, {AccountID: a, AmountRials: -1_000}}}); !errors.Is(err, ledger.ErrDuplicate) || got.ID != first.ID {
			t.Fatalf("replay: %+v, %v", got, err)
		}
		b.figures(a, 9_000, 0)
		b.figures(c, 1_000, 0)
		b.figures(d, 0, 0)

		h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: a, AmountRials: 500, Reason: "charge", Reference: "ch", ExpiresAt: b.now.Add(time.Hour), Now: b.now})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []ledger.HoldRequest{
			{AccountID: a, AmountRials: 600, Reason: "charge", Reference: "ch", ExpiresAt: b.now.Add(time.Hour), Now: b.now},
			{AccountID: c, AmountRials: 500, Reason: "charge", Reference: "ch", ExpiresAt: b.now.Add(time.Hour), Now: b.now},
		} {
			if got, err := b.l.Hold(ctx, r); !errors.Is(err, ledger.ErrReferenceReused) || got.ID != h.ID {
				t.Fatalf("hold %+v under a taken reference: %+v, %v", r, got, err)
			}
		}
		b.figures(a, 9_000, 500)
		b.figures(c, 1_000, 0)
		b.check()
	})
}

// Post given the database itself rather than a transaction is still
// all or nothing: on SQLite its several statements (the transaction row,
// each balance, the postings) would otherwise each commit alone, and a
// refusal at the second account would leave the first moved.
func TestPostOutsideATransactionIsAtomic(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		lower, higher := b.wallet(0), b.wallet(1_000)
		before := ledgertest.Transactions(t, db)
		// lower is credited first (ascending id), then higher is short.
		if _, err := b.l.Post(db.Gorm, ledger.Entry{Kind: ledger.KindTransfer, Reference: "half", Postings: ledger.Transfer(higher, lower, 5_000), At: b.now}); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Fatalf("post: %v", err)
		}
		if n := ledgertest.Transactions(t, db); n != before {
			t.Fatalf("a refused post left %d transactions", n-before)
		}
		b.figures(lower, 0, 0)
		b.figures(higher, 1_000, 0)
		if _, err := b.l.Post(db.Gorm, ledger.Entry{Kind: ledger.KindTransfer, Reference: "whole", Postings: ledger.Transfer(higher, lower, 600), At: b.now}); err != nil {
			t.Fatal(err)
		}
		b.figures(lower, 600, 0)
		b.check()
	})
}

// A hold that cannot be expired (here its account's held figure was
// tampered with) does not stop the sweep: the due holds after it still
// expire, and the failure is reported, naming the hold.
func TestExpirySweepGoesPastAFailingHold(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		broken, fine := b.wallet(10_000), b.wallet(10_000)
		var ids []int64
		for i, acc := range []int64{broken, fine, fine} {
			h, err := b.l.Hold(ctx, ledger.HoldRequest{AccountID: acc, AmountRials: 1_000, Reason: "charge", Reference: fmt.Sprintf("e%d", i),
				ExpiresAt: b.now.Add(time.Duration(i+1) * time.Minute), Now: b.now})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, h.ID)
		}
		if err := db.Gorm.Exec(`UPDATE ledger_accounts SET held_rials = 0 WHERE id = ?`, broken).Error; err != nil {
			t.Fatal(err)
		}
		n, err := b.l.ExpireDue(ctx, b.now.Add(time.Hour), 10)
		if n != 2 || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("hold %d", ids[0])) {
			t.Fatalf("sweep: %d expired, %v; want 2 and an error naming hold %d", n, err, ids[0])
		}
		b.figures(fine, 10_000, 0)
	})
}

// Holds, captures, releases, the sweep and transfers, all at once over the
// same few accounts: no deadlock or error of any other kind than a
// refusal, every hold ends at most once, and every rule holds after.
func TestMixedOperationsNeverDeadlock(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		acc := []int64{b.wallet(200_000), b.wallet(200_000), b.wallet(200_000)}
		total := ledgertest.WalletsTotal(t, db)
		const workers, each = 10, 20
		got := race(t, workers, func(w int) error {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []int64 // this worker's holds
			for i := range each {
				x, y := acc[r.IntN(len(acc))], acc[r.IntN(len(acc))]
				var err error
				switch op := r.IntN(5); {
				case op == 0 || len(mine) == 0:
					var h ledger.Hold
					h, err = b.l.Hold(ctx, ledger.HoldRequest{AccountID: x, AmountRials: int64(1 + r.IntN(20_000)), Reason: "charge",
						Reference: fmt.Sprintf("h%d-%d", w, i), ExpiresAt: b.now.Add(time.Duration(r.IntN(3)) * time.Minute).Add(time.Second), Now: b.now})
					if err == nil {
						mine = append(mine, h.ID)
					}
				case op == 1:
					h := mine[r.IntN(len(mine))]
					_, err = b.l.Capture(ctx, h, int64(1+r.IntN(1_000)), y, ledger.KindCapture, b.now)
					if errors.Is(err, ledger.ErrUnbalanced) { // captured to its own account
						err = nil
					}
				case op == 2:
					_, err = b.l.Release(ctx, mine[r.IntN(len(mine))], b.now)
				case op == 3:
					_, err = b.l.ExpireDue(ctx, b.now.Add(90*time.Second), 5)
				default:
					if x != y {
						_, err = b.l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: fmt.Sprintf("t%d-%d", w, i),
							Postings: ledger.Transfer(x, y, int64(1+r.IntN(30_000))), At: b.now})
					}
				}
				if err != nil && !errors.Is(err, ledger.ErrInsufficientFunds) && !errors.Is(err, ledger.ErrHoldEnded) &&
					!errors.Is(err, ledger.ErrDuplicate) {
					return err
				}
			}
			return nil
		})
		if got[nil] != workers {
			t.Fatalf("%d of %d workers ended without an unexpected error", got[nil], workers)
		}
		if now := ledgertest.WalletsTotal(t, db); now != total {
			t.Fatalf("wallets hold %d rials, had %d", now, total)
		}
		b.check()
	})
}

// The schema itself refuses what the ledger never does: an update or
// delete of a posting or a transaction (both dialects), and on
// PostgreSQL a transaction whose postings do not sum to zero, or have
// one leg, or are written in two statements (each statement's
// transactions are checked whole, migration 00041).
func TestSchemaRefusesEdits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		a, c := b.wallet(10_000), b.wallet(0)
		tr := b.write(ledger.KindTransfer, "tr", ledger.Transfer(a, c, 4_000))
		for _, q := range []string{
			`UPDATE ledger_postings SET amount_rials = amount_rials * 2 WHERE transaction_id = ?`,
			`DELETE FROM ledger_postings WHERE transaction_id = ?`,
			`UPDATE ledger_transactions SET reference = 'other' WHERE id = ?`,
			`DELETE FROM ledger_transactions WHERE id = ?`,
		} {
			if err := db.Gorm.Exec(q, tr.ID).Error; err == nil {
				t.Errorf("%s: allowed", q)
			}
		}
		if db.Dialect == store.Postgres {
			// Row triggers never fire for TRUNCATE: migration 00022's
			// statement triggers refuse it.
			for _, q := range []string{`TRUNCATE ledger_postings`, `TRUNCATE ledger_transactions CASCADE`} {
				if err := db.Gorm.Exec(q).Error; err == nil {
					t.Errorf("%s: allowed", q)
				}
			}
			for name, legs := range map[string][]int64{"unbalanced": {-500, 400}, "one leg": {-500}, "balanced in two statements": {-500, 500}} {
				err := db.Tx(context.Background(), func(tx *gorm.DB) error {
					var id int64
					if err := tx.Raw(`INSERT INTO ledger_transactions (kind, reference, created_at) VALUES ('adjustment', ?, ?) RETURNING id`, name, b.now).
						Scan(&id).Error; err != nil {
						return err
					}
					for i, amt := range legs {
						if err := tx.Exec(`INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES (?, ?, ?, 0, ?)`,
							id, []int64{b.gw, c}[i], amt, b.now).Error; err != nil {
							return err
						}
					}
					return nil
				})
				var pgErr *pgconn.PgError
				if err == nil {
					t.Errorf("a transaction %s was committed", name)
				} else if !errors.As(err, &pgErr) || pgErr.ConstraintName != "ledger_transaction_balanced" {
					// The rule is named, so the store tells it from a
					// balance's CHECK (ErrUnbalanced, not insufficient funds).
					t.Errorf("a transaction %s: %v, want the Σ = 0 rule named", name, err)
				}
			}
		}
		b.figures(a, 6_000, 0)
		b.check()
	})
}
