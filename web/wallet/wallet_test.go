package wallet_test

import (
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

func TestWalletListsTopUpsInProgress(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	c, _ := app.StartTopUp(t, "open@example.com", "15000")
	w := c.Get(routes.Wallet)
	if !strings.Contains(w.Body, `data-testid="open-payment" data-status="awaiting_payment"`) {
		t.Fatalf("the wallet does not show the payment in progress")
	}
}
