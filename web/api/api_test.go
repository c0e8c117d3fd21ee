package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apitoken/apitokentest"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/idempotency/idempotencytest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/web/api"
)

type fixture struct {
	app  *apptest.App
	db   *store.DB
	spec *spec
}

func start(t *testing.T, db *store.DB, o apptest.Options) *fixture {
	t.Helper()
	return &fixture{app: apptest.Start(t, db, o), db: db, spec: loadSpec(t)}
}

// user signs a user up and returns a client with a new token of scope.
func (f *fixture) user(t *testing.T, email string, scope apitoken.Scope) (*apiClient, int64) {
	t.Helper()
	ctx := context.Background()
	u, err := f.app.Server.Auth.SignUp(ctx, email, "correct horse battery", "", "en")
	if err != nil {
		t.Fatal(err)
	}
	return f.token(t, u.ID, scope), u.ID
}

func (f *fixture) token(t *testing.T, userID int64, scope apitoken.Scope) *apiClient {
	t.Helper()
	secret, _, err := f.app.Server.Tokens.Create(context.Background(), apitoken.CreateInput{UserID: userID, Name: "test", Scope: string(scope)})
	if err != nil {
		t.Fatal(err)
	}
	return newAPIClient(t, f.app, f.spec, secret)
}

func decode[T any](t testing.TB, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(a.Body), &v); err != nil {
		t.Fatalf("decode %q: %v", a.Body, err)
	}
	return v
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	f := start(t, db, apptest.Options{})
	c := newAPIClient(t, f.app, f.spec, "")
	a := c.do(http.MethodGet, routes.APIOpenAPI, nil, "", false)
	if a.Status != http.StatusOK || a.Body != string(api.OpenAPI) {
		t.Fatalf("GET /api/openapi.json: %d", a.Status)
	}
}

func TestIdempotentTopUp(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "api@example.com", apitoken.ScopeTopUp)

		first := c.post(routes.APITopUps, "order-1", `{"amount_rials": 500000, "description": "from the app"}`)
		if first.Status != http.StatusCreated || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		tu := decode[api.TopUp](t, first)
		if tu.Status != "awaiting_payment" || tu.AmountRials != 500000 || tu.PaymentURL == nil ||
			!strings.Contains(*tu.PaymentURL, routes.Sandbank+"/pg/StartPay/S") || tu.RefID != nil || tu.CreditedAt != nil {
			t.Fatalf("first: %+v", tu)
		}
		// The same request (another key order and spacing): the stored
		// answer, byte for byte, marked as replayed.
		again := c.post(routes.APITopUps, "order-1", "{\"description\":\"from the app\",  \"amount_rials\":500000}\n")
		if again.Status != http.StatusCreated || again.Body != first.Body || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %q %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
		}
		// The same key for another request: 409 reused, nothing written.
		for _, body := range []string{`{"amount_rials": 600000, "description": "from the app"}`, `{"amount_rials": 500000}`} {
			if a := c.post(routes.APITopUps, "order-1", body); a.Status != http.StatusConflict || a.Code() != "idempotency_key_reused" {
				t.Fatalf("reused %s: %d %s", body, a.Status, a.Body)
			}
		}
		if n := topuptest.Count(t, db); n != 1 {
			t.Fatalf("%d payments, want 1", n)
		}

		// Refusals before any side effect: not stored (the same key then
		// works for the corrected request).
		long := strings.Repeat("k", 256)
		for _, tc := range []struct {
			name, key, body string
			specInvalid     bool
			status          int
			code            string
		}{
			{"missing key", "", `{"amount_rials": 500000}`, true, 400, "idempotency_key_missing"},
			{"key too long", long, `{"amount_rials": 500000}`, true, 400, "idempotency_key_invalid"},
			{"key with a space", "order 2", `{"amount_rials": 500000}`, true, 400, "idempotency_key_invalid"},
			{"key not ASCII", "سفارش", `{"amount_rials": 500000}`, true, 400, "idempotency_key_invalid"},
			{"body not JSON", "order-2", `{"amount_rials": `, true, 400, "invalid_body"},
			{"unknown field", "order-2", `{"amount_rials": 500000, "currency": "IRR"}`, true, 400, "invalid_body"},
			{"amount a string", "order-2", `{"amount_rials": "500000"}`, true, 400, "invalid_body"},
			{"amount a fraction", "order-2", `{"amount_rials": 500000.5}`, true, 400, "invalid_body"},
			{"amount missing", "order-2", `{}`, true, 422, "amount_invalid"},
			{"amount zero", "order-2", `{"amount_rials": 0}`, true, 422, "amount_invalid"},
			{"amount not whole tomans", "order-2", `{"amount_rials": 500005}`, false, 422, "amount_invalid"},
			{"amount too small", "order-2", `{"amount_rials": 9990}`, false, 422, "amount_too_small"},
			{"amount too large", "order-2", `{"amount_rials": 1000000010}`, false, 422, "amount_too_large"},
			{"description too long", "order-2", `{"amount_rials": 500000, "description": "` + strings.Repeat("x", 256) + `"}`, true, 422, "description_too_long"},
		} {
			a := c.do(http.MethodPost, routes.APITopUps, map[string]string{"Idempotency-Key": tc.key}, tc.body, tc.specInvalid)
			if a.Status != tc.status || a.Code() != tc.code || !strings.HasPrefix(a.Header.Get("Content-Type"), "application/problem+json") {
				t.Errorf("%s: %d %s", tc.name, a.Status, a.Body)
			}
		}
		if n := idempotencytest.Count(t, db, ""); n != 1 {
			t.Fatalf("%d keys stored, want 1 (refusals are not stored)", n)
		}
		if n := topuptest.Count(t, db); n != 1 {
			t.Fatalf("%d payments after refusals", n)
		}
		if a := c.post(routes.APITopUps, "order-2", `{"amount_rials": 200000}`); a.Status != http.StatusCreated || a.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("corrected request with the refused key: %d %s", a.Status, a.Body)
		}
		// Keys are the user's own: another user's "order-1" is a new request.
		other, _ := f.user(t, "other@example.com", apitoken.ScopeTopUp)
		if a := other.post(routes.APITopUps, "order-1", `{"amount_rials": 500000, "description": "from the app"}`); a.Status != http.StatusCreated ||
			a.Header.Get("Idempotent-Replayed") != "" || decode[api.TopUp](t, a).ID == tu.ID {
			t.Fatalf("another user's key: %d %s", a.Status, a.Body)
		}
		// The stored record: fingerprint, answer and payment.
		stored := 0
		for _, k := range idempotencytest.Records(t, db) {
			if k.IdempotencyKey == "order-1" && k.RequestMethod == "POST" && k.RequestPath == routes.APITopUps &&
				k.ResponseStatus != nil && *k.ResponseStatus == 201 && k.ResponseBody != nil && *k.ResponseBody == first.Body &&
				k.TopUpID != nil && topuptest.ByID(t, db, *k.TopUpID).PublicID == tu.ID && k.LockedUntil == nil && k.FinishedAt != nil {
				stored++
			}
		}
		if n := stored; n != 1 {
			t.Fatalf("stored record does not hold the answer")
		}
		apptest.CheckInvariants(t, db)
	})
}

func TestConcurrentRequestsWithOneKey(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		// A slow bank keeps the first request in flight.
		if err := f.app.Server.Bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"request": {LatencyMS: 400}}}); err != nil {
			t.Fatal(err)
		}
		c, _ := f.user(t, "race@example.com", apitoken.ScopeTopUp)
		c.fail = t.Errorf
		const n = 20
		answers := make([]answer, n)
		var wg sync.WaitGroup
		startGate := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startGate
				answers[i] = c.post(routes.APITopUps, "race-key", `{"amount_rials": 300000}`)
			}()
		}
		close(startGate)
		wg.Wait()
		created, replayed, inUse := 0, 0, 0
		var body string
		for _, a := range answers {
			switch {
			case a.Status == http.StatusCreated && a.Header.Get("Idempotent-Replayed") == "true":
				replayed++
			case a.Status == http.StatusCreated:
				created++
			case a.Status == http.StatusConflict && a.Code() == "idempotency_key_in_use" && a.Header.Get("Retry-After") == "1":
				inUse++
				continue
			default:
				t.Fatalf("unexpected answer %d %s", a.Status, a.Body)
			}
			if body != "" && a.Body != body {
				t.Fatalf("201 answers differ:\n%s\n%s", body, a.Body)
			}
			body = a.Body
		}
		if created != 1 || created+replayed+inUse != n {
			t.Fatalf("created %d, replayed %d, in use %d", created, replayed, inUse)
		}
		// Then, everyone retrying gets the one answer.
		if a := c.post(routes.APITopUps, "race-key", `{"amount_rials": 300000}`); a.Body != body || a.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after the race: %d %s", a.Status, a.Body)
		}
		if got := topuptest.Count(t, db); got != 1 {
			t.Fatalf("%d payments, want 1", got)
		}
		if got := f.app.Server.Bank.Stats()["request"].Calls; got != 1 {
			t.Fatalf("%d bank requests, want 1", got)
		}
		if got := topuptest.CountCalls(t, db, "request"); got != 1 {
			t.Fatalf("%d recorded gateway requests, want 1", got)
		}
	})
}

func TestGatewayRefusalIsStoredAndReplayed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "down@example.com", apitoken.ScopeTopUp)
		if err := f.app.Server.Bank.SetFaults(sandbank.Faults{Down: true, DownStatus: 503}); err != nil {
			t.Fatal(err)
		}
		first := c.post(routes.APITopUps, "k-down", `{"amount_rials": 100000}`)
		if first.Status != http.StatusBadGateway || first.Code() != "gateway_failed" {
			t.Fatalf("bank down: %d %s", first.Status, first.Body)
		}
		pr := decode[api.Problem](t, first)
		if topuptest.ByPublicID(t, db, pr.TopUpID).Status != topup.StatusFailed {
			t.Fatalf("the refused payment %q is not failed", pr.TopUpID)
		}
		calls := f.app.Server.Bank.Stats()["request"].Calls
		// The bank is back; the key still answers as the first time.
		f.app.Server.Bank.ClearFaults()
		again := c.post(routes.APITopUps, "k-down", `{"amount_rials": 100000}`)
		if again.Status != http.StatusBadGateway || again.Body != first.Body || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay of the refusal: %d %s", again.Status, again.Body)
		}
		if got := f.app.Server.Bank.Stats()["request"].Calls; got != calls {
			t.Fatalf("the replay asked the bank again")
		}
		if a := c.post(routes.APITopUps, "k-up", `{"amount_rials": 100000}`); a.Status != http.StatusCreated {
			t.Fatalf("new key after the bank is back: %d %s", a.Status, a.Body)
		}
		if n := topuptest.Count(t, db); n != 2 {
			t.Fatalf("%d payments, want 2", n)
		}
	})
}

func TestAuthenticationAndScopes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		writer, aliceID := f.user(t, "alice@example.com", apitoken.ScopeTopUp)
		reader := f.token(t, aliceID, apitoken.ScopeRead)
		mine := decode[api.TopUp](t, writer.post(routes.APITopUps, "a-1", `{"amount_rials": 100000}`))

		// A read token reads, but cannot create top-ups (nothing stored).
		if a := reader.get(routes.APITopUp(mine.ID)); a.Status != http.StatusOK || decode[api.TopUp](t, a).ID != mine.ID {
			t.Fatalf("read token GET: %d", a.Status)
		}
		if a := reader.post(routes.APITopUps, "r-1", `{"amount_rials": 100000}`); a.Status != http.StatusForbidden || a.Code() != "insufficient_scope" {
			t.Fatalf("read token POST: %d %s", a.Status, a.Body)
		}
		if n := idempotencytest.Count(t, db, "r-1"); n != 0 {
			t.Fatalf("a refused request stored its key")
		}
		// Another user's payment does not exist for this token.
		bob, _ := f.user(t, "bob@example.com", apitoken.ScopeRead)
		if a := bob.get(routes.APITopUp(mine.ID)); a.Status != http.StatusNotFound || a.Code() != "not_found" {
			t.Fatalf("foreign payment: %d %s", a.Status, a.Body)
		}
		if a := bob.get(routes.APITopUp("not-an-id")); a.Status != http.StatusNotFound {
			t.Fatalf("malformed id: %d", a.Status)
		}
		if page := decode[api.TopUpPage](t, bob.get(routes.APITopUps)); len(page.Items) != 0 {
			t.Fatalf("bob lists alice's payments")
		}

		// No token, a wrong one, a revoked one, an expired one: 401.
		anon := newAPIClient(t, f.app, f.spec, "")
		if a := anon.do(http.MethodGet, routes.APIWallet, nil, "", true); a.Status != http.StatusUnauthorized || a.Code() != "unauthorized" ||
			!strings.HasPrefix(a.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("no token: %d %s", a.Status, a.Body)
		}
		if a := anon.do(http.MethodGet, routes.APIWallet, map[string]string{"Authorization": "Basic YWxpY2U6cHc="}, "", true); a.Status != http.StatusUnauthorized {
			t.Fatalf("basic auth: %d", a.Status)
		}
		wrong := newAPIClient(t, f.app, f.spec, "kp_"+strings.Repeat("A", 43))
		if a := wrong.get(routes.APIWallet); a.Status != http.StatusUnauthorized {
			t.Fatalf("unknown token: %d", a.Status)
		}
		revoked := f.token(t, aliceID, apitoken.ScopeTopUp)
		if a := revoked.get(routes.APIWallet); a.Status != http.StatusOK {
			t.Fatalf("fresh token: %d", a.Status)
		}
		apitokentest.RevokeAtCreation(t, db, revoked.token)
		if a := revoked.post(routes.APITopUps, "rv-1", `{"amount_rials": 100000}`); a.Status != http.StatusUnauthorized {
			t.Fatalf("revoked token: %d", a.Status)
		}
		expired := f.token(t, aliceID, apitoken.ScopeTopUp)
		apitokentest.Expire(t, db, expired.token, time.Now().Add(-time.Minute))
		if a := expired.get(routes.APITopUps); a.Status != http.StatusUnauthorized {
			t.Fatalf("expired token: %d", a.Status)
		}

		// A signed-in browser's cookies mean nothing on /api: no token is
		// 401, and a token needs no CSRF token (nor a same-site Origin).
		browser := f.app.NewClient(t)
		browser.SignUp("browser@example.com")
		base, _ := url.Parse(f.app.URL)
		var jar []string
		for _, ck := range browser.HTTP.Jar.Cookies(base) {
			jar = append(jar, ck.Name+"="+ck.Value)
		}
		if len(jar) < 2 {
			t.Fatalf("the browser has no session: %v", jar)
		}
		cookies := strings.Join(jar, "; ")
		if a := anon.do(http.MethodGet, routes.APIWallet, map[string]string{"Cookie": cookies}, "", true); a.Status != http.StatusUnauthorized || a.Code() != "unauthorized" {
			t.Fatalf("cookie session on the API: %d %s", a.Status, a.Body)
		}
		if a := writer.do(http.MethodPost, routes.APITopUps, map[string]string{"Idempotency-Key": "with-cookies", "Cookie": cookies,
			"Origin": "https://evil.example"}, `{"amount_rials": 100000}`, false); a.Status != http.StatusCreated {
			t.Fatalf("token with a foreign origin and cookies: %d %s", a.Status, a.Body)
		}
		// Unknown API paths (not in the document) are problems, not pages.
		req, _ := http.NewRequest(http.MethodGet, f.app.URL+routes.API+"/v2/wallet", nil)
		r := browser.Do(req)
		var body any
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatalf("unknown api path: %d %q", r.Status, r.Body)
		}
		problemSchema := f.spec.doc.Components.Schemas["Problem"].Value
		if err := problemSchema.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil || r.Status != http.StatusNotFound ||
			!strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("unknown api path: %d %q %v", r.Status, r.Header.Get("Content-Type"), err)
		}
		// The token's last use shows on its page.
		used := 0
		for _, tk := range f.app.Tokens(t) {
			if tk.TokenHash == apitoken.Hash(reader.token) && tk.LastUsedAt != nil {
				used++
			}
		}
		if n := used; n != 1 {
			t.Fatalf("last use not noted")
		}
	})
}

func TestTopUpRateLimitPerToken(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	f := start(t, db, apptest.Options{Env: map[string]string{"API_TOPUPS_PER_MINUTE": "2"}})
	c, uid := f.user(t, "busy@example.com", apitoken.ScopeTopUp)
	for i := range 2 {
		if a := c.post(routes.APITopUps, fmt.Sprint("rl-", i), `{"amount_rials": 100000}`); a.Status != http.StatusCreated {
			t.Fatalf("top-up %d: %d", i, a.Status)
		}
	}
	a := c.post(routes.APITopUps, "rl-2", `{"amount_rials": 100000}`)
	if a.Status != http.StatusTooManyRequests || a.Code() != "rate_limited" || a.Header.Get("Retry-After") == "" || a.Header.Get("Retry-After") == "0" {
		t.Fatalf("third top-up: %d %q %s", a.Status, a.Header.Get("Retry-After"), a.Body)
	}
	if n := idempotencytest.Count(t, db, "rl-2"); n != 0 {
		t.Fatalf("a rate-limited request stored its key")
	}
	// Per token: another token of the same user is not limited by it, and
	// reading is not limited.
	if a := f.token(t, uid, apitoken.ScopeTopUp).post(routes.APITopUps, "rl-2", `{"amount_rials": 100000}`); a.Status != http.StatusCreated {
		t.Fatalf("other token: %d", a.Status)
	}
	if a := c.get(routes.APITopUps); a.Status != http.StatusOK {
		t.Fatalf("read after the limit: %d", a.Status)
	}
}

func TestExpiredKeysAreDeleted(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"IDEMPOTENCY_KEY_TTL": "1h", "WORKER_INTERVAL": "off", "RECONCILE_INTERVAL": "off"}})
		c, _ := f.user(t, "ttl@example.com", apitoken.ScopeTopUp)
		first := decode[api.TopUp](t, c.post(routes.APITopUps, "ttl-key", `{"amount_rials": 100000}`))
		c.post(routes.APITopUps, "fresh-key", `{"amount_rials": 100000}`)
		idempotencytest.Age(t, db, "ttl-key", time.Now().Add(-61*time.Minute))
		// serve's background loops: the cleanup runs at once.
		ctx, cancel := context.WithCancel(context.Background())
		wait := f.app.Server.RunBackground(ctx, nil)
		testwait.Eventually(t, 10*time.Second, "the cleanup to delete the expired key", func() bool {
			return idempotencytest.Count(t, db, "ttl-key") == 0
		})
		cancel()
		wait()
		if n := idempotencytest.Count(t, db, "fresh-key"); n != 1 {
			t.Fatalf("a key inside its TTL was deleted")
		}
		// The key used again starts a new request.
		a := c.post(routes.APITopUps, "ttl-key", `{"amount_rials": 100000}`)
		if a.Status != http.StatusCreated || a.Header.Get("Idempotent-Replayed") != "" || decode[api.TopUp](t, a).ID == first.ID {
			t.Fatalf("key after its deletion: %d %s", a.Status, a.Body)
		}
		if n := topuptest.Count(t, db); n != 3 {
			t.Fatalf("%d payments, want 3", n)
		}
	})
}

func TestEndToEndTopUpThroughTheAPI(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "e2e@example.com", apitoken.ScopeTopUp)
		if w := decode[api.Wallet](t, c.get(routes.APIWallet)); w.BalanceRials != 0 {
			t.Fatalf("new wallet: %+v", w)
		}
		created := decode[api.TopUp](t, c.post(routes.APITopUps, "e2e-1", `{"amount_rials": 750000}`))

		// A browser opens payment_url, pays, and follows the bank back to
		// the receipt page (no session: the callback needs none).
		browser := f.app.NewClient(t)
		page := browser.Get(*created.PaymentURL)
		if page.Status != http.StatusOK || apptest.Parse(page.Body).TestID("bank-pay") == nil {
			t.Fatalf("bank page: %d", page.Status)
		}
		back := browser.Post(*created.PaymentURL+"/pay", url.Values{})
		if back.Status != http.StatusSeeOther || !strings.HasPrefix(back.Location, f.app.URL+routes.TopUpReturn(created.ID)) {
			t.Fatalf("bank redirect: %d %q", back.Status, back.Location)
		}
		receipt := browser.Get(back.Location)
		if apptest.TopUpStatus(receipt.Body) != "credited" {
			t.Fatalf("receipt: %d %q", receipt.Status, apptest.TopUpStatus(receipt.Body))
		}
		browser.Get(back.Location) // a reload changes nothing

		got := decode[api.TopUp](t, c.get(routes.APITopUp(created.ID)))
		if got.Status != "credited" || got.RefID == nil || *got.RefID <= 0 || got.CreditedAt == nil || got.PaymentURL != nil ||
			got.AmountRials != 750000 || !got.CreatedAt.Equal(created.CreatedAt) {
			t.Fatalf("after paying: %+v", got)
		}
		if w := decode[api.Wallet](t, c.get(routes.APIWallet)); w.BalanceRials != 750000 {
			t.Fatalf("balance %d, want 750000", w.BalanceRials)
		}
		ledger := decode[api.LedgerPage](t, c.get(routes.APIWalletLedger))
		if len(ledger.Items) != 1 || ledger.Items[0].AmountRials != 750000 || ledger.Items[0].BalanceAfterRials != 750000 ||
			ledger.Items[0].TopUpID == nil || *ledger.Items[0].TopUpID != created.ID || ledger.Items[0].RefID == nil || *ledger.Items[0].RefID != *got.RefID {
			t.Fatalf("ledger: %s", mustJSON(ledger))
		}
		// The replay of the create still answers as it did (the first answer).
		if a := c.post(routes.APITopUps, "e2e-1", `{"amount_rials": 750000}`); decode[api.TopUp](t, a).Status != "awaiting_payment" {
			t.Fatalf("replay after credit: %s", a.Body)
		}
		apptest.CheckInvariants(t, db)

		// Keyset pagination, newest first.
		for i := range 4 {
			c.post(routes.APITopUps, fmt.Sprint("page-", i), fmt.Sprintf(`{"amount_rials": %d}`, 100000+10*i))
		}
		var seen []string
		cursor := ""
		for pages := 0; ; pages++ {
			path := routes.APITopUps + "?limit=2"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			p := decode[api.TopUpPage](t, c.get(path))
			for _, it := range p.Items {
				seen = append(seen, fmt.Sprint(it.AmountRials))
			}
			if p.NextCursor == nil {
				break
			}
			cursor = *p.NextCursor
			if pages > 5 {
				t.Fatal("pagination does not end")
			}
		}
		if strings.Join(seen, ",") != "100030,100020,100010,100000,750000" {
			t.Fatalf("pages: %v", seen)
		}
		for _, bad := range []string{"?limit=0", "?limit=101", "?cursor=abc", "?cursor=-1"} {
			if a := c.do(http.MethodGet, routes.APITopUps+bad, nil, "", true); a.Status != http.StatusBadRequest || a.Code() != "invalid_parameter" {
				t.Fatalf("%s: %d %s", bad, a.Status, a.Body)
			}
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A request that died after creating its payment but before storing its
// answer (a crash): once its lease ends, a retry with the key takes it
// over and finds that payment (the form token derived from the key's
// record), instead of making a second one.
func TestRetryAfterACrashFindsTheTopUp(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "crash@example.com", apitoken.ScopeTopUp)
		first := decode[api.TopUp](t, c.post(routes.APITopUps, "crash-key", `{"amount_rials": 120000}`))
		calls := f.app.Server.Bank.Stats()["request"].Calls
		idempotencytest.Crash(t, db, "crash-key", time.Now().Add(-time.Second))
		a := c.post(routes.APITopUps, "crash-key", `{"amount_rials": 120000}`)
		got := decode[api.TopUp](t, a)
		if a.Status != http.StatusCreated || a.Header.Get("Idempotent-Replayed") != "" || got.ID != first.ID || got.PaymentURL == nil || *got.PaymentURL != *first.PaymentURL {
			t.Fatalf("retry after the crash: %d %s", a.Status, a.Body)
		}
		if n := topuptest.Count(t, db); n != 1 {
			t.Fatalf("%d payments, want 1", n)
		}
		if f.app.Server.Bank.Stats()["request"].Calls != calls {
			t.Fatalf("the retry asked the bank for a second transaction")
		}
		// Its answer is stored now.
		if a := c.post(routes.APITopUps, "crash-key", `{"amount_rials": 120000}`); a.Header.Get("Idempotent-Replayed") != "true" || a.Body != mustJSON(got) {
			t.Fatalf("replay after the takeover: %s", a.Body)
		}
	})
}
