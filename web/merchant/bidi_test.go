package merchant_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A Latin merchant name with brackets, "Shop (IR)", sits in the Persian
// checkout's title, its outcome and the payer's history bidi-isolated
// (U+2068 … U+2069), so that its brackets and the words around it keep
// their order; its own line (<bdi>) shows it as typed.
func TestMerchantNameIsIsolatedInSentences(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Shop (IR)")
		payer, _ := signUpFunded(t, app, "payer@example.com", 500_000)
		ch := newCharge(t, app, m, 100_000, "B-1", charge.CaptureAutomatic)
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		const isolated = "\u2068Shop (IR)\u2069"

		body := c.GetIn("fa", routes.Checkout(ch.PublicID)).Body
		doc := apptest.Parse(body)
		if h, want := doc.Elements("h1"), i18n.T(i18n.FA, "checkout.title", "merchant", isolated); len(h) == 0 || h[0].Text() != want {
			t.Errorf("checkout title not isolated, want %+q:\n%s", want, body)
		}
		if !strings.Contains(body, `<dd data-testid="checkout-merchant"><bdi>Shop (IR)</bdi></dd>`) {
			t.Errorf("the merchant's own line is not a <bdi>:\n%s", body)
		}
		if _, err := app.Server.Charges.Confirm(context.Background(), payer, ch.PublicID); err != nil {
			t.Fatal(err)
		}
		doc = apptest.Parse(c.GetIn("fa", routes.Checkout(ch.PublicID)).Body)
		if s := doc.TestID("checkout-status"); s == nil || !strings.Contains(s.Text(), "به "+isolated+" پرداخت شد") {
			t.Errorf("the outcome does not isolate the merchant: %+q", s.Text())
		}
		for _, l := range i18n.Langs {
			row := apptest.Parse(c.GetIn(string(l), routes.Wallet).Body).TestID("history-charge")
			if want := i18n.T(l, "history.charge_paid", "merchant", isolated); row == nil || row.Text() != want {
				t.Errorf("%s: history row %+q, want %+q", l, row.Text(), want)
			}
		}
	})
}
