package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/integrity"
	payoutdrivers "github.com/kifpool/kifpool/internal/payout/drivers"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// TestWithdrawalCrashPoints is issue 30 §4 for a withdrawal, on SQLite and
// PostgreSQL: a user withdraws to their verified account through the
// real serve and the standalone bank's payout providers (Jibit's
// Transferor, whose submit may be repeated and which fails a paid payout
// by hand later; Zibal's checkout, whose submit may not), and serve
// SIGKILLs itself after the hold (the withdrawal and its hold committed,
// nothing sent), after the provider accepted it (nothing of the answer
// recorded), after the provider said "transferred" (the move to paid not
// committed) and during the return (inside its database transaction).
// What the crash left is checked, then serve restarts unarmed (on
// PostgreSQL beside a second instance whose worker competes for the same
// rows) and finishes it. After every run: the provider paid exactly the
// withdrawals we call paid, each once; every returned one was credited
// back exactly once; the wallet lost what was paid; and every rule of
// kifpool check holds.
func TestWithdrawalCrashPoints(t *testing.T) {
	eachDialect(t, withdrawalPoints)
}

// withdrawalCase is one crash point at one payout provider.
type withdrawalCase struct {
	provider string
	point    string
	tomans   int64
	// returned: the provider fails the payout by hand after it was
	// transferred (Jibit only).
	returned bool
}

// withdrawalServeEnv offers the standalone bank's payout providers (the
// case's first: a new withdrawal goes to it) with the crash test's pace.
func withdrawalServeEnv(first string) map[string]string {
	env := map[string]string{
		"PAYOUTS":                   first,
		"PAYOUT_RECONCILE_INTERVAL": "0",
		"WITHDRAWAL_MIN_RIALS":      "100000",
	}
	names := []string{first}
	for _, d := range payoutdrivers.All() {
		for k, v := range d.Sandbox.Settings("{bank}") {
			env[k] = v
		}
		if d.Name != first {
			names = append(names, d.Name)
		}
	}
	env["PAYOUTS"] = strings.Join(names, ",")
	return env
}

func withdrawalPoints(t *testing.T, d store.Dialect) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rig := newCrashRigWith(t, d, withdrawalServeEnv("jibit"))
	// On PostgreSQL a second instance joins each recovery.
	other := rig.second(t, d)
	const email = "withdrawer@e2e.example"
	user := signedUp(ctx, t, rig.appURL, email)
	var userID int64
	if err := rig.db.Gorm.Raw(`SELECT id FROM users WHERE email = ?`, email).Scan(&userID).Error; err != nil || userID == 0 {
		t.Fatalf("user %s: %v", email, err)
	}
	sheba := withdrawaltest.Sheba("017", int(userID))
	accountID := withdrawaltest.VerifiedAccount(t, rig.db, userID, sheba)
	withdrawaltest.FundUser(t, rig.db, userID, 100_000_000)
	provider := newPayoutClient(rig.bankURL)

	cases := []withdrawalCase{
		{"jibit", testhook.AfterWithdrawalHold, 20_000, false},
		{"jibit", testhook.AfterPayoutAccepted, 21_000, false},
		{"zibal", testhook.AfterPayoutAccepted, 22_000, false},
		{"jibit", testhook.AfterPayoutTransferred, 23_000, false},
		{"zibal", testhook.AfterPayoutTransferred, 24_000, false},
		{"jibit", testhook.DuringWithdrawalReturn, 25_000, true},
	}
	for _, c := range cases {
		name := c.point + " at " + c.provider
		before := withdrawaltest.WalletOf(t, rig.db, userID)
		// Armed, with the case's provider first.
		rig.srv.kill()
		for k, v := range withdrawalServeEnv(c.provider) {
			rig.srv.setEnv(k, strings.ReplaceAll(v, "{bank}", rig.bankURL))
		}
		rig.srv.setEnv(testhook.EnvCrashAt, c.point)
		if err := rig.srv.start(); err != nil {
			t.Fatalf("%s: restart armed: %v", name, err)
		}
		kills := rig.srv.logCount("testhook: SIGKILL at " + c.point)
		n := len(withdrawaltest.ByUser(t, rig.db, userID))
		r, err := user.withdraw(ctx, accountID, c.tomans)
		switch {
		case c.point == testhook.AfterWithdrawalHold:
			// serve dies under the request
		case err != nil && rig.srv.logCount("testhook: SIGKILL at "+c.point) > kills:
			// The worker, woken by the request's commit, reached the
			// point before the answer left (a loaded machine): serve died
			// under the request, after the withdrawal was written.
		case err != nil || r.status != http.StatusSeeOther || !strings.HasPrefix(r.location, routes.Withdrawals+"/"):
			t.Fatalf("%s: withdraw: %d %q %v", name, r.status, r.location, err)
		}
		list := withdrawaltest.ByUser(t, rig.db, userID)
		if len(list) != n+1 {
			t.Fatalf("%s: %d withdrawals, want %d", name, len(list), n+1)
		}
		w := list[n]
		rials := c.tomans * 10
		if w.Provider != c.provider || w.AmountRials != rials {
			t.Fatalf("%s: withdrawal %s at %s of %d, want %s of %d", name, w.PublicID, w.Provider, w.AmountRials, c.provider, rials)
		}
		// The provider's part before the point: it settles a transferred
		// case's payout once it has it; a returned case's is paid first,
		// then failed by hand.
		switch c.point {
		case testhook.AfterPayoutTransferred:
			provider.waitPayout(ctx, t, c.provider, w.PublicID)
			provider.act(ctx, t, c.provider, w.PublicID, "settle")
		case testhook.DuringWithdrawalReturn:
			provider.waitPayout(ctx, t, c.provider, w.PublicID)
			provider.act(ctx, t, c.provider, w.PublicID, "settle")
			waitWithdrawal(ctx, t, rig.db, w.PublicID, withdrawal.StatusPaid)
			provider.act(ctx, t, c.provider, w.PublicID, "return")
		}
		select {
		case <-rig.srv.exited():
		case <-ctx.Done():
			t.Fatalf("%s: serve never reached the point", name)
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: serve never reached the point", name)
		}
		if got := rig.srv.logCount("testhook: SIGKILL at " + c.point); got != kills+1 {
			t.Fatalf("%s: serve exited, but not at the point", name)
		}

		// What the crash left.
		w = withdrawaltest.Get(t, rig.db, w.PublicID)
		p, atProvider := provider.payout(t, c.provider, w.PublicID)
		wantStatus, wantHeld, wantState := withdrawal.StatusRequested, rials, payouts.State("")
		switch c.point {
		case testhook.AfterPayoutAccepted:
			wantStatus, wantState = withdrawal.StatusSubmitted, payouts.StateInProgress
		case testhook.AfterPayoutTransferred:
			wantStatus, wantState = withdrawal.StatusSubmitted, payouts.StateTransferred
		case testhook.DuringWithdrawalReturn:
			wantStatus, wantHeld, wantState = withdrawal.StatusPaid, 0, payouts.StateManuallyFailed
		}
		if w.Status != wantStatus || withdrawaltest.WalletOf(t, rig.db, userID).Held-before.Held != wantHeld || p.State != wantState ||
			atProvider != (wantState != "") {
			t.Fatalf("%s: after the crash the withdrawal is %s (%d more held), the provider's payout %q; want %s (%d), %q",
				name, w.Status, withdrawaltest.WalletOf(t, rig.db, userID).Held-before.Held, p.State, wantStatus, wantHeld, wantState)
		}
		if withdrawaltest.Returns(t, rig.db, w.PublicID) != 0 {
			t.Fatalf("%s: a return committed before the crash", name)
		}

		// Restarted unarmed (on PostgreSQL with the second instance):
		// the worker finishes it; the provider settles what it has.
		rig.srv.setEnv(testhook.EnvCrashAt, "")
		if err := rig.srv.start(); err != nil {
			t.Fatalf("%s: restart: %v", name, err)
		}
		if other != nil {
			for k, v := range withdrawalServeEnv(c.provider) {
				other.setEnv(k, strings.ReplaceAll(v, "{bank}", rig.bankURL))
			}
			if err := other.start(); err != nil {
				t.Fatalf("%s: the second instance: %v", name, err)
			}
		}
		want := withdrawal.StatusPaid
		if c.returned {
			want = withdrawal.StatusReturned
		} else if wantState != payouts.StateTransferred {
			provider.waitPayout(ctx, t, c.provider, w.PublicID)
			provider.act(ctx, t, c.provider, w.PublicID, "settle")
		}
		waitWithdrawal(ctx, t, rig.db, w.PublicID, want)
		if other != nil {
			other.stop()
		}

		// The outcome: one payout of the amount, the wallet's money gone
		// once (or back once), nothing held.
		p, _ = provider.payout(t, c.provider, w.PublicID)
		after := withdrawaltest.WalletOf(t, rig.db, userID)
		lost, wantLost, returns := before.Posted-after.Posted, rials, int64(0)
		if c.returned {
			wantLost, returns = 0, 1
		}
		if p.AmountRials != rials || lost != wantLost || after.Held != before.Held || withdrawaltest.Returns(t, rig.db, w.PublicID) != returns {
			t.Fatalf("%s: the provider's payout is %s of %d; the wallet lost %d (want %d), held %d more, %d returns (want %d)",
				name, p.State, p.AmountRials, lost, wantLost, after.Held-before.Held, withdrawaltest.Returns(t, rig.db, w.PublicID), returns)
		}
		checkPayouts(t, rig.db, provider.all(t))
	}
	rep, err := integrity.Check(ctx, rig.db, integrity.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("kifpool check: %v %v", err, rep.Violations())
	}
}

// withdraw opens the withdrawal form, asks for tomans to the account
// (the confirmation step with its arrival estimate) and confirms.
func (b *browser) withdraw(ctx context.Context, accountID, tomans int64) (response, error) {
	r, err := b.do(ctx, http.MethodGet, routes.Withdraw, nil)
	if err != nil {
		return r, err
	}
	form := apptest.Parse(r.body).Form(routes.Withdraw).Hidden()
	if r.status != http.StatusOK || form.Get("_csrf") == "" || form.Get("token") == "" {
		return r, fmt.Errorf("GET %s: %d: %w", routes.Withdraw, r.status, errNotReady)
	}
	form.Set("bank_account", fmt.Sprint(accountID))
	form.Set("amount", fmt.Sprint(tomans))
	if r, err = b.do(ctx, http.MethodPost, routes.Withdraw, form); err != nil || r.status != http.StatusOK {
		return r, fmt.Errorf("the confirmation step: %d %v", r.status, err)
	}
	form.Set("confirm", "1")
	return b.do(ctx, http.MethodPost, routes.Withdraw, form)
}

// waitWithdrawal waits until the withdrawal is status.
func waitWithdrawal(ctx context.Context, t *testing.T, db *store.DB, publicID string, status withdrawal.Status) {
	t.Helper()
	err := testwait.UntilContext(ctx, 60*time.Second, "withdrawal "+publicID+" to be "+string(status), func() bool {
		return withdrawaltest.Get(t, db, publicID).Status == status
	})
	if err != nil {
		w := withdrawaltest.Get(t, db, publicID)
		t.Fatalf("withdrawal %s is %s (%s, provider %q), want %s", publicID, w.Status, w.StatusReason, w.ProviderState, status)
	}
}

// checkPayouts asserts the provider's book against our withdrawals: the
// provider paid (transferred, never failed) exactly the withdrawals we
// call paid, each payout is one of our withdrawals for its amount, and
// every payout the provider failed by hand is returned once on our side.
func checkPayouts(t *testing.T, db *store.DB, book []payouts.Payout) {
	t.Helper()
	ours := map[string]withdrawal.Withdrawal{}
	for _, w := range withdrawaltest.All(t, db) {
		ours[w.Provider+"/"+w.PublicID] = w
	}
	seen := map[string]bool{}
	for _, p := range book {
		k := p.Provider + "/" + p.ID
		seen[k] = true
		w, ok := ours[k]
		switch {
		case !ok:
			t.Errorf("the provider holds payout %s, which is no withdrawal of ours", k)
			continue
		case p.AmountRials != w.AmountRials:
			t.Errorf("payout %s: %d at the provider, %d ours", k, p.AmountRials, w.AmountRials)
		}
		returns := withdrawaltest.Returns(t, db, w.PublicID)
		switch p.State {
		case payouts.StateTransferred:
			if w.Status != withdrawal.StatusPaid {
				t.Errorf("payout %s: the provider paid it, we call it %s", k, w.Status)
			}
		case payouts.StateManuallyFailed:
			if w.Status != withdrawal.StatusReturned || returns != 1 {
				t.Errorf("payout %s: failed by hand after it was paid; ours is %s with %d returns, want returned once", k, w.Status, returns)
			}
		default:
			if w.Status == withdrawal.StatusPaid || w.Status == withdrawal.StatusReturned {
				t.Errorf("payout %s: %s at the provider, we call it %s", k, p.State, w.Status)
			}
		}
		if p.State != payouts.StateManuallyFailed && returns != 0 {
			t.Errorf("payout %s: %s at the provider, %d returns of ours", k, p.State, returns)
		}
	}
	for k, w := range ours {
		if (w.Status == withdrawal.StatusPaid || w.Status == withdrawal.StatusReturned) && !seen[k] {
			t.Errorf("withdrawal %s: we call it %s, the provider never had it", k, w.Status)
		}
	}
}

// payoutClient drives the standalone bank's payout provider: its book
// and its control API (settle, fail, return).
type payoutClient struct {
	base string
	hc   *http.Client
}

func newPayoutClient(bankURL string) *payoutClient {
	return &payoutClient{base: bankURL, hc: &http.Client{Timeout: 10 * time.Second}}
}

// all is the provider's book.
func (c *payoutClient) all(t *testing.T) []payouts.Payout {
	t.Helper()
	res, err := c.hc.Get(c.base + "/_sandbank/payouts")
	if err != nil {
		t.Fatalf("the provider's payouts: %v", err)
	}
	defer res.Body.Close()
	var out []payouts.Payout
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the provider's payouts: %d %v", res.StatusCode, err)
	}
	return out
}

// payout is one payout of the provider's book.
func (c *payoutClient) payout(t *testing.T, provider, id string) (payouts.Payout, bool) {
	t.Helper()
	for _, p := range c.all(t) {
		if p.Provider == provider && p.ID == id {
			return p, true
		}
	}
	return payouts.Payout{}, false
}

// waitPayout waits until the provider holds the payout.
func (c *payoutClient) waitPayout(ctx context.Context, t *testing.T, provider, id string) {
	t.Helper()
	if err := testwait.UntilContext(ctx, 60*time.Second, "the payout "+id+" at "+provider, func() bool {
		_, ok := c.payout(t, provider, id)
		return ok
	}); err != nil {
		t.Fatal(err)
	}
}

// act settles, fails or returns a payout through the control API.
func (c *payoutClient) act(ctx context.Context, t *testing.T, provider, id, action string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+payouts.ControlPath(provider, id, action), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s payout %s at %s: %v", action, id, provider, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s payout %s at %s: %d", action, id, provider, res.StatusCode)
	}
}
