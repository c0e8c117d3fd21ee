package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
	"github.com/kifpool/kifpool/web/api"
)

// TestWithdrawalWebhooks: two API withdrawals through the built-in
// bank's payout provider, one paid and then failed by hand at the
// provider (returned), the other failed. The partner gets
// withdrawal.paid, withdrawal.returned and withdrawal.failed, each once,
// signed, valid against openapi.json's webhooks, paid before returned;
// the returned event's withdrawal is what GET /api/v1/withdrawals/{id}
// answers. The document refuses a withdrawal.paid whose withdrawal is
// not paid. The wallet's ledger names the account of the withdrawal's
// lines in both languages, as the history does.
func TestWithdrawalWebhooks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
		ctx := context.Background()
		c, uid := f.user(t, "payee@example.com", apitoken.ScopeWithdraw)
		withdrawaltest.FundUser(t, db, uid, 10_000_000)
		account := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 42))
		rec := &hookReceiver{t: t, spec: f.spec, events: map[string]map[string]any{}}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		_, secret, err := f.app.Server.Webhooks.Create(ctx, uid, srv.URL+"/kifpool",
			[]string{webhook.TypeWithdrawalPaid, webhook.TypeWithdrawalFailed, webhook.TypeWithdrawalReturned}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.secret = secret

		var ids []string
		for i, rials := range []int64{1_000_000, 2_000_000} {
			a := c.post(routes.APIWithdrawals, fmt.Sprintf("wd-%d", i), fmt.Sprintf(`{"bank_account_id":%d,"amount_rials":%d}`, account, rials))
			if a.Status != http.StatusCreated {
				t.Fatalf("create: %d %s", a.Status, a.Body)
			}
			ids = append(ids, decode[api.Withdrawal](t, a).ID)
		}
		if _, err := f.app.Server.PayoutWorker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		book := f.app.Server.Bank.Payouts()
		resolve := func(publicID string) {
			t.Helper()
			w := withdrawaltest.Get(t, db, publicID)
			if _, err := f.app.Server.Withdrawals.Resolve(ctx, w.ID, withdrawal.ActorWorker); err != nil {
				t.Fatal(err)
			}
		}
		paid, failed := withdrawaltest.Get(t, db, ids[0]), withdrawaltest.Get(t, db, ids[1])
		if _, err := book.Settle(paid.Provider, paid.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := book.Fail(failed.Provider, failed.PublicID); err != nil {
			t.Fatal(err)
		}
		resolve(paid.PublicID)
		resolve(failed.PublicID)
		if _, err := book.Return(paid.Provider, paid.PublicID); err != nil {
			t.Fatal(err)
		}
		resolve(paid.PublicID)

		s := webhook.NewSender(f.app.Server.Webhooks, webhook.SenderOptions{BaseBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		testwait.Eventually(t, 20*time.Second, "three withdrawal events at the receiver", func() bool {
			if _, err := s.DeliverDue(ctx); err != nil {
				t.Fatal(err)
			}
			return len(rec.byType(webhook.TypeWithdrawalPaid))+len(rec.byType(webhook.TypeWithdrawalFailed))+len(rec.byType(webhook.TypeWithdrawalReturned)) >= 3
		})
		got := map[string][]map[string]any{}
		for _, typ := range []string{webhook.TypeWithdrawalPaid, webhook.TypeWithdrawalFailed, webhook.TypeWithdrawalReturned} {
			got[typ] = rec.byType(typ)
			if len(got[typ]) != 1 {
				t.Fatalf("%d %s events, want 1", len(got[typ]), typ)
			}
		}
		of := func(typ string) map[string]any { return got[typ][0]["withdrawal"].(map[string]any) }
		if of(webhook.TypeWithdrawalPaid)["id"] != paid.PublicID || of(webhook.TypeWithdrawalPaid)["status"] != "paid" ||
			of(webhook.TypeWithdrawalFailed)["id"] != failed.PublicID || of(webhook.TypeWithdrawalFailed)["status"] != "failed" {
			t.Errorf("paid %v, failed %v", of(webhook.TypeWithdrawalPaid), of(webhook.TypeWithdrawalFailed))
		}
		var want map[string]any
		if err := json.Unmarshal([]byte(c.get(routes.APIWithdrawal(paid.PublicID)).Body), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(of(webhook.TypeWithdrawalReturned), want) {
			t.Errorf("withdrawal.returned's withdrawal %v, GET answers %v", of(webhook.TypeWithdrawalReturned), want)
		}
		rec.mu.Lock()
		var order []string
		for _, id := range rec.order {
			if ev := rec.events[id]; ev["withdrawal"].(map[string]any)["id"] == paid.PublicID {
				order = append(order, ev["type"].(string))
			}
		}
		rec.mu.Unlock()
		if !reflect.DeepEqual(order, []string{webhook.TypeWithdrawalPaid, webhook.TypeWithdrawalReturned}) {
			t.Errorf("the paid withdrawal's events arrived as %v", order)
		}
		schema := f.spec.doc.Webhooks[webhook.TypeWithdrawalPaid].Post.RequestBody.Value.Content["application/json"].Schema.Value
		var ev map[string]any
		raw, _ := json.Marshal(got[webhook.TypeWithdrawalFailed][0])
		_ = json.Unmarshal(raw, &ev)
		ev["type"] = webhook.TypeWithdrawalPaid
		if err := schema.VisitJSON(ev); err == nil {
			t.Error("openapi.json accepts a withdrawal.paid event whose withdrawal failed")
		}
		ledger := decode[api.LedgerPage](t, c.get(routes.APIWalletLedger))
		lines := map[string]api.LedgerEntry{}
		for _, e := range ledger.Items {
			if e.Withdrawal != nil {
				lines[e.Kind+" "+e.Withdrawal.ID] = e
			} else if e.Kind == "withdrawal" || e.Kind == "withdrawal_return" {
				t.Errorf("a %s line without its withdrawal: %+v", e.Kind, e)
			}
		}
		for _, tc := range []struct{ kind, id, en, fa string }{
			{"withdrawal", paid.PublicID, "to your account at Bank Melli Iran …0042", "به حساب شما در بانک ملی ایران …۰۰۴۲"},
			{"withdrawal_return", paid.PublicID, "back from your account at Bank Melli Iran …0042", "برگشت از حساب شما در بانک ملی ایران …۰۰۴۲"},
		} {
			e, ok := lines[tc.kind+" "+tc.id]
			if !ok || e.Withdrawal.DescriptionEN != tc.en || e.Withdrawal.DescriptionFA != tc.fa || e.Withdrawal.IBANLast4 != "0042" ||
				e.Withdrawal.Bank.Code != "017" {
				t.Errorf("%s line of %s: %+v %+v", tc.kind, tc.id, e, e.Withdrawal)
			}
		}
		if len(lines) != 2 {
			t.Errorf("%d withdrawal lines, want 2 (the failed one moved no money)", len(lines))
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}
