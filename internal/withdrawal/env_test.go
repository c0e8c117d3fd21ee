package withdrawal_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/payout/drivers"
	"github.com/kifpool/kifpool/internal/rail"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/sqlstore"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// env is the withdrawal lifecycle over one database, against a sandbox
// bank on a real socket, on a clock the test moves.
type env struct {
	t       *testing.T
	db      *store.DB
	bank    *sandbank.Bank
	st      *sqlstore.Store
	svc     *withdrawal.Service
	accts   *bankaccount.Service
	offers  []withdrawal.Offer
	clock   *withdrawaltest.Clock
	userID  int64
	wallet  int64
	account int64
}

func testConfig() withdrawal.Config {
	return withdrawal.Config{MinRials: 100_000, MaxRials: 10_000_000_000, DailyMaxRials: 2_000_000_000, ReviewAboveRials: 500_000_000,
		UnknownReviewAfter: 24 * time.Hour, WatchPaid: 72 * time.Hour, LeaseDuration: 30 * time.Second,
		BaseBackoff: 10 * time.Second, MaxBackoff: 2 * time.Minute, Schedule: rail.Default()}
}

// newEnv builds the lifecycle with the named providers (in order) and a
// funded user with a verified account.
func newEnv(t *testing.T, db *store.DB, providers ...string) *env {
	t.Helper()
	e := &env{t: t, db: db, clock: withdrawaltest.NewClock()}
	e.bank = sandbank.New(sandbank.Options{Clock: e.clock.Now})
	srv := httptest.NewServer(e.bank.Handler())
	t.Cleanup(srv.Close)
	l := ledger.New(db)
	e.st = sqlstore.New(db, l)
	var offers []withdrawal.Offer
	var inquiry bankaccount.Inquiry
	inquiryBy := ""
	for _, name := range providers {
		d, _ := drivers.Lookup(name)
		p, err := d.New(d.Sandbox.Settings(srv.URL), payout.Deps{Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		c := resilient.NewCaller(name, resilient.Options{AttemptTimeout: 2 * time.Second, Budget: 4 * time.Second,
			BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
			Breaker:  resilient.BreakerOptions{Window: time.Minute, MinRequests: 1000, FailureRatio: 1, OpenTimeout: time.Minute},
			Recorder: e.st.Recorder(func(err error) { t.Errorf("record a call: %v", err) }), Logger: slog.New(slog.DiscardHandler)})
		rp := payout.Resilient(p, c, 2*time.Second)
		offers = append(offers, withdrawal.Offer{Name: name, Provider: rp, Caps: d.Capabilities})
		if inquiry == nil && rp.Ops().CheckOwner != nil {
			inquiry, inquiryBy = rp.Ops().CheckOwner, name
		}
	}
	if err := e.st.EnsureAccounts(context.Background(), providers...); err != nil {
		t.Fatal(err)
	}
	e.accts = bankaccount.New(db, e.clock.Now, inquiryBy, inquiry, nil)
	e.offers = offers
	e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(db, l), offers, testConfig(), e.clock.Now, nil)
	e.userID, e.wallet = withdrawaltest.User(t, db, "payee@example.com")
	withdrawaltest.Fund(t, db, e.wallet, 50_000_000)
	e.account = withdrawaltest.VerifiedAccount(t, db, e.userID, withdrawaltest.Sheba("017", 42))
	return e
}

// request asks for a withdrawal of rials with a fresh form token.
func (e *env) request(rials int64) withdrawal.Withdrawal {
	e.t.Helper()
	r, err := e.svc.Request(context.Background(), withdrawal.Request{UserID: e.userID, FormToken: formtoken.New(), BankAccountID: e.account, AmountRials: rials})
	if err != nil {
		e.t.Fatalf("request %d: %v", rials, err)
	}
	return r.Withdrawal
}

// round runs the worker once, after moving the clock past every check
// due.
func (e *env) round(advance time.Duration) {
	e.t.Helper()
	e.clock.Advance(advance)
	if _, err := e.svc.NewWorker(20, 4).RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// get reads a withdrawal as it stands.
func (e *env) get(w withdrawal.Withdrawal) withdrawal.Withdrawal {
	return withdrawaltest.Get(e.t, e.db, w.PublicID)
}

// faults sets the sandbox provider's faults.
func (e *env) faults(provider string, f payouts.ProviderFaults) {
	e.t.Helper()
	if err := e.bank.Payouts().SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{provider: f}}); err != nil {
		e.t.Fatal(err)
	}
}

// wantWallet checks the wallet's posted and held rials.
func (e *env) wantWallet(posted, held int64) {
	e.t.Helper()
	if got := withdrawaltest.Wallet(e.t, e.db, e.wallet); got.Posted != posted || got.Held != held {
		e.t.Fatalf("wallet posted %d held %d, want %d and %d", got.Posted, got.Held, posted, held)
	}
}

// bankPayouts are the sandbox provider's payouts of a withdrawal (0 or 1).
func (e *env) bankPayouts(provider, id string) int {
	n := 0
	for _, p := range e.bank.Payouts().Payouts() {
		if p.Provider == provider && p.ID == id {
			n++
		}
	}
	return n
}

// unknownInMaintenance requests a withdrawal of rials while provider is
// in maintenance: its submit's outcome is unknown (submitted, unknown).
func (e *env) unknownInMaintenance(provider string, rials int64) withdrawal.Withdrawal {
	e.t.Helper()
	e.faults(provider, payouts.ProviderFaults{Maintenance: true})
	w := e.request(rials)
	e.round(time.Second)
	if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderUnknown {
		e.t.Fatalf("%s in maintenance: %+v", provider, w)
	}
	return w
}
