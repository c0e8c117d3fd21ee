package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/web/api"
)

// hookReceiver is a partner's endpoint: a real HTTP server that verifies
// each delivery's signature, validates it against the OpenAPI document's
// webhooks, answers from a script, and keeps what it accepted by event id
// (a deduplicating receiver).
type hookReceiver struct {
	t      *testing.T
	spec   *spec
	secret string
	mu     sync.Mutex
	fail   int // answer 500 to this many deliveries first
	calls  int
	events map[string]map[string]any // event id → body
	order  []string
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if err := webhook.Verify(r.secret, req.Header.Get(webhook.HeaderSignature), body, time.Now(), 5*time.Minute); err != nil {
		r.t.Errorf("delivery with a bad signature: %v", err)
		w.WriteHeader(400)
		return
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		r.t.Errorf("delivery body %q: %v", body, err)
		return
	}
	typ, _ := ev["type"].(string)
	hook, ok := r.spec.doc.Webhooks[typ]
	if !ok || hook.Post == nil {
		r.t.Errorf("event type %q is not in openapi.json's webhooks", typ)
		return
	}
	if err := hook.Post.RequestBody.Value.Content["application/json"].Schema.Value.VisitJSON(ev); err != nil {
		r.t.Errorf("%s delivery does not match openapi.json: %v\n%s", typ, err, body)
	}
	for _, p := range hook.Post.Parameters {
		if p.Value.In == "header" {
			if err := p.Value.Schema.Value.VisitJSON(req.Header.Get(p.Value.Name)); err != nil {
				r.t.Errorf("header %s: %v", p.Value.Name, err)
			}
		}
	}
	if ev["event_id"] != req.Header.Get(webhook.HeaderEventID) {
		r.t.Errorf("Kifpool-Event-Id %q, body's %v", req.Header.Get(webhook.HeaderEventID), ev["event_id"])
	}
	if r.fail > 0 {
		r.fail--
		w.WriteHeader(500)
		return
	}
	id := ev["event_id"].(string)
	if _, seen := r.events[id]; !seen {
		r.events[id] = ev
		r.order = append(r.order, id)
	}
	w.WriteHeader(204)
}

func (r *hookReceiver) byType(typ string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, id := range r.order {
		if r.events[id]["type"] == typ {
			out = append(out, r.events[id])
		}
	}
	return out
}

// A top-up with a return_url on a registered origin: after the bank the
// payer's browser goes there with topup_id and status; an unregistered
// origin (or a lookalike) is a return_url_not_allowed problem and starts
// nothing. The credit's topup.credited event reaches the partner's
// endpoint signed, valid against openapi.json's webhooks, once (as the
// deduplicating receiver sees it) although the endpoint first answers
// 500, and its topup is what GET /api/v1/topups/{id} answers.
func TestReturnURLAndWebhook(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
		ctx := context.Background()
		c, uid := f.user(t, "partner@example.com", apitoken.ScopeTopUp)
		hooks := f.app.Server.Webhooks
		rec := &hookReceiver{t: t, spec: f.spec, fail: 1, events: map[string]map[string]any{}}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		_, secret, err := hooks.Create(ctx, uid, srv.URL+"/kifpool", []string{webhook.TypeCredited, webhook.TypeFailed}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.secret = secret
		if _, err := hooks.AddOrigin(ctx, uid, "https://shop.example"); err != nil {
			t.Fatal(err)
		}

		for i, bad := range []string{"https://evil.example/done", "https://shop.example.evil.example/", "https://shop.example@evil.example/",
			"http://shop.example/done", "https://shop.example:8443/done", "javascript:alert(1)"} {
			a := c.post(routes.APITopUps, "bad-"+string(rune('a'+i)), `{"amount_rials": 500000, "return_url": "`+bad+`"}`)
			if a.Status != http.StatusUnprocessableEntity || a.Code() != string(api.CodeReturnURL) {
				t.Fatalf("return_url %s: %d %s", bad, a.Status, a.Body)
			}
		}
		if n := topuptest.Count(t, db); n != 0 {
			t.Fatalf("%d payments after refusals", n)
		}

		a := c.post(routes.APITopUps, "with-return", `{"amount_rials": 500000, "return_url": "https://shop.example/done?order=42"}`)
		if a.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", a.Status, a.Body)
		}
		tu := decode[api.TopUp](t, a)
		back, err := f.app.Server.Bank.Pay(apptest.Authority(*tu.PaymentURL))
		if err != nil {
			t.Fatal(err)
		}
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(back)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Scheme+"://"+loc.Host+loc.Path != "https://shop.example/done" ||
			loc.Query().Get("order") != "42" || loc.Query().Get("topup_id") != tu.ID || loc.Query().Get("status") != "credited" {
			t.Fatalf("after the bank: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}

		// Cancelled at the bank: the partner hears status=failed.
		cancelled := decode[api.TopUp](t, c.post(routes.APITopUps, "cancelled", `{"amount_rials": 500000, "return_url": "https://shop.example/done"}`))
		back, err = f.app.Server.Bank.Cancel(apptest.Authority(*cancelled.PaymentURL))
		if err != nil {
			t.Fatal(err)
		}
		resp, err = noFollow.Get(back)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		loc, _ = url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Host != "shop.example" ||
			loc.Query().Get("topup_id") != cancelled.ID || loc.Query().Get("status") != "failed" {
			t.Fatalf("after a cancel at the bank: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}

		// Without return_url: today's page.
		b := decode[api.TopUp](t, c.post(routes.APITopUps, "without", `{"amount_rials": 500000}`))
		back, err = f.app.Server.Bank.Pay(apptest.Authority(*b.PaymentURL))
		if err != nil {
			t.Fatal(err)
		}
		resp, err = noFollow.Get(back)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("return without return_url: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}

		// Deliveries: the test drives a sender (short backoff, real time).
		s := webhook.NewSender(hooks, webhook.SenderOptions{BaseBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		testwait.Eventually(t, 20*time.Second, "two topup.credited events and one topup.failed at the receiver", func() bool {
			if _, err := s.DeliverDue(ctx); err != nil {
				t.Fatal(err)
			}
			return len(rec.byType(webhook.TypeCredited)) >= 2 && len(rec.byType(webhook.TypeFailed)) >= 1
		})
		got := rec.byType(webhook.TypeCredited)
		if len(got) != 2 {
			t.Fatalf("received %d topup.credited events, want 2 (one per credit)", len(got))
		}
		failed := rec.byType(webhook.TypeFailed)
		if len(failed) != 1 || failed[0]["topup"].(map[string]any)["id"] != cancelled.ID {
			t.Fatalf("topup.failed events: %v", failed)
		}
		for _, ev := range append(got, failed...) {
			topup := ev["topup"].(map[string]any)
			var want map[string]any
			if err := json.Unmarshal([]byte(c.get(routes.APITopUp(topup["id"].(string))).Body), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(topup, want) {
				t.Errorf("event's topup %v, GET answers %v", topup, want)
			}
		}
		if rec.calls < 3 {
			t.Fatalf("%d calls: the 500 was not retried", rec.calls)
		}
		// Nothing more to send: delivered once each.
		n, _ := s.DeliverDue(ctx)
		delivered := 0
		for _, d := range f.app.Deliveries(t) {
			if d.Status == "delivered" {
				delivered++
			}
		}
		if n != 0 || delivered != 3 {
			t.Fatalf("after delivery: %d claimed", n)
		}
		// The validation above can fail: the document refuses a credited
		// event with another status, an unknown field, a bad event id or a
		// top-up missing a field.
		schema := f.spec.doc.Webhooks[webhook.TypeCredited].Post.RequestBody.Value.Content["application/json"].Schema.Value
		for name, spoil := range map[string]func(ev, topup map[string]any){
			"status":       func(_, tu map[string]any) { tu["status"] = "failed" },
			"extra field":  func(ev, _ map[string]any) { ev["amount"] = 1 },
			"event id":     func(ev, _ map[string]any) { ev["event_id"] = "evt_x" },
			"type":         func(ev, _ map[string]any) { ev["type"] = "topup.failed" },
			"no ref_id":    func(_, tu map[string]any) { delete(tu, "ref_id") },
			"amount":       func(_, tu map[string]any) { tu["amount_rials"] = "500000" },
			"created_at":   func(ev, _ map[string]any) { ev["created_at"] = "yesterday" },
			"topup extras": func(_, tu map[string]any) { tu["user_id"] = 7 },
		} {
			var ev map[string]any
			raw, _ := json.Marshal(got[0])
			_ = json.Unmarshal(raw, &ev)
			spoil(ev, ev["topup"].(map[string]any))
			if err := schema.VisitJSON(ev); err == nil {
				t.Errorf("openapi.json accepts a topup.credited event with a spoilt %s", name)
			}
		}
	})
}
