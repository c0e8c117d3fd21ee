package browsertest

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/sandbank"
)

// The POST gateways in a real browser: the top-up's page posts the payer
// to the bank by its script (no inline script under the app's CSP), the
// bank's page takes the token from the form, and after Pay the bank posts
// the payer back the same way; the callback verifies (and for Mellat
// settles) and the payer sees the receipt. Cancel leaves the balance.
func TestPOSTGatewaysInABrowser(t *testing.T) {
	for _, gw := range []string{"sep", "mellat"} {
		t.Run(gw, func(t *testing.T) {
			app, b := startApp(t, apptest.Options{})
			b.SignUp(gw + "-browser@example.com")
			b.FillTopUp("25000")
			b.Click("gateway-" + gw)
			b.Click("topup-submit")
			b.Wait("bank-pay") // through the auto-posted form, at the bank's own path
			// The bank's own language switch posts the token again: the
			// same page in English, still payable (issue 29, item 7).
			b.Click("bank-lang")
			b.Run(chromedp.WaitVisible(`html[lang="en"] `+tid("bank-pay"), chromedp.ByQuery))
			b.Click("bank-pay")
			if s := b.Status(); s != "credited" {
				t.Fatalf("status %q after paying", s)
			}
			if got := b.Balance(); got != 250_000 {
				t.Fatalf("balance %d", got)
			}
			var settled, verified int
			for _, p := range app.Server.Bank.Payments() {
				if p.Gateway == gw && p.State == sandbank.StateVerified {
					verified++
					if !p.SettledAt.IsZero() {
						settled++
					}
				}
			}
			if verified != 1 || (gw == "mellat") != (settled == 1) {
				t.Fatalf("bank: %d verified, %d settled", verified, settled)
			}
			b.FillTopUp("30000")
			b.Click("gateway-" + gw)
			b.Click("topup-submit")
			b.Wait("bank-cancel")
			b.Click("bank-cancel")
			if s := b.Status(); s != "failed" {
				t.Fatalf("status %q after cancelling", s)
			}
			// The failed page offers the same amount through another
			// gateway (a new attempt): its form is audited too.
			b.Wait("try-other-gateway")
			b.Audit(gw + ": failed payment, another gateway offered")
			if got := b.Balance(); got != 250_000 {
				t.Fatalf("balance %d after a cancel", got)
			}
			apptest.CheckInvariants(t, app.DB)
			b.CheckNoProblems()
		})
	}
}
