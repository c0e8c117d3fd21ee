package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/web/api"
)

// TestRefundedWebhook: an API top-up refunded to the card in two parts
// (an admin's action, through the built-in bank's AddRefund) sends the
// partner one topup.refunded event per part, signed, valid against
// openapi.json's webhooks, its topup what GET /api/v1/topups/{id}
// answers and its card_refund the part with the running total; the
// document refuses a refunded event without its card_refund.
func TestRefundedWebhook(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
		ctx := context.Background()
		c, uid := f.user(t, "partner@example.com", apitoken.ScopeTopUp)
		_, adminID := f.user(t, "admin@example.com", apitoken.ScopeRead) // who started the refunds (the admin's page is web/admin's)
		rec := &hookReceiver{t: t, spec: f.spec, events: map[string]map[string]any{}}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		_, secret, err := f.app.Server.Webhooks.Create(ctx, uid, srv.URL+"/kifpool", []string{webhook.TypeRefunded}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.secret = secret

		a := c.post(routes.APITopUps, "to-refund", `{"amount_rials": 500000}`)
		if a.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", a.Status, a.Body)
		}
		tu := decode[api.TopUp](t, a)
		back, err := f.app.Server.Bank.Pay(apptest.Authority(*tu.PaymentURL))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(back)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		for _, amount := range []int64{200_000, 300_000} {
			cr, err := f.app.Server.CardRefunds.Start(ctx, cardrefund.StartRequest{TopUpPublicID: tu.ID, AmountRials: amount,
				AdminID: adminID, Note: "the partner asked"})
			if err != nil || cr.Status != cardrefund.StatusRefunded {
				t.Fatalf("refund %d: %+v %v", amount, cr, err)
			}
		}
		s := webhook.NewSender(f.app.Server.Webhooks, webhook.SenderOptions{BaseBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		testwait.Eventually(t, 20*time.Second, "two topup.refunded events at the receiver", func() bool {
			if _, err := s.DeliverDue(ctx); err != nil {
				t.Fatal(err)
			}
			return len(rec.byType(webhook.TypeRefunded)) >= 2
		})
		got := rec.byType(webhook.TypeRefunded)
		if len(got) != 2 {
			t.Fatalf("received %d topup.refunded events, want 2", len(got))
		}
		var want map[string]any
		if err := json.Unmarshal([]byte(c.get(routes.APITopUp(tu.ID)).Body), &want); err != nil {
			t.Fatal(err)
		}
		for i, total := range []float64{200_000, 500_000} {
			if !reflect.DeepEqual(got[i]["topup"], want) {
				t.Errorf("event %d's topup %v, GET answers %v", i, got[i]["topup"], want)
			}
			cr := got[i]["card_refund"].(map[string]any)
			if cr["topup_refunded_rials"] != total || cr["status"] != "refunded" || cr["method"] != "refund" {
				t.Errorf("event %d's card_refund %v", i, cr)
			}
		}
		schema := f.spec.doc.Webhooks[webhook.TypeRefunded].Post.RequestBody.Value.Content["application/json"].Schema.Value
		var ev map[string]any
		raw, _ := json.Marshal(got[0])
		_ = json.Unmarshal(raw, &ev)
		delete(ev, "card_refund")
		if err := schema.VisitJSON(ev); err == nil {
			t.Error("openapi.json accepts a topup.refunded event without its card_refund")
		}
		apptest.CheckBankAgrees(t, db, f.app.Server.Bank)
		credited := f.spec.doc.Webhooks[webhook.TypeCredited].Post.RequestBody.Value.Content["application/json"].Schema.Value
		_ = json.Unmarshal(raw, &ev)
		ev["type"] = webhook.TypeCredited
		if err := credited.VisitJSON(ev); err == nil {
			t.Error("openapi.json accepts a topup.credited event with a card_refund")
		}
	})
}
