package wallet_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// TestGatewayChoiceAndFailover: with several gateways the form offers a
// radio group `gateway` (driver names, the first healthy preselected);
// the payer's choice is used. With Zarinpal down (fault injection: its
// request fails and its breaker opens) the failure page offers a new
// attempt with the same amount through another gateway, the form marks
// Zarinpal unavailable and preselects Zibal, and a top-up still asking
// for Zarinpal goes to Zibal (never by probing the bank). A payment that
// was already at Zarinpal stays there: its callback is answered from
// Zarinpal (pending while it is down), never restarted at Zibal.
func TestGatewayChoiceAndFailover(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{
			"BREAKER_MIN_REQUESTS": "1", "BREAKER_FAILURE_PERCENT": "50", "BREAKER_OPEN_TIMEOUT": "1h",
		}})
		c := app.NewClient(t)
		c.SignUp("choice-" + string(db.Dialect) + "@example.com")
		form := c.Get(routes.TopUp)
		if apptest.Parse(form.Body).TestID("gateway-choice") == nil ||
			!gatewayChecked(form.Body, "zarinpal") || gatewayChecked(form.Body, "zibal") ||
			gatewayRadio(form.Body, "zibal") == nil {
			t.Fatalf("the form's gateways: %.2000s", form.Body)
		}
		post := func(tomans, gw string) apptest.Response {
			t.Helper()
			page := c.Get(routes.TopUp)
			return c.Post(routes.TopUp, url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}, "token": {apptest.Input(page.Body, "token")},
				"amount": {tomans}, "gateway": {gw}})
		}
		// The payer's choice.
		if r := post("20000", "zibal"); r.Status != http.StatusSeeOther || !strings.Contains(r.Location, routes.Sandbank+"/start/") {
			t.Fatalf("zibal chosen: %d %q", r.Status, r.Location)
		}
		atZarinpal := post("30000", "zarinpal")
		if atZarinpal.Status != http.StatusSeeOther || !strings.Contains(atZarinpal.Location, routes.Sandbank+"/pg/StartPay/") {
			t.Fatalf("zarinpal chosen: %d %q", atZarinpal.Status, atZarinpal.Location)
		}
		if r := post("30000", "paypal"); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("an unknown gateway: %d", r.Status)
		}

		// Zarinpal down: the failure page offers a new attempt elsewhere.
		if err := app.Server.Bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"request": {ErrorRate: 1}}}); err != nil {
			t.Fatal(err)
		}
		failed := post("40000", "zarinpal")
		if failed.Status != http.StatusServiceUnavailable || apptest.Parse(failed.Body).TestID("try-other-gateway-note") == nil ||
			!gatewayChecked(failed.Body, "zibal") || apptest.Input(failed.Body, "amount") != "40000" {
			t.Fatalf("gateway failed page: %d", failed.Status)
		}
		form = c.Get(routes.TopUp)
		if apptest.Parse(form.Body).TestID("gateway-down-zarinpal") == nil || !gatewayChecked(form.Body, "zibal") {
			t.Errorf("the form while zarinpal is down does not mark it or preselect zibal")
		}
		// Still asking for Zarinpal: goes to Zibal, a new payment there.
		moved := post("50000", "zarinpal")
		if moved.Status != http.StatusSeeOther || !strings.Contains(moved.Location, routes.Sandbank+"/start/") {
			t.Fatalf("failover: %d %q", moved.Status, moved.Location)
		}
		byAmount := func(rials int64) []topup.TopUp {
			return topuptest.Select(t, db, func(p topup.TopUp) bool { return p.AmountRials == rials })
		}
		atZibal := 0
		for _, p := range byAmount(500000) {
			if p.Gateway == "zibal" {
				atZibal++
			}
		}
		if atZibal != 1 {
			t.Errorf("%d payments of 50,000 tomans at zibal", atZibal)
		}

		// The payment at Zarinpal: paid there, its callback is Zarinpal's
		// to answer (unknown while Zarinpal is down), never Zibal's.
		back, err := app.Server.Bank.Pay(apptest.Authority(atZarinpal.Location))
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Get(back); apptest.TopUpStatus(r.Body) == "credited" || apptest.TopUpStatus(r.Body) == "failed" {
			t.Errorf("callback while its gateway is down: %q, want pending", apptest.TopUpStatus(r.Body))
		}
		if gw := byAmount(300000)[0].Gateway; gw != "zarinpal" {
			t.Errorf("the zarinpal payment now says %q", gw)
		}
		var n int64
		for _, c := range topuptest.AllCalls(t, db) {
			if c.Gateway == "zibal" && c.Operation == "verify" {
				n++
			}
		}
		if n != 0 {
			t.Errorf("%d verifies asked of zibal", n)
		}
		apptest.CheckInvariants(t, db)
	})
}

// gatewayRadio is the form's radio button of gateway name, or nil.
func gatewayRadio(body, name string) *apptest.Element {
	for _, in := range apptest.Parse(body).Inputs("gateway") {
		if in.Attr("value") == name {
			return in
		}
	}
	return nil
}

// gatewayChecked reports whether the radio of gateway name is checked.
func gatewayChecked(body, name string) bool { return gatewayRadio(body, name).Has("checked") }
