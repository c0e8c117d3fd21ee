package browsertest

import (
	"context"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// verifyLinkRE finds a link that confirms an address (routes.EmailVerify)
// in a mail.
var verifyLinkRE = regexp.MustCompile(`http://[^\s"<]+` + regexp.QuoteMeta(routes.EmailVerify("")) + `[A-Za-z0-9_-]+`)

// A person signs up in a real browser; the wallet says the address is not
// confirmed, and a shop's checkout offers no Pay until it is; the mail
// arrives over a real SMTP exchange, its link opens a page that asks, and
// its button confirms and leads back to the checkout, now open; the wallet
// then no longer asks. Every page passes axe, in both languages.
func TestConfirmAddressEndToEnd(t *testing.T) {
	axeSource(t)
	browserContext(t)
	for _, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			smtpSrv := mailtest.Start(t, mailtest.Options{})
			db := storetest.New(t, store.SQLite)
			app := apptest.Start(t, db, apptest.Options{
				Env:        map[string]string{"SMTP_URL": smtpSrv.URL, "WORKER_INTERVAL": "0", "MAIL_INTERVAL": "1h"},
				Background: true,
			})
			email := "confirm-" + lang + "@example.com"
			shop, err := app.Server.Auth.SignUp(context.Background(), "shop-"+lang+"@example.com", password, auth.RoleUser, lang)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := app.Server.Charges.MakeMerchant(context.Background(), shop.ID, "Book Shop", nil); err != nil {
				t.Fatal(err)
			}
			ch, err := app.Server.Charges.Create(context.Background(), charge.CreateRequest{MerchantUserID: shop.ID, FormToken: formtoken.New(),
				AmountRials: 120_000, Description: "Order 1", OrderID: "V-1", ReturnURL: "https://shop.example/back", Capture: charge.CaptureAutomatic})
			if err != nil {
				t.Fatal(err)
			}
			b := NewTab(t, app.URL)
			b.Go(routes.SignUp + "?lang=" + lang)
			b.SignUp(email)
			b.Wait("verify-notice")
			b.Audit("wallet with the address not confirmed")
			b.Go(routes.Checkout(ch.Charge.PublicID))
			b.Wait("checkout-status")
			if s := b.Attr(tid("checkout-status"), "data-status"); s != "unconfirmed" {
				t.Fatalf("checkout before the address is confirmed: %q", s)
			}
			b.Audit("checkout with the address not confirmed")

			// The outbox is kicked by the sign-up: no tick to wait for.
			m := smtpSrv.Wait(t, 20*time.Second, func(m mailtest.Received) bool { return m.To == email })
			link := verifyLinkRE.FindString(m.Text)
			if link == "" {
				t.Fatalf("confirmation mail without a link:\n%s", m.Text)
			}
			u, _ := url.Parse(link)
			b.Go(u.Path)
			b.Wait("verify-form")
			b.Audit("confirm the address")
			b.Click("verify-submit")
			b.Wait("verify-done")
			b.Audit("address confirmed")
			b.Click("verify-to-checkout")
			b.Wait("checkout-short") // open now; the new wallet is empty
			b.Go(routes.Wallet)
			b.Wait("balance")
			var notices int
			b.Eval(`document.querySelectorAll('[data-testid="verify-notice"]').length`, &notices)
			if notices != 0 {
				t.Fatal("the wallet still asks to confirm the address")
			}
			b.Go(u.Path)
			b.Wait("verify-invalid")
			b.Audit("spent confirmation link")
			b.CheckNoProblems()
		})
	}
}
