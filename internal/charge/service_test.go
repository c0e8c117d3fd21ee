package charge_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/charge/sqlstore"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/wallet"
)

type fixture struct {
	t   *testing.T
	db  *store.DB
	l   *ledger.Ledger
	ws  *wallet.Service
	svc *charge.Service
	gw  int64 // a gateway clearing account, to fund wallets from
	clk *testclock.Clock
}

func newFixture(t *testing.T, db *store.DB) *fixture {
	t.Helper()
	l := ledger.New(db)
	gw, err := l.EnsureAccount(context.Background(), ledger.AccountGateway, ledger.GatewayCode("test"), 0)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, l: l, ws: wallet.NewService(db, l), gw: gw, clk: testclock.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))}
	f.svc = charge.New(sqlstore.New(db, l), charge.Config{BaseURL: "https://kifpool.example"}, f.clock, nil)
	return f
}

func (f *fixture) clock() time.Time { return f.clk.Now() }

func (f *fixture) advance(d time.Duration) { f.clk.Add(d) }

type person struct {
	ID int64
	W  wallet.Wallet
}

// user signs up a user with balance rials in their wallet.
func (f *fixture) user(addr string, balance int64) person {
	f.t.Helper()
	ctx := context.Background()
	u, err := auth.NewService(f.db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, addr, "correct horse", "", "fa")
	if err != nil {
		f.t.Fatalf("sign up %s: %v", addr, err)
	}
	w, err := f.ws.ForUser(ctx, u.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	if balance > 0 {
		f.fund(w.AccountID, balance, "fund:"+addr)
	}
	return person{ID: u.ID, W: w}
}

func (f *fixture) fund(account, rials int64, ref string) {
	f.t.Helper()
	if _, err := f.l.Write(context.Background(), ledger.Entry{Kind: ledger.KindAdjustment, Reference: ref,
		Postings: ledger.Transfer(f.gw, account, rials), At: f.clock()}); err != nil {
		f.t.Fatal(err)
	}
}

// merchant signs up a merchant named name.
func (f *fixture) merchant(addr, name string) (person, charge.Merchant) {
	f.t.Helper()
	p := f.user(addr, 0)
	m, created, err := f.svc.MakeMerchant(context.Background(), p.ID, name, nil)
	if err != nil || !created || m.DisplayName != name || m.AccountID == 0 {
		f.t.Fatalf("make merchant: %+v %v %v", m, created, err)
	}
	return p, m
}

func (f *fixture) balance(p person) int64 { f.t.Helper(); return ledgertest.Balance(f.t, f.db, p.W.ID) }
func (f *fixture) held(p person) int64    { f.t.Helper(); return ledgertest.Held(f.t, f.db, p.W.ID) }

func (f *fixture) merchantBalance(p person) int64 {
	f.t.Helper()
	m, err := f.svc.Merchant(context.Background(), p.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return m.PostedRials
}

func (f *fixture) create(m person, rials int64, order string, capture charge.CaptureMethod) charge.Charge {
	f.t.Helper()
	res, err := f.svc.Create(context.Background(), charge.CreateRequest{MerchantUserID: m.ID, FormToken: formtoken.New(),
		AmountRials: rials, Description: "سفارش " + order, OrderID: order, ReturnURL: "https://shop.example/back", Capture: capture})
	if err != nil || res.Replayed || res.Charge.Status != charge.StatusRequiresConfirmation {
		f.t.Fatalf("create: %+v %v", res, err)
	}
	return res.Charge
}

func (f *fixture) get(m person, id string) charge.Charge {
	f.t.Helper()
	c, err := f.svc.Get(context.Background(), m.ID, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) checkInvariants() {
	f.t.Helper()
	rep, err := integrity.Check(context.Background(), f.db, integrity.Options{NoCallLog: true})
	if err != nil {
		f.t.Fatal(err)
	}
	if !rep.OK() {
		f.t.Fatalf("invariants broken: %v", rep.Violations())
	}
}

func TestCreateOncePerKeyAndOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		r := charge.CreateRequest{MerchantUserID: m.ID, FormToken: formtoken.New(), AmountRials: 50_000, OrderID: "o-1",
			Capture: charge.CaptureAutomatic}
		first, err := f.svc.Create(ctx, r)
		if err != nil || first.Replayed {
			t.Fatalf("create: %+v %v", first, err)
		}
		if want := f.clock().Add(30 * time.Minute); !first.Charge.ExpiresAt.Equal(want) {
			t.Fatalf("expires at %s, want %s", first.Charge.ExpiresAt, want)
		}
		v := f.svc.View(first.Charge)
		if v.CheckoutURL != "https://kifpool.example/checkout/"+first.Charge.PublicID || v.Status != charge.StatusRequiresConfirmation {
			t.Fatalf("view %+v", v)
		}
		again, err := f.svc.Create(ctx, r)
		if err != nil || !again.Replayed || again.Charge.PublicID != first.Charge.PublicID {
			t.Fatalf("replay: %+v %v", again, err)
		}
		other := r
		other.AmountRials = 60_000
		if _, err := f.svc.Create(ctx, other); !errors.Is(err, charge.ErrTokenReused) {
			t.Fatalf("key reused: %v", err)
		}
		sameOrder := r
		sameOrder.FormToken = formtoken.New()
		if _, err := f.svc.Create(ctx, sameOrder); !errors.Is(err, charge.ErrOrderIDTaken) {
			t.Fatalf("order id taken: %v", err)
		}
		// Another merchant may use the same order id.
		m2, _ := f.merchant("shop2@example.com", "Shop 2")
		sameOrder.MerchantUserID = m2.ID
		if _, err := f.svc.Create(ctx, sameOrder); err != nil {
			t.Fatalf("another merchant's order: %v", err)
		}
		// A user who is not a merchant makes no charge.
		payer := f.user("payer@example.com", 0)
		notMerchant := r
		notMerchant.MerchantUserID, notMerchant.FormToken = payer.ID, formtoken.New()
		if _, err := f.svc.Create(ctx, notMerchant); !errors.Is(err, charge.ErrNotMerchant) {
			t.Fatalf("not a merchant: %v", err)
		}
		for _, bad := range []charge.CreateRequest{
			{AmountRials: 0, OrderID: "x", Capture: charge.CaptureAutomatic},
			{AmountRials: 10, OrderID: "", Capture: charge.CaptureAutomatic},
			{AmountRials: 10, OrderID: "x", Capture: "later"},
			{AmountRials: 10, OrderID: "x\u202e", Capture: charge.CaptureManual},
		} {
			bad.MerchantUserID, bad.FormToken = m.ID, formtoken.New()
			if _, err := f.svc.Create(ctx, bad); err == nil {
				t.Fatalf("created %+v", bad)
			}
		}
		cs, next, err := f.svc.List(ctx, charge.Filter{MerchantUserID: m.ID})
		if err != nil || len(cs) != 1 || next != 0 {
			t.Fatalf("list: %d %d %v", len(cs), next, err)
		}
		f.checkInvariants()
	})
}

func TestAutomaticChargePaysOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		c := f.create(m, 120_000, "o-1", charge.CaptureAutomatic)
		res, err := f.svc.Confirm(ctx, payer.ID, c.PublicID)
		if err != nil || res.Replayed || res.Charge.Status != charge.StatusSucceeded || res.Charge.CapturedRials != 120_000 {
			t.Fatalf("confirm: %+v %v", res, err)
		}
		if f.balance(payer) != 380_000 || f.merchantBalance(m) != 120_000 {
			t.Fatalf("balances %d %d", f.balance(payer), f.merchantBalance(m))
		}
		// Confirmed again (Back, then Pay): paid once.
		again, err := f.svc.Confirm(ctx, payer.ID, c.PublicID)
		if err != nil || !again.Replayed || again.Charge.Status != charge.StatusSucceeded {
			t.Fatalf("confirm again: %+v %v", again, err)
		}
		other := f.user("other@example.com", 500_000)
		if _, err := f.svc.Confirm(ctx, other.ID, c.PublicID); !errors.Is(err, charge.ErrPaidByAnother) {
			t.Fatalf("another payer: %v", err)
		}
		if f.balance(payer) != 380_000 || f.balance(other) != 500_000 || f.merchantBalance(m) != 120_000 {
			t.Fatalf("balances after replays %d %d %d", f.balance(payer), f.balance(other), f.merchantBalance(m))
		}
		lt, err := f.l.ByReference(ctx, ledger.KindCharge, c.PublicID)
		if err != nil || len(lt.Postings) != 2 {
			t.Fatalf("ledger transaction %+v %v", lt, err)
		}
		// The payer's history names the charge.
		by, err := f.svc.ByReferences(ctx, payer.ID, []string{c.PublicID})
		if err != nil || by[c.PublicID].MerchantName != "Shop" {
			t.Fatalf("by references: %+v %v", by, err)
		}
		// Another person's history does not: the charge is the payer's.
		if by, err := f.svc.ByReferences(ctx, other.ID, []string{c.PublicID}); err != nil || len(by) != 0 {
			t.Fatalf("another person's references: %+v %v", by, err)
		}
		evs, err := f.svc.Events(ctx, res.Charge.ID)
		if err != nil || len(evs) != 1 || evs[0].ToStatus != charge.StatusSucceeded || evs[0].Actor != charge.ActorPayer {
			t.Fatalf("events %+v %v", evs, err)
		}
		// The merchant cannot pay itself; the merchant cancels nothing paid.
		c2 := f.create(m, 1_000, "o-2", charge.CaptureAutomatic)
		if _, err := f.svc.Confirm(ctx, m.ID, c2.PublicID); !errors.Is(err, charge.ErrPayToSelf) {
			t.Fatalf("pay to self: %v", err)
		}
		if _, err := f.svc.Cancel(ctx, m.ID, c.PublicID); !errors.Is(err, charge.ErrNotCancelable) {
			t.Fatalf("cancel a paid charge: %v", err)
		}
		f.checkInvariants()
	})
}

func TestShortBalanceWritesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 50_000)
		for _, capture := range []charge.CaptureMethod{charge.CaptureAutomatic, charge.CaptureManual} {
			c := f.create(m, 80_000, "o-"+string(capture), capture)
			if _, err := f.svc.Confirm(ctx, payer.ID, c.PublicID); !errors.Is(err, charge.ErrInsufficientFunds) {
				t.Fatalf("%s: short: %v", capture, err)
			}
			if got := f.get(m, c.PublicID); got.Status != charge.StatusRequiresConfirmation || got.PayerUserID != 0 {
				t.Fatalf("%s: after a refusal %+v", capture, got)
			}
			if f.balance(payer) != 50_000 || f.held(payer) != 0 {
				t.Fatalf("%s: balance %d held %d", capture, f.balance(payer), f.held(payer))
			}
		}
		// Topped up the difference, the payer comes back and pays.
		f.fund(payer.W.AccountID, 30_000, "topup-difference")
		c := f.create(m, 80_000, "o-3", charge.CaptureAutomatic)
		if res, err := f.svc.Confirm(ctx, payer.ID, c.PublicID); err != nil || res.Charge.Status != charge.StatusSucceeded {
			t.Fatalf("after the top-up: %+v %v", res, err)
		}
		if f.balance(payer) != 0 || f.merchantBalance(m) != 80_000 {
			t.Fatalf("balances %d %d", f.balance(payer), f.merchantBalance(m))
		}
		f.checkInvariants()
	})
}

// A payer whose address is not confirmed (maybe a stranger's who signed
// up with it) pays nothing, whatever its balance, by either capture and
// from the form: the charge stays open and nothing moves; once the owner
// confirms the address, the same payer pays.
func TestUnconfirmedPayerPaysNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		u := authtest.Register(t, db, "payer@example.com")
		w, err := f.ws.ForUser(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		f.fund(w.AccountID, 500_000, "fund:payer")
		payer := person{ID: u.ID, W: w}
		tables := []string{"charges", "charge_events", "ledger_transactions", "ledger_postings", "ledger_holds", "webhook_deliveries"}
		var open []charge.Charge
		for _, capture := range []charge.CaptureMethod{charge.CaptureAutomatic, charge.CaptureManual} {
			c := f.create(m, 80_000, "o-"+string(capture), capture)
			open = append(open, c)
			before := storetest.Rows(t, db, tables...)
			if _, err := f.svc.Confirm(ctx, payer.ID, c.PublicID); !errors.Is(err, charge.ErrAddressUnconfirmed) {
				t.Fatalf("%s: unconfirmed payer: %v", capture, err)
			}
			if _, err := f.svc.ConfirmForm(ctx, payer.ID, c.PublicID, formtoken.New()); !errors.Is(err, charge.ErrAddressUnconfirmed) {
				t.Fatalf("%s: unconfirmed payer's form: %v", capture, err)
			}
			if after := storetest.Rows(t, db, tables...); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("%s: a refusal wrote: %v → %v", capture, before, after)
			}
			if got := f.get(m, c.PublicID); got.Status != charge.StatusRequiresConfirmation || got.PayerUserID != 0 {
				t.Fatalf("%s: after a refusal %+v", capture, got)
			}
		}
		if f.balance(payer) != 500_000 || f.held(payer) != 0 || f.merchantBalance(m) != 0 {
			t.Fatalf("balances %d held %d merchant %d", f.balance(payer), f.held(payer), f.merchantBalance(m))
		}
		authtest.ConfirmEmail(t, db, "payer@example.com")
		if res, err := f.svc.Confirm(ctx, payer.ID, open[0].PublicID); err != nil || res.Charge.Status != charge.StatusSucceeded {
			t.Fatalf("automatic, once confirmed: %+v %v", res, err)
		}
		if res, err := f.svc.ConfirmForm(ctx, payer.ID, open[1].PublicID, formtoken.New()); err != nil || res.Charge.Status != charge.StatusAuthorized {
			t.Fatalf("manual, once confirmed: %+v %v", res, err)
		}
		if f.balance(payer) != 420_000 || f.held(payer) != 80_000 || f.merchantBalance(m) != 80_000 {
			t.Fatalf("balances once confirmed %d held %d merchant %d", f.balance(payer), f.held(payer), f.merchantBalance(m))
		}
		f.checkInvariants()
	})
}

func TestManualCaptureOnceRestReleased(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		c := f.create(m, 200_000, "o-1", charge.CaptureManual)
		res, err := f.svc.Confirm(ctx, payer.ID, c.PublicID)
		if err != nil || res.Charge.Status != charge.StatusAuthorized || res.Charge.HoldID == 0 || res.Charge.HoldExpiresAt == nil {
			t.Fatalf("authorize: %+v %v", res, err)
		}
		if want := f.clock().Add(168 * time.Hour); !res.Charge.HoldExpiresAt.Equal(want) {
			t.Fatalf("hold until %s, want %s", res.Charge.HoldExpiresAt, want)
		}
		if f.balance(payer) != 500_000 || f.held(payer) != 200_000 || f.merchantBalance(m) != 0 {
			t.Fatalf("after authorize: balance %d held %d merchant %d", f.balance(payer), f.held(payer), f.merchantBalance(m))
		}
		if _, err := f.svc.Capture(ctx, m.ID, c.PublicID, 200_001); !errors.Is(err, charge.ErrBadAmount) {
			t.Fatalf("capture too much: %v", err)
		}
		// Another merchant cannot touch it.
		m2, _ := f.merchant("shop2@example.com", "Shop 2")
		if _, err := f.svc.Capture(ctx, m2.ID, c.PublicID, 1_000); !errors.Is(err, charge.ErrNotFound) {
			t.Fatalf("another merchant's capture: %v", err)
		}
		cap1, err := f.svc.Capture(ctx, m.ID, c.PublicID, 150_000)
		if err != nil || cap1.Charge.Status != charge.StatusSucceeded || cap1.Charge.CapturedRials != 150_000 {
			t.Fatalf("capture: %+v %v", cap1, err)
		}
		// Captured once: a second capture of that amount answers with the
		// first; of another amount, it is refused, nothing moved.
		cap2, err := f.svc.Capture(ctx, m.ID, c.PublicID, 150_000)
		if err != nil || !cap2.Replayed || cap2.Charge.CapturedRials != 150_000 {
			t.Fatalf("capture again: %+v %v", cap2, err)
		}
		if _, err := f.svc.Capture(ctx, m.ID, c.PublicID, 10_000); !errors.Is(err, charge.ErrCapturedOtherAmount) {
			t.Fatalf("capture again for another amount: %v", err)
		}
		if f.balance(payer) != 350_000 || f.held(payer) != 0 || f.merchantBalance(m) != 150_000 {
			t.Fatalf("after capture: balance %d held %d merchant %d", f.balance(payer), f.held(payer), f.merchantBalance(m))
		}
		if _, err := f.svc.Cancel(ctx, m.ID, c.PublicID); !errors.Is(err, charge.ErrNotCancelable) {
			t.Fatalf("cancel after capture: %v", err)
		}
		// A second authorization, canceled: released once.
		c2 := f.create(m, 100_000, "o-2", charge.CaptureManual)
		if _, err := f.svc.Confirm(ctx, payer.ID, c2.PublicID); err != nil {
			t.Fatal(err)
		}
		if f.held(payer) != 100_000 {
			t.Fatalf("held %d", f.held(payer))
		}
		for i := range 2 {
			res, err := f.svc.Cancel(ctx, m.ID, c2.PublicID)
			if err != nil || res.Charge.Status != charge.StatusCanceled || res.Replayed != (i == 1) {
				t.Fatalf("cancel %d: %+v %v", i, res, err)
			}
		}
		if _, err := f.svc.Capture(ctx, m.ID, c2.PublicID, 1_000); !errors.Is(err, charge.ErrCanceled) {
			t.Fatalf("capture canceled: %v", err)
		}
		if f.balance(payer) != 350_000 || f.held(payer) != 0 || f.merchantBalance(m) != 150_000 {
			t.Fatalf("after cancel: balance %d held %d merchant %d", f.balance(payer), f.held(payer), f.merchantBalance(m))
		}
		// The payer cancels an unconfirmed checkout.
		c3 := f.create(m, 1_000, "o-3", charge.CaptureManual)
		if res, err := f.svc.CancelCheckout(ctx, payer.ID, c3.PublicID); err != nil || res.Charge.Status != charge.StatusCanceled {
			t.Fatalf("payer cancel: %+v %v", res, err)
		}
		if _, err := f.svc.Confirm(ctx, payer.ID, c3.PublicID); !errors.Is(err, charge.ErrCanceled) {
			t.Fatalf("confirm canceled: %v", err)
		}
		f.checkInvariants()
	})
}

func TestExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		unconfirmed := f.create(m, 10_000, "o-1", charge.CaptureAutomatic)
		late := f.create(m, 10_000, "o-2", charge.CaptureAutomatic)
		auth := f.create(m, 100_000, "o-3", charge.CaptureManual)
		if _, err := f.svc.Confirm(ctx, payer.ID, auth.PublicID); err != nil {
			t.Fatal(err)
		}
		// Within 30 minutes nothing is due.
		f.advance(29 * time.Minute)
		if n, err := f.svc.ExpireDue(ctx, 10); err != nil || n != 0 {
			t.Fatalf("expire early: %d %v", n, err)
		}
		f.advance(time.Minute)
		// A payer at the checkout after 30 minutes finds it expired.
		if _, err := f.svc.Confirm(ctx, payer.ID, late.PublicID); !errors.Is(err, charge.ErrExpired) {
			t.Fatalf("late confirm: %v", err)
		}
		if n, err := f.svc.ExpireDue(ctx, 10); err != nil || n != 1 {
			t.Fatalf("expire checkouts: %d %v", n, err)
		}
		for _, id := range []string{unconfirmed.PublicID, late.PublicID} {
			if got := f.get(m, id); got.Status != charge.StatusExpired || got.EndedAt == nil {
				t.Fatalf("checkout %+v", got)
			}
		}
		if got := f.get(m, auth.PublicID); got.Status != charge.StatusAuthorized {
			t.Fatalf("authorization %+v", got)
		}
		// The authorization's hold ends after CHARGE_HOLD_HOURS.
		f.advance(168 * time.Hour)
		if n, err := f.svc.ExpireDue(ctx, 10); err != nil || n != 1 {
			t.Fatalf("expire holds: %d %v", n, err)
		}
		if got := f.get(m, auth.PublicID); got.Status != charge.StatusExpired {
			t.Fatalf("authorization after its hold %+v", got)
		}
		if f.balance(payer) != 500_000 || f.held(payer) != 0 || f.merchantBalance(m) != 0 {
			t.Fatalf("balance %d held %d merchant %d", f.balance(payer), f.held(payer), f.merchantBalance(m))
		}
		if _, err := f.svc.Capture(ctx, m.ID, auth.PublicID, 1_000); !errors.Is(err, charge.ErrExpired) {
			t.Fatalf("capture expired: %v", err)
		}
		// A capture of an authorization past its time, before the worker,
		// expires it and is refused.
		auth2 := f.create(m, 100_000, "o-4", charge.CaptureManual)
		if _, err := f.svc.Confirm(ctx, payer.ID, auth2.PublicID); err != nil {
			t.Fatal(err)
		}
		f.advance(168 * time.Hour)
		if _, err := f.svc.Capture(ctx, m.ID, auth2.PublicID, 1_000); !errors.Is(err, charge.ErrExpired) {
			t.Fatalf("capture too late: %v", err)
		}
		if got := f.get(m, auth2.PublicID); got.Status != charge.StatusExpired || f.held(payer) != 0 {
			t.Fatalf("too late %+v held %d", got, f.held(payer))
		}
		f.checkInvariants()
	})
}

func TestRefunds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, mer := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		c := f.create(m, 200_000, "o-1", charge.CaptureManual)
		if _, err := f.svc.Confirm(ctx, payer.ID, c.PublicID); err != nil {
			t.Fatal(err)
		}
		refund := func(rials int64, token string) (charge.RefundResult, error) {
			return f.svc.Refund(ctx, charge.RefundRequest{MerchantUserID: m.ID, ChargeID: c.PublicID, FormToken: token, AmountRials: rials})
		}
		if _, err := refund(1_000, formtoken.New()); !errors.Is(err, charge.ErrNotRefundable) {
			t.Fatalf("refund an authorization: %v", err)
		}
		if _, err := f.svc.Capture(ctx, m.ID, c.PublicID, 150_000); err != nil {
			t.Fatal(err)
		}
		tok := formtoken.New()
		r1, err := refund(50_000, tok)
		if err != nil || r1.Replayed || r1.Charge.RefundedRials != 50_000 || len(r1.Charge.Refunds) != 1 {
			t.Fatalf("refund: %+v %v", r1, err)
		}
		again, err := refund(50_000, tok)
		if err != nil || !again.Replayed || again.Refund.PublicID != r1.Refund.PublicID || again.Charge.RefundedRials != 50_000 {
			t.Fatalf("refund replay: %+v %v", again, err)
		}
		if _, err := refund(60_000, tok); !errors.Is(err, charge.ErrTokenReused) {
			t.Fatalf("refund key reused: %v", err)
		}
		if _, err := refund(100_001, formtoken.New()); !errors.Is(err, charge.ErrRefundExceeds) {
			t.Fatalf("refund too much: %v", err)
		}
		if f.balance(payer) != 400_000 || f.merchantBalance(m) != 100_000 {
			t.Fatalf("balances %d %d", f.balance(payer), f.merchantBalance(m))
		}
		// The merchant's available balance is short: refused, nothing
		// written.
		sus, err := f.l.EnsureAccount(ctx, ledger.AccountSuspense, ledger.CodeSuspense, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: "drain", Postings: ledger.Transfer(mer.AccountID, sus, 90_000),
			At: f.clock()}); err != nil {
			t.Fatal(err)
		}
		if _, err := refund(20_000, formtoken.New()); !errors.Is(err, charge.ErrInsufficientFunds) {
			t.Fatalf("merchant short: %v", err)
		}
		if got := f.get(m, c.PublicID); got.RefundedRials != 50_000 || len(got.Refunds) != 1 {
			t.Fatalf("after a refused refund %+v", got)
		}
		r2, err := refund(10_000, formtoken.New())
		if err != nil || r2.Charge.RefundedRials != 60_000 {
			t.Fatalf("second refund: %+v %v", r2, err)
		}
		by, err := f.svc.ByReferences(ctx, payer.ID, []string{r1.Refund.PublicID, "hold:" + fmt.Sprint(r1.Charge.HoldID)})
		if err != nil || by[r1.Refund.PublicID].PublicID != c.PublicID || by["hold:"+fmt.Sprint(r1.Charge.HoldID)].PublicID != c.PublicID {
			t.Fatalf("by references %+v %v", by, err)
		}
		// The merchant is not the payer: its references read nothing here.
		if by, err := f.svc.ByReferences(ctx, m.ID, []string{r1.Refund.PublicID, "hold:" + fmt.Sprint(r1.Charge.HoldID), c.PublicID}); err != nil || len(by) != 0 {
			t.Fatalf("the merchant's references: %+v %v", by, err)
		}
		found, err := f.svc.Search(ctx, "o-1", 10)
		if err != nil || len(found) != 1 {
			t.Fatalf("search by order id: %+v %v", found, err)
		}
		found, err = f.svc.Search(ctx, "PAYER@example.com", 10)
		if err != nil || len(found) != 1 {
			t.Fatalf("search by payer: %+v %v", found, err)
		}
		// The merchant's side, and a charge nobody has paid yet (no payer).
		open := f.create(m, 5_000, "o-2", charge.CaptureAutomatic)
		found, err = f.svc.Search(ctx, "Shop@Example.com", 10)
		if err != nil || len(found) != 2 || found[0].PublicID != open.PublicID || found[1].PublicID != c.PublicID {
			t.Fatalf("search by merchant: %+v %v, want %s then %s", found, err, open.PublicID, c.PublicID)
		}
		// Another person's address finds none of them.
		f.user("stranger@example.com", 0)
		if found, err := f.svc.Search(ctx, "stranger@example.com", 10); err != nil || len(found) != 0 {
			t.Fatalf("search by a stranger: %+v %v", found, err)
		}
		// As typed: an id in capitals, an order id in Persian digits, and
		// order ids that look like an id or an address.
		f.create(m, 5_000, "77", charge.CaptureAutomatic)
		odd := f.create(m, 5_000, "ch_not-an-id", charge.CaptureAutomatic)
		mail := f.create(m, 5_000, "orders@shop", charge.CaptureAutomatic)
		for q, want := range map[string]string{" " + strings.ToUpper(open.PublicID) + " ": open.PublicID, "ch_not-an-id": odd.PublicID, "orders@shop": mail.PublicID} {
			if found, err := f.svc.Search(ctx, q, 10); err != nil || len(found) != 1 || found[0].PublicID != want {
				t.Errorf("search %q: %+v %v, want %s", q, found, err, want)
			}
		}
		if found, err := f.svc.Search(ctx, "۷۷", 10); err != nil || len(found) != 1 || found[0].OrderID != "77" {
			t.Errorf("search by an order id in Persian digits: %+v %v", found, err)
		}
		f.checkInvariants()
	})
}

func TestConfirmFromManyTabsPaysOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		for _, capture := range []charge.CaptureMethod{charge.CaptureAutomatic, charge.CaptureManual} {
			c := f.create(m, 100_000, "o-"+string(capture), capture)
			var wg sync.WaitGroup
			errs := make([]error, 10)
			fresh := make([]bool, 10)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := f.svc.Confirm(ctx, payer.ID, c.PublicID)
					errs[i], fresh[i] = err, err == nil && !res.Replayed
				}()
			}
			wg.Wait()
			n := 0
			for i, err := range errs {
				if err != nil {
					t.Fatalf("%s: tab %d: %v", capture, i, err)
				}
				if fresh[i] {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%s: %d tabs paid", capture, n)
			}
		}
		if f.balance(payer) != 400_000 || f.held(payer) != 100_000 || f.merchantBalance(m) != 100_000 {
			t.Fatalf("balance %d held %d merchant %d", f.balance(payer), f.held(payer), f.merchantBalance(m))
		}
		f.checkInvariants()
	})
}

func TestParallelCapturesCaptureOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		c := f.create(m, 100_000, "o-1", charge.CaptureManual)
		if _, err := f.svc.Confirm(ctx, payer.ID, c.PublicID); err != nil {
			t.Fatal(err)
		}
		// Half of them name one amount, the other half each its own: one
		// capture is made; a capture of its amount is its replay, any
		// other amount is refused (never answered as captured).
		const n = 50
		amount := func(i int) int64 {
			if i%2 == 0 {
				return 60_000
			}
			return int64(60_000 + i)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		fresh := make([]bool, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := f.svc.Capture(ctx, m.ID, c.PublicID, amount(i))
				errs[i], fresh[i] = err, err == nil && !res.Replayed
			}()
		}
		wg.Wait()
		got := f.get(m, c.PublicID)
		captures := 0
		for i, err := range errs {
			switch {
			case amount(i) == got.CapturedRials && err != nil:
				t.Fatalf("capture %d of the captured amount: %v", i, err)
			case amount(i) != got.CapturedRials && !errors.Is(err, charge.ErrCapturedOtherAmount):
				t.Fatalf("capture %d of %d, another amount than the %d captured: %v", i, amount(i), got.CapturedRials, err)
			}
			if fresh[i] {
				captures++
			}
		}
		if captures != 1 || got.Status != charge.StatusSucceeded {
			t.Fatalf("%d captures, charge %+v", captures, got)
		}
		if f.balance(payer) != 500_000-got.CapturedRials || f.held(payer) != 0 || f.merchantBalance(m) != got.CapturedRials {
			t.Fatalf("balance %d held %d merchant %d captured %d", f.balance(payer), f.held(payer), f.merchantBalance(m), got.CapturedRials)
		}
		f.checkInvariants()
	})
}

func TestRacingRefundsNeverExceedCaptured(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		c := f.create(m, 100_000, "o-1", charge.CaptureAutomatic)
		if _, err := f.svc.Confirm(ctx, payer.ID, c.PublicID); err != nil {
			t.Fatal(err)
		}
		const n = 25
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = f.svc.Refund(ctx, charge.RefundRequest{MerchantUserID: m.ID, ChargeID: c.PublicID,
					FormToken: formtoken.New(), AmountRials: 30_000})
			}()
		}
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, charge.ErrRefundExceeds):
				t.Fatalf("refund %d: %v", i, err)
			}
		}
		got := f.get(m, c.PublicID)
		if ok != 3 || got.RefundedRials != 90_000 || len(got.Refunds) != 3 {
			t.Fatalf("%d refunds, charge refunded %d with %d rows", ok, got.RefundedRials, len(got.Refunds))
		}
		if f.balance(payer) != 490_000 || f.merchantBalance(m) != 10_000 {
			t.Fatalf("balances %d %d", f.balance(payer), f.merchantBalance(m))
		}
		f.checkInvariants()
	})
}

// TestHoldSweepLeavesChargeHolds: the ledger's general hold sweep (every
// instance's "holds" loop) must not end a charge's hold: a charge's hold
// ends only with the charge's own move. Before, an instance whose clock
// ran a second ahead swept the hold as expired while the charge stayed
// authorized: the merchant's capture then answered "expired" and left
// it authorized, and its cancel failed with an internal error.
func TestHoldSweepLeavesChargeHolds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		toCapture := f.create(m, 100_000, "o-1", charge.CaptureManual)
		toCancel := f.create(m, 50_000, "o-2", charge.CaptureManual)
		for _, c := range []charge.Charge{toCapture, toCancel} {
			if _, err := f.svc.Confirm(ctx, payer.ID, c.PublicID); err != nil {
				t.Fatal(err)
			}
		}
		// Another instance, a second ahead, sweeps at the holds' end.
		f.advance(168*time.Hour - time.Second)
		if _, err := f.l.ExpireDue(ctx, f.clock().Add(time.Second), 100, charge.HoldReason); err != nil {
			t.Fatal(err)
		}
		if f.held(payer) != 150_000 {
			t.Fatalf("the sweep ended a charge's hold: held %d", f.held(payer))
		}
		f.checkInvariants()
		res, err := f.svc.Capture(ctx, m.ID, toCapture.PublicID, 60_000)
		if err != nil || res.Charge.Status != charge.StatusSucceeded {
			t.Fatalf("capture: %+v %v", res.Charge, err)
		}
		if res, err := f.svc.Cancel(ctx, m.ID, toCancel.PublicID); err != nil || res.Charge.Status != charge.StatusCanceled {
			t.Fatalf("cancel: %+v %v", res.Charge, err)
		}
		if f.balance(payer) != 440_000 || f.held(payer) != 0 || f.merchantBalance(m) != 60_000 {
			t.Fatalf("balance %d held %d merchant %d", f.balance(payer), f.held(payer), f.merchantBalance(m))
		}
		// A third authorization past its time: the charge loop expires
		// it and its hold, the sweep never does.
		late := f.create(m, 10_000, "o-3", charge.CaptureManual)
		if _, err := f.svc.Confirm(ctx, payer.ID, late.PublicID); err != nil {
			t.Fatal(err)
		}
		f.advance(168 * time.Hour)
		if n, err := f.l.ExpireDue(ctx, f.clock(), 100, charge.HoldReason); err != nil || n != 0 {
			t.Fatalf("sweep: %d %v", n, err)
		}
		if got := f.get(m, late.PublicID); got.Status != charge.StatusAuthorized || f.held(payer) != 10_000 {
			t.Fatalf("before the charge loop %+v held %d", got, f.held(payer))
		}
		if n, err := f.svc.ExpireDue(ctx, 10); err != nil || n != 1 {
			t.Fatalf("charge loop: %d %v", n, err)
		}
		if got := f.get(m, late.PublicID); got.Status != charge.StatusExpired || f.held(payer) != 0 {
			t.Fatalf("after the charge loop %+v held %d", got, f.held(payer))
		}
		f.checkInvariants()
	})
}

// TestExpireDueGoesPastFailures: authorizations that cannot expire (their
// holds ended outside the charges' own moves, as inconsistent data would
// have them), more than a batch of them and due first, must not keep the
// charges due after them: each sweep goes past them (reporting each once)
// and expires the later ones, their holds released. Before, each sweep
// read the same first batch again, expired none of it and stopped, and
// the later payers' money stayed held.
func TestExpireDueGoesPastFailures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const batch = 3
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 1_000_000)
		authorize := func(order string, rials int64) charge.Charge {
			t.Helper()
			c := f.create(m, rials, order, charge.CaptureManual)
			res, err := f.svc.Confirm(ctx, payer.ID, c.PublicID)
			if err != nil || res.Charge.Status != charge.StatusAuthorized || res.Charge.HoldID == 0 {
				t.Fatalf("confirm %s: %+v %v", order, res.Charge, err)
			}
			return res.Charge
		}
		// More than a batch of broken authorizations, all due at the same
		// moment (their order then their ids'): each hold released in the
		// ledger alone, the charge left authorized.
		var bad []charge.Charge
		for i := range 2*batch + 1 {
			c := authorize(fmt.Sprintf("bad-%d", i), 10_000)
			if _, err := f.l.Release(ctx, c.HoldID, f.clock()); err != nil {
				t.Fatal(err)
			}
			bad = append(bad, f.get(m, c.PublicID))
		}
		// Good ones after them: one due at the same moment (after them by
		// id), one a minute later.
		same := authorize("good-same", 50_000)
		f.advance(time.Minute)
		later := authorize("good-later", 70_000)
		if f.held(payer) != 120_000 {
			t.Fatalf("held before %d", f.held(payer))
		}
		f.advance(charge.DefaultHoldTTL)
		n, err := f.svc.ExpireDue(ctx, batch)
		if n != 2 || !errors.Is(err, ledger.ErrHoldEnded) {
			t.Fatalf("expire: %d %v", n, err)
		}
		for _, c := range bad {
			if got := strings.Count(err.Error(), c.PublicID); got != 1 {
				t.Fatalf("%s reported %d times: %v", c.PublicID, got, err)
			}
		}
		for _, c := range []charge.Charge{same, later} {
			if got := f.get(m, c.PublicID); got.Status != charge.StatusExpired || got.EndedAt == nil {
				t.Fatalf("good charge %+v", got)
			}
		}
		if available := f.balance(payer) - f.held(payer); available != 1_000_000 || f.held(payer) != 0 || f.merchantBalance(m) != 0 {
			t.Fatalf("available %d held %d merchant %d", available, f.held(payer), f.merchantBalance(m))
		}
		// The broken ones are left as they were, reported again by the
		// next sweep, which expires nothing more.
		for _, c := range bad {
			if got := f.get(m, c.PublicID); got.Status != charge.StatusAuthorized || got.EndedAt != nil || !got.UpdatedAt.Equal(c.UpdatedAt) {
				t.Fatalf("broken charge moved: %+v (was %+v)", got, c)
			}
		}
		if n, err := f.svc.ExpireDue(ctx, batch); n != 0 || !errors.Is(err, ledger.ErrHoldEnded) {
			t.Fatalf("second sweep: %d %v", n, err)
		}
	})
}

// TestExpirySweepReadsOn: a tick's rounds (one ExpirySweep) read on
// after the last charge the round before read, so that charges that
// cannot expire, due first, are tried once a tick and every charge due
// after them is expired in the tick's rounds, each once; the next tick's
// sweep tries the broken ones again, and expires nothing twice.
func TestExpirySweepReadsOn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const batch = 3
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 1_000_000)
		authorize := func(order string) charge.Charge {
			t.Helper()
			c := f.create(m, 10_000, order, charge.CaptureManual)
			res, err := f.svc.Confirm(ctx, payer.ID, c.PublicID)
			if err != nil || res.Charge.Status != charge.StatusAuthorized {
				t.Fatalf("confirm %s: %+v %v", order, res.Charge, err)
			}
			return res.Charge
		}
		var bad []charge.Charge
		for i := range 2 {
			c := authorize(fmt.Sprintf("bad-%d", i))
			if _, err := f.l.Release(ctx, c.HoldID, f.clock()); err != nil {
				t.Fatal(err)
			}
			bad = append(bad, c)
		}
		f.advance(time.Second)
		var good []charge.Charge
		for i := range 2*batch + 1 {
			good = append(good, authorize(fmt.Sprintf("good-%d", i)))
		}
		f.advance(charge.DefaultHoldTTL)
		reported := func(err error) int {
			t.Helper()
			if err == nil {
				return 0
			}
			n := 0
			for _, c := range bad {
				n += strings.Count(err.Error(), c.PublicID)
			}
			return n
		}
		// One tick: the broken ones reported by its first round only.
		sweep := f.svc.ExpirySweep()
		for round, want := range []struct{ expired, reported int }{{batch, 2}, {batch, 0}, {1, 0}, {0, 0}} {
			n, err := sweep.ExpireDue(ctx, batch)
			if n != want.expired || reported(err) != want.reported || (want.reported == 0) != (err == nil) {
				t.Fatalf("round %d: expired %d (%v), want %d and %d broken reported", round, n, err, want.expired, want.reported)
			}
			if want.reported > 0 && !errors.Is(err, ledger.ErrHoldEnded) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for _, c := range good {
			if got := f.get(m, c.PublicID); got.Status != charge.StatusExpired || got.EndedAt == nil {
				t.Fatalf("good charge %+v", got)
			}
		}
		if f.held(payer) != 0 || f.balance(payer) != 1_000_000 || f.merchantBalance(m) != 0 {
			t.Fatalf("held %d balance %d merchant %d", f.held(payer), f.balance(payer), f.merchantBalance(m))
		}
		// The next tick tries the broken ones again; nothing is expired
		// twice.
		f.advance(time.Minute)
		if n, err := f.svc.ExpirySweep().ExpireDue(ctx, batch); n != 0 || reported(err) != 2 || !errors.Is(err, ledger.ErrHoldEnded) {
			t.Fatalf("next tick: %d %v", n, err)
		}
		for _, c := range bad {
			if got := f.get(m, c.PublicID); got.Status != charge.StatusAuthorized || got.EndedAt != nil {
				t.Fatalf("broken charge moved: %+v", got)
			}
		}
		if f.held(payer) != 0 || f.balance(payer) != 1_000_000 {
			t.Fatalf("after the next tick: held %d balance %d", f.held(payer), f.balance(payer))
		}
	})
}

// TestCaptureCancelExpireRace: captures, cancels and the charge loop at
// the hold's last moment, racing on one authorization: exactly one of
// them ends it, the hold ends once, the money matches the outcome.
func TestCaptureCancelExpireRace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		m, _ := f.merchant("shop@example.com", "Shop")
		payer := f.user("payer@example.com", 500_000)
		for round := range 3 {
			c := f.create(m, 100_000, fmt.Sprintf("o-%d", round), charge.CaptureManual)
			if _, err := f.svc.Confirm(ctx, payer.ID, c.PublicID); err != nil {
				t.Fatal(err)
			}
			before := f.balance(payer)
			merchantBefore := f.merchantBalance(m)
			if round == 2 {
				f.advance(charge.DefaultHoldTTL) // the last round races at the hold's end
			}
			var wg sync.WaitGroup
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var err error
					switch i % 3 {
					case 0:
						_, err = f.svc.Capture(ctx, m.ID, c.PublicID, 70_000)
					case 1:
						_, err = f.svc.Cancel(ctx, m.ID, c.PublicID)
					default:
						_, err = f.svc.ExpireDue(ctx, 10)
					}
					if err != nil && !errors.Is(err, charge.ErrCanceled) && !errors.Is(err, charge.ErrNotCancelable) &&
						!errors.Is(err, charge.ErrExpired) {
						t.Errorf("round %d op %d: %v", round, i, err)
					}
				}()
			}
			wg.Wait()
			got := f.get(m, c.PublicID)
			switch got.Status {
			case charge.StatusSucceeded:
				if f.balance(payer) != before-70_000 || f.merchantBalance(m) != merchantBefore+70_000 {
					t.Fatalf("captured: payer %d merchant %d", f.balance(payer), f.merchantBalance(m))
				}
			case charge.StatusCanceled, charge.StatusExpired:
				if (got.Status == charge.StatusExpired) != (round == 2) || f.balance(payer) != before || f.merchantBalance(m) != merchantBefore {
					t.Fatalf("canceled: payer %d merchant %d", f.balance(payer), f.merchantBalance(m))
				}
			default:
				t.Fatalf("round %d: %+v", round, got)
			}
			if f.held(payer) != 0 {
				t.Fatalf("held %d", f.held(payer))
			}
			evs, err := f.svc.Events(ctx, got.ID)
			if err != nil || len(evs) != 2 {
				t.Fatalf("events %+v %v", evs, err)
			}
			f.checkInvariants()
		}
	})
}

// A list reads as many as it is asked for, up to MaxListLimit (a CSV's
// batch), in pages that end where the next begins: once any limit above
// 200 fell back to 20, and the merchant's CSV read its charges 20 at a
// time.
func TestListLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		shop, _ := f.merchant("shop@example.com", "Shop")
		const n = 230
		for i := range n {
			f.create(shop, 10_000, fmt.Sprintf("o-%d", i), charge.CaptureAutomatic)
		}
		for _, tc := range []struct {
			limit, want int
		}{{0, 20}, {7, 7}, {500, n}, {charge.MaxListLimit + 1, n}} {
			got, next, err := f.svc.List(ctx, charge.Filter{MerchantUserID: shop.ID, Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want || (next == 0) != (tc.want == n) {
				t.Errorf("limit %d: %d charges, next %d; want %d", tc.limit, len(got), next, tc.want)
			}
		}
		// Pages of 100 read each charge once, newest first.
		seen := map[string]bool{}
		var before, last int64
		for {
			page, next, err := f.svc.List(ctx, charge.Filter{MerchantUserID: shop.ID, Before: before, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range page {
				if seen[c.PublicID] || (last != 0 && c.ID >= last) {
					t.Fatalf("charge %s (id %d) out of order or twice", c.PublicID, c.ID)
				}
				seen[c.PublicID], last = true, c.ID
			}
			if next == 0 {
				break
			}
			before = next
		}
		if len(seen) != n {
			t.Fatalf("pages of 100 read %d charges, want %d", len(seen), n)
		}
	})
}
