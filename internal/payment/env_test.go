package payment_test

// The test environment the payment tests share: a payer with a wallet, the
// service over a fresh database, the fake gateway and clock of paymenttest.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/payment/paymenttest"
	"github.com/kifpool/kifpool/internal/payment/sqlstore"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/wallet"
)

// ---- the test environment ----

type env struct {
	t      *testing.T
	db     *store.DB
	gw     *paymenttest.Gateway
	clock  *paymenttest.Clock
	svc    *payment.Service
	user   auth.User
	wallet wallet.Wallet
}

var userSeq atomic.Int64

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	return newEnvWith(t, db, nil)
}

// newEnvWith is newEnv with a tweak of the payment configuration.
func newEnvWith(t *testing.T, db *store.DB, tweak func(*payment.Config)) *env {
	t.Helper()
	ctx := context.Background()
	email := fmt.Sprintf("payer%d@example.com", userSeq.Add(1))
	u, err := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, email, "correct horse", "", "fa")
	if err != nil {
		t.Fatalf("sign up: %v", err)
	}
	w, err := wallet.NewService(db).ForUser(ctx, u.ID)
	if err != nil {
		t.Fatalf("wallet: %v", err)
	}
	e := &env{t: t, db: db, gw: paymenttest.NewGateway(), clock: paymenttest.NewClock(), user: u, wallet: w}
	cfg := paymenttest.Config()
	if tweak != nil {
		tweak(&cfg)
	}
	e.svc = payment.NewService(sqlstore.New(db), e.gw, e.clock.Now, nil, cfg)
	return e
}

func (e *env) input(token string, amount int64) payment.StartInput {
	return payment.StartInput{UserID: e.user.ID, WalletID: e.wallet.ID, Email: e.user.Email, FormToken: token, AmountRials: amount}
}

// start begins a top-up that must reach awaiting_payment.
func (e *env) start(amount int64) payment.Payment {
	e.t.Helper()
	r, err := e.svc.StartTopUp(context.Background(), e.input(payment.NewFormToken(), amount))
	if err != nil || r.Payment.Status != payment.StatusAwaitingPayment || r.Payment.Authority == nil {
		e.t.Fatalf("StartTopUp = %+v, %v", r, err)
	}
	return r.Payment
}

// row reads a payment straight from the database.
func (e *env) row(id int64) payment.Payment {
	e.t.Helper()
	var p payment.Payment
	if err := e.db.Gorm.Take(&p, id).Error; err != nil {
		e.t.Fatalf("payment %d: %v", id, err)
	}
	return p
}

func (e *env) count(sql string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.Gorm.Raw(sql, args...).Scan(&n).Error; err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (e *env) balance() int64 {
	return e.count(`SELECT balance_rials FROM wallets WHERE id = ?`, e.wallet.ID)
}

func (e *env) ledgerOf(paymentID int64) []wallet.LedgerEntry {
	e.t.Helper()
	var es []wallet.LedgerEntry
	if err := e.db.Gorm.Where("payment_id = ?", paymentID).Find(&es).Error; err != nil {
		e.t.Fatal(err)
	}
	return es
}

// assertCredited checks a credited payment, its row, its single ledger
// entry and its card/ref fields.
func (e *env) assertCredited(p payment.Payment, ref int64) {
	e.t.Helper()
	r := e.row(p.ID)
	if r.Status != payment.StatusCredited || r.RefID == nil || *r.RefID != ref ||
		r.VerifiedAmountRials == nil || *r.VerifiedAmountRials != r.AmountRials ||
		r.ResolvedAt == nil || r.LeaseUntil != nil || r.NextCheckAt != nil {
		e.t.Errorf("payment row = %s", dump(r))
	}
	if r.CardPANMasked != paymenttest.Card {
		e.t.Errorf("card = %q", r.CardPANMasked)
	}
	es := e.ledgerOf(p.ID)
	if len(es) != 1 || es[0].AmountRials != r.AmountRials || es[0].WalletID != r.WalletID || es[0].Kind != wallet.KindTopUp {
		e.t.Errorf("ledger of payment %d = %+v, want one entry of %d", p.ID, es, r.AmountRials)
	}
}

// assertOpen checks a payment that must not have been credited.
func (e *env) assertUncredited(p payment.Payment) {
	e.t.Helper()
	if es := e.ledgerOf(p.ID); len(es) != 0 {
		e.t.Errorf("payment %d has ledger entries %+v", p.ID, es)
	}
	if r := e.row(p.ID); r.Status == payment.StatusCredited || r.VerifiedAmountRials != nil {
		e.t.Errorf("payment row = %s", dump(r))
	}
}

func dump(p payment.Payment) string {
	deref := func(v *int64) string {
		if v == nil {
			return "nil"
		}
		return fmt.Sprint(*v)
	}
	return fmt.Sprintf("{id %d status %s reason %q authority %q ref %s verified %s card %q attempts %d next_check %v lease %v resolved %v}",
		p.ID, p.Status, p.StatusReason, p.AuthorityString(), deref(p.RefID), deref(p.VerifiedAmountRials), p.CardPANMasked,
		p.Attempts, p.NextCheckAt, p.LeaseUntil, p.ResolvedAt)
}

// checkInvariants asserts ARCHITECTURE §2 over the whole database.
func checkInvariants(t *testing.T, db *store.DB) {
	t.Helper()
	paymenttest.CheckInvariants(t, db)
}

// ---- StartTopUp ----

// ---- Return and Resolve ----

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
