package cardrefund_test

// The test environment of the card refund's tests: a payer's wallet
// credited through the payment service at the sandbox bank (real HTTP,
// the real drivers), the card refund service over the same database, and
// one clock for both and the bank.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/cardrefund/sqlstore"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
	paystore "github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
)

type env struct {
	t      *testing.T
	db     *store.DB
	clock  *topuptest.Clock
	bank   *sandbank.Bank
	gws    gateway.Set
	pay    *topup.Service
	led    *ledger.Ledger
	st     *sqlstore.Store
	svc    *cardrefund.Service
	user   auth.User
	admin  auth.User
	wallet wallet.Wallet
	hooks  *webhook.Service
	logs   *lockedBuffer // the service's log lines
}

// lockedBuffer is a log's text, written and read from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var seq atomic.Int64

// gatewayNames are the drivers the environment talks to.
var gatewayNames = []string{"zarinpal", "zibal", "sep", "mellat"}

func newEnv(t *testing.T, db *store.DB) *env {
	return newEnvWrapped(t, db, nil)
}

// newEnvWrapped is newEnv whose gateways are wrapped (nil: not).
func newEnvWrapped(t *testing.T, db *store.DB, wrap func(gateway.Gateway) gateway.Gateway) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, db: db, clock: topuptest.NewClock(), logs: &lockedBuffer{}}
	as := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost})
	var err error
	n := seq.Add(1)
	if e.user, err = as.SignUp(ctx, fmt.Sprintf("payer%d@example.com", n), "correct horse", "", "fa"); err != nil {
		t.Fatal(err)
	}
	if e.admin, err = as.SignUp(ctx, fmt.Sprintf("admin%d@example.com", n), "correct horse", "", "en"); err != nil {
		t.Fatal(err)
	}
	if e.wallet, err = wallet.NewService(db, nil).ForUser(ctx, e.user.ID); err != nil {
		t.Fatal(err)
	}
	e.bank = sandbank.New(sandbank.Options{Clock: e.clock.Now})
	srv := httptest.NewServer(e.bank.Handler())
	t.Cleanup(srv.Close)
	cfg := topuptest.Config()
	cfg.Gateways = map[string]topup.GatewayRules{}
	for _, name := range gatewayNames {
		d, _ := drivers.Lookup(name)
		g, err := d.New(d.Sandbox.Settings(srv.URL), gateway.Deps{HTTPClient: srv.Client(), Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if wrap != nil {
			g = wrap(g)
		}
		e.gws = append(e.gws, g)
		cfg.Gateways[name] = topup.RulesOf(d.Capabilities)
	}
	e.led = ledger.New(db)
	e.pay = topup.NewService(paystore.New(db).WithLedger(e.led), e.gws, e.clock.Now, nil, cfg)
	if e.st, err = sqlstore.New(ctx, db, e.led); err != nil {
		t.Fatal(err)
	}
	e.svc = cardrefund.New(e.deps(e.st))
	if e.hooks, err = webhook.New(db, e.clock.Now, webhook.Options{SessionSecret: make([]byte, 32), AllowLoopback: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.hooks.Create(ctx, e.user.ID, "http://127.0.0.1:9/hook", []string{webhook.TypeRefunded}, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// deps are the service's dependencies over st.
func (e *env) deps(st cardrefund.Store) cardrefund.Deps {
	return cardrefund.Deps{Store: st, Gateways: e.gws, Now: e.clock.Now,
		Capabilities: func(name string) (gateway.Capabilities, bool) {
			d, ok := drivers.Lookup(name)
			return d.Capabilities, ok
		},
		TopUpView: func(ctx context.Context, t cardrefund.TopUp) (any, error) {
			return map[string]any{"id": t.PublicID}, nil
		},
		Jitter: func() float64 { return 0 }, Log: slog.New(slog.NewTextHandler(e.logs, nil))}
}

// credit tops the wallet up by amount at gateway, at the bank: requested,
// paid, and credited on the payer's return.
func (e *env) credit(gw string, amount int64) topup.TopUp {
	e.t.Helper()
	ctx := context.Background()
	r, err := e.pay.StartTopUp(ctx, topup.StartInput{UserID: e.user.ID, WalletID: e.wallet.ID, Email: e.user.Email,
		FormToken: topup.NewFormToken(), AmountRials: amount, Gateway: gw})
	if err != nil || r.TopUp.Authority == nil {
		e.t.Fatalf("start a top-up at %s: %+v %v", gw, r, err)
	}
	cb, err := e.bank.Finish(*r.TopUp.Authority, true)
	if err != nil {
		e.t.Fatal(err)
	}
	d, _ := drivers.Lookup(gw)
	p, _, err := e.pay.Return(ctx, r.TopUp.PublicID, func(string) (callback.Params, bool) {
		return d.ParseCallback(func(k string) string { return queryOf(cb.URL, k) }, func(k string) string { return cb.Form[k] }, cb.Method == "POST")
	})
	if err != nil || p.Status != topup.StatusCredited {
		e.t.Fatalf("return from %s: %+v %v", gw, p, err)
	}
	return p
}

// start is an admin's refund of amount of p to the card.
func (e *env) start(p topup.TopUp, amount int64) (cardrefund.CardRefund, error) {
	return e.svc.Start(context.Background(), cardrefund.StartRequest{TopUpPublicID: p.PublicID, AmountRials: amount,
		AdminID: e.admin.ID, Note: "the payer asked"})
}

func (e *env) mustStart(p topup.TopUp, amount int64, want cardrefund.Status) cardrefund.CardRefund {
	e.t.Helper()
	c, err := e.start(p, amount)
	if err != nil || c.Status != want {
		e.t.Fatalf("refund %d of %s: %+v %v, want %s", amount, p.PublicID, c, err, want)
	}
	return c
}

// offer is what may go back of p now.
func (e *env) offer(p topup.TopUp) cardrefund.Offer {
	e.t.Helper()
	st, err := e.svc.Offer(context.Background(), p.PublicID)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.Offer
}

// get reads a card refund again.
func (e *env) get(c cardrefund.CardRefund) cardrefund.CardRefund {
	e.t.Helper()
	got, err := e.st.Get(context.Background(), c.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// round runs one worker round.
func (e *env) round() {
	e.t.Helper()
	if _, err := e.svc.Worker().Round(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// figures are the wallet's posted and held rials.
func (e *env) figures() (posted, held int64) {
	e.t.Helper()
	return ledgertest.Balance(e.t, e.db, e.wallet.ID), ledgertest.Held(e.t, e.db, e.wallet.ID)
}

func (e *env) wantFigures(posted, held int64) {
	e.t.Helper()
	if p, h := e.figures(); p != posted || h != held {
		e.t.Fatalf("wallet posted %d held %d, want %d and %d", p, h, posted, held)
	}
}

// refundedAtBank is what the bank gave back of p to the card: Zarinpal's
// refunds, or the whole payment when reversed.
func (e *env) refundedAtBank(p topup.TopUp) int64 {
	e.t.Helper()
	bp, ok := e.bank.Payment(p.AuthorityString())
	if !ok {
		e.t.Fatalf("the bank does not know %s", p.PublicID)
	}
	if bp.State == sandbank.StateReversed {
		return bp.Amount
	}
	return bp.RefundedAmount
}

// check runs every rule of kifpool check.
func (e *env) check() {
	e.t.Helper()
	topuptest.CheckInvariants(e.t, e.db)
}

func queryOf(rawURL, k string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Query().Get(k)
}
