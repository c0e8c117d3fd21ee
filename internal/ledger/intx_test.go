package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// TestCaptureThroughAnAccountInFlight: a hold captured into card refunds
// in flight and moved on to a gateway's clearing side in one transaction
// of the caller's, the accounts locked first in one order (LockAccounts);
// a rolled-back hold leaves nothing, a replayed capture or release moves
// nothing.
func TestCaptureThroughAnAccountInFlight(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		b := newBook(t, db)
		ctx := context.Background()
		w := b.wallet(100_000)
		via, err := b.l.EnsureAccount(ctx, ledger.AccountCardRefundsInFlight, ledger.CodeCardRefundsInFlight, 0)
		if err != nil {
			t.Fatal(err)
		}
		req := ledger.HoldRequest{AccountID: w, AmountRials: 60_000, Reason: "card_refund", Reference: "cr_1",
			ExpiresAt: b.now.Add(time.Hour), Now: b.now}

		// Rolled back: no hold, nothing held.
		boom := errors.New("boom")
		err = db.Tx(ctx, func(tx *gorm.DB) error {
			if _, err := b.l.HoldIn(tx, req); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		b.figures(w, 100_000, 0)

		// More than the available balance: refused.
		over := req
		over.AmountRials = 100_001
		if err := db.Tx(ctx, func(tx *gorm.DB) error { _, err := b.l.HoldIn(tx, over); return err }); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Fatalf("overdraft: %v", err)
		}

		var h ledger.Hold
		if err := db.Tx(ctx, func(tx *gorm.DB) error { h, err = b.l.HoldIn(tx, req); return err }); err != nil {
			t.Fatal(err)
		}
		b.figures(w, 100_000, 60_000)

		// Captured into the account in flight, then on to the clearing
		// side, in one transaction.
		err = db.Tx(ctx, func(tx *gorm.DB) error {
			if err := b.l.LockAccounts(tx, b.gw, via, w, via); err != nil {
				return err
			}
			if _, err := b.l.CaptureIn(tx, h.ID, 60_000, via, ledger.KindCardRefund, "to the card", b.now); err != nil {
				return err
			}
			_, err := b.l.Post(tx, ledger.Entry{Kind: ledger.KindCardRefund, Reference: "card_refund:cr_1", Postings: ledger.Transfer(via, b.gw, 60_000), At: b.now})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		b.figures(w, 40_000, 0)
		b.figures(via, 0, 0)
		if got, _ := b.l.HoldBy(ctx, "card_refund", "cr_1"); got.Status != ledger.HoldCaptured || got.TransactionID == nil {
			t.Fatalf("hold %+v", got)
		} else if tr, _ := b.l.Transaction(ctx, *got.TransactionID); tr.Kind != ledger.KindCardRefund || tr.Note != "to the card" {
			t.Fatalf("capture %+v", tr)
		}
		// Captured again: the first result, and nothing moves.
		err = db.Tx(ctx, func(tx *gorm.DB) error {
			_, err := b.l.CaptureIn(tx, h.ID, 60_000, via, ledger.KindCardRefund, "", b.now)
			return err
		})
		if !errors.Is(err, ledger.ErrDuplicate) {
			t.Fatalf("second capture: %v", err)
		}
		b.figures(w, 40_000, 0)

		// A release in a transaction, and its replay.
		req.Reference, req.AmountRials = "cr_2", 10_000
		var h2 ledger.Hold
		if err := db.Tx(ctx, func(tx *gorm.DB) error { h2, err = b.l.HoldIn(tx, req); return err }); err != nil {
			t.Fatal(err)
		}
		for i, want := range []error{nil, ledger.ErrDuplicate} {
			err := db.Tx(ctx, func(tx *gorm.DB) error { _, err := b.l.ReleaseIn(tx, h2.ID, b.now); return err })
			if !errors.Is(err, want) {
				t.Fatalf("release %d: %v, want %v", i, err, want)
			}
		}
		b.figures(w, 40_000, 0)
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return b.l.LockAccounts(tx, w, 1<<40) }); db.Dialect == store.Postgres && !errors.Is(err, ledger.ErrAccountNotFound) {
			t.Fatalf("locking a missing account: %v", err)
		}
		b.check()
	})
}
