package wallet_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// An admin signed in with the password alone (the session has not passed
// the second factor: what a phisher who learnt the password has) reads
// their wallet but moves none of its money: a transfer sent straight to
// Send, with a valid form and CSRF token, is refused before any handler
// and lands on the second-factor page, and so are the other money forms
// (a top-up, a withdrawal, a bank account, a checkout). Once the session
// passes the second factor, the same transfer goes through.
func TestAdminWithoutTheSecondFactorMovesNoMoney(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		const boss = "boss@example.com"
		if _, err := app.Server.Auth.SignUp(context.Background(), boss, transferPW, "admin", "en"); err != nil {
			t.Fatal(err)
		}
		bossWallet := app.Fund(t, boss, 5_000_000)
		bobWallet := signUpFunded(t, app, "bob@example.com", 0)
		balances := func() (int64, int64) {
			return ledgertest.Balance(t, db, bossWallet), ledgertest.Balance(t, db, bobWallet)
		}

		phisher := app.NewClient(t)
		phisher.SignIn(boss, transferPW)
		// The pages stay readable.
		for _, path := range []string{routes.Wallet, routes.Transfer, routes.TopUp, routes.Withdraw, routes.BankAccounts} {
			if r := phisher.Get(path); r.Status != http.StatusOK {
				t.Fatalf("GET %s before the second factor: %d", path, r.Status)
			}
		}
		if got := phisher.Balance(); got != 5_000_000 {
			t.Fatalf("balance shown: %d", got)
		}

		// Send (120,000 tomans), skipping the review step, with the form's own tokens.
		send := url.Values{"to": {"bob@example.com"}, "amount": {"120000"}, "note": {"x"}, "confirmed": {"1"}}
		r := phisher.Submit(routes.Transfer, routes.Transfer, send)
		if r.Status != http.StatusSeeOther || r.Location != routes.AdminTwoFactor {
			t.Fatalf("transfer before the second factor: %d %q, want 303 to %s", r.Status, r.Location, routes.AdminTwoFactor)
		}
		if from, to := balances(); from != 5_000_000 || to != 0 {
			t.Fatalf("balances after the refused transfer: %d, %d", from, to)
		}
		// The review step is a form too.
		if r := review(t, phisher, "bob@example.com", "120000", ""); r.Status != http.StatusSeeOther || r.Location != routes.AdminTwoFactor {
			t.Fatalf("transfer's review before the second factor: %d %q", r.Status, r.Location)
		}
		// Where the refusal leads: the second-factor page.
		if page := phisher.Get(r.Location); page.Status != http.StatusOK || !strings.Contains(page.Body, `name="enrol_code"`) {
			t.Fatalf("GET %s: %d", r.Location, page.Status)
		}
		// The other forms that move money or add a way to.
		for _, f := range []struct {
			page, action string
			form         url.Values
		}{
			{routes.TopUp, routes.TopUp, url.Values{"amount": {"100000"}}},
			{routes.BankAccounts, routes.BankAccounts, url.Values{"sheba": {"IR820540102680020817909002"}, "national_code": {"0499370899"}}},
		} {
			if r := phisher.Submit(f.page, f.action, f.form); r.Status != http.StatusSeeOther || r.Location != routes.AdminTwoFactor {
				t.Errorf("POST %s before the second factor: %d %q", f.action, r.Status, r.Location)
			}
		}
		// A withdrawal (the page has no form without a verified bank
		// account: sent as a script would) and a checkout's payment.
		for _, action := range []string{routes.Withdraw, routes.Checkout("ch_nosuchcharge00000000")} {
			if r := phisher.Forge(routes.Wallet, action, url.Values{"amount": {"100000"}}); r.Status != http.StatusSeeOther || r.Location != routes.AdminTwoFactor {
				t.Errorf("POST %s before the second factor: %d %q", action, r.Status, r.Location)
			}
		}
		if from, to := balances(); from != 5_000_000 || to != 0 {
			t.Fatalf("balances after the refused forms: %d, %d", from, to)
		}

		// Past the second factor, the same transfer is made.
		phisher.PassAdminChecks(boss)
		r = phisher.Submit(routes.Transfer, routes.Transfer, send)
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.Transfers+"/") {
			t.Fatalf("transfer after the second factor: %d %q", r.Status, r.Location)
		}
		if from, to := balances(); from != 3_800_000 || to != 1_200_000 {
			t.Fatalf("balances after the transfer: %d, %d", from, to)
		}
	})
}
