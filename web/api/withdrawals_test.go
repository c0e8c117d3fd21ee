package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
	"github.com/kifpool/kifpool/web/api"
)

// TestBankAccountsAPI: the page's rules through the API: a verified
// account, the same one again (200), a mismatch refused (422, nothing
// stored), no upstream provider pending review, bad input refused; a
// read token reads, only a withdraw token adds.
func TestBankAccountsAPI(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	f := start(t, db, apptest.Options{})
	c, uid := f.user(t, "payee@example.com", apitoken.ScopeWithdraw)
	reader := f.token(t, uid, apitoken.ScopeRead)
	sheba := withdrawaltest.Sheba("017", 42)
	nc := withdrawaltest.NationalCode(123456)

	if a := reader.post(routes.APIBankAccounts, "", `{"iban":"`+sheba+`","national_code":"`+nc+`"}`); a.Status != http.StatusForbidden || a.Code() != "insufficient_scope" {
		t.Fatalf("a read token adds: %d %s", a.Status, a.Code())
	}
	a := c.post(routes.APIBankAccounts, "", `{"iban":"`+strings.ToLower(sheba[:4])+" "+sheba[4:]+`","national_code":"`+nc+`"}`)
	acct := decode[api.BankAccount](t, a)
	if a.Status != http.StatusCreated || acct.Status != "verified" || acct.IBAN != sheba || acct.Bank.NameEN != "Bank Melli Iran" || acct.Last4 != "0042" {
		t.Fatalf("add: %d %s", a.Status, a.Body)
	}
	if a := c.post(routes.APIBankAccounts, "", `{"iban":"`+sheba+`"}`); a.Status != http.StatusOK || decode[api.BankAccount](t, a).ID != acct.ID {
		t.Fatalf("again: %d %s", a.Status, a.Body)
	}
	other := withdrawaltest.Sheba("056", 7)
	f.app.Server.Bank.Payouts().SetOwner(other, nc, false)
	for _, tc := range []struct {
		body, code string
		status     int
	}{
		{`{"iban":"` + other + `"}`, "bank_account_mismatch", http.StatusUnprocessableEntity},
		{`{"iban":"IR12"}`, "iban_invalid", http.StatusUnprocessableEntity},
		{`{"iban":"` + other + `","national_code":"0013542419"}`, "national_code_differs", http.StatusConflict},
	} {
		if a := c.post(routes.APIBankAccounts, "", tc.body); a.Status != tc.status || a.Code() != tc.code {
			t.Errorf("%s: %d %s", tc.body, a.Status, a.Code())
		}
	}
	if a := c.do(http.MethodPost, routes.APIBankAccounts, nil, `{"iban":"`+other+`","extra":1}`, true); a.Code() != "invalid_body" {
		t.Errorf("an extra field: %s", a.Code())
	}
	if err := f.app.Server.Bank.Payouts().SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{payouts.Zibal: {NoUpstream: true}}}); err != nil {
		t.Fatal(err)
	}
	if a := c.post(routes.APIBankAccounts, "", `{"iban":"`+withdrawaltest.Sheba("012", 8)+`"}`); a.Status != http.StatusCreated || decode[api.BankAccount](t, a).Status != "pending_review" {
		t.Fatalf("no upstream: %d %s", a.Status, a.Body)
	}
	list := decode[api.BankAccountList](t, reader.get(routes.APIBankAccounts))
	if len(list.Items) != 2 {
		t.Fatalf("list %+v", list)
	}
}

// TestWithdrawalsAPI: POST needs the withdraw scope and an
// Idempotency-Key; the key makes retries (even at once) one withdrawal;
// each refusal has its problem type and holds nothing; GET lists and
// reads the owner's only.
func TestWithdrawalsAPI(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, uid := f.user(t, "payee@example.com", apitoken.ScopeWithdraw)
		topup := f.token(t, uid, apitoken.ScopeTopUp)
		withdrawaltest.FundUser(t, db, uid, 10_000_000)
		verified := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 42))
		pending := withdrawaltest.PendingAccount(t, db, uid, withdrawaltest.Sheba("056", 43))
		body := func(account, rials int64) string {
			return fmt.Sprintf(`{"bank_account_id":%d,"amount_rials":%d}`, account, rials)
		}
		if a := topup.post(routes.APIWithdrawals, "k0", body(verified, 1_000_000)); a.Status != http.StatusForbidden {
			t.Fatalf("a topup token withdraws: %d", a.Status)
		}
		if a := c.do(http.MethodPost, routes.APIWithdrawals, map[string]string{"Idempotency-Key": ""}, body(verified, 1_000_000), true); a.Code() != "idempotency_key_missing" {
			t.Fatalf("no key: %s", a.Code())
		}
		for _, tc := range []struct {
			name, body, code string
		}{
			{"insufficient", body(verified, 20_000_000), "insufficient_funds"},
			{"unverified", body(pending, 1_000_000), "bank_account_unverified"},
			{"another's", body(verified+pending+10, 1_000_000), "bank_account_unverified"},
			{"too small", body(verified, 1_000), "amount_too_small"},
			{"not whole tomans", body(verified, 1_000_005), "amount_invalid"},
		} {
			if a := c.post(routes.APIWithdrawals, "k-"+strings.ReplaceAll(tc.name, " ", "-"), tc.body); a.Code() != tc.code {
				t.Errorf("%s: %d %s", tc.name, a.Status, a.Code())
			}
		}
		if n := len(withdrawaltest.ByUser(t, db, uid)); n != 0 {
			t.Fatalf("%d withdrawals from refusals", n)
		}
		// The same key eight times at once: one withdrawal, one answer.
		var wg sync.WaitGroup
		ids := make([]string, 8)
		for i := range ids {
			wg.Go(func() {
				for {
					a := c.post(routes.APIWithdrawals, "key-1", body(verified, 1_000_000))
					if a.Code() == "idempotency_key_in_use" {
						continue
					}
					if a.Status != http.StatusCreated {
						t.Errorf("retry %d: %d %s", i, a.Status, a.Body)
						return
					}
					ids[i] = decode[api.Withdrawal](t, a).ID
					return
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("ids %v", ids)
			}
		}
		if a := c.post(routes.APIWithdrawals, "key-1", body(verified, 2_000_000)); a.Code() != "idempotency_key_reused" {
			t.Fatalf("another body: %s", a.Code())
		}
		// The operator raises WITHDRAWAL_MIN_RIALS above it and restarts:
		// key-1's retry (its answer lost) is still that withdrawal, not
		// amount_too_small (which says nothing was withdrawn).
		raised := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WITHDRAWAL_MIN_RIALS": "2000000"}})
		again := newAPIClient(t, raised, f.spec, c.token).post(routes.APIWithdrawals, "key-1", body(verified, 1_000_000))
		if again.Status != http.StatusCreated || decode[api.Withdrawal](t, again).ID != ids[0] || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("key-1 again after the minimum rose: %d %s", again.Status, again.Body)
		}
		// A key whose first request died unanswered (what it made cannot
		// be told before its use case runs) is "in use", not refused as
		// too small: the client retries later with it.
		amount := int64(1_000_000)
		dead := idempotency.Request{UserID: uid, Key: "key-dead", Method: http.MethodPost, Path: routes.APIWithdrawals,
			Fingerprint: idempotency.Fingerprint(http.MethodPost, routes.APIWithdrawals, idempotency.Int("bank_account_id", &verified), idempotency.Int("amount_rials", &amount))}
		if out, rec, err := f.app.Server.Keys.Begin(context.Background(), dead); err != nil || out != idempotency.Acquired {
			t.Fatalf("begin key-dead: %v %v", out, err)
		} else if err := f.app.Server.Keys.Release(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if a := newAPIClient(t, raised, f.spec, c.token).post(routes.APIWithdrawals, "key-dead", body(verified, 1_000_000)); a.Status != http.StatusConflict ||
			a.Code() != "idempotency_key_in_use" || a.Header.Get("Retry-After") == "" {
			t.Fatalf("a key whose request died, after the minimum rose: %d %s", a.Status, a.Body)
		}
		w := decode[api.Withdrawal](t, c.get(routes.APIWithdrawal(ids[0])))
		if w.Status != "requested" || w.AmountRials != 1_000_000 || w.BankAccountID != verified || w.Rail != "paya" || w.IBANLast4 != "0042" {
			t.Fatalf("get %+v", w)
		}
		if _, err := f.app.Server.PayoutWorker.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if w := decode[api.Withdrawal](t, c.get(routes.APIWithdrawal(ids[0]))); w.Status != "submitted" {
			t.Fatalf("after the worker: %+v", w)
		}
		// The daily limit (2 bn rials by default).
		withdrawaltest.FundUser(t, db, uid, 3_000_000_000)
		if a := c.post(routes.APIWithdrawals, "key-2", body(verified, 2_000_000_000)); a.Code() != "daily_limit_exceeded" {
			t.Fatalf("daily: %d %s", a.Status, a.Body)
		}
		page := decode[api.WithdrawalPage](t, c.get(routes.APIWithdrawals))
		if len(page.Items) != 1 || page.NextCursor != nil {
			t.Fatalf("list %+v", page)
		}
		stranger, _ := f.user(t, "stranger@example.com", apitoken.ScopeRead)
		if a := stranger.get(routes.APIWithdrawal(ids[0])); a.Status != http.StatusNotFound {
			t.Fatalf("another's withdrawal: %d", a.Status)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}
