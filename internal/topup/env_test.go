package topup_test

// The test environment the top-up tests share: a payer with a wallet, the
// service over a fresh database, the fake gateway and clock of topuptest.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/mellat"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/wallet"
)

// ---- the test environment ----

type env struct {
	t      *testing.T
	db     *store.DB
	gw     *topuptest.Gateway
	clock  *topuptest.Clock
	svc    *topup.Service
	store  *hookStore // the service's store, with hooks for races
	user   auth.User
	wallet wallet.Wallet
}

var userSeq atomic.Int64

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	return newEnvWith(t, db, nil)
}

// newEnvWith is newEnv with a tweak of the payment configuration.
func newEnvWith(t *testing.T, db *store.DB, tweak func(*topup.Config)) *env {
	t.Helper()
	ctx := context.Background()
	email := fmt.Sprintf("payer%d@example.com", userSeq.Add(1))
	u, err := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, email, "correct horse", "", "fa")
	if err != nil {
		t.Fatalf("sign up: %v", err)
	}
	w, err := wallet.NewService(db, nil).ForUser(ctx, u.ID)
	if err != nil {
		t.Fatalf("wallet: %v", err)
	}
	e := &env{t: t, db: db, gw: topuptest.NewGateway(), clock: topuptest.NewClock(), user: u, wallet: w}
	cfg := topuptest.Config()
	if tweak != nil {
		tweak(&cfg)
	}
	e.store = &hookStore{Store: sqlstore.New(db)}
	e.svc = topup.NewService(e.store, gateway.Set{e.gw}, e.clock.Now, nil, cfg)
	return e
}

func (e *env) input(token string, amount int64) topup.StartInput {
	return topup.StartInput{UserID: e.user.ID, WalletID: e.wallet.ID, Email: e.user.Email, FormToken: token, AmountRials: amount}
}

// start begins a top-up that must reach awaiting_payment.
func (e *env) start(amount int64) topup.TopUp {
	e.t.Helper()
	r, err := e.svc.StartTopUp(context.Background(), e.input(topup.NewFormToken(), amount))
	if err != nil || r.TopUp.Status != topup.StatusAwaitingPayment || r.TopUp.Authority == nil {
		e.t.Fatalf("StartTopUp = %+v, %v", r, err)
	}
	return r.TopUp
}

// row reads a payment straight from the database.
func (e *env) row(id int64) topup.TopUp {
	e.t.Helper()
	var p topup.TopUp
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
	return ledgertest.Balance(e.t, e.db, e.wallet.ID)
}

func (e *env) ledgerOf(topUpID int64) []ledgertest.Credit {
	e.t.Helper()
	return ledgertest.CreditsOf(e.t, e.db, topUpID)
}

// assertCredited checks a credited payment, its row, its single ledger
// entry and its card/ref fields.
func (e *env) assertCredited(p topup.TopUp, ref int64) {
	e.t.Helper()
	r := e.row(p.ID)
	if r.Status != topup.StatusCredited || r.RefID == nil || *r.RefID != ref ||
		r.VerifiedAmountRials == nil || *r.VerifiedAmountRials != r.AmountRials ||
		r.ResolvedAt == nil || r.LeaseUntil != nil || r.NextCheckAt != nil {
		e.t.Errorf("payment row = %s", dump(r))
	}
	if r.CardPANMasked != topuptest.Card {
		e.t.Errorf("card = %q", r.CardPANMasked)
	}
	es := e.ledgerOf(p.ID)
	if len(es) != 1 || es[0].AmountRials != r.AmountRials || es[0].WalletID != r.WalletID {
		e.t.Errorf("ledger of payment %d = %+v, want one entry of %d", p.ID, es, r.AmountRials)
	}
}

// assertOpen checks a payment that must not have been credited.
func (e *env) assertUncredited(p topup.TopUp) {
	e.t.Helper()
	if es := e.ledgerOf(p.ID); len(es) != 0 {
		e.t.Errorf("payment %d has ledger entries %+v", p.ID, es)
	}
	if r := e.row(p.ID); r.Status == topup.StatusCredited || r.VerifiedAmountRials != nil {
		e.t.Errorf("payment row = %s", dump(r))
	}
}

func dump(p topup.TopUp) string {
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
	topuptest.CheckInvariants(t, db)
}

// ---- StartTopUp ----

// ---- Return and Resolve ----

// hookStore is the service's store with hooks that reproduce races
// deterministically: a read that returns a stale view (as one made just
// before another actor's write), a write that fails.
type hookStore struct {
	topup.Store
	mu sync.Mutex
	// read rewrites what ByPublicID and Get return (nil: as stored).
	read func(p topup.TopUp) topup.TopUp
	// move and credit, when they return an error, fail the write before
	// it is made.
	move   func(m topup.Move) error
	credit func(m topup.Move) error
	// claimDue rewrites the worker's claim.
	claimDue func(ids []int64) []int64
	// listed, when set, runs once RecentUncredited has read its list,
	// with the caller's context, before the list is returned.
	listed func(ctx context.Context)
}

func (h *hookStore) RecentUncredited(ctx context.Context, b topup.ReconcileBatch) ([]topup.TopUp, error) {
	ps, err := h.Store.RecentUncredited(ctx, b)
	h.mu.Lock()
	listed := h.listed
	h.mu.Unlock()
	if listed != nil {
		listed(ctx)
	}
	return ps, err
}

func (h *hookStore) hooks() (func(topup.TopUp) topup.TopUp, func(topup.Move) error, func(topup.Move) error, func([]int64) []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.read, h.move, h.credit, h.claimDue
}

// set changes the hooks under the lock.
func (h *hookStore) set(fn func(h *hookStore)) { h.mu.Lock(); defer h.mu.Unlock(); fn(h) }

func (h *hookStore) ByPublicID(ctx context.Context, id string) (topup.TopUp, error) {
	p, err := h.Store.ByPublicID(ctx, id)
	if read, _, _, _ := h.hooks(); read != nil && err == nil {
		p = read(p)
	}
	return p, err
}

func (h *hookStore) Get(ctx context.Context, id int64) (topup.TopUp, error) {
	p, err := h.Store.Get(ctx, id)
	if read, _, _, _ := h.hooks(); read != nil && err == nil {
		p = read(p)
	}
	return p, err
}

func (h *hookStore) Move(ctx context.Context, m topup.Move) (topup.TopUp, error) {
	if _, move, _, _ := h.hooks(); move != nil {
		if err := move(m); err != nil {
			return topup.TopUp{}, err
		}
	}
	return h.Store.Move(ctx, m)
}

func (h *hookStore) Credit(ctx context.Context, m topup.Move, walletID int64, calls []resilient.Call) (topup.TopUp, topup.Status, error) {
	if _, _, credit, _ := h.hooks(); credit != nil {
		if err := credit(m); err != nil {
			return topup.TopUp{}, m.From, err
		}
	}
	return h.Store.Credit(ctx, m, walletID, calls)
}

func (h *hookStore) ClaimDue(ctx context.Context, c topup.DueClaim) ([]int64, error) {
	ids, err := h.Store.ClaimDue(ctx, c)
	if _, _, _, claimDue := h.hooks(); claimDue != nil && err == nil {
		ids = claimDue(ids)
	}
	return ids, err
}

// back is the bank's return of a payment, a callback carrying authority
// (and the claim that it was paid), through the service's one entry point.
func (e *env) back(ctx context.Context, publicID, authority string) (topup.TopUp, error) {
	return e.backWith(ctx, publicID, authority, "", true)
}

// backWith is back for a callback that also carries a receipt (SEP's
// RefNum, Mellat's SaleReferenceId; "" for none) and its own claim. A
// Mellat sale's callback names the order and the amount paid, as the
// bank's does: the payment's own.
func (e *env) backWith(ctx context.Context, publicID, authority, receipt string, claimsPaid bool) (topup.TopUp, error) {
	p, _, err := e.svc.Return(ctx, publicID, func(gw string) (callback.Params, bool) {
		cb := callback.Params{Authority: authority, Receipt: receipt, ClaimsPaid: claimsPaid}
		if gw == mellat.Name && receipt != "" {
			if row, err := e.svc.ByPublicID(ctx, publicID); err == nil {
				cb.Order, cb.PaidRials = strconv.FormatInt(mellat.OrderNumber(publicID), 10), row.AmountRials
			}
		}
		return cb, true
	})
	return p, err
}
