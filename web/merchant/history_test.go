package merchant_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The payer's history names the merchant: "paid to {merchant}" for a
// charge paid at once and for one captured from its hold, "refund from
// {merchant}" for a refund, in both languages.
func TestHistoryNamesTheMerchant(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		app := apptest.Start(t, db, apptest.Options{})
		m := shop(t, app, "shop@example.com", "Book Shop")
		payer, _ := signUpFunded(t, app, "payer@example.com", 500_000)
		auto := newCharge(t, app, m, 100_000, "H-1", charge.CaptureAutomatic)
		manual := newCharge(t, app, m, 50_000, "H-2", charge.CaptureManual)
		for _, ch := range []charge.Charge{auto, manual} {
			if _, err := app.Server.Charges.Confirm(ctx, payer, ch.PublicID); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := app.Server.Charges.Capture(ctx, m, manual.PublicID, 40_000); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.Charges.Refund(ctx, charge.RefundRequest{MerchantUserID: m, ChargeID: auto.PublicID,
			FormToken: formtoken.New(), AmountRials: 30_000}); err != nil {
			t.Fatal(err)
		}
		c := app.NewClient(t)
		c.SignIn("payer@example.com", pw)
		for lang, want := range map[string][]string{
			"en": {"Refund from \u2068Book Shop\u2069", "Paid to \u2068Book Shop\u2069", "Paid to \u2068Book Shop\u2069"},
			"fa": {"بازپرداخت از \u2068Book Shop\u2069", "پرداخت به \u2068Book Shop\u2069", "پرداخت به \u2068Book Shop\u2069"},
		} {
			doc := apptest.Parse(c.GetIn(lang, routes.Wallet).Body)
			rows := doc.TestIDs("history-charge")
			var got []string
			for _, r := range rows {
				got = append(got, r.Text())
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s: history rows %q, want %q", lang, got, want)
			}
			if len(rows) == 3 && (rows[0].Attr("data-charge") != auto.PublicID || rows[1].Attr("data-charge") != manual.PublicID) {
				t.Errorf("%s: rows name the wrong charges", lang)
			}
		}
		if b := c.Balance(); b != 500_000-100_000-40_000+30_000 {
			t.Errorf("balance %d", b)
		}
	})
}
