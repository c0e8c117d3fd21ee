package merchant_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
)

const pw = "correct horse battery"

// signUpFunded makes a user with rials in their wallet and returns their
// id and their wallet's id.
func signUpFunded(t *testing.T, app *apptest.App, addr string, rials int64) (userID, walletID int64) {
	t.Helper()
	ctx := context.Background()
	u, err := app.Server.Auth.SignUp(ctx, addr, pw, "", "fa")
	if err != nil {
		t.Fatal(err)
	}
	w, err := app.Server.Wallets.ForUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rials > 0 {
		ledgertest.Fund(t, app.DB, w.AccountID, rials, addr)
	}
	return u.ID, w.ID
}

// shop makes a merchant "Shop" and returns its user id.
func shop(t *testing.T, app *apptest.App, addr, name string) int64 {
	t.Helper()
	id, _ := signUpFunded(t, app, addr, 0)
	if _, _, err := app.Server.Charges.MakeMerchant(context.Background(), id, name, nil); err != nil {
		t.Fatal(err)
	}
	return id
}

// newCharge makes a charge of merchant m as the API would.
func newCharge(t *testing.T, app *apptest.App, m int64, rials int64, order string, capture charge.CaptureMethod) charge.Charge {
	t.Helper()
	res, err := app.Server.Charges.Create(context.Background(), charge.CreateRequest{MerchantUserID: m, FormToken: formtoken.New(),
		AmountRials: rials, Description: "Order " + order, OrderID: order, ReturnURL: "https://shop.example/back?order=" + order,
		Capture: capture})
	if err != nil {
		t.Fatal(err)
	}
	return res.Charge
}

// drainMerchant moves rials out of a merchant account into suspense, as
// an operator's correction would: money the shop no longer has to refund
// from.
func drainMerchant(t *testing.T, app *apptest.App, accountID, rials int64) {
	t.Helper()
	ctx := context.Background()
	sus, err := app.Server.Ledger.EnsureAccount(ctx, ledger.AccountSuspense, ledger.CodeSuspense, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Server.Ledger.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: "drain-" + strconv.FormatInt(accountID, 10),
		Postings: ledger.Transfer(accountID, sus, rials), At: time.Now()}); err != nil {
		t.Fatal(err)
	}
}
