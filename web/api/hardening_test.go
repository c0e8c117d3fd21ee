package api_test

// The red team's findings on the API (issue 20): the idempotency
// fingerprint is over the parsed request (2), an open breaker is a 503
// problem (5), descriptions are refused with control or invisible
// characters (8), and two Idempotency-Key headers are refused (12).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/idempotency/idempotencytest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/web/api"
)

// Finding 2: bodies whose names differ only in case, or repeat, mean
// different amounts to a lenient JSON reader; none of them may share a
// fingerprint with another request, nor get its stored answer.
func TestFingerprintIsOverTheParsedRequest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "fp@example.com", apitoken.ScopeTopUp)
		first := c.do(http.MethodPost, routes.APITopUps, map[string]string{"Idempotency-Key": "case-1"},
			`{"amount_rials": 100000, "AMOUNT_RIALS": 200000}`, true)
		second := c.do(http.MethodPost, routes.APITopUps, map[string]string{"Idempotency-Key": "case-1"},
			`{"AMOUNT_RIALS": 200000, "amount_rials": 100000}`, true)
		for i, a := range []answer{first, second} {
			if a.Status != http.StatusBadRequest || a.Code() != "invalid_body" || a.Header.Get("Idempotent-Replayed") != "" {
				t.Errorf("body %d with names in another case: %d %s, want 400 invalid_body", i+1, a.Status, a.Body)
			}
		}
		for _, body := range []string{
			`{"amount_rials": 100000, "amount_rials": 200000}`,
			`{"description": "a", "amount_rials": 100000, "description": "b"}`,
			`{"Amount_Rials": 100000}`,
		} {
			if a := c.do(http.MethodPost, routes.APITopUps, map[string]string{"Idempotency-Key": "dup-1"}, body, strings.Contains(body, "Amount_")); a.Status != http.StatusBadRequest || a.Code() != "invalid_body" {
				t.Errorf("%s: %d %s, want 400 invalid_body", body, a.Status, a.Body)
			}
		}
		if n := topuptest.Count(t, db); n != 0 {
			t.Fatalf("%d payments after refused bodies", n)
		}
		if n := idempotencytest.Count(t, db, ""); n != 0 {
			t.Fatalf("%d keys stored after refused bodies", n)
		}
		// The same request written differently is one request (a replay);
		// another amount or description under the key is a 409.
		a := c.post(routes.APITopUps, "k-1", `{"amount_rials": 100000, "description": "a\u00e9"}`)
		b := c.post(routes.APITopUps, "k-1", "{ \"description\" : \"a\\u00e9\",\n\"amount_rials\":100000 }")
		if a.Status != http.StatusCreated || b.Status != http.StatusCreated || b.Body != a.Body || b.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the same request twice: %d, %d %q", a.Status, b.Status, b.Header.Get("Idempotent-Replayed"))
		}
		for _, body := range []string{`{"amount_rials": 200000, "description": "aé"}`, `{"amount_rials": 100000, "description": "ae"}`,
			`{"amount_rials": 100000}`, `{"amount_rials": 100000, "description": ""}`} {
			if r := c.post(routes.APITopUps, "k-1", body); r.Status != http.StatusConflict || r.Code() != "idempotency_key_reused" {
				t.Errorf("%s under the key of another request: %d %s, want 409", body, r.Status, r.Body)
			}
		}
		if n := topuptest.Count(t, db); n != 1 {
			t.Fatalf("%d payments, want 1", n)
		}
	})
}

// rawPost sends a hand-written POST (to repeat a header, which Go's
// client would fold) and returns its status and body.
func rawPost(t *testing.T, app *apptest.App, path string, headers []string, body string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(app.URL, "http://"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := "POST " + path + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(app.URL, "http://") + "\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n" + body
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&sb)
	return resp.StatusCode, sb.String()
}

// Finding 12: which of two keys would a proxy or a retry keep? Refused.
func TestTwoIdempotencyKeysAreRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "twokeys@example.com", apitoken.ScopeTopUp)
		auth := "Authorization: Bearer " + c.token
		status, body := rawPost(t, f.app, routes.APITopUps, []string{auth, "Idempotency-Key: one", "Idempotency-Key: two"}, `{"amount_rials": 100000}`)
		if status != http.StatusBadRequest || !strings.Contains(body, `"code":"idempotency_key_invalid"`) {
			t.Fatalf("two keys: %d %s, want 400 idempotency_key_invalid", status, body)
		}
		if n := topuptest.Count(t, db) + idempotencytest.Count(t, db, ""); n != 0 {
			t.Fatalf("two keys wrote %d rows", n)
		}
		if status, body := rawPost(t, f.app, routes.APITopUps, []string{auth, "Idempotency-Key: one"}, `{"amount_rials": 100000}`); status != http.StatusCreated {
			t.Fatalf("one key: %d %s", status, body)
		}
	})
}

// Finding 5: with every gateway's breaker open (the sandbox bank offers
// two: the first one's open, top-ups go to the second, until it opens
// too), a top-up is a 503 problem with Retry-After; nothing is written,
// and the key is free for the retry.
func TestOpenBreakerIsA503Problem(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"BREAKER_MIN_REQUESTS": "2", "BREAKER_OPEN_TIMEOUT": "10m"}})
		c, _ := f.user(t, "breaker@example.com", apitoken.ScopeTopUp)
		if err := f.app.Server.Bank.SetFaults(sandbank.Faults{Down: true, DownStatus: 503}); err != nil {
			t.Fatal(err)
		}
		for i := range 2 * len(f.app.Server.Resilients) {
			if a := c.post(routes.APITopUps, "fail-"+strconv.Itoa(i), `{"amount_rials": 100000}`); a.Status != http.StatusBadGateway {
				t.Fatalf("top-up %d against a down bank: %d %s", i, a.Status, a.Body)
			}
		}
		for _, r := range f.app.Server.Resilients {
			if st := r.BreakerState(); st.State != "open" {
				t.Fatalf("breaker of %s %s, want open", st.Name, st.State)
			}
		}
		topUps, keys := topuptest.Count(t, db), idempotencytest.Count(t, db, "")
		a := c.post(routes.APITopUps, "while-open", `{"amount_rials": 100000}`)
		if a.Status != http.StatusServiceUnavailable || a.Code() != "gateway_unavailable" || a.Header.Get("Retry-After") == "" {
			t.Fatalf("top-up with the breaker open: %d %q %s, want 503 gateway_unavailable with Retry-After", a.Status, a.Header.Get("Retry-After"), a.Body)
		}
		if p := decode[api.Problem](t, a); p.TopUpID != "" {
			t.Errorf("the refusal names a top-up %q: none was made", p.TopUpID)
		}
		if n := topuptest.Count(t, db); n != topUps {
			t.Errorf("the refusal wrote a payment")
		}
		if n := idempotencytest.Count(t, db, ""); n != keys {
			t.Errorf("the refusal kept its key (a retry with it would not run)")
		}
	})
}

// Finding 8: descriptions reach the bank's page; control characters and
// bidi overrides or isolates are refused (422), nothing is written.
func TestDescriptionsWithInvisibleCharactersAreRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "desc@example.com", apitoken.ScopeTopUp)
		for i, desc := range []string{`\u202Egnp.exe`, `a\u2066b\u2069`, `zero\u200Bwidth`, `nul\u0000`, `line\nbreak`, `esc\u001b[31m`} {
			a := c.post(routes.APITopUps, "desc-"+strconv.Itoa(i), `{"amount_rials": 100000, "description": "`+desc+`"}`)
			if a.Status != http.StatusUnprocessableEntity || a.Code() != "description_invalid" {
				t.Errorf("description %s: %d %s, want 422 description_invalid", desc, a.Status, a.Body)
			}
		}
		if n := topuptest.Count(t, db) + idempotencytest.Count(t, db, ""); n != 0 {
			t.Fatalf("refused descriptions wrote %d rows", n)
		}
		if a := c.post(routes.APITopUps, "desc-ok", `{"amount_rials": 100000, "description": "خرید کتاب (book) ۲"}`); a.Status != http.StatusCreated {
			t.Fatalf("a plain Persian description: %d %s", a.Status, a.Body)
		}
	})
}

// A request refused before the API's handlers run (a NUL in the query,
// also under a path in capitals, which routes alike; a body over the
// limit; no such path) is answered as the API
// answers, application/problem+json with its code, never the site's HTML
// error page a partner's client cannot read.
func TestRefusedBeforeTheHandlersIsAProblem(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, _ := f.user(t, "early@example.com", apitoken.ScopeTopUp)
		for _, tc := range []struct {
			name, method, path, body string
			status                   int
			code                     string
			encoding                 string // Content-Encoding; the body gzipped unless identity
		}{
			// Fiber would unpack it without a bound, past the body limit
			// that counts the wire's bytes: refused unread, however small.
			{"a gzipped body unpacking past the limit", http.MethodPost, routes.APITopUps, `{"amount_rials": 100000, "description": "` +
				strings.Repeat("x", 1<<20) + `"}`, http.StatusBadRequest, "invalid_body", "gzip"},
			{"a gzipped body twice", http.MethodPost, routes.APITopUps, `{"amount_rials": 100000}`, http.StatusBadRequest, "invalid_body", "gzip, gzip"},
			{"a body said plain (identity), over the limit", http.MethodPost, routes.APITopUps, `{"amount_rials": 100000, "description": "` +
				strings.Repeat("x", 70<<10) + `"}`, http.StatusRequestEntityTooLarge, "request_too_large", "identity"},
			{"a NUL in the query", http.MethodGet, routes.APITopUps + "?cursor=%00", "", http.StatusBadRequest, "invalid_body", ""},
			{"a NUL in the query, the path in capitals", http.MethodGet, strings.ToUpper(routes.APITopUps) + "?cursor=%00", "", http.StatusBadRequest, "invalid_body", ""},
			{"a body over the limit", http.MethodPost, routes.APITopUps, `{"amount_rials": 100000, "description": "` +
				strings.Repeat("x", 70<<10) + `"}`, http.StatusRequestEntityTooLarge, "request_too_large", ""},
			{"no such path", http.MethodGet, routes.APIv1 + "/nothing", "", http.StatusNotFound, "not_found", ""},
		} {
			// The server answers a body over the limit before it has read
			// it, and closes: the client, still writing, can see the
			// connection reset or its pipe broken under the answer on a
			// loaded machine. That is asked again (up to five times).
			var res *http.Response
			var err error
			for range 5 {
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				for _, enc := range strings.Split(tc.encoding, ",") {
					if strings.TrimSpace(enc) == "gzip" {
						body = gzipped(t, body)
					}
				}
				req, rerr := http.NewRequestWithContext(context.Background(), tc.method, c.app.URL+tc.path, body)
				if rerr != nil {
					t.Fatal(rerr)
				}
				req.Header.Set("Authorization", "Bearer "+c.token)
				req.Header.Set("Idempotency-Key", "early-1")
				req.Header.Set("Content-Type", "application/json")
				if tc.encoding != "" {
					req.Header.Set("Content-Encoding", tc.encoding)
				}
				if res, err = http.DefaultClient.Do(req); err == nil || !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
					break
				}
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			a := answer{Status: res.StatusCode, Header: res.Header, Body: string(b)}
			if a.Status != tc.status || a.Code() != tc.code {
				t.Errorf("%s: %d %s %q, want %d %s", tc.name, a.Status, a.Header.Get("Content-Type"), usertextCut(a.Body), tc.status, tc.code)
			}
		}
		if n := topuptest.Count(t, db); n != 0 {
			t.Fatalf("%d top-ups after refused requests", n)
		}
	})
}

// gzipped is r's bytes gzipped.
func gzipped(t *testing.T, r io.Reader) io.Reader {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.Copy(zw, r); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

// usertextCut is at most 200 bytes of s, for a failure's message.
func usertextCut(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}
