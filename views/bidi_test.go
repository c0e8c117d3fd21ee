package views_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/views"
)

func render(t *testing.T, c templ.Component) *apptest.Doc {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return apptest.Parse(b.String())
}

// A merchant's name in a sentence is isolated (FSI…PDI): "Shop (IR)" in
// a Persian sentence keeps its brackets, and a right-to-left override in
// a name stored before names were checked is dropped, so that it cannot
// turn the sentence around the amount.
func TestUserTextIsIsolatedInSentences(t *testing.T) {
	const evil = "Shop (IR)\u202E"
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, l := range i18n.Langs {
		p := views.Page{Lang: l, TitleKey: "wallet.title", Now: now}
		// The payer's history.
		doc := render(t, views.Wallet(p, views.WalletView{BalanceRials: 1_000_000, AvailableRials: 1_000_000, Rows: []views.HistoryRow{
			{AmountRials: -500_000, BalanceAfter: 1_000_000, Kind: "charge_payment", CreatedAt: now, ChargeID: "ch_1", Merchant: evil},
			{AmountRials: -20_000, BalanceAfter: 1_500_000, Kind: "transfer_out", CreatedAt: now, TransferID: "tr_1", Who: "\u202Eali@x.com", Sent: true},
		}}))
		charge, transfer := doc.TestID("history-charge"), doc.TestID("history-transfer")
		if want := i18n.T(l, "history.charge_paid", "merchant", "\u2068Shop (IR)\u2069"); charge.Text() != want {
			t.Errorf("%s: history row %+q, want %+q", l, charge.Text(), want)
		}
		if want := i18n.T(l, "history.transfer_to", "who", "\u2068ali@x.com\u2069"); strings.TrimSpace(transfer.Text()) != want {
			t.Errorf("%s: transfer row %+q, want %+q", l, transfer.Text(), want)
		}
		// The checkout: its title and its outcome.
		p.TitleKey = "checkout.page_title"
		for _, state := range []string{"open", "paid"} {
			doc = render(t, views.Checkout(p, views.CheckoutView{PublicID: "ch_1", MerchantName: evil, AmountRials: 500_000,
				AvailableRials: 1_000_000, State: state, ReturnURL: "https://shop.example/back", ReturnHost: "shop.example\u202E"}))
			h1 := doc.Elements("h1")[0].Text()
			if want := i18n.T(l, "checkout.title", "merchant", "\u2068Shop (IR)\u2069"); h1 != want {
				t.Errorf("%s %s: title %+q, want %+q", l, state, h1, want)
			}
			if state != "paid" {
				continue
			}
			status := strings.TrimSpace(doc.TestID("checkout-status").Text())
			if !strings.Contains(status, "\u2068Shop (IR)\u2069") || strings.ContainsRune(status, '\u202E') {
				t.Errorf("%s: outcome %+q: the merchant is not isolated", l, status)
			}
			if ret := doc.TestID("checkout-return").Text(); !strings.Contains(ret, "\u2068shop.example\u2069") || strings.ContainsRune(ret, '\u202E') {
				t.Errorf("%s: return link %+q: the host is not isolated", l, ret)
			}
		}
	}
}
