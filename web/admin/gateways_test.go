package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// TestAdminGatewaySwitch: the admin's gateways page shows each gateway's
// switch, breaker and latency; switching one off takes it out of the
// top-up form and makes a top-up asking for it refused, at once and
// without a restart (a second instance on the same database sees it
// too), the audit log records who did it; payments already at it are
// still verified there; switched on again, it is offered again.
func TestAdminGatewaySwitch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		if _, err := app.Server.Auth.SignUp(context.Background(), "boss@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		payer, payURL := app.StartTopUp(t, "payer-"+string(db.Dialect)+"@example.com", "20000") // at zarinpal

		admin.Get(routes.AdminGateways + "?lang=en")
		page := admin.Get(routes.AdminGateways)
		if page.Status != http.StatusOK || strings.Count(page.Body, `data-testid="gateway-row"`) != 4 || // zarinpal, zibal, sep, mellat
			!strings.Contains(page.Body, `data-gateway="zarinpal" data-off="false" data-state="closed"`) ||
			!strings.Contains(page.Body, `data-operation="request"`) {
			t.Fatalf("gateways page: %d %.3000s", page.Status, page.Body)
		}
		csrf := apptest.Input(page.Body, "_csrf")
		if r := admin.Post(routes.AdminGatewaySwitch("zarinpal"), url.Values{"_csrf": {csrf}, "off": {"1"}, "note": {"bank maintenance"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("switch off: %d", r.Status)
		}
		if r := admin.Post(routes.AdminGatewaySwitch("paypal"), url.Values{"_csrf": {csrf}, "off": {"1"}}); r.Status != http.StatusNotFound {
			t.Errorf("an unknown gateway: %d", r.Status)
		}
		if r := admin.Get(routes.AdminGateways); !strings.Contains(r.Body, `data-gateway="zarinpal" data-off="true"`) {
			t.Errorf("the page does not show zarinpal off")
		}

		// Off: not on the form, a top-up asking for it refused, one without
		// a choice goes to the next one offered, Zibal.
		form := payer.Get(routes.TopUp)
		if strings.Contains(form.Body, `value="zarinpal"`) {
			t.Errorf("the form still offers zarinpal")
		}
		tok := apptest.Input(form.Body, "token")
		if r := payer.Post(routes.TopUp, url.Values{"_csrf": {apptest.Input(form.Body, "_csrf")}, "token": {tok}, "amount": {"30000"}, "gateway": {"zarinpal"}}); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("asking for a gateway switched off: %d", r.Status)
		}
		if r := payer.PostTopUp(apptest.Input(form.Body, "_csrf"), apptest.Input(payer.Get(routes.TopUp).Body, "token"), "30000"); r.Status != http.StatusSeeOther || !strings.Contains(r.Location, routes.Sandbank+"/start/") {
			t.Errorf("a top-up while zarinpal is off: %d %q", r.Status, r.Location)
		}
		// Another instance on the same database sees it at once.
		if db.Dialect == store.Postgres {
			other := apptest.Start(t, db, apptest.Options{})
			offers, err := other.Server.TopUps.Offered(context.Background())
			if err != nil || len(offers) != 3 || offers[0].Name != "zibal" {
				t.Errorf("another instance offers %v, %v", offers, err)
			}
		}
		// The payment already at Zarinpal is still verified there.
		back := payer.PayAtBank(payURL, "pay")
		if r := payer.Get(back); apptest.TopUpStatus(r.Body) != "credited" {
			t.Errorf("the zarinpal payment after the switch: %q", apptest.TopUpStatus(r.Body))
		}
		// The audit log says who and why.
		audit := admin.Get(routes.AdminAudit)
		if !strings.Contains(audit.Body, `data-action="gateway_switch"`) || !strings.Contains(audit.Body, "\u2068Zarinpal\u2069 off: \u2068bank maintenance\u2069") {
			t.Errorf("the audit log does not record the switch")
		}
		// On again.
		if r := admin.Post(routes.AdminGatewaySwitch("zarinpal"), url.Values{"_csrf": {csrf}, "off": {"0"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("switch on: %d", r.Status)
		}
		if form := payer.Get(routes.TopUp); !strings.Contains(form.Body, `value="zarinpal"`) {
			t.Errorf("zarinpal is not offered again")
		}
		if n := app.CountAudit(t, "gateway_switch"); n != 2 {
			t.Errorf("%d audit rows, want 2", n)
		}
		// Every gateway off: the form says top-ups are paused before the
		// payer types an amount, and a submit starts nothing.
		if form := payer.Get(routes.TopUp); strings.Contains(form.Body, `data-testid="no-gateway"`) {
			t.Errorf("the notice shows while gateways are on")
		}
		for _, name := range []string{"zarinpal", "zibal", "sep", "mellat"} {
			if r := admin.Post(routes.AdminGatewaySwitch(name), url.Values{"_csrf": {csrf}, "off": {"1"}, "note": {"all off"}}); r.Status != http.StatusSeeOther {
				t.Fatalf("switch %s off: %d", name, r.Status)
			}
		}
		before := topuptest.Count(t, db)
		form = payer.Get(routes.TopUp)
		if !strings.Contains(form.Body, `data-testid="no-gateway"`) || strings.Contains(form.Body, `name="gateway"`) {
			t.Errorf("every gateway off: the form has no notice, or offers a gateway")
		}
		if r := payer.PostTopUp(apptest.Input(form.Body, "_csrf"), apptest.Input(form.Body, "token"), "30000"); r.Status < 400 {
			t.Errorf("a top-up with every gateway off: %d", r.Status)
		}
		if n := topuptest.Count(t, db); n != before {
			t.Errorf("a top-up with every gateway off made %d payments", n-before)
		}
		apptest.CheckInvariants(t, db)
	})
}
