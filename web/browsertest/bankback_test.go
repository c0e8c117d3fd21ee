package browsertest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
)

// Back and reload at the bank (issue 29, item 6): the bank's page reloads
// as itself before paying, and the page the browser goes back to after
// paying is the bank's page of the paid payment, loaded as it is now: no
// live Pay button, no countdown, no "Confirm Form Resubmission" at the
// POST gateways (the pages answered to a POST make the payment page's GET
// address their history entry), and nothing is paid or credited again.
func TestBackAfterPaying(t *testing.T) {
	for _, tt := range []struct{ gw, path, finished string }{
		{"zarinpal", "/pg/StartPay/", "bank-paid"},
		{"sep", "/OnlinePG/SendToken", "bank-return"},
		{"mellat", "/pgwchannel/startpay.mellat", "bank-return"},
	} {
		t.Run(tt.gw, func(t *testing.T) {
			app, b := startApp(t, apptest.Options{})
			b.SignUp(tt.gw + "-back@example.com")
			b.FillTopUp("25000")
			b.Click("gateway-" + tt.gw)
			b.Click("topup-submit")
			b.Wait("bank-pay")
			// The bank's page, reached by a link or by the shop's post, is
			// in the history at its GET address: reloading it shows it
			// again (no "Confirm Form Resubmission"), still payable.
			if p := b.Path(); !strings.HasPrefix(p, routes.Sandbank+tt.path) {
				t.Fatalf("the bank's page is at %s, want %s", p, tt.path)
			}
			b.Run(chromedp.Reload())
			b.Wait("bank-pay")
			b.Click("bank-pay")
			if s := b.Status(); s != "credited" {
				t.Fatalf("status %q after paying", s)
			}
			b.Back()
			if p := b.Path(); !strings.HasPrefix(p, routes.Sandbank+tt.path) {
				t.Fatalf("Back led to %s, want the bank's page %s", p, tt.path)
			}
			b.Wait(tt.finished)
			var live struct {
				Pay, Timer, AutoPost bool
			}
			b.Eval(`({Pay: !!document.querySelector('[data-testid="bank-pay"]'),
				Timer: !!document.querySelector('[data-seconds-left]'),
				AutoPost: !!document.querySelector('form[data-autosubmit]')})`, &live)
			if live.Pay || live.Timer || live.AutoPost {
				t.Fatalf("the bank's page after Back: %+v", live)
			}
			// Reload changes nothing either.
			b.Run(chromedp.Reload())
			b.Wait(tt.finished)
			if got := b.Balance(); got != 250_000 {
				t.Fatalf("balance %d after Back and reload", got)
			}
			paid := 0
			for _, p := range app.Server.Bank.Payments() {
				if p.Gateway == tt.gw && !p.PaidAt.IsZero() {
					paid++
				}
			}
			if paid != 1 {
				t.Fatalf("%d payments paid at the bank", paid)
			}
			apptest.CheckInvariants(t, app.DB)
			b.CheckNoProblems()
		})
	}
}
