package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// The admin's delivery log names what each event is about: a transfer's,
// a withdrawal's and a charge's events show their kind and id, linked to
// their admin page, not an empty top-up column.
func TestWebhookLogSubjects(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}, Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		t.Cleanup(srv.Close)
		admin := app.NewAdmin(t, "boss@example.com")
		app.NewClient(t).SignUp("shop@example.com")
		app.NewClient(t).SignUp("payer@example.com")
		shopID, payerID := authtest.UserID(t, db, "shop@example.com"), authtest.UserID(t, db, "payer@example.com")
		withdrawaltest.FundUser(t, db, shopID, 5_000_000)
		withdrawaltest.FundUser(t, db, payerID, 1_000_000)
		ep, _, err := app.Server.Webhooks.Create(ctx, shopID, srv.URL, webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}

		tr, err := app.Server.Transfers.Send(ctx, transfer.Request{SenderUserID: shopID, FormToken: formtoken.New(), ToEmail: "payer@example.com", AmountRials: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		acct := withdrawaltest.VerifiedAccount(t, db, shopID, withdrawaltest.Sheba("017", 42))
		r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: shopID, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.PayoutWorker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		w := withdrawaltest.Get(t, db, r.Withdrawal.PublicID)
		if _, err := app.Server.Bank.Payouts().Settle(w.Provider, w.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.Withdrawals.Resolve(ctx, w.ID, withdrawal.ActorWorker); err != nil {
			t.Fatal(err)
		}
		if _, _, err := app.Server.Charges.MakeMerchant(ctx, shopID, "Book Shop", nil); err != nil {
			t.Fatal(err)
		}
		ch, err := app.Server.Charges.Create(ctx, charge.CreateRequest{MerchantUserID: shopID, FormToken: formtoken.New(),
			AmountRials: 20_000, OrderID: "o-1", Capture: charge.CaptureAutomatic})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.Charges.Confirm(ctx, payerID, ch.Charge.PublicID); err != nil {
			t.Fatal(err)
		}

		want := map[string]struct{ id, href string }{
			webhook.TypeTransferSent:    {tr.Transfer.PublicID, routes.AdminTransfer(tr.Transfer.PublicID)},
			webhook.TypeWithdrawalPaid:  {w.PublicID, routes.AdminWithdrawal(w.PublicID)},
			webhook.TypeChargeSucceeded: {ch.Charge.PublicID, routes.AdminCharge(ch.Charge.PublicID)},
		}
		kinds := map[string]string{webhook.TypeTransferSent: "transfer", webhook.TypeWithdrawalPaid: "withdrawal", webhook.TypeChargeSucceeded: "charge"}
		for lang, label := range map[string]map[string]string{
			"en": {"transfer": "Transfer", "withdrawal": "Withdrawal", "charge": "Charge"},
			"fa": {"transfer": "انتقال", "withdrawal": "برداشت", "charge": "پرداخت فروشگاه"},
		} {
			doc := apptest.Parse(admin.GetIn(lang, routes.AdminWebhook(ep.ID)).Body)
			seen := map[string]bool{}
			rows, cells := doc.TestIDs("delivery-row"), doc.TestIDs("delivery-subject")
			if len(rows) != len(cells) {
				t.Fatalf("%s: %d rows, %d subject cells", lang, len(rows), len(cells))
			}
			for i, row := range rows {
				typ := row.Attr("data-type")
				exp, ok := want[typ]
				if !ok {
					continue
				}
				seen[typ] = true
				cell := cells[i]
				hrefs, text := cell.Attrs("href"), cell.Text()
				if cell.Attr("data-kind") != kinds[typ] || len(hrefs) != 1 || hrefs[0] != exp.href ||
					!strings.Contains(text, exp.id) || !strings.Contains(text, label[kinds[typ]]) {
					t.Errorf("%s (%s): subject %q %v %q, want %s %s → %s", typ, lang, cell.Attr("data-kind"), hrefs, text, kinds[typ], exp.id, exp.href)
				}
			}
			if len(seen) != len(want) {
				t.Fatalf("%s: rows of %v, want all of %v", lang, seen, want)
			}
		}
	})
}
