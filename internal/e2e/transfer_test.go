package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/wallet"
)

// TestTransferCrash kills serve (SIGKILL, through the test hook
// inside_transfer) inside a transfer's database transaction, after its
// row, its ledger transaction and the balances were written and before
// the commit: nothing of it is left (no transfer, no ledger transaction,
// the balances as they were). Serve restarted, the payer sends the same
// form again (what a browser's retry does): the transfer is made once,
// and once more the same form answers its receipt. The ledger's
// integrity rules hold throughout.
func TestTransferCrash(t *testing.T) {
	eachDialect(t, func(t *testing.T, d store.Dialect) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		rig := newCrashRig(t, d)
		alice := signedUp(ctx, t, rig.appURL, "alice-transfer@e2e.example")
		signedUp(ctx, t, rig.appURL, "bob-transfer@e2e.example")
		// Both used the link mailed to them: Alice's address sends, Bob's
		// receives.
		authtest.ConfirmEmail(t, rig.db, "alice-transfer@e2e.example")
		authtest.ConfirmEmail(t, rig.db, "bob-transfer@e2e.example")
		ws := wallet.NewService(rig.db, nil)
		walletOf := func(email string) wallet.Wallet {
			var uid int64
			if err := rig.db.Gorm.Raw(`SELECT id FROM users WHERE email = ?`, email).Scan(&uid).Error; err != nil || uid == 0 {
				t.Fatalf("user %s: %v", email, err)
			}
			w, err := ws.ForUser(ctx, uid)
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		aw, bw := walletOf("alice-transfer@e2e.example"), walletOf("bob-transfer@e2e.example")
		ledgertest.Fund(t, rig.db, aw.AccountID, 1_000_000, "alice-transfer")
		balances := func() (int64, int64) {
			return ledgertest.Balance(t, rig.db, aw.ID), ledgertest.Balance(t, rig.db, bw.ID)
		}

		// The form, and its confirmation step: Send's fields.
		r, err := alice.do(ctx, http.MethodGet, routes.Transfer, nil)
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("GET the form: %d %v", r.status, err)
		}
		form := apptest.Parse(r.body).Form(routes.Transfer).Hidden()
		form.Set("to", "bob-transfer@e2e.example")
		form.Set("amount", "30000")
		form.Set("note", "e2e")
		r, err = alice.do(ctx, http.MethodPost, routes.Transfer, form)
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("continue: %d %v", r.status, err)
		}
		send := apptest.Parse(r.body).Form(routes.Transfer).Hidden()
		if send.Get("confirmed") != "1" {
			t.Fatalf("no Send on the confirmation step: %v", send)
		}

		// Armed, Send kills serve inside the transfer's transaction.
		before := rig.srv.logCount("testhook: SIGKILL at " + testhook.InsideTransfer)
		rig.srv.kill()
		rig.srv.setEnv(testhook.EnvCrashAt, testhook.InsideTransfer)
		if err := rig.srv.start(); err != nil {
			t.Fatal(err)
		}
		if r, err := alice.do(ctx, http.MethodPost, routes.Transfer, send); err == nil {
			t.Fatalf("Send answered %d though serve should have died in it", r.status)
		}
		select {
		case <-rig.srv.exited():
		case <-time.After(30 * time.Second):
			t.Fatal("serve never reached inside_transfer")
		}
		if n := rig.srv.logCount("testhook: SIGKILL at " + testhook.InsideTransfer); n != before+1 {
			t.Fatalf("serve exited, but not inside the transfer (%d kills there, %d before)", n, before)
		}
		if a, b := balances(); a != 1_000_000 || b != 0 {
			t.Fatalf("after the crash: balances %d %d, want them untouched", a, b)
		}
		for _, q := range []string{`SELECT COUNT(*) FROM transfers`, `SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'transfer'`,
			`SELECT COUNT(*) FROM webhook_deliveries WHERE transfer_id IS NOT NULL`} {
			if n := apptest.Count(t, rig.db, q); n != 0 {
				t.Fatalf("after the crash %q = %d: the transaction did not die whole", q, n)
			}
		}
		apptest.CheckInvariants(t, rig.db)

		// Restarted unarmed: the same Send makes the transfer, once.
		rig.srv.setEnv(testhook.EnvCrashAt, "")
		if err := rig.srv.start(); err != nil {
			t.Fatal(err)
		}
		var receipt string
		for i := range 3 {
			r, err := alice.do(ctx, http.MethodPost, routes.Transfer, send)
			if err != nil || r.status != http.StatusSeeOther || !strings.HasPrefix(r.location, routes.Transfers+"/") {
				t.Fatalf("Send %d after the restart: %d %q %v", i, r.status, r.location, err)
			}
			if receipt != "" && r.location != receipt {
				t.Fatalf("Send %d went to %s, the first to %s", i, r.location, receipt)
			}
			receipt = r.location
		}
		if a, b := balances(); a != 700_000 || b != 300_000 {
			t.Fatalf("balances %d %d, want 700000 300000", a, b)
		}
		if n := apptest.Count(t, rig.db, `SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'transfer'`); n != 1 {
			t.Fatalf("%d transfer transactions", n)
		}
		apptest.CheckInvariants(t, rig.db)
	})
}
