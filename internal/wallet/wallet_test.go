package wallet_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
)

type fixture struct {
	t   *testing.T
	db  *store.DB
	l   *ledger.Ledger
	ws  *wallet.Service
	seq int
	pub map[int64]string // payment id → public id
}

func newFixture(t *testing.T, db *store.DB) *fixture {
	l := ledger.New(db)
	return &fixture{t: t, db: db, l: l, ws: wallet.NewService(db, l), pub: map[int64]string{}}
}

// user signs a user up and returns their wallet.
func (f *fixture) user(email string) wallet.Wallet {
	f.t.Helper()
	ctx := context.Background()
	u, err := auth.NewService(f.db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, email, "correct horse", "", "fa")
	if err != nil {
		f.t.Fatalf("sign up %s: %v", email, err)
	}
	w, err := f.ws.ForUser(ctx, u.ID)
	if err != nil {
		f.t.Fatalf("wallet of %s: %v", email, err)
	}
	if w.BalanceRials != 0 || w.UserID != u.ID {
		f.t.Fatalf("new wallet %+v", w)
	}
	return w
}

// payment inserts a minimal awaiting_payment payment for the wallet.
func (f *fixture) topUp(w wallet.Wallet, amount int64) int64 {
	f.t.Helper()
	f.seq++
	now := time.Now().UTC()
	pub := fmt.Sprintf("pub%021d", f.seq)
	var id int64
	err := f.db.Gorm.Raw(`INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'sandbox', ?, ?, 'awaiting_payment', ?, ?) RETURNING id`,
		pub, w.UserID, w.ID, amount, fmt.Sprintf("tok%019d", f.seq), fmt.Sprintf("S%035d", f.seq), now, now).
		Scan(&id).Error
	if err != nil || id == 0 {
		f.t.Fatalf("insert payment: %d %v", id, err)
	}
	f.pub[id] = pub
	return id
}

// entry is the wallet's side of a ledger transaction: its posting.
type entry struct {
	ID           int64 // the transaction's
	PostingID    int64
	WalletID     int64
	TopUpID      *int64
	AmountRials  int64
	BalanceAfter int64
	Kind         ledger.Kind
	CreatedAt    time.Time
}

func (f *fixture) credit(walletID, topUpID, amount int64) (entry, error) {
	var e entry
	err := f.db.Tx(context.Background(), func(tx *gorm.DB) error {
		t, err := wallet.CreditTopUp(tx, f.l, wallet.TopUpCredit{WalletID: walletID, TopUpID: topUpID, PublicID: f.pub[topUpID],
			Gateway: "sandbox", AmountRials: amount, At: time.Now().UTC()})
		if err != nil {
			return err
		}
		e = entry{ID: t.ID, WalletID: walletID, TopUpID: t.TopUpID, Kind: t.Kind}
		for _, p := range t.Postings {
			if p.AmountRials > 0 {
				e.AmountRials, e.BalanceAfter = p.AmountRials, p.BalanceAfterRials
			}
		}
		return nil
	})
	return e, err
}

func (f *fixture) balance(walletID int64) int64 {
	f.t.Helper()
	return ledgertest.Balance(f.t, f.db, walletID)
}

// entries are the wallet's postings in the order they were written.
func (f *fixture) entries(walletID int64) []entry {
	f.t.Helper()
	var es []entry
	if err := f.db.Gorm.Raw(`SELECT t.id, lp.id AS posting_id, a.wallet_id, t.topup_id, lp.amount_rials, lp.balance_after_rials AS balance_after,
		t.kind, lp.created_at FROM ledger_postings lp JOIN ledger_accounts a ON a.id = lp.account_id
		JOIN ledger_transactions t ON t.id = lp.transaction_id WHERE a.wallet_id = ? ORDER BY lp.id`, walletID).Scan(&es).Error; err != nil {
		f.t.Fatal(err)
	}
	return es
}

// checkLedger asserts balance = sum(ledger) for the wallet, and that the
// entries, in id order, form a chain of balance_after values.
func (f *fixture) checkLedger(walletID int64) {
	f.t.Helper()
	var sum, prev int64
	seen := map[int64]bool{}
	for _, e := range f.entries(walletID) {
		sum += e.AmountRials
		if e.BalanceAfter != prev+e.AmountRials {
			f.t.Errorf("entry %d: balance_after %d, want %d + %d", e.ID, e.BalanceAfter, prev, e.AmountRials)
		}
		prev = e.BalanceAfter
		if e.TopUpID == nil || seen[*e.TopUpID] {
			f.t.Errorf("entry %d: payment %v missing or credited twice", e.ID, e.TopUpID)
		} else {
			seen[*e.TopUpID] = true
		}
	}
	if b := f.balance(walletID); b != sum || b < 0 {
		f.t.Errorf("wallet %d: balance %d, sum of ledger %d", walletID, b, sum)
	}
}

func TestCreditTopUp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		w := f.user("a@example.com")
		p1 := f.topUp(w, 50_000)
		p2 := f.topUp(w, 20_000)

		e, err := f.credit(w.ID, p1, 50_000)
		if err != nil {
			t.Fatalf("credit p1: %v", err)
		}
		if e.ID == 0 || e.WalletID != w.ID || e.TopUpID == nil || *e.TopUpID != p1 ||
			e.AmountRials != 50_000 || e.BalanceAfter != 50_000 || e.Kind != ledger.KindTopUp {
			t.Errorf("entry = %+v", e)
		}
		e, err = f.credit(w.ID, p2, 20_000)
		if err != nil {
			t.Fatalf("credit p2: %v", err)
		}
		if e.BalanceAfter != 70_000 {
			t.Errorf("second entry balance_after = %d, want 70000", e.BalanceAfter)
		}
		if b := f.balance(w.ID); b != 70_000 {
			t.Errorf("balance = %d, want 70000", b)
		}
		got, err := f.ws.ForUser(context.Background(), w.UserID)
		if err != nil || got.BalanceRials != 70_000 {
			t.Errorf("ForUser = %+v, %v", got, err)
		}

		// A replay of p1 is refused and its transaction leaves nothing.
		_, err = f.credit(w.ID, p1, 50_000)
		if !errors.Is(err, wallet.ErrAlreadyCredited) {
			t.Fatalf("second credit of p1: %v, want ErrAlreadyCredited", err)
		}
		if b := f.balance(w.ID); b != 70_000 {
			t.Errorf("balance after refused replay = %d, want 70000", b)
		}
		if n := len(f.entries(w.ID)); n != 2 {
			t.Errorf("%d ledger entries, want 2", n)
		}
		f.checkLedger(w.ID)
	})
}

func TestCreditTopUpRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		w := f.user("a@example.com")
		p := f.topUp(w, 50_000)
		for _, amount := range []int64{0, -1, -50_000} {
			if _, err := f.credit(w.ID, p, amount); err == nil {
				t.Errorf("credit of %d accepted", amount)
			}
		}
		if _, err := f.credit(999_999, p, 50_000); !errors.Is(err, wallet.ErrNotFound) {
			t.Errorf("credit of an unknown wallet: %v, want ErrNotFound", err)
		}
		if b, n := f.balance(w.ID), len(f.entries(w.ID)); b != 0 || n != 0 {
			t.Errorf("after refusals: balance %d, %d entries; want 0, 0", b, n)
		}
		if _, err := f.ws.ForUser(context.Background(), 999_999); !errors.Is(err, wallet.ErrNotFound) {
			t.Errorf("ForUser(unknown) = %v, want ErrNotFound", err)
		}
	})
}

func TestCreditSameTopUpConcurrently(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		w := f.user("a@example.com")
		p := f.topUp(w, 30_000)
		const n = 20
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = f.credit(w.ID, p, 30_000)
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, wallet.ErrAlreadyCredited):
			default:
				t.Errorf("goroutine %d: unexpected error %v", i, err)
			}
		}
		if ok != 1 {
			t.Errorf("%d credits succeeded, want exactly 1", ok)
		}
		if b := f.balance(w.ID); b != 30_000 {
			t.Errorf("balance = %d, want 30000", b)
		}
		if es := f.entries(w.ID); len(es) != 1 || es[0].BalanceAfter != 30_000 {
			t.Errorf("ledger = %+v, want one entry with balance_after 30000", es)
		}
		f.checkLedger(w.ID)
	})
}

func TestCreditDifferentTopUpsConcurrently(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		w := f.user("a@example.com")
		const n = 20
		ids := make([]int64, n)
		var want int64
		for i := range n {
			amount := int64(10_000 + i*10)
			ids[i] = f.topUp(w, amount)
			want += amount
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = f.credit(w.ID, ids[i], int64(10_000+i*10))
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("credit %d: %v", i, err)
			}
		}
		if b := f.balance(w.ID); b != want {
			t.Errorf("balance = %d, want %d", b, want)
		}
		es := f.entries(w.ID)
		if len(es) != n {
			t.Fatalf("%d ledger entries, want %d", len(es), n)
		}
		after := make([]int64, 0, n)
		for _, e := range es {
			after = append(after, e.BalanceAfter)
		}
		if slices.Sort(after); len(slices.Compact(slices.Clone(after))) != n {
			t.Errorf("balance_after values not distinct: %v", after)
		}
		if after[n-1] != want {
			t.Errorf("largest balance_after = %d, want the final balance %d", after[n-1], want)
		}
		f.checkLedger(w.ID) // in id order, each balance_after = previous + amount
	})
}

func TestHistoryPagination(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		w := f.user("a@example.com")
		other := f.user("b@example.com")
		pids := make([]int64, 25)
		for i := range pids {
			pids[i] = f.topUp(w, int64(10_000+i*10))
			if _, err := f.credit(w.ID, pids[i], int64(10_000+i*10)); err != nil {
				t.Fatalf("credit %d: %v", i, err)
			}
			if i%5 == 0 { // another wallet's entries interleave and must not show
				op := f.topUp(other, 10_000)
				if _, err := f.credit(other.ID, op, 10_000); err != nil {
					t.Fatal(err)
				}
			}
		}
		var all []wallet.HistoryItem
		var before int64
		for page, want := range []int{10, 10, 5} {
			items, next, err := f.ws.History(ctx, w, before, 10)
			if err != nil {
				t.Fatalf("page %d: %v", page, err)
			}
			if len(items) != want {
				t.Fatalf("page %d: %d items, want %d", page, len(items), want)
			}
			if page < 2 && next != items[len(items)-1].PostingID {
				t.Errorf("page %d: next = %d, want the last item's posting %d", page, next, items[len(items)-1].PostingID)
			}
			if page == 2 && next != 0 {
				t.Errorf("last page: next = %d, want 0", next)
			}
			all = append(all, items...)
			before = next
		}
		// Newest first, every entry once, with its payment's public id.
		for i, it := range all {
			k := len(pids) - 1 - i // the i-th newest entry is for payment k
			if i > 0 && it.PostingID >= all[i-1].PostingID {
				t.Errorf("item %d: posting %d not below %d", i, it.PostingID, all[i-1].PostingID)
			}
			wantAmount := int64(10_000 + k*10)
			if it.AmountRials != wantAmount || it.Kind != ledger.KindTopUp {
				t.Errorf("item %d: %+v, want amount %d", i, it, wantAmount)
			}
			if it.TopUpPublicID != f.pub[pids[k]] {
				t.Errorf("item %d: public id %q, want %q", i, it.TopUpPublicID, f.pub[pids[k]])
			}
			if it.RefID != nil {
				t.Errorf("item %d: ref id %v, want none", i, *it.RefID)
			}
			var e entry
			for _, x := range f.entries(w.ID) {
				if x.PostingID == it.PostingID {
					e = x
				}
			}
			if e.ID != it.TransactionID || !it.CreatedAt.Equal(e.CreatedAt) || it.BalanceAfterRials != e.BalanceAfter {
				t.Errorf("item %d: transaction %d, created %v, balance after %d; the posting's %d, %v, %d", i, it.TransactionID, it.CreatedAt,
					it.BalanceAfterRials, e.ID, e.CreatedAt, e.BalanceAfter)
			}
		}
		if all[0].BalanceAfterRials != f.balance(w.ID) {
			t.Errorf("newest balance_after %d, balance %d", all[0].BalanceAfterRials, f.balance(w.ID))
		}

		// limit <= 0 or > 100 means the default page of 20.
		for _, limit := range []int{0, -1, 101} {
			items, next, err := f.ws.History(ctx, w, 0, limit)
			if err != nil || len(items) != 20 || next != items[19].PostingID {
				t.Errorf("History(limit %d) = %d items, next %d, %v; want 20", limit, len(items), next, err)
			}
		}
		// Exactly one full page: no next cursor.
		items, next, err := f.ws.History(ctx, w, all[19].PostingID, 5)
		if err != nil || len(items) != 5 || next != 0 {
			t.Errorf("last exact page: %d items, next %d, %v; want 5 and 0", len(items), next, err)
		}
		// An empty wallet.
		empty := f.user("c@example.com")
		items, next, err = f.ws.History(ctx, empty, 0, 10)
		if err != nil || len(items) != 0 || next != 0 {
			t.Errorf("empty wallet: %d items, next %d, %v", len(items), next, err)
		}
		f.checkLedger(w.ID)
		f.checkLedger(other.ID)
	})
}
