package browsertest

import (
	"context"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// partnerPages is a partner's site: a checkout page that posts the payer
// to the bank (the API's payment_form, for SEP and Mellat) and the page
// the payer lands on after the bank (the top-up's return_url).
var partnerPages = template.Must(template.New("partner").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Partner shop</title></head><body>
{{if .Form}}<form method="post" action="{{.Form.Action}}">{{range .Form.Fields}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">{{end}}
<button type="submit" data-testid="partner-checkout">Pay</button></form>
{{else}}<h1 data-testid="partner-landing">Back at the partner</h1><p data-testid="partner-status">{{.Status}}</p>{{end}}
</body></html>`))

// Issue 31, item 7: an API top-up's return_url in a real browser, for
// every gateway of the built-in sandbox bank. The payer pays on the bank's
// page; the bank sends them to our callback, which hands them over to the
// partner's page. The bank's page carries the bank's own headers, so the
// browser lets the chain of redirects after its form reach the partner
// (the app's form-action 'self' stopped it at our callback).
func TestReturnURLReachesThePartnerForEveryGateway(t *testing.T) {
	for _, gw := range []string{"zarinpal", "zibal", "sep", "mellat"} {
		t.Run(gw, func(t *testing.T) {
			var form *gateway.PayForm
			partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				data := map[string]any{"Status": r.URL.Query().Get("status")}
				if r.URL.Path == "/shop/checkout" {
					data["Form"] = form
				}
				_ = partnerPages.Execute(w, data)
			}))
			defer partner.Close()

			app, b := startApp(t, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
			ctx := context.Background()
			u, err := app.Server.Auth.SignUp(ctx, gw+"-partner@example.com", "correct horse battery", "user", "en")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := app.Server.Webhooks.AddOrigin(ctx, u.ID, partner.URL); err != nil {
				t.Fatal(err)
			}
			ret, err := app.Server.Webhooks.CheckReturnURL(ctx, u.ID, partner.URL+"/done?order=7")
			if err != nil {
				t.Fatal(err)
			}
			r, err := app.Server.TopUp.Start(ctx, topup.Request{UserID: u.ID, Email: u.Email, FormToken: topup.NewFormToken(),
				Amount: topup.Rials(250_000), Gateway: gw, ReturnURL: ret})
			if err != nil {
				t.Fatal(err)
			}
			if r.PayForm != nil {
				form = r.PayForm
				b.Go(partner.URL + "/shop/checkout")
				b.Click("partner-checkout")
			} else {
				b.Go(r.PayURL)
			}
			b.Wait("bank-pay")
			b.Click("bank-pay")
			b.Wait("partner-landing")
			loc, err := url.Parse(b.location())
			if err != nil || loc.Scheme+"://"+loc.Host != partner.URL || loc.Query().Get("order") != "7" ||
				loc.Query().Get("topup_id") != r.TopUp.PublicID || loc.Query().Get("status") != "credited" {
				t.Fatalf("landed on %q, want the partner's page with topup_id %s and status credited", b.location(), r.TopUp.PublicID)
			}
			if got := topuptest.Count(t, app.DB, topup.StatusCredited); got != 1 {
				t.Fatalf("%d credited payments", got)
			}
			apptest.CheckInvariants(t, app.DB)
			b.CheckNoProblems()
		})
	}
}
