package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/web/api"
)

// A top-up at a gateway whose bank page opens only by POST carries the
// form to post (payment_form): Mellat's has no link (payment_url null),
// SEP's has both.
func TestTopUpPaymentForm(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "form@example.com", apitoken.ScopeTopUp)
		for _, tt := range []struct{ gw, path, field string }{
			{"mellat", routes.Sandbank + "/pgwchannel/startpay.mellat", "RefId"},
			{"sep", routes.Sandbank + "/OnlinePG/OnlinePG", "Token"},
		} {
			a := c.post(routes.APITopUps, "k-"+tt.gw, `{"amount_rials": 500000, "gateway": "`+tt.gw+`"}`)
			tu := decode[api.TopUp](t, a)
			if a.Status != http.StatusCreated || tu.Gateway != tt.gw || tu.PaymentForm == nil ||
				!strings.HasSuffix(tu.PaymentForm.Action, tt.path) || tu.PaymentForm.Fields[tt.field] == "" {
				t.Fatalf("%s: %d %s", tt.gw, a.Status, a.Body)
			}
			if (tu.PaymentURL == nil) != (tt.gw == "mellat") {
				t.Errorf("%s: payment_url %v", tt.gw, tu.PaymentURL)
			}
			got := c.get(routes.APITopUp(tu.ID))
			if again := decode[api.TopUp](t, got); again.PaymentForm == nil || again.PaymentForm.Fields[tt.field] != tu.PaymentForm.Fields[tt.field] {
				t.Errorf("%s: GET %s", tt.gw, got.Body)
			}
		}
	})
}
