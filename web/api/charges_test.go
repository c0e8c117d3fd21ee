package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
	"github.com/kifpool/kifpool/web/api"
)

// merchant signs up a merchant with a return origin and returns its
// client (scope charges) and id.
func (f *fixture) merchant(t *testing.T, addr string) (*apiClient, int64) {
	t.Helper()
	ctx := context.Background()
	u, err := f.app.Server.Auth.SignUp(ctx, addr, "correct horse battery", "", "en")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.app.Server.Charges.MakeMerchant(ctx, u.ID, "Shop "+addr, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.app.Server.Webhooks.AddOrigin(ctx, u.ID, "https://shop.example"); err != nil {
		t.Fatal(err)
	}
	return f.token(t, u.ID, apitoken.ScopeCharges), u.ID
}

func chargeBody(rials int64, order, capture string) string {
	return fmt.Sprintf(`{"amount_rials": %d, "description": "two books", "order_id": %q, "return_url": "https://shop.example/back?x=1", "capture": %q}`,
		rials, order, capture)
}

func TestChargeAPI(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		ctx := context.Background()
		shop, shopID := f.merchant(t, "shop@example.com")
		_, payerID := f.user(t, "payer@example.com", apitoken.ScopeRead)
		wallet := f.fund(t, payerID, 1_000_000)

		first := shop.post(routes.APICharges, "c-1", chargeBody(300_000, "o-1", "automatic"))
		if first.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", first.Status, first.Body)
		}
		ch := decode[api.Charge](t, first)
		if ch.Status != charge.StatusRequiresConfirmation || ch.AmountRials != 300_000 || ch.OrderID != "o-1" ||
			ch.CheckoutURL != f.app.URL+routes.Checkout(ch.ID) || ch.ExpiresAt.Sub(ch.CreatedAt) != 30*time.Minute {
			t.Fatalf("created %+v (app %s)", ch, f.app.URL)
		}
		// A replay: the first answer, byte for byte.
		again := shop.post(routes.APICharges, "c-1", chargeBody(300_000, "o-1", "automatic"))
		if again.Status != http.StatusCreated || again.Body != first.Body || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s", again.Status, again.Body)
		}
		// The merchant removes its return origin meanwhile: the replay is
		// still the charge made, not return_url_not_allowed.
		origins, err := f.app.Server.Webhooks.Origins(ctx, shopID)
		if err != nil || len(origins) != 1 {
			t.Fatalf("origins %+v %v", origins, err)
		}
		if err := f.app.Server.Webhooks.DeleteOrigin(ctx, shopID, origins[0].ID); err != nil {
			t.Fatal(err)
		}
		if again := shop.post(routes.APICharges, "c-1", chargeBody(300_000, "o-1", "automatic")); again.Status != http.StatusCreated || again.Body != first.Body {
			t.Fatalf("replay after the origin was removed: %d %s", again.Status, again.Body)
		}
		if a := shop.post(routes.APICharges, "c-1b", chargeBody(300_000, "o-1b", "automatic")); a.Code() != "return_url_not_allowed" {
			t.Fatalf("a new charge to a removed origin: %d %s", a.Status, a.Body)
		}
		if _, err := f.app.Server.Webhooks.AddOrigin(ctx, shopID, "https://shop.example"); err != nil {
			t.Fatal(err)
		}
		// The same order with another key: 409 order_id_taken.
		if a := shop.post(routes.APICharges, "c-2", chargeBody(300_000, "o-1", "automatic")); a.Status != http.StatusConflict || a.Code() != "order_id_taken" {
			t.Fatalf("order id taken: %d %s", a.Status, a.Body)
		}
		for _, tc := range []struct {
			body, code  string
			specRefuses bool
		}{
			{`{"amount_rials": 0, "order_id": "x"}`, "amount_invalid", true},
			{`{"amount_rials": 10, "order_id": ""}`, "order_id_invalid", true},
			{`{"amount_rials": 10, "order_id": "x", "capture": "later"}`, "capture_invalid", true},
			{`{"amount_rials": 10, "order_id": "x", "return_url": "https://evil.example/"}`, "return_url_not_allowed", false},
		} {
			if a := shop.do(http.MethodPost, routes.APICharges, map[string]string{"Idempotency-Key": "bad-" + tc.code}, tc.body, tc.specRefuses); a.Code() != tc.code {
				t.Errorf("%s: %d %s", tc.body, a.Status, a.Body)
			}
		}
		// A token of another scope, or a user who is no merchant, makes no charge.
		reader, _ := f.user(t, "reader@example.com", apitoken.ScopeRead)
		if a := reader.post(routes.APICharges, "r-1", chargeBody(1_000, "o-9", "automatic")); a.Status != http.StatusForbidden || a.Code() != "insufficient_scope" {
			t.Fatalf("read scope: %d %s", a.Status, a.Body)
		}
		if _, _, err := f.app.Server.Tokens.Create(ctx, apitoken.CreateInput{UserID: payerID, Name: "x", Scope: "charges"}); err == nil {
			t.Fatal("a payer's token took the scope charges")
		}

		// The payer pays at the checkout (the page's use case).
		if _, err := f.app.Server.Charges.Confirm(ctx, payerID, ch.ID); err != nil {
			t.Fatal(err)
		}
		got := decode[api.Charge](t, shop.get(routes.APICharge(ch.ID)))
		if got.Status != charge.StatusSucceeded || got.CapturedRials != 300_000 || got.RefundedRials != 0 || len(got.Refunds) != 0 {
			t.Fatalf("after payment %+v", got)
		}
		if ledgertest.Balance(t, db, wallet) != 700_000 {
			t.Fatalf("payer's balance %d", ledgertest.Balance(t, db, wallet))
		}
		// Refunds: partial, repeated, replayed, never beyond the captured.
		refund := func(key string, rials int64) api.ChargeRefund {
			a := shop.post(routes.APIChargeRefunds(ch.ID), key, fmt.Sprintf(`{"amount_rials": %d}`, rials))
			if a.Status != http.StatusCreated {
				t.Fatalf("refund %s: %d %s", key, a.Status, a.Body)
			}
			return decode[api.ChargeRefund](t, a)
		}
		r1 := refund("r-1", 100_000)
		if r1.AmountRials != 100_000 || r1.Charge.RefundedRials != 100_000 || len(r1.Charge.Refunds) != 1 {
			t.Fatalf("refund %+v", r1)
		}
		if r := refund("r-1", 100_000); r.ID != r1.ID {
			t.Fatalf("refund replay %+v", r)
		}
		if a := shop.post(routes.APIChargeRefunds(ch.ID), "r-2", `{"amount_rials": 200001}`); a.Status != http.StatusConflict || a.Code() != "refund_exceeds_captured" {
			t.Fatalf("refund too much: %d %s", a.Status, a.Body)
		}
		refund("r-3", 200_000)
		if ledgertest.Balance(t, db, wallet) != 1_000_000 {
			t.Fatalf("payer's balance after refunds %d", ledgertest.Balance(t, db, wallet))
		}
		if a := shop.post(routes.APIChargeCancel(ch.ID), "", ""); a.Status != http.StatusConflict || a.Code() != "charge_not_cancelable" {
			t.Fatalf("cancel a paid charge: %d %s", a.Status, a.Body)
		}

		// Manual capture: authorized, captured once, the rest released.
		man := decode[api.Charge](t, shop.post(routes.APICharges, "c-3", chargeBody(400_000, "o-2", "manual")))
		if a := shop.post(routes.APIChargeCapture(man.ID), "", `{"amount_rials": 1000}`); a.Status != http.StatusConflict || a.Code() != "charge_not_capturable" {
			t.Fatalf("capture unconfirmed: %d %s", a.Status, a.Body)
		}
		if _, err := f.app.Server.Charges.Confirm(ctx, payerID, man.ID); err != nil {
			t.Fatal(err)
		}
		if got := decode[api.Charge](t, shop.get(routes.APICharge(man.ID))); got.Status != charge.StatusAuthorized || got.HoldExpiresAt == nil {
			t.Fatalf("authorized %+v", got)
		}
		capt := shop.post(routes.APIChargeCapture(man.ID), "cap-1", `{"amount_rials": 250000}`)
		if capt.Status != http.StatusOK || decode[api.Charge](t, capt).CapturedRials != 250_000 {
			t.Fatalf("capture: %d %s", capt.Status, capt.Body)
		}
		if a := shop.post(routes.APIChargeCapture(man.ID), "cap-1", `{"amount_rials": 250000}`); a.Body != capt.Body || a.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("capture replay: %d %s", a.Status, a.Body)
		}
		// Without a key, a second capture of the same amount answers with
		// the first; of another amount (or all of it, by an empty body),
		// it is refused: it was not captured so.
		if a := shop.post(routes.APIChargeCapture(man.ID), "", `{"amount_rials": 250000}`); a.Status != http.StatusOK ||
			decode[api.Charge](t, a).CapturedRials != 250_000 {
			t.Fatalf("second capture: %d %s", a.Status, a.Body)
		}
		for _, body := range []string{`{"amount_rials": 5}`, ""} {
			if a := shop.post(routes.APIChargeCapture(man.ID), "", body); a.Status != http.StatusConflict || a.Code() != "charge_not_capturable" {
				t.Fatalf("second capture for another amount (%q): %d %s", body, a.Status, a.Body)
			}
		}
		if ledgertest.Balance(t, db, wallet) != 750_000 || ledgertest.Held(t, db, wallet) != 0 {
			t.Fatalf("after capture: balance %d held %d", ledgertest.Balance(t, db, wallet), ledgertest.Held(t, db, wallet))
		}
		// Cancel a checkout, twice: once.
		c3 := decode[api.Charge](t, shop.post(routes.APICharges, "c-4", chargeBody(1_000, "o-3", "manual")))
		for range 2 {
			if a := shop.post(routes.APIChargeCancel(c3.ID), "", ""); a.Status != http.StatusOK || decode[api.Charge](t, a).Status != charge.StatusCanceled {
				t.Fatalf("cancel: %d %s", a.Status, a.Body)
			}
		}
		// Lists by status; another merchant sees none of them.
		page := decode[api.ChargePage](t, shop.get(routes.APICharges+"?status=succeeded"))
		if len(page.Items) != 2 || page.NextCursor != nil {
			t.Fatalf("succeeded page %+v", page)
		}
		if page := decode[api.ChargePage](t, shop.get(routes.APICharges+"?limit=1")); len(page.Items) != 1 || page.NextCursor == nil {
			t.Fatalf("first page %+v", page)
		}
		if a := shop.do(http.MethodGet, routes.APICharges+"?status=paid", nil, "", true); a.Code() != "invalid_parameter" {
			t.Fatalf("bad status: %d %s", a.Status, a.Body)
		}
		other, _ := f.merchant(t, "other@example.com")
		if a := other.get(routes.APICharge(ch.ID)); a.Status != http.StatusNotFound {
			t.Fatalf("another merchant's charge: %d", a.Status)
		}
		if a := other.post(routes.APIChargeRefunds(ch.ID), "x", `{"amount_rials": 1}`); a.Status != http.StatusNotFound {
			t.Fatalf("another merchant's refund: %d %s", a.Status, a.Body)
		}
		_ = shopID
		apptest.CheckInvariants(t, db)
	})
}

// Fifty parallel captures of one authorization make one capture: those
// of one amount all answer with it (200), those of another amount, each
// its own, are refused unless theirs is the one captured.
func TestChargeParallelCaptures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		shop, _ := f.merchant(t, "shop@example.com")
		_, payerID := f.user(t, "payer@example.com", apitoken.ScopeRead)
		wallet := f.fund(t, payerID, 1_000_000)
		ch := decode[api.Charge](t, shop.post(routes.APICharges, "c-1", chargeBody(500_000, "o-1", "manual")))
		if _, err := f.app.Server.Charges.Confirm(context.Background(), payerID, ch.ID); err != nil {
			t.Fatal(err)
		}
		shop.fail = t.Errorf
		amount := func(i int) int64 {
			if i%2 == 0 {
				return 100_000
			}
			return int64(100_000 + i)
		}
		var wg sync.WaitGroup
		status := make([]int, 50)
		captured := make([]int64, 50)
		for i := range status {
			wg.Go(func() {
				a := shop.post(routes.APIChargeCapture(ch.ID), "", fmt.Sprintf(`{"amount_rials": %d}`, amount(i)))
				status[i] = a.Status
				switch {
				case a.Status == http.StatusOK:
					captured[i] = decode[api.Charge](t, a).CapturedRials
				case a.Status != http.StatusConflict || a.Code() != "charge_not_capturable":
					t.Errorf("capture %d: %d %s", i, a.Status, a.Body)
				}
			})
		}
		wg.Wait()
		got := decode[api.Charge](t, shop.get(routes.APICharge(ch.ID)))
		for i := range status {
			if want := map[bool]int{true: http.StatusOK, false: http.StatusConflict}[amount(i) == got.CapturedRials]; status[i] != want {
				t.Fatalf("capture %d of %d: %d, want %d (%d captured)", i, amount(i), status[i], want, got.CapturedRials)
			}
			if status[i] == http.StatusOK && captured[i] != got.CapturedRials {
				t.Fatalf("capture %d answered %d, the charge has %d", i, captured[i], got.CapturedRials)
			}
		}
		if got.Status != charge.StatusSucceeded || ledgertest.Balance(t, db, wallet) != 1_000_000-got.CapturedRials || ledgertest.Held(t, db, wallet) != 0 {
			t.Fatalf("charge %s, balance %d held %d captured %d", got.Status, ledgertest.Balance(t, db, wallet), ledgertest.Held(t, db, wallet), got.CapturedRials)
		}
		apptest.CheckInvariants(t, db)
	})
}

// Every charge event reaches the merchant's endpoint, signed, valid
// against openapi.json's webhooks, in order per charge.
func TestChargeWebhooks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		// The clock starts 31 minutes back and moves to now once every
		// charge is made, so that a checkout left alone is past its 30
		// minutes and every delivery is signed at the receiver's time.
		clock := withdrawaltest.ClockAt(time.Now().Add(-31 * time.Minute))
		f := start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}, Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		shop, shopID := f.merchant(t, "shop@example.com")
		_, payerID := f.user(t, "payer@example.com", apitoken.ScopeRead)
		f.fund(t, payerID, 1_000_000)
		rec := &hookReceiver{t: t, spec: f.spec, events: map[string]map[string]any{}}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		_, secret, err := f.app.Server.Webhooks.Create(ctx, shopID, srv.URL+"/kifpool", webhook.ChargeTypes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.secret = secret
		auto := decode[api.Charge](t, shop.post(routes.APICharges, "c-1", chargeBody(100_000, "o-1", "automatic")))
		man := decode[api.Charge](t, shop.post(routes.APICharges, "c-2", chargeBody(100_000, "o-2", "manual")))
		man2 := decode[api.Charge](t, shop.post(routes.APICharges, "c-3", chargeBody(100_000, "o-3", "manual")))
		gone := decode[api.Charge](t, shop.post(routes.APICharges, "c-4", chargeBody(100_000, "o-4", "manual")))
		stale := decode[api.Charge](t, shop.post(routes.APICharges, "c-5", chargeBody(100_000, "o-5", "automatic")))
		for _, id := range []string{auto.ID, man.ID, man2.ID} {
			if _, err := f.app.Server.Charges.Confirm(ctx, payerID, id); err != nil {
				t.Fatal(err)
			}
		}
		shop.post(routes.APIChargeCapture(man.ID), "", `{"amount_rials": 60000}`)
		shop.post(routes.APIChargeCancel(man2.ID), "", "")
		shop.post(routes.APIChargeRefunds(auto.ID), "r-1", `{"amount_rials": 1000}`)
		if _, err := f.app.Server.Charges.CancelCheckout(ctx, payerID, gone.ID); err != nil {
			t.Fatal(err)
		}
		// The last checkout is never confirmed: past its 30 minutes the
		// worker's round expires it, and only it.
		clock.Advance(31 * time.Minute)
		if n, err := f.app.Server.Charges.ExpireDue(ctx, 10); err != nil || n != 1 {
			t.Fatalf("expired %d, %v", n, err)
		}
		s := webhook.NewSender(f.app.Server.Webhooks, webhook.SenderOptions{BaseBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		want := map[string]int{webhook.TypeChargeSucceeded: 1, webhook.TypeChargeAuthorized: 2, webhook.TypeChargeCaptured: 1,
			webhook.TypeChargeCanceled: 2, webhook.TypeChargeExpired: 1, webhook.TypeChargeRefunded: 1}
		testwait.Eventually(t, 20*time.Second, "the charge events at the merchant's endpoint", func() bool {
			if _, err := s.DeliverDue(ctx); err != nil {
				t.Fatal(err)
			}
			for typ, n := range want {
				if len(rec.byType(typ)) != n {
					return false
				}
			}
			return true
		})
		refunded := rec.byType(webhook.TypeChargeRefunded)[0]
		body, _ := refunded["charge"].(map[string]any)
		if body["id"] != auto.ID || body["refunded_rials"] != float64(1000) || refunded["refund"] == nil {
			t.Fatalf("charge.refunded %v", refunded)
		}
		if expired, _ := rec.byType(webhook.TypeChargeExpired)[0]["charge"].(map[string]any); expired["id"] != stale.ID ||
			expired["status"] != string(charge.StatusExpired) {
			t.Fatalf("charge.expired %v", expired)
		}
		// In order per charge: authorized before captured.
		var seen []string
		for _, id := range rec.order {
			if c, _ := rec.events[id]["charge"].(map[string]any); c["id"] == man.ID {
				seen = append(seen, rec.events[id]["type"].(string))
			}
		}
		if len(seen) != 2 || seen[0] != webhook.TypeChargeAuthorized || seen[1] != webhook.TypeChargeCaptured {
			t.Fatalf("events of the manual charge %v", seen)
		}
		u, _ := url.Parse(auto.ReturnURL)
		if u.Host != "shop.example" {
			t.Fatalf("return_url %s", auto.ReturnURL)
		}
	})
}

// A key sent with a capture or a cancel is honoured as on refunds: the
// same key with another body, or on another charge, is refused and
// changes nothing; with the same body it answers the first answer.
func TestChargeCaptureCancelKeys(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		shop, _ := f.merchant(t, "shop@example.com")
		_, payerID := f.user(t, "payer@example.com", apitoken.ScopeRead)
		wallet := f.fund(t, payerID, 1_000_000)
		a := decode[api.Charge](t, shop.post(routes.APICharges, "c-1", chargeBody(400_000, "o-1", "manual")))
		b := decode[api.Charge](t, shop.post(routes.APICharges, "c-2", chargeBody(100_000, "o-2", "manual")))
		for _, id := range []string{a.ID, b.ID} {
			if _, err := f.app.Server.Charges.Confirm(context.Background(), payerID, id); err != nil {
				t.Fatal(err)
			}
		}
		if r := shop.post(routes.APIChargeCapture(a.ID), "k-1", `{"amount_rials": 250000}`); r.Status != http.StatusOK {
			t.Fatalf("capture: %d %s", r.Status, r.Body)
		}
		if r := shop.post(routes.APIChargeCapture(a.ID), "k-1", `{"amount_rials": 300000}`); r.Code() != "idempotency_key_reused" {
			t.Fatalf("same key, another amount: %d %s", r.Status, r.Body)
		}
		if r := shop.post(routes.APIChargeCapture(b.ID), "k-1", `{"amount_rials": 250000}`); r.Code() != "idempotency_key_reused" {
			t.Fatalf("same key, another charge: %d %s", r.Status, r.Body)
		}
		if r := shop.post(routes.APIChargeCancel(b.ID), "k-1", ""); r.Code() != "idempotency_key_reused" {
			t.Fatalf("same key, a cancel: %d %s", r.Status, r.Body)
		}
		first := shop.post(routes.APIChargeCancel(b.ID), "k-2", "")
		if first.Status != http.StatusOK {
			t.Fatalf("cancel: %d %s", first.Status, first.Body)
		}
		if r := shop.post(routes.APIChargeCancel(b.ID), "k-2", ""); r.Body != first.Body || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("cancel replay: %d %s", r.Status, r.Body)
		}
		if got := decode[api.Charge](t, shop.get(routes.APICharge(b.ID))); got.Status != charge.StatusCanceled {
			t.Fatalf("b %+v", got)
		}
		if ledgertest.Balance(t, db, wallet) != 750_000 || ledgertest.Held(t, db, wallet) != 0 {
			t.Fatalf("balance %d held %d", ledgertest.Balance(t, db, wallet), ledgertest.Held(t, db, wallet))
		}
		apptest.CheckInvariants(t, db)
	})
}

// CHARGE_HOLD_HOURS is how long an authorization holds the payer's
// money: the hold ends that many hours after the payer confirmed, not a
// second earlier; then the worker's round expires the charge and the
// payer's money is theirs to spend again.
func TestChargeHoldHours(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		f := start(t, db, apptest.Options{Env: map[string]string{"CHARGE_HOLD_HOURS": "2"}, Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		shop, shopID := f.merchant(t, "shop@example.com")
		payer, payerID := f.user(t, "payer@example.com", apitoken.ScopeRead)
		wallet := f.fund(t, payerID, 1_000_000)
		figures := func(balance, held, available int64) {
			t.Helper()
			if w := decode[api.Wallet](t, payer.get(routes.APIWallet)); w.BalanceRials != balance || w.HeldRials != held || w.AvailableRials != available {
				t.Fatalf("payer's wallet %+v, want balance %d held %d available %d", w, balance, held, available)
			}
			if ledgertest.Balance(t, db, wallet) != balance || ledgertest.Held(t, db, wallet) != held {
				t.Fatalf("payer's ledger: balance %d held %d", ledgertest.Balance(t, db, wallet), ledgertest.Held(t, db, wallet))
			}
		}
		ch := decode[api.Charge](t, shop.post(routes.APICharges, "c-1", chargeBody(400_000, "o-1", "manual")))
		// Confirmed a while after it was made: the hold counts from the
		// confirmation.
		clock.Advance(10 * time.Minute)
		confirmedAt := clock.Now().UTC().Truncate(time.Microsecond)
		if _, err := f.app.Server.Charges.Confirm(ctx, payerID, ch.ID); err != nil {
			t.Fatal(err)
		}
		got := decode[api.Charge](t, shop.get(routes.APICharge(ch.ID)))
		if got.Status != charge.StatusAuthorized || got.HoldExpiresAt == nil || !got.HoldExpiresAt.Equal(confirmedAt.Add(2*time.Hour)) {
			t.Fatalf("authorized %+v (hold until %v), want the hold until %v", got, got.HoldExpiresAt, confirmedAt.Add(2*time.Hour))
		}
		figures(1_000_000, 400_000, 600_000)

		// A second before the hold ends, the worker's round leaves it.
		clock.Advance(2*time.Hour - time.Second)
		if n, err := f.app.Server.Charges.ExpireDue(ctx, 10); err != nil || n != 0 {
			t.Fatalf("expired %d before the hold's end, %v", n, err)
		}
		if got := decode[api.Charge](t, shop.get(routes.APICharge(ch.ID))); got.Status != charge.StatusAuthorized {
			t.Fatalf("before the hold's end %+v", got)
		}
		figures(1_000_000, 400_000, 600_000)

		// Past it, the charge expires and the hold with it.
		clock.Advance(2 * time.Second)
		if n, err := f.app.Server.Charges.ExpireDue(ctx, 10); err != nil || n != 1 {
			t.Fatalf("expired %d after the hold's end, %v", n, err)
		}
		got = decode[api.Charge](t, shop.get(routes.APICharge(ch.ID)))
		if got.Status != charge.StatusExpired || got.CapturedRials != 0 || got.HoldExpiresAt == nil ||
			!got.HoldExpiresAt.Equal(confirmedAt.Add(2*time.Hour)) {
			t.Fatalf("after the hold's end %+v", got)
		}
		figures(1_000_000, 0, 1_000_000)
		if m, err := f.app.Server.Charges.Merchant(ctx, shopID); err != nil || m.PostedRials != 0 {
			t.Fatalf("merchant %+v, %v", m, err)
		}
		if a := shop.post(routes.APIChargeCapture(ch.ID), "", `{"amount_rials": 1000}`); a.Status != http.StatusConflict || a.Code() != "charge_expired" {
			t.Fatalf("capture an expired charge: %d %s", a.Status, a.Body)
		}
		figures(1_000_000, 0, 1_000_000)
	})
}

// A charge and a refund each take an Idempotency-Key: without one, 400
// idempotency_key_missing, and nothing is written: no charge, no
// refund, no money moved.
func TestChargeKeyRequired(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		ctx := context.Background()
		shop, shopID := f.merchant(t, "shop@example.com")
		_, payerID := f.user(t, "payer@example.com", apitoken.ScopeRead)
		wallet := f.fund(t, payerID, 1_000_000)
		paid := decode[api.Charge](t, shop.post(routes.APICharges, "c-1", chargeBody(300_000, "o-1", "automatic")))
		if _, err := f.app.Server.Charges.Confirm(ctx, payerID, paid.ID); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, path, body string
		}{
			{"charge", routes.APICharges, chargeBody(1_000, "o-2", "automatic")},
			{"refund", routes.APIChargeRefunds(paid.ID), `{"amount_rials": 1000}`},
		} {
			charges, refunds := f.app.ChargeRows(t)
			moves := ledgertest.Transactions(t, db)
			a := shop.do(http.MethodPost, tc.path, map[string]string{"Idempotency-Key": ""}, tc.body, true)
			if a.Status != http.StatusBadRequest || a.Code() != "idempotency_key_missing" {
				t.Errorf("%s without a key: %d %s", tc.name, a.Status, a.Body)
			}
			if c, r := f.app.ChargeRows(t); c != charges || r != refunds {
				t.Errorf("%s without a key: %d charges and %d refunds, had %d and %d", tc.name, c, r, charges, refunds)
			}
			if n := ledgertest.Transactions(t, db); n != moves {
				t.Errorf("%s without a key: %d ledger transactions, had %d", tc.name, n, moves)
			}
		}
		if cs, _, err := f.app.Server.Charges.List(ctx, charge.Filter{MerchantUserID: shopID, Limit: 10}); err != nil || len(cs) != 1 {
			t.Fatalf("%d charges, want 1 (%v)", len(cs), err)
		}
		if got := decode[api.Charge](t, shop.get(routes.APICharge(paid.ID))); got.RefundedRials != 0 || len(got.Refunds) != 0 {
			t.Fatalf("after a refund without a key %+v", got)
		}
		if ledgertest.Balance(t, db, wallet) != 700_000 {
			t.Fatalf("payer's balance %d", ledgertest.Balance(t, db, wallet))
		}
	})
}

// drainMerchant takes rials out of a merchant's balance by an operator's
// adjustment to suspense, written by the ledger under its rules (as the
// charge service's refund test drains one): a merchant whose money has
// left since its charges were paid.
func (f *fixture) drainMerchant(t *testing.T, merchantUserID, rials int64) {
	t.Helper()
	ctx := context.Background()
	m, err := f.app.Server.Charges.Merchant(ctx, merchantUserID)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(f.db)
	sus, err := l.EnsureAccount(ctx, ledger.AccountSuspense, ledger.CodeSuspense, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: fmt.Sprint("drain:merchant-", merchantUserID),
		Postings: ledger.Transfer(m.AccountID, sus, rials), At: time.Now()}); err != nil {
		t.Fatalf("drain merchant %d: %v", merchantUserID, err)
	}
}

// A refund the merchant's available balance cannot pay, though within
// what was captured, is refused with 422 insufficient_funds: no refund,
// refunded_rials as before, neither balance moved, and the key not kept.
func TestChargeRefundInsufficientFunds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		ctx := context.Background()
		shop, shopID := f.merchant(t, "shop@example.com")
		_, payerID := f.user(t, "payer@example.com", apitoken.ScopeRead)
		wallet := f.fund(t, payerID, 1_000_000)
		ch := decode[api.Charge](t, shop.post(routes.APICharges, "c-1", chargeBody(300_000, "o-1", "automatic")))
		if _, err := f.app.Server.Charges.Confirm(ctx, payerID, ch.ID); err != nil {
			t.Fatal(err)
		}
		if a := shop.post(routes.APIChargeRefunds(ch.ID), "r-1", `{"amount_rials": 50000}`); a.Status != http.StatusCreated {
			t.Fatalf("refund: %d %s", a.Status, a.Body)
		}
		merchantBalance := func() int64 {
			t.Helper()
			m, err := f.app.Server.Charges.Merchant(ctx, shopID)
			if err != nil {
				t.Fatal(err)
			}
			return m.AvailableRials()
		}
		f.drainMerchant(t, shopID, 210_000)
		if merchantBalance() != 40_000 || ledgertest.Balance(t, db, wallet) != 750_000 {
			t.Fatalf("before: merchant %d payer %d", merchantBalance(), ledgertest.Balance(t, db, wallet))
		}

		a := shop.post(routes.APIChargeRefunds(ch.ID), "r-2", `{"amount_rials": 100000}`)
		if a.Status != http.StatusUnprocessableEntity || a.Code() != "insufficient_funds" {
			t.Fatalf("refund beyond the merchant's balance: %d %s", a.Status, a.Body)
		}
		got := decode[api.Charge](t, shop.get(routes.APICharge(ch.ID)))
		if got.Status != charge.StatusSucceeded || got.RefundedRials != 50_000 || len(got.Refunds) != 1 {
			t.Fatalf("after a refused refund %+v", got)
		}
		if _, n := f.app.ChargeRows(t); n != 1 {
			t.Fatalf("%d refunds written, want 1", n)
		}
		if merchantBalance() != 40_000 || ledgertest.Balance(t, db, wallet) != 750_000 {
			t.Fatalf("after: merchant %d payer %d", merchantBalance(), ledgertest.Balance(t, db, wallet))
		}
		// The refused key was not kept: with it, what is left refunds.
		a = shop.post(routes.APIChargeRefunds(ch.ID), "r-2", `{"amount_rials": 40000}`)
		if a.Status != http.StatusCreated || decode[api.ChargeRefund](t, a).Charge.RefundedRials != 90_000 {
			t.Fatalf("refund what is left: %d %s", a.Status, a.Body)
		}
		if merchantBalance() != 0 || ledgertest.Balance(t, db, wallet) != 790_000 {
			t.Fatalf("at last: merchant %d payer %d", merchantBalance(), ledgertest.Balance(t, db, wallet))
		}
	})
}
