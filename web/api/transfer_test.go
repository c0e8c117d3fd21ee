package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
	"github.com/kifpool/kifpool/web/api"
)

// fund puts rials into a user's wallet and returns the wallet's id.
func (f *fixture) fund(t *testing.T, userID, rials int64) int64 {
	t.Helper()
	w, err := f.app.Server.Wallets.ForUser(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	if rials > 0 {
		ledgertest.Fund(t, f.db, w.AccountID, rials, fmt.Sprint("user-", userID))
	}
	return w.ID
}

func TestTransferAPI(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"TRANSFER_DAILY_MAX_RIALS": "3000000"}})
		alice, aliceID := f.user(t, "alice@example.com", apitoken.ScopeTransfer)
		bob, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		aw, bw := f.fund(t, aliceID, 2_000_000), f.fund(t, bobID, 0)

		body := `{"to_email": "BOB@example.com", "amount_rials": 150000, "note": "rent"}`
		a := alice.post(routes.APITransfers, "tr-1", body)
		if a.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", a.Status, a.Body)
		}
		tr := decode[api.Transfer](t, a)
		if tr.Status != "completed" || tr.AmountRials != 150_000 || tr.ToEmail != "bob@example.com" || tr.Note != "rent" ||
			tr.Direction != "sent" || !strings.HasPrefix(tr.ID, "tr_") || tr.CreatedAt.IsZero() {
			t.Fatalf("transfer %+v", tr)
		}
		// The same key and body: the same answer, byte for byte.
		again := alice.post(routes.APITransfers, "tr-1", `{"amount_rials":150000,"note":"rent","to_email":"BOB@example.com"}`)
		if again.Status != http.StatusCreated || again.Body != a.Body || again.Header.Get(api.HeaderReplayed) != "true" {
			t.Fatalf("replay: %d %s %v", again.Status, again.Body, again.Header)
		}
		// The same key with another body: refused as top-ups refuse it.
		if r := alice.post(routes.APITransfers, "tr-1", `{"to_email": "bob@example.com", "amount_rials": 160000}`); r.Status != http.StatusConflict || r.Code() != "idempotency_key_reused" {
			t.Fatalf("reused key: %d %s", r.Status, r.Body)
		}
		if ledgertest.Balance(t, db, aw) != 1_850_000 || ledgertest.Balance(t, db, bw) != 150_000 {
			t.Fatalf("balances %d %d", ledgertest.Balance(t, db, aw), ledgertest.Balance(t, db, bw))
		}
		// Both read it; the recipient sees it received.
		if g := decode[api.Transfer](t, bob.get(routes.APITransfer(tr.ID))); g.Direction != "received" || g.FromEmail != "alice@example.com" {
			t.Fatalf("recipient's view %+v", g)
		}
		page := decode[api.TransferPage](t, bob.get(routes.APITransfers))
		if len(page.Items) != 1 || page.Items[0].ID != tr.ID || page.NextCursor != nil {
			t.Fatalf("recipient's list %+v", page)
		}
		carol, _ := f.user(t, "carol@example.com", apitoken.ScopeRead)
		if r := carol.get(routes.APITransfer(tr.ID)); r.Status != http.StatusNotFound || r.Code() != "not_found" {
			t.Fatalf("a third person: %d %s", r.Status, r.Body)
		}

		// Refusals: nothing written, nothing stored (the same key then works).
		for _, tc := range []struct{ name, body, code string }{
			{"short balance", `{"to_email": "bob@example.com", "amount_rials": 1900000}`, "insufficient_funds"},
			{"unknown", `{"to_email": "nobody@example.com", "amount_rials": 10000}`, "recipient_not_found"},
			{"self", `{"to_email": "alice@example.com", "amount_rials": 10000}`, "transfer_to_self"},
			{"too small", `{"to_email": "bob@example.com", "amount_rials": 10}`, "amount_too_small"},
			{"not whole tomans", `{"to_email": "bob@example.com", "amount_rials": 10005}`, "amount_invalid"},
			{"daily limit", `{"to_email": "bob@example.com", "amount_rials": 3000010}`, "daily_limit_exceeded"},
			{"note", `{"to_email": "bob@example.com", "amount_rials": 10000, "note": "` + strings.Repeat("n", 141) + `"}`, "note_invalid"},
			// A note is one line: it is shown in the receipts (the
			// recipient's plain-text mail among them).
			{"note of lines", `{"to_email": "bob@example.com", "amount_rials": 10000, "note": "thanks\n\nReceipt:\nhttps://evil.example"}`, "note_invalid"},
			{"note with a carriage return", `{"to_email": "bob@example.com", "amount_rials": 10000, "note": "a\rb"}`, "note_invalid"},
			{"note with a tab", `{"to_email": "bob@example.com", "amount_rials": 10000, "note": "a\tb"}`, "note_invalid"},
			{"note with a line separator", `{"to_email": "bob@example.com", "amount_rials": 10000, "note": "a\u2028b"}`, "note_invalid"},
			{"note with a paragraph separator", `{"to_email": "bob@example.com", "amount_rials": 10000, "note": "a\u2029b"}`, "note_invalid"},
		} {
			r := alice.do(http.MethodPost, routes.APITransfers, map[string]string{"Idempotency-Key": "refused"}, tc.body, tc.name == "note")
			if r.Status != http.StatusUnprocessableEntity || r.Code() != tc.code {
				t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
			}
		}
		// A note in Persian, with its half-space (ZWNJ), and English.
		if r := alice.post(routes.APITransfers, "one-line", `{"to_email": "bob@example.com", "amount_rials": 10000, "note": "اجاره\u200cی March"}`); r.Status != http.StatusCreated ||
			decode[api.Transfer](t, r).Note != "اجاره\u200cی March" {
			t.Fatalf("a note of one line with a ZWNJ: %d %s", r.Status, r.Body)
		}
		if r := alice.post(routes.APITransfers, "refused", `{"to_email": "bob@example.com", "amount_rials": 10000}`); r.Status != http.StatusCreated {
			t.Fatalf("the key of a refused request: %d %s", r.Status, r.Body)
		}
		// Scopes: a read or top-up token cannot send money.
		for _, scope := range []apitoken.Scope{apitoken.ScopeRead, apitoken.ScopeTopUp} {
			c := f.token(t, aliceID, scope)
			if r := c.post(routes.APITransfers, "scope-"+string(scope), body); r.Status != http.StatusForbidden || r.Code() != "insufficient_scope" {
				t.Errorf("scope %s: %d %s", scope, r.Status, r.Body)
			}
		}
		if r := alice.do(http.MethodPost, routes.APITransfers, map[string]string{"Idempotency-Key": ""}, body, true); r.Status != http.StatusBadRequest || r.Code() != "idempotency_key_missing" {
			t.Errorf("no key: %d %s", r.Status, r.Body)
		}
		if ledgertest.Balance(t, db, aw) != 1_830_000 {
			t.Fatalf("balance after refusals %d", ledgertest.Balance(t, db, aw))
		}
		apptest.CheckInvariants(t, db)
	})
}

// TRANSFER_MIN_RIALS is the transfer's own minimum, not the top-up's
// (whose default, 10,000 rials, is the transfer's default too): set to
// 50,000, a transfer of 40,000 is refused amount_too_small, naming that
// minimum, and writes nothing; one of 50,000 is sent, and its retry after
// the minimum rose is still that transfer.
func TestTransferAPIMinimumIsItsOwn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"TRANSFER_MIN_RIALS": "50000"}})
		alice, aliceID := f.user(t, "alice@example.com", apitoken.ScopeTransfer)
		bob, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		aw, bw := f.fund(t, aliceID, 1_000_000), f.fund(t, bobID, 0)

		r := alice.post(routes.APITransfers, "small", `{"to_email": "bob@example.com", "amount_rials": 40000}`)
		if r.Status != http.StatusUnprocessableEntity || r.Code() != "amount_too_small" || !strings.Contains(r.Body, "at least 50000") {
			t.Fatalf("40,000 rials under a minimum of 50,000: %d %s", r.Status, r.Body)
		}
		for who, c := range map[string]*apiClient{"sender": alice, "recipient": bob} {
			if page := decode[api.TransferPage](t, c.get(routes.APITransfers)); len(page.Items) != 0 {
				t.Fatalf("the %s's transfers after the refusal: %+v", who, page.Items)
			}
		}
		if ledgertest.Balance(t, db, aw) != 1_000_000 || ledgertest.Balance(t, db, bw) != 0 {
			t.Fatalf("balances after the refusal %d %d", ledgertest.Balance(t, db, aw), ledgertest.Balance(t, db, bw))
		}

		ok := alice.post(routes.APITransfers, "at-min", `{"to_email": "bob@example.com", "amount_rials": 50000}`)
		if ok.Status != http.StatusCreated {
			t.Fatalf("50,000 rials, the minimum: %d %s", ok.Status, ok.Body)
		}
		if tr := decode[api.Transfer](t, ok); tr.AmountRials != 50_000 || tr.Status != "completed" {
			t.Fatalf("transfer %+v", tr)
		}
		if page := decode[api.TransferPage](t, bob.get(routes.APITransfers)); len(page.Items) != 1 {
			t.Fatalf("the recipient's transfers: %+v", page.Items)
		}
		if ledgertest.Balance(t, db, aw) != 950_000 || ledgertest.Balance(t, db, bw) != 50_000 {
			t.Fatalf("balances %d %d", ledgertest.Balance(t, db, aw), ledgertest.Balance(t, db, bw))
		}

		// The operator raises the minimum to 60,000 and restarts: the
		// retry of the transfer made (its answer lost) is that transfer,
		// the same bytes, not a refusal that says nothing was sent.
		raised := &fixture{app: apptest.Start(t, db, apptest.Options{Env: map[string]string{"TRANSFER_MIN_RIALS": "60000"}}), db: db, spec: f.spec}
		alice2 := newAPIClient(t, raised.app, raised.spec, alice.token)
		again := alice2.post(routes.APITransfers, "at-min", `{"to_email": "bob@example.com", "amount_rials": 50000}`)
		if again.Status != http.StatusCreated || again.Body != ok.Body || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the retry after the minimum rose: %d %s", again.Status, again.Body)
		}
		if r := alice2.post(routes.APITransfers, "new-small", `{"to_email": "bob@example.com", "amount_rials": 50000}`); r.Status != http.StatusUnprocessableEntity || r.Code() != "amount_too_small" {
			t.Fatalf("a new transfer under the raised minimum: %d %s", r.Status, r.Body)
		}
		if ledgertest.Balance(t, db, aw) != 950_000 || ledgertest.Balance(t, db, bw) != 50_000 {
			t.Fatalf("balances after the retry %d %d", ledgertest.Balance(t, db, aw), ledgertest.Balance(t, db, bw))
		}
		apptest.CheckInvariants(t, db)
	})
}

// Fifty requests with one key at once make one transfer, and every one
// answers it with the same bytes: the key is claimed in the transfer's
// transaction, so a request that loses the race waits for the first's
// commit and replays its stored answer (never "in use").
func TestTransferAPIOneKeyAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		alice, aliceID := f.user(t, "alice@example.com", apitoken.ScopeTransfer)
		_, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		aw, bw := f.fund(t, aliceID, 1_000_000), f.fund(t, bobID, 0)
		alice.fail = t.Errorf
		var wg sync.WaitGroup
		var mu sync.Mutex
		ids := map[string]int{}
		bodies := map[string]int{}
		inUse := 0
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := alice.post(routes.APITransfers, "one-key", `{"to_email": "bob@example.com", "amount_rials": 70000}`)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case a.Status == http.StatusCreated:
					ids[decode[api.Transfer](t, a).ID]++
					bodies[a.Body]++
				case a.Code() == "idempotency_key_in_use":
					inUse++
				default:
					t.Errorf("answer %d %s", a.Status, a.Body)
				}
			}()
		}
		wg.Wait()
		if len(ids) != 1 || len(bodies) != 1 || inUse != 0 {
			t.Fatalf("answers name %d transfers in %d bodies: %v (in use %d)", len(ids), len(bodies), ids, inUse)
		}
		if ledgertest.Balance(t, db, aw) != 930_000 || ledgertest.Balance(t, db, bw) != 70_000 {
			t.Fatalf("balances %d %d", ledgertest.Balance(t, db, aw), ledgertest.Balance(t, db, bw))
		}
		apptest.CheckInvariants(t, db)
	})
}

// 100 transfers A→B and 100 B→A at once through HTTP: no deadlock, exact
// balances; two clients draining one balance never take it below zero.
func TestTransferAPIUnderLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("200 transfers over HTTP")
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		a, aID := f.user(t, "a@example.com", apitoken.ScopeTransfer)
		b, bID := f.user(t, "b@example.com", apitoken.ScopeTransfer)
		aw, bw := f.fund(t, aID, 10_000_000), f.fund(t, bID, 10_000_000)
		a.fail, b.fail = t.Errorf, t.Errorf
		var wg sync.WaitGroup
		for i := range 200 {
			c, to := a, "b@example.com"
			if i%2 == 1 {
				c, to = b, "a@example.com"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := c.post(routes.APITransfers, fmt.Sprint("k-", i), fmt.Sprintf(`{"to_email": %q, "amount_rials": %d}`, to, 10_000+10*(i/2)))
				if r.Status != http.StatusCreated {
					t.Errorf("transfer %d: %d %s", i, r.Status, r.Body)
				}
			}()
		}
		wg.Wait()
		if ledgertest.Balance(t, db, aw) != 10_000_000 || ledgertest.Balance(t, db, bw) != 10_000_000 {
			t.Fatalf("balances %d %d", ledgertest.Balance(t, db, aw), ledgertest.Balance(t, db, bw))
		}
		// Two sessions (two tokens) drain a's balance at once.
		a2 := f.token(t, aID, apitoken.ScopeTransfer)
		a2.fail = t.Errorf
		made := 0
		var mu sync.Mutex
		for i := range 60 {
			c := a
			if i%2 == 1 {
				c = a2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := c.post(routes.APITransfers, fmt.Sprint("drain-", i), `{"to_email": "b@example.com", "amount_rials": 200000}`)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Status == http.StatusCreated:
					made++
				case r.Code() != "insufficient_funds":
					t.Errorf("drain %d: %d %s", i, r.Status, r.Body)
				}
			}()
		}
		wg.Wait()
		if made != 50 || ledgertest.Balance(t, db, aw) != 0 || ledgertest.Balance(t, db, bw) != 20_000_000 {
			t.Fatalf("made %d, balances %d %d", made, ledgertest.Balance(t, db, aw), ledgertest.Balance(t, db, bw))
		}
		apptest.CheckInvariants(t, db)
	})
}

// A transfer's events reach both people's endpoints: transfer.sent to the
// sender's, transfer.received to the recipient's, signed, valid against
// openapi.json's webhooks, once each (the deduplicating receiver) although
// the first attempt is answered 500, each with the transfer as its
// endpoint's owner sees it.
func TestTransferWebhooks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
		ctx := context.Background()
		alice, aliceID := f.user(t, "alice@example.com", apitoken.ScopeTransfer)
		_, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		f.fund(t, aliceID, 1_000_000)
		hooks := f.app.Server.Webhooks
		recs := map[int64]*hookReceiver{}
		for _, uid := range []int64{aliceID, bobID} {
			rec := &hookReceiver{t: t, spec: f.spec, fail: 1, events: map[string]map[string]any{}}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			_, secret, err := hooks.Create(ctx, uid, srv.URL+"/kifpool", webhook.Types(), nil)
			if err != nil {
				t.Fatal(err)
			}
			rec.secret = secret
			recs[uid] = rec
		}
		tr := decode[api.Transfer](t, alice.post(routes.APITransfers, "hooked", `{"to_email": "bob@example.com", "amount_rials": 120000, "note": "rent"}`))
		s := webhook.NewSender(hooks, webhook.SenderOptions{BaseBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		testwait.Eventually(t, 20*time.Second, "transfer.sent and transfer.received at the receivers", func() bool {
			if _, err := s.DeliverDue(ctx); err != nil {
				t.Fatal(err)
			}
			return len(recs[aliceID].byType(webhook.TypeTransferSent)) == 1 && len(recs[bobID].byType(webhook.TypeTransferReceived)) == 1
		})
		for uid, want := range map[int64][2]string{aliceID: {webhook.TypeTransferSent, "sent"}, bobID: {webhook.TypeTransferReceived, "received"}} {
			evs := recs[uid].byType(want[0])
			body, _ := evs[0]["transfer"].(map[string]any)
			if len(evs) != 1 || body["id"] != tr.ID || body["direction"] != want[1] || body["note"] != "rent" {
				t.Errorf("%s at user %d's endpoint: %v", want[0], uid, evs)
			}
			if n := len(recs[uid].byType(webhook.TypeCredited)); n != 0 {
				t.Errorf("user %d got %d top-up events", uid, n)
			}
		}
	})
}

// A sender whose address is not confirmed (a token made before the rule)
// sends nothing and adds no bank account: 403 address_unconfirmed,
// nothing written and the key not kept; once the address is confirmed,
// the same key sends.
func TestAPIWaitsForTheOwnersAddress(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		dora, doraID := f.user(t, "dora@example.com", apitoken.ScopeTransfer)
		_, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		dw, bw := f.fund(t, doraID, 1_000_000), f.fund(t, bobID, 0)
		payee := f.token(t, doraID, apitoken.ScopeWithdraw)
		authtest.UnconfirmEmail(t, db, "dora@example.com")
		body := `{"to_email": "bob@example.com", "amount_rials": 150000}`
		before := storetest.Rows(t, db, "transfers", "ledger_postings", "idempotency_keys", "bank_accounts", "national_codes")
		bank := `{"iban":"` + withdrawaltest.Sheba("017", 42) + `","national_code":"` + withdrawaltest.NationalCode(123456) + `"}`
		if r := payee.post(routes.APIBankAccounts, "", bank); r.Status != http.StatusForbidden || r.Code() != "address_unconfirmed" {
			t.Fatalf("bank account of an unconfirmed address: %d %s", r.Status, r.Body)
		}
		if r := dora.post(routes.APITransfers, "tr-u", body); r.Status != http.StatusForbidden || r.Code() != "address_unconfirmed" {
			t.Fatalf("unconfirmed sender: %d %s", r.Status, r.Body)
		}
		if after := storetest.Rows(t, db, "transfers", "ledger_postings", "idempotency_keys", "bank_accounts", "national_codes"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("a refusal wrote: %v → %v", before, after)
		}
		authtest.ConfirmEmail(t, db, "dora@example.com")
		if r := dora.post(routes.APITransfers, "tr-u", body); r.Status != http.StatusCreated {
			t.Fatalf("once confirmed: %d %s", r.Status, r.Body)
		}
		if ledgertest.Balance(t, db, dw) != 850_000 || ledgertest.Balance(t, db, bw) != 150_000 {
			t.Fatalf("balances %d %d", ledgertest.Balance(t, db, dw), ledgertest.Balance(t, db, bw))
		}
	})
}
