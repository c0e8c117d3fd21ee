package pay_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// The unpaid page is honest at the gateways reached by POST too (issue 18,
// item 5): a payment the payer left at SEP's or Mellat's page says it is
// not paid yet, never "no need to pay again", and offers the way back to
// the bank's page (SEP's GET link, Mellat's form: it has no link) and "I
// won't pay this one", in both languages. "I won't pay" never fails a
// payment the bank may hold money for: paid at SEP, its receipt says so
// and it is credited; Mellat cannot be asked before its callback, so the
// payment stays open and only leaves "in progress".
func TestUnpaidPageAtPOSTGateways(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, gw := range postGateways {
			t.Run(gw.name, func(t *testing.T) {
				app, _, bankURL := postGatewayApp(t, db, gw, nil)
				c := app.NewClient(t)
				c.SignUp("left-at-" + gw.name + "@example.com")
				tok := startPOST(t, c, gw, bankURL, "50000")
				publicID := topuptest.ByAuthority(t, db, tok).PublicID
				for _, lang := range []i18n.Lang{i18n.FA, i18n.EN} {
					page := c.GetIn(string(lang), routes.TopUpPage(publicID))
					doc := apptest.Parse(page.Body)
					if page.Status != http.StatusOK || doc.TestID("result-unpaid") == nil || doc.TestID("abandon") == nil ||
						strings.Contains(page.Body, html.EscapeString(i18n.T(lang, "result.pending_text"))) {
						t.Fatalf("%s: the unpaid page: %d\n%s", lang, page.Status, page.Body)
					}
					back := doc.TestID("back-to-bank")
					if back == nil || back.Text() != i18n.T(lang, "unpaid.back_to_bank") {
						t.Fatalf("%s: no way back to the bank", lang)
					}
				}
				// The way back reaches the bank's page, its buttons there.
				doc := apptest.Parse(c.Get(routes.TopUpPage(publicID)).Body)
				var bank apptest.Response
				if form := doc.TestID("back-to-bank-form"); form != nil {
					if form.Attr("method") != "post" || form.Attr("action") != bankURL+gw.startPath || doc.Input(gw.tokenField) != tok {
						t.Fatalf("the form back to the bank posts %s to %s", doc.Input(gw.tokenField), form.Attr("action"))
					}
					bank = c.Post(form.Attr("action"), url.Values{gw.tokenField: {tok}})
				} else {
					bank = c.Get(doc.TestID("back-to-bank").Attr("href"))
				}
				if bankDoc := apptest.Parse(bank.Body); bank.Status != http.StatusOK || bankDoc.TestID("bank-pay") == nil {
					t.Fatalf("back at the bank: %d", bank.Status)
				}

				// Paid at the bank; the browser never came back. "I won't
				// pay this one" asks first.
				finish(t, bankURL, gw.name, tok, "pay")
				if r := c.Submit(routes.TopUpPage(publicID), routes.TopUpAbandon(publicID), nil); r.Status != http.StatusSeeOther {
					t.Fatalf("abandon: %d", r.Status)
				}
				after := c.Get(routes.TopUpPage(publicID))
				status := apptest.TopUpStatus(after.Body)
				switch gw.name {
				case "sep": // its receipt names the payment paid: credited
					if status != "credited" || c.Balance() != 500_000 {
						t.Fatalf("paid at SEP, then abandoned: %q, balance %d", status, c.Balance())
					}
				default: // nothing to ask before the callback: still open
					if status != "awaiting_payment" || apptest.Parse(after.Body).TestID("unpaid-dismissed") == nil {
						t.Fatalf("abandoned at %s: %q", gw.name, status)
					}
					if strings.Contains(c.Get(routes.Wallet).Body, routes.TopUpPage(publicID)) {
						t.Fatal("a dismissed payment is still in progress on the wallet page")
					}
				}
				if topuptest.ByPublicID(t, db, publicID).Status == topup.StatusFailed {
					t.Fatal("a payment the bank was paid for was failed")
				}
			})
		}
	})
}
