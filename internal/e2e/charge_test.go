package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/charge"
	chargestore "github.com/kifpool/kifpool/internal/charge/sqlstore"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/wallet"
)

// TestChargeCaptureCrash kills serve (SIGKILL, through the test hook
// inside_capture) inside a capture's database transaction, after the
// hold was captured into the merchant's account and the charge's row,
// event and webhook rows were written, before the commit: nothing of it
// is left (the charge authorized, its hold open, no capture transaction,
// no charge.captured delivery, the balances as they were). Serve
// restarted, the merchant retries the capture: it is made once, and a
// third capture answers with it. The ledger's integrity rules hold
// throughout.
func TestChargeCaptureCrash(t *testing.T) {
	eachDialect(t, func(t *testing.T, d store.Dialect) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		rig := newCrashRig(t, d)
		signedUp(ctx, t, rig.appURL, "shop-capture@e2e.example")
		signedUp(ctx, t, rig.appURL, "payer-capture@e2e.example")
		userID := func(email string) int64 {
			var uid int64
			if err := rig.db.Gorm.Raw(`SELECT id FROM users WHERE email = ?`, email).Scan(&uid).Error; err != nil || uid == 0 {
				t.Fatalf("user %s: %v", email, err)
			}
			return uid
		}
		shopID, payerID := userID("shop-capture@e2e.example"), userID("payer-capture@e2e.example")
		pw, err := wallet.NewService(rig.db, nil).ForUser(ctx, payerID)
		if err != nil {
			t.Fatal(err)
		}
		ledgertest.Fund(t, rig.db, pw.AccountID, 1_000_000, "payer-capture")

		// The merchant, its authorized charge (the checkout's use case),
		// and its token of scope charges.
		// Both confirmed their addresses (a merchant's must be, and only
		// a confirmed payer pays).
		authtest.ConfirmEmail(t, rig.db, "shop-capture@e2e.example")
		authtest.ConfirmEmail(t, rig.db, "payer-capture@e2e.example")
		svc := charge.New(chargestore.New(rig.db, nil), charge.Config{}, nil, nil)
		_, _, err = svc.MakeMerchant(ctx, shopID, "Capture Shop", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := svc.Create(ctx, charge.CreateRequest{MerchantUserID: shopID, FormToken: formtoken.New(), AmountRials: 400_000,
			OrderID: "e2e-1", Capture: charge.CaptureManual})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Charge.PublicID
		if _, err := svc.Confirm(ctx, payerID, id); err != nil {
			t.Fatal(err)
		}
		secret, _, err := apitoken.New(rig.db, nil, apitoken.Options{}).Create(ctx, apitoken.CreateInput{UserID: shopID, Name: "e2e", Scope: "charges"})
		if err != nil {
			t.Fatal(err)
		}
		capture := func() (int, charge.View, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, rig.appURL+routes.APIChargeCapture(id), strings.NewReader(`{"amount_rials": 300000}`))
			if err != nil {
				return 0, charge.View{}, err
			}
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, charge.View{}, err
			}
			defer resp.Body.Close()
			var v charge.View
			err = json.NewDecoder(resp.Body).Decode(&v)
			return resp.StatusCode, v, err
		}
		figures := func() (balance, held, merchant int64) {
			mm, err := svc.Merchant(ctx, shopID)
			if err != nil {
				t.Fatal(err)
			}
			return ledgertest.Balance(t, rig.db, pw.ID), ledgertest.Held(t, rig.db, pw.ID), mm.PostedRials
		}

		// Armed, the capture kills serve inside its transaction.
		before := rig.srv.logCount("testhook: SIGKILL at " + testhook.InsideCapture)
		rig.srv.kill()
		rig.srv.setEnv(testhook.EnvCrashAt, testhook.InsideCapture)
		if err := rig.srv.start(); err != nil {
			t.Fatal(err)
		}
		if status, _, err := capture(); err == nil {
			t.Fatalf("the capture answered %d though serve should have died in it", status)
		}
		select {
		case <-rig.srv.exited():
		case <-time.After(30 * time.Second):
			t.Fatal("serve never reached inside_capture")
		}
		if n := rig.srv.logCount("testhook: SIGKILL at " + testhook.InsideCapture); n != before+1 {
			t.Fatalf("serve exited, but not inside the capture (%d kills there, %d before)", n, before)
		}
		if b, h, mer := figures(); b != 1_000_000 || h != 400_000 || mer != 0 {
			t.Fatalf("after the crash: balance %d held %d merchant %d, want them untouched", b, h, mer)
		}
		if c, err := svc.Get(ctx, shopID, id); err != nil || c.Status != charge.StatusAuthorized || c.CapturedRials != 0 {
			t.Fatalf("after the crash: %+v %v", c, err)
		}
		for _, q := range []string{`SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'capture'`,
			`SELECT COUNT(*) FROM webhook_deliveries WHERE type = 'charge.captured'`,
			`SELECT COUNT(*) FROM charge_events WHERE type = 'charge.captured'`} {
			if n := apptest.Count(t, rig.db, q); n != 0 {
				t.Fatalf("after the crash %q = %d: the transaction did not die whole", q, n)
			}
		}
		apptest.CheckInvariants(t, rig.db)

		// Restarted unarmed: the retried capture is made, once.
		rig.srv.setEnv(testhook.EnvCrashAt, "")
		if err := rig.srv.start(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			status, v, err := capture()
			if err != nil || status != http.StatusOK || v.Status != charge.StatusSucceeded || v.CapturedRials != 300_000 {
				t.Fatalf("capture %d after the restart: %d %+v %v", i, status, v, err)
			}
		}
		if b, h, mer := figures(); b != 700_000 || h != 0 || mer != 300_000 {
			t.Fatalf("balance %d held %d merchant %d, want 700000 0 300000", b, h, mer)
		}
		if n := apptest.Count(t, rig.db, `SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'capture'`); n != 1 {
			t.Fatalf("%d capture transactions", n)
		}
		apptest.CheckInvariants(t, rig.db)
	})
}
