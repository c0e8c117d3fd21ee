package sandbank

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	bankpage "github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/internal/testclock"
)

const (
	merchant      = "1344b5d4-0048-11e8-94db-005056a205be"
	otherMerchant = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	callback      = "http://shop.example/pay/callback"
)

var authorityRE = regexp.MustCompile(`^S[0-9a-zA-Z]{35}$`)

func newTestBank(t *testing.T, opts Options) (*Bank, *httptest.Server) {
	t.Helper()
	if opts.Seed == 0 && opts.Rand == nil {
		opts.Seed = 42
	}
	b := New(opts)
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	return b, srv
}

// apiResult is a decoded Zarinpal envelope.
type apiResult struct {
	Status int
	Data   map[string]any // nil when data is []
	Err    *apiError      // nil when errors is []
	Raw    string
}

// Code is data.code (number or string) or errors.code.
func (r apiResult) Code(t *testing.T) int {
	t.Helper()
	if r.Err != nil {
		return r.Err.Code
	}
	switch c := r.Data["code"].(type) {
	case json.Number:
		n, err := c.Int64()
		if err != nil {
			t.Fatalf("data.code %q: %v", c, err)
		}
		return int(n)
	case string:
		n, err := strconv.Atoi(c)
		if err != nil {
			t.Fatalf("data.code %q: %v", c, err)
		}
		return n
	}
	t.Fatalf("no code in %s", r.Raw)
	return 0
}

func (r apiResult) str(key string) string {
	s, _ := r.Data[key].(string)
	return s
}

func (r apiResult) int(t *testing.T, key string) int64 {
	t.Helper()
	n, ok := r.Data[key].(json.Number)
	if !ok {
		t.Fatalf("data.%s is not a number in %s", key, r.Raw)
	}
	v, err := n.Int64()
	if err != nil {
		t.Fatalf("data.%s: %v", key, err)
	}
	return v
}

// post sends body (a string is sent as is, anything else as JSON).
func post(t *testing.T, srv *httptest.Server, path string, body any) apiResult {
	t.Helper()
	var raw []byte
	if s, ok := body.(string); ok {
		raw = []byte(s)
	} else {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return decodeEnvelope(t, resp.StatusCode, out)
}

// decodeEnvelope checks the data/errors type flip and decodes both sides.
func decodeEnvelope(t *testing.T, status int, body []byte) apiResult {
	t.Helper()
	res := apiResult{Status: status, Raw: string(body)}
	var env struct {
		Data   json.RawMessage `json:"data"`
		Errors json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode envelope %q: %v", body, err)
	}
	dataObj := bytes.HasPrefix(env.Data, []byte("{"))
	errObj := bytes.HasPrefix(env.Errors, []byte("{"))
	if dataObj == errObj {
		t.Fatalf("exactly one of data/errors must be an object: %s", body)
	}
	if dataObj {
		if string(env.Errors) != "[]" {
			t.Fatalf("errors must be [] on success: %s", body)
		}
		dec := json.NewDecoder(bytes.NewReader(env.Data))
		dec.UseNumber()
		if err := dec.Decode(&res.Data); err != nil {
			t.Fatal(err)
		}
	} else {
		if string(env.Data) != "[]" {
			t.Fatalf("data must be [] on error: %s", body)
		}
		res.Err = &apiError{}
		if err := json.Unmarshal(env.Errors, res.Err); err != nil {
			t.Fatal(err)
		}
		if res.Err.Message == "" || res.Err.Validations == nil {
			t.Fatalf("errors needs message and validations: %s", body)
		}
	}
	return res
}

func newRequestBody(amount any) map[string]any {
	return map[string]any{
		"merchant_id":  merchant,
		"amount":       amount,
		"description":  "شارژ کیف پول",
		"callback_url": callback,
		"metadata":     map[string]any{"order_id": "ORD-1", "mobile": "09120000000"},
	}
}

// newPayment requests a payment and returns its authority.
func newPayment(t *testing.T, srv *httptest.Server, amount int64) string {
	t.Helper()
	res := post(t, srv, "/pg/v4/payment/request.json", newRequestBody(amount))
	if res.Status != http.StatusOK || res.Code(t) != 100 {
		t.Fatalf("request: %d %s", res.Status, res.Raw)
	}
	return res.str("authority")
}

func verify(t *testing.T, srv *httptest.Server, m, authority string, amount int64) apiResult {
	t.Helper()
	return post(t, srv, "/pg/v4/payment/verify.json", map[string]any{
		"merchant_id": m, "amount": amount, "authority": authority,
	})
}

func inquiry(t *testing.T, srv *httptest.Server, authority string) apiResult {
	t.Helper()
	return post(t, srv, "/pg/v4/payment/inquiry.json", map[string]any{
		"merchant_id": merchant, "authority": authority,
	})
}

func unverified(t *testing.T, srv *httptest.Server, m string) apiResult {
	t.Helper()
	return post(t, srv, "/pg/v4/payment/unVerified.json", map[string]any{"merchant_id": m})
}

// control POSTs to the control API and decodes its JSON answer.
func control(t *testing.T, srv *httptest.Server, authority, action string) (int, controlAnswer) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/_sandbank/payments/"+authority+"/"+action, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans controlAnswer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatalf("control %s: %v", action, err)
	}
	return resp.StatusCode, ans
}

func listPayments(t *testing.T, srv *httptest.Server) []Payment {
	t.Helper()
	resp, err := http.Get(srv.URL + "/_sandbank/payments")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list: HTTP %d", resp.StatusCode)
	}
	var ps []Payment
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestRequestValidation(t *testing.T) {
	_, srv := newTestBank(t, Options{})
	with := func(mod func(m map[string]any)) map[string]any {
		m := newRequestBody(int64(120_000))
		mod(m)
		return m
	}
	tests := []struct {
		name       string
		body       any
		wantStatus int
		wantCode   int
		wantField  string // a field named in validations
	}{
		{"malformed JSON", `{"merchant_id": `, 400, -9, "body"},
		{"not an object", `[1,2]`, 400, -9, "body"},
		{"empty body", ``, 400, -9, "body"},
		{"missing merchant", with(func(m map[string]any) { delete(m, "merchant_id") }), 400, -9, "merchant_id"},
		{"malformed merchant", with(func(m map[string]any) { m["merchant_id"] = "1344b5d4-0048-11e8-94db" }), 400, -9, "merchant_id"},
		{"non-hex merchant", with(func(m map[string]any) { m["merchant_id"] = "zzzzzzzz-0048-11e8-94db-005056a205be" }), 400, -9, "merchant_id"},
		{"zero merchant: terminal not active, and why", with(func(m map[string]any) { m["merchant_id"] = zeroMerchant }), 400, -11, "merchant_id"},
		{"missing amount", with(func(m map[string]any) { delete(m, "amount") }), 400, -9, "amount"},
		{"amount below minimum", with(func(m map[string]any) { m["amount"] = 9_999 }), 400, -9, "amount"},
		{"fractional amount", with(func(m map[string]any) { m["amount"] = 10_000.5 }), 400, -9, "amount"},
		{"amount not a number", with(func(m map[string]any) { m["amount"] = "lots" }), 400, -9, "amount"},
		{"amount above maximum", with(func(m map[string]any) { m["amount"] = 1_000_000_010 }), 400, -41, ""},
		{"IRT below minimum", with(func(m map[string]any) { m["amount"] = 999; m["currency"] = "IRT" }), 400, -9, "amount"},
		{"unknown currency", with(func(m map[string]any) { m["currency"] = "USD" }), 400, -9, "currency"},
		{"missing description", with(func(m map[string]any) { delete(m, "description") }), 400, -9, "description"},
		{"blank description", with(func(m map[string]any) { m["description"] = "   " }), 400, -9, "description"},
		{"description too long", with(func(m map[string]any) { m["description"] = strings.Repeat("ش", 501) }), 400, -9, "description"},
		{"description wrong type", with(func(m map[string]any) { m["description"] = 12 }), 400, -9, "description"},
		{"missing callback", with(func(m map[string]any) { delete(m, "callback_url") }), 400, -9, "callback_url"},
		{"ftp callback", with(func(m map[string]any) { m["callback_url"] = "ftp://shop.example/cb" }), 400, -9, "callback_url"},
		{"relative callback", with(func(m map[string]any) { m["callback_url"] = "/cb" }), 400, -9, "callback_url"},
		{"minimum amount ok", with(func(m map[string]any) { m["amount"] = 10_000 }), 200, 100, ""},
		{"description of 500 ok", with(func(m map[string]any) { m["description"] = strings.Repeat("ش", 500) }), 200, 100, ""},
		{"IRT ok", with(func(m map[string]any) { m["amount"] = 1_000; m["currency"] = "IRT" }), 200, 100, ""},
		{"amount as string ok", with(func(m map[string]any) { m["amount"] = "50000" }), 200, 100, ""},
		{"PHP empty metadata ok", with(func(m map[string]any) { m["metadata"] = []any{} }), 200, 100, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := post(t, srv, "/pg/v4/payment/request.json", tc.body)
			if res.Status != tc.wantStatus || res.Code(t) != tc.wantCode {
				t.Fatalf("got HTTP %d code %d, want HTTP %d code %d: %s",
					res.Status, res.Code(t), tc.wantStatus, tc.wantCode, res.Raw)
			}
			if tc.wantField != "" {
				found := false
				for _, v := range res.Err.Validations {
					if _, ok := v[tc.wantField]; ok {
						found = true
					}
				}
				if !found {
					t.Errorf("validations do not name %q: %s", tc.wantField, res.Raw)
				}
			}
			if tc.wantCode == 100 {
				if !authorityRE.MatchString(res.str("authority")) || res.str("fee_type") != "Merchant" || res.str("message") != "Success" {
					t.Errorf("bad success data: %s", res.Raw)
				}
			}
		})
	}
}

// TestCallbackOriginStopsOpenRedirects: a bank bound to a merchant's
// origin (as inside the app) refuses payments calling back anywhere else,
// so its pay button, served on the app's origin, cannot send the payer to
// a site of an attacker's choosing; callbacks on the origin still work.
func TestCallbackOriginStopsOpenRedirects(t *testing.T) {
	_, srv := newTestBank(t, Options{CallbackOrigin: "http://shop.example"})
	tests := []struct {
		name     string
		callback string
		ok       bool
	}{
		{"same origin", callback, true},
		{"same origin, upper case host", "http://SHOP.example/pay/callback", true},
		{"another host", "http://evil.example/pay/callback", false},
		{"another scheme", "https://shop.example/pay/callback", false},
		{"another port", "http://shop.example:8443/pay/callback", false},
		{"origin as a subdomain of another", "http://shop.example.evil.example/cb", false},
		{"origin as user info", "http://shop.example@evil.example/cb", false},
		{"origin as user info with a path", "http://shop.example/@evil.example/cb", true}, // a path on shop.example
		{"bare origin, no path", "http://shop.example", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := newRequestBody(int64(10_000))
			body["callback_url"] = tc.callback
			res := post(t, srv, "/pg/v4/payment/request.json", body)
			if tc.ok {
				if res.Status != http.StatusOK || res.Code(t) != 100 {
					t.Fatalf("refused: %d %s", res.Status, res.Raw)
				}
				a := res.str("authority")
				p := submit(t, srv, "/pg/StartPay/"+a+"/pay")
				if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, tc.callback+"?Authority="+a) {
					t.Fatalf("pay: %d Location %q", p.status, p.location)
				}
				return
			}
			if res.Status != http.StatusBadRequest || res.Code(t) != -9 {
				t.Fatalf("accepted: %d %s", res.Status, res.Raw)
			}
			found := false
			for _, v := range res.Err.Validations {
				if _, ok := v["callback_url"]; ok {
					found = true
				}
			}
			if !found {
				t.Errorf("validations do not name callback_url: %s", res.Raw)
			}
		})
	}
}

func TestRequestRecordsPayment(t *testing.T) {
	b, srv := newTestBank(t, Options{})
	body := newRequestBody(int64(1_500))
	body["currency"] = "IRT"
	res := post(t, srv, "/pg/v4/payment/request.json", body)
	if res.Code(t) != 100 {
		t.Fatalf("request: %s", res.Raw)
	}
	a := res.str("authority")
	if fee := res.int(t, "fee"); fee != 150 { // 1% of 15,000 rials
		t.Errorf("fee = %d, want 150", fee)
	}
	p, ok := b.Payment(a)
	if !ok {
		t.Fatal("payment not recorded")
	}
	if p.Amount != 15_000 || p.Currency != "IRT" || p.State != StateInBank || p.MerchantID != merchant ||
		p.CallbackURL != callback || p.OrderID != "ORD-1" || p.Description != "شارژ کیف پول" || p.CreatedAt.IsZero() {
		t.Errorf("recorded payment = %+v", p)
	}

	// Verify compares in the unit of the request (tomans here).
	if _, err := b.Pay(a); err != nil {
		t.Fatal(err)
	}
	if got := verify(t, srv, merchant, a, 15_000).Code(t); got != -50 {
		t.Errorf("verify with rials of an IRT payment = %d, want -50", got)
	}
	if got := verify(t, srv, merchant, a, 1_500).Code(t); got != 100 {
		t.Errorf("verify with tomans = %d, want 100", got)
	}
}

func TestAuthorityFormatAndUniqueness(t *testing.T) {
	_, srv := newTestBank(t, Options{Rand: crand.Reader})
	seen := make(map[string]bool)
	for i := 0; i < 1000; i++ {
		a := newPayment(t, srv, 10_000)
		if !authorityRE.MatchString(a) {
			t.Fatalf("authority %q does not match %s", a, authorityRE)
		}
		if seen[a] {
			t.Fatalf("authority %q issued twice", a)
		}
		seen[a] = true
	}
}

func TestSeedIsDeterministic(t *testing.T) {
	run := func(seed uint64) []string {
		b := New(Options{Seed: seed})
		srv := httptest.NewServer(b.Handler())
		defer srv.Close()
		var out []string
		for i := 0; i < 3; i++ {
			a := newPayment(t, srv, 10_000)
			if _, err := b.Pay(a); err != nil {
				t.Fatal(err)
			}
			p, _ := b.Payment(a)
			out = append(out, a, strconv.FormatInt(p.RefID, 10), p.CardPAN)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different results:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("different seeds, same results: %v", a)
	}
}

func TestLifecycle(t *testing.T) {
	b, srv := newTestBank(t, Options{})
	const amount = 250_000
	a := newPayment(t, srv, amount)

	if res := inquiry(t, srv, a); res.Code(t) != 100 || res.str("status") != "IN_BANK" {
		t.Fatalf("inquiry before pay: %s", res.Raw)
	}
	if res := unverified(t, srv, merchant); len(res.Data["authorities"].([]any)) != 0 {
		t.Fatalf("unVerified lists an unpaid payment: %s", res.Raw)
	}

	status, ans := control(t, srv, a, "pay")
	if status != http.StatusOK || ans.Redirect != callback+"?Authority="+a+"&Status=OK" {
		t.Fatalf("control pay: %d %+v", status, ans)
	}
	if res := inquiry(t, srv, a); res.str("status") != "PAID" {
		t.Fatalf("inquiry after pay: %s", res.Raw)
	}

	res := unverified(t, srv, merchant)
	if code, ok := res.Data["code"].(string); !ok || code != "100" {
		t.Fatalf("unVerified code must be the string \"100\": %s", res.Raw)
	}
	list := res.Data["authorities"].([]any)
	if len(list) != 1 {
		t.Fatalf("unVerified: %s", res.Raw)
	}
	item := list[0].(map[string]any)
	if item["authority"] != a || item["amount"] != json.Number("250000") || item["callback_url"] != callback {
		t.Errorf("unVerified item: %v", item)
	}
	if _, err := time.Parse("2006-01-02 15:04:05", item["date"].(string)); err != nil {
		t.Errorf("unVerified date: %v", err)
	}
	if res := unverified(t, srv, otherMerchant); len(res.Data["authorities"].([]any)) != 0 {
		t.Errorf("unVerified leaks another merchant's payment: %s", res.Raw)
	}

	first := verify(t, srv, merchant, a, amount)
	if first.Status != http.StatusOK || first.Code(t) != 100 || first.str("message") != "Paid" {
		t.Fatalf("first verify: %s", first.Raw)
	}
	refID := first.int(t, "ref_id")
	if refID < 1_000_000_000 || refID > 99_999_999_999 {
		t.Errorf("ref_id %d is not 10-11 digits", refID)
	}
	pan := first.str("card_pan")
	if !regexp.MustCompile(`^[0-9]{6}\*{6}[0-9]{4}$`).MatchString(pan) {
		t.Errorf("card_pan %q is not masked 6+******+4", pan)
	}
	hash := first.str("card_hash")
	if !regexp.MustCompile(`^[0-9A-F]{64}$`).MatchString(hash) {
		t.Errorf("card_hash %q is not uppercase hex SHA-256", hash)
	}
	if first.str("fee_type") != "Merchant" || first.int(t, "fee") != 2_500 || first.str("shaparak_fee") == "" ||
		first.str("order_id") != "ORD-1" {
		t.Errorf("verify data: %s", first.Raw)
	}
	if w, ok := first.Data["wages"].([]any); !ok || len(w) != 0 {
		t.Errorf("wages must be []: %s", first.Raw)
	}

	second := verify(t, srv, merchant, a, amount)
	if second.Status != http.StatusOK || second.Code(t) != 101 {
		t.Fatalf("second verify: %s", second.Raw)
	}
	if second.int(t, "ref_id") != refID || second.str("card_pan") != pan || second.str("card_hash") != hash {
		t.Errorf("second verify changed the receipt: %s vs %s", second.Raw, first.Raw)
	}
	if res := verify(t, srv, merchant, a, amount); res.Code(t) != 101 {
		t.Errorf("third verify: %s", res.Raw)
	}

	if res := inquiry(t, srv, a); res.str("status") != "VERIFIED" {
		t.Errorf("inquiry after verify: %s", res.Raw)
	}
	if res := unverified(t, srv, merchant); len(res.Data["authorities"].([]any)) != 0 {
		t.Errorf("unVerified still lists a verified payment: %s", res.Raw)
	}

	ps := listPayments(t, srv)
	if len(ps) != 1 {
		t.Fatalf("payments: %+v", ps)
	}
	p := ps[0]
	if p.Authority != a || p.State != StateVerified || p.RefID != refID || p.CardPAN != pan ||
		p.VerifyCount != 3 || p.PaidAt.IsZero() || p.VerifiedAt.IsZero() || p.OrderID != "ORD-1" {
		t.Errorf("control list: %+v", p)
	}
	if got := b.Payments(); len(got) != 1 || got[0].RefID != refID {
		t.Errorf("Payments(): %+v", got)
	}
}

func TestUnverifiedOrderAndLimit(t *testing.T) {
	clock := testclock.New(time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC))
	b, srv := newTestBank(t, Options{Clock: clock.Now, AuthorityTTL: time.Hour})
	var paid []string
	for i := 0; i < 105; i++ {
		a := newPayment(t, srv, 10_000+int64(i))
		if _, err := b.Pay(a); err != nil {
			t.Fatal(err)
		}
		paid = append(paid, a)
		clock.Add(time.Second)
	}
	res := unverified(t, srv, merchant)
	list := res.Data["authorities"].([]any)
	if len(list) != 100 {
		t.Fatalf("unVerified returned %d, want 100", len(list))
	}
	newest := list[0].(map[string]any)
	if newest["authority"] != paid[104] {
		t.Errorf("first item %v, want the newest %s", newest["authority"], paid[104])
	}
	// 08:01:44 UTC is 11:31:44 in Tehran.
	if newest["date"] != "2025-03-01 11:31:44" {
		t.Errorf("date %v, want Tehran time 2025-03-01 11:31:44", newest["date"])
	}
	if last := list[99].(map[string]any); last["authority"] != paid[5] {
		t.Errorf("last item %v, want %s", last["authority"], paid[5])
	}
}

func TestVerifyErrors(t *testing.T) {
	b, srv := newTestBank(t, Options{})
	const amount = 50_000
	unpaid := newPayment(t, srv, amount)
	cancelled := newPayment(t, srv, amount)
	if _, err := b.Cancel(cancelled); err != nil {
		t.Fatal(err)
	}
	paid := newPayment(t, srv, amount)
	if _, err := b.Pay(paid); err != nil {
		t.Fatal(err)
	}
	unknown := "S" + strings.Repeat("0", 35)

	tests := []struct {
		name       string
		merchant   string
		authority  string
		amount     int64
		wantStatus int
		wantCode   int
	}{
		{"verify before paying", merchant, unpaid, amount, 200, -51},
		{"verify after cancel", merchant, cancelled, amount, 200, -51},
		{"wrong amount", merchant, paid, amount + 10, 200, -50},
		{"wrong merchant", otherMerchant, paid, amount, 200, -53},
		{"unknown authority", merchant, unknown, amount, 200, -54},
		{"inactive terminal", zeroMerchant, paid, amount, 400, -11},
		{"malformed merchant", "nope", paid, amount, 400, -9},
		{"missing authority", merchant, "", amount, 400, -9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := verify(t, srv, tc.merchant, tc.authority, tc.amount)
			if res.Status != tc.wantStatus || res.Code(t) != tc.wantCode {
				t.Fatalf("got HTTP %d code %d, want HTTP %d code %d: %s",
					res.Status, res.Code(t), tc.wantStatus, tc.wantCode, res.Raw)
			}
		})
	}
	// None of the failures verified the paid payment.
	if p, _ := b.Payment(paid); p.State != StatePaid || !p.VerifiedAt.IsZero() {
		t.Errorf("paid payment after failed verifies: %+v", p)
	}
	if res := verify(t, srv, merchant, paid, amount); res.Code(t) != 100 {
		t.Errorf("verify after the failures: %s", res.Raw)
	}
	if res := inquiry(t, srv, cancelled); res.str("status") != "FAILED" {
		t.Errorf("inquiry of a cancelled payment: %s", res.Raw)
	}
	if res := inquiry(t, srv, unknown); res.Code(t) != -54 {
		t.Errorf("inquiry of an unknown authority: %s", res.Raw)
	}
	if res := post(t, srv, "/pg/v4/payment/inquiry.json", map[string]any{"merchant_id": otherMerchant, "authority": paid}); res.Code(t) != -53 {
		t.Errorf("inquiry by another merchant: %s", res.Raw)
	}
}

func TestExpiry(t *testing.T) {
	clock := testclock.New(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	b, srv := newTestBank(t, Options{Clock: clock.Now, AuthorityTTL: 15 * time.Minute})
	a := newPayment(t, srv, 10_000)
	late := newPayment(t, srv, 10_000)

	clock.Add(14*time.Minute + 59*time.Second)
	if res := inquiry(t, srv, a); res.str("status") != "IN_BANK" {
		t.Fatalf("before TTL: %s", res.Raw)
	}
	if _, err := b.Pay(late); err != nil { // paid just in time: never expires
		t.Fatal(err)
	}

	clock.Add(time.Second)
	if res := inquiry(t, srv, a); res.str("status") != "FAILED" {
		t.Fatalf("after TTL: %s", res.Raw)
	}
	if p, _ := b.Payment(a); p.FailReason != FailExpired {
		t.Errorf("fail reason = %q, want expired", p.FailReason)
	}
	if status, ans := control(t, srv, a, "pay"); status != http.StatusConflict || ans.State != StateFailed {
		t.Errorf("control pay of an expired authority: %d %+v", status, ans)
	}
	if res := verify(t, srv, merchant, a, 10_000); res.Code(t) != -51 {
		t.Errorf("verify of an expired authority: %s", res.Raw)
	}
	resp := get(t, srv, "/pg/StartPay/"+a)
	if resp.status != http.StatusNotFound || !strings.Contains(resp.body, `data-testid="bank-expired"`) {
		t.Errorf("StartPay of an expired authority: %d", resp.status)
	}
	if res := inquiry(t, srv, late); res.str("status") != "PAID" {
		t.Errorf("a payment paid in time expired: %s", res.Raw)
	}
	if res := verify(t, srv, merchant, late, 10_000); res.Code(t) != 100 {
		t.Errorf("verify long after paying: %s", res.Raw)
	}
}

func TestControlAPI(t *testing.T) {
	b, srv := newTestBank(t, Options{})
	if status, ans := control(t, srv, "S"+strings.Repeat("x", 35), "pay"); status != http.StatusNotFound || ans.Error == "" {
		t.Errorf("pay unknown: %d %+v", status, ans)
	}
	a := newPayment(t, srv, 10_000)
	status, ans := control(t, srv, a, "cancel")
	if status != http.StatusOK || ans.Redirect != callback+"?Authority="+a+"&Status=NOK" {
		t.Fatalf("cancel: %d %+v", status, ans)
	}
	if status, ans := control(t, srv, a, "pay"); status != http.StatusConflict || ans.State != StateFailed {
		t.Errorf("pay after cancel: %d %+v", status, ans)
	}
	if _, err := b.Cancel(a); err == nil || !strings.Contains(err.Error(), a) {
		t.Errorf("Cancel twice: err = %v", err)
	}
	if ps := listPayments(t, srv); len(ps) != 1 || ps[0].State != StateFailed || ps[0].FailReason != FailCancelled {
		t.Errorf("list: %+v", ps)
	}
}

func TestMethodsAndPaths(t *testing.T) {
	_, srv := newTestBank(t, Options{})
	resp, err := http.Get(srv.URL + "/pg/v4/payment/verify.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET verify.json: HTTP %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	decodeEnvelope(t, resp.StatusCode, body)

	if res := post(t, srv, "/pg/v4/payment/reverse.json", map[string]any{}); res.Status != http.StatusNotFound {
		t.Errorf("unknown API path: %d", res.Status)
	}
	a := newPayment(t, srv, 10_000)
	resp, err = http.Get(srv.URL + "/pg/StartPay/" + a + "/pay")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET of the pay button: %d", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/_sandbank/payments/" + a + "/pay")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET of control pay: %d", resp.StatusCode)
	}
}

// page is a fetched HTML page.
type page struct {
	status   int
	location string
	header   http.Header
	body     string
}

// noRedirect is a client that reports redirects instead of following them.
func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, srv *httptest.Server, path string) page {
	t.Helper()
	resp, err := noRedirect().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return readPage(t, resp)
}

func submit(t *testing.T, srv *httptest.Server, path string) page {
	t.Helper()
	resp, err := noRedirect().PostForm(srv.URL+path, url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	return readPage(t, resp)
}

func readPage(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), header: resp.Header, body: string(body)}
}

// formAction finds the action of the form whose button has testID and
// resolves it against the page's path.
func formAction(t *testing.T, body, pagePath, testID string) string {
	t.Helper()
	action, _, ok := bankForm(body, testID)
	if !ok {
		t.Fatalf("no form for %s", testID)
	}
	base, _ := url.Parse(pagePath)
	ref, err := url.Parse(action)
	if err != nil {
		t.Fatal(err)
	}
	return base.ResolveReference(ref).String()
}

// bankForm reads a page as a browser does (golang.org/x/net/html) and
// finds the post form that holds the element with data-testid testID:
// its action and its hidden fields, whatever the markup's attribute order,
// quoting or entities.
func bankForm(body, testID string) (action string, hidden url.Values, ok bool) {
	root, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return "", nil, false
	}
	attr := func(n *html.Node, key string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val, true
			}
		}
		return "", false
	}
	var holds func(n *html.Node) bool
	holds = func(n *html.Node) bool {
		if v, _ := attr(n, "data-testid"); n.Type == html.ElementNode && v == testID {
			return true
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if holds(c) {
				return true
			}
		}
		return false
	}
	var form *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if method, _ := attr(n, "method"); form == nil && n.DataAtom == atom.Form && strings.EqualFold(method, "post") && holds(n) {
			form = n
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	if form == nil {
		return "", nil, false
	}
	hidden = url.Values{}
	var inputs func(n *html.Node)
	inputs = func(n *html.Node) {
		if typ, _ := attr(n, "type"); n.DataAtom == atom.Input && strings.EqualFold(typ, "hidden") {
			name, _ := attr(n, "name")
			value, _ := attr(n, "value")
			hidden.Add(name, value)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			inputs(c)
		}
	}
	inputs(form)
	action, _ = attr(form, "action")
	return action, hidden, true
}

func checkPage(t *testing.T, p page) {
	t.Helper()
	if strings.Contains(p.body, "[bank.") {
		t.Errorf("page has a missing catalog key: %s", regexp.MustCompile(`\[bank\.[^\]]*\]`).FindString(p.body))
	}
	for _, bad := range []string{"style=", "<style", "http://cdn", "https://"} {
		if strings.Contains(p.body, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	// Scripts only from the bank's own assets, never inline.
	if n, m := strings.Count(p.body, "<script"), strings.Count(p.body, `<script src="../assets/bank.js" defer></script>`); n != m {
		t.Errorf("page has %d scripts, %d of them the bank's own file", n, m)
	}
	if !strings.Contains(p.header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("no strict CSP: %q", p.header.Get("Content-Security-Policy"))
	}
}

func TestStartPayPage(t *testing.T) {
	_, srv := newTestBank(t, Options{})
	a := newPayment(t, srv, 1_234_560)
	tests := []struct {
		name, query, lang, dir string
		want                   []string
	}{
		{"persian by default", "", "fa", "rtl", []string{
			"۱٬۲۳۴٬۵۶۰ ریال", "۱۲۳٬۴۵۶ تومان", bankpage.T(i18n.FA, "button.pay"),
			`action="` + a + `/pay?lang=fa"`, `href="` + a + `?lang=en"`,
		}},
		{"english", "?lang=en", "en", "ltr", []string{
			"1,234,560 rials", "123,456 tomans", ">Pay<", ">Cancel<", ">Pay and close the window<",
			`action="` + a + `/pay?lang=en"`, `action="` + a + `/cancel?lang=en"`, `action="` + a + `/pay-close?lang=en"`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := get(t, srv, "/pg/StartPay/"+a+tc.query)
			if p.status != http.StatusOK {
				t.Fatalf("HTTP %d", p.status)
			}
			checkPage(t, p)
			want := append([]string{
				`<html lang="` + tc.lang + `" dir="` + tc.dir + `">`,
				`data-testid="bank-pay"`, `data-testid="bank-cancel"`, `data-testid="bank-pay-close"`,
				a, "شارژ کیف پول", `href="../assets/bank.css"`,
			}, tc.want...)
			for _, s := range want {
				if !strings.Contains(p.body, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			if got := strings.Count(p.body, `<form method="post"`); got != 3 {
				t.Errorf("page has %d forms, want 3", got)
			}
		})
	}

	css := get(t, srv, "/pg/assets/bank.css")
	if css.status != http.StatusOK || !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") || !strings.Contains(css.body, ".btn-pay") {
		t.Errorf("stylesheet: %d %q", css.status, css.header.Get("Content-Type"))
	}

	unknown := get(t, srv, "/pg/StartPay/S"+strings.Repeat("9", 35)+"?lang=en")
	if unknown.status != http.StatusNotFound || !strings.Contains(unknown.body, `data-testid="bank-not-found"`) ||
		!strings.Contains(unknown.body, "Transaction not found") {
		t.Errorf("unknown authority page: %d", unknown.status)
	}
	checkPage(t, unknown)
}

func TestStartPayButtons(t *testing.T) {
	b, srv := newTestBank(t, Options{})
	pagePath := func(a, q string) string { return "/pg/StartPay/" + a + q }

	t.Run("pay redirects with Status=OK", func(t *testing.T) {
		a := newPayment(t, srv, 20_000)
		start := get(t, srv, pagePath(a, ""))
		p := submit(t, srv, formAction(t, start.body, pagePath(a, ""), "bank-pay"))
		if p.status != http.StatusSeeOther || p.location != callback+"?Authority="+a+"&Status=OK" {
			t.Fatalf("pay: %d Location %q", p.status, p.location)
		}
		if got, _ := b.Payment(a); got.State != StatePaid || got.RefID == 0 || got.CardPAN == "" {
			t.Errorf("after pay: %+v", got)
		}
		// The page now says it is paid, with a link back carrying OK.
		again := get(t, srv, pagePath(a, "?lang=en"))
		if again.status != http.StatusOK || !strings.Contains(again.body, `data-testid="bank-paid"`) ||
			!strings.Contains(again.body, `href="`+callback+"?Authority="+a+"&amp;Status=OK") {
			t.Errorf("page of a paid payment: %d %s", again.status, again.body)
		}
		checkPage(t, again)
		// Pressing a button again is refused.
		if p := submit(t, srv, pagePath(a, "/cancel")); p.status != http.StatusConflict || !strings.Contains(p.body, `data-testid="bank-paid"`) {
			t.Errorf("cancel after pay: %d", p.status)
		}
		if res := verify(t, srv, merchant, a, 20_000); res.Code(t) != 100 {
			t.Errorf("verify after the pay button: %s", res.Raw)
		}
	})

	t.Run("cancel redirects with Status=NOK", func(t *testing.T) {
		a := newPayment(t, srv, 20_000)
		start := get(t, srv, pagePath(a, "?lang=en"))
		p := submit(t, srv, formAction(t, start.body, pagePath(a, ""), "bank-cancel"))
		if p.status != http.StatusSeeOther || p.location != callback+"?Authority="+a+"&Status=NOK" {
			t.Fatalf("cancel: %d Location %q", p.status, p.location)
		}
		if got, _ := b.Payment(a); got.State != StateFailed || got.FailReason != FailCancelled {
			t.Errorf("after cancel: %+v", got)
		}
		again := get(t, srv, pagePath(a, ""))
		if !strings.Contains(again.body, `data-testid="bank-cancelled"`) || !strings.Contains(again.body, "Status=NOK") {
			t.Errorf("page of a cancelled payment: %s", again.body)
		}
		if res := verify(t, srv, merchant, a, 20_000); res.Code(t) != -51 {
			t.Errorf("verify after the cancel button: %s", res.Raw)
		}
	})

	t.Run("pay and close stays on the bank", func(t *testing.T) {
		a := newPayment(t, srv, 20_000)
		start := get(t, srv, pagePath(a, "?lang=en"))
		action := formAction(t, start.body, pagePath(a, "?lang=en"), "bank-pay-close")
		if !strings.HasSuffix(action, "/pay-close?lang=en") {
			t.Errorf("pay-close action %q lost the language", action)
		}
		p := submit(t, srv, action)
		if p.status != http.StatusOK || p.location != "" || !strings.Contains(p.body, `data-testid="bank-closed"`) {
			t.Fatalf("pay-close: %d Location %q", p.status, p.location)
		}
		if !strings.Contains(p.body, `<html lang="en"`) || !strings.Contains(p.body, "You may close this window") ||
			!strings.Contains(p.body, `href="../../assets/bank.css"`) || strings.Contains(p.body, callback) {
			t.Errorf("closed page: %s", p.body)
		}
		checkPage(t, p)
		if got, _ := b.Payment(a); got.State != StatePaid {
			t.Errorf("after pay-close: %+v", got)
		}
		if res := unverified(t, srv, merchant); !strings.Contains(res.Raw, a) {
			t.Errorf("unVerified does not list the lost-callback payment: %s", res.Raw)
		}
	})

	t.Run("unknown authority", func(t *testing.T) {
		p := submit(t, srv, pagePath("S"+strings.Repeat("1", 35), "/pay"))
		if p.status != http.StatusNotFound || !strings.Contains(p.body, `data-testid="bank-not-found"`) {
			t.Errorf("pay unknown: %d", p.status)
		}
	})
}

func TestMountedUnderPrefix(t *testing.T) {
	b := New(Options{Seed: 1})
	mux := http.NewServeMux()
	mux.Handle(routes.Sandbank+"/", http.StripPrefix(routes.Sandbank, b.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res := post(t, srv, routes.Sandbank+"/pg/v4/payment/request.json", newRequestBody(int64(10_000)))
	a := res.str("authority")
	start := get(t, srv, routes.Sandbank+"/pg/StartPay/"+a)
	if start.status != http.StatusOK {
		t.Fatalf("StartPay under prefix: %d", start.status)
	}
	action := formAction(t, start.body, routes.Sandbank+"/pg/StartPay/"+a, "bank-pay")
	if !strings.HasPrefix(action, routes.Sandbank+"/pg/StartPay/"+a+"/pay") {
		t.Errorf("action resolves to %q", action)
	}
	if p := submit(t, srv, action); p.status != http.StatusSeeOther {
		t.Errorf("pay under prefix: %d", p.status)
	}
	if css := get(t, srv, routes.Sandbank+"/pg/assets/bank.css"); css.status != http.StatusOK {
		t.Errorf("stylesheet under prefix: %d", css.status)
	}
}

func TestConcurrentVerify(t *testing.T) {
	b, srv := newTestBank(t, Options{})
	a := newPayment(t, srv, 75_000)
	if _, err := b.Pay(a); err != nil {
		t.Fatal(err)
	}
	const n = 50
	type result struct {
		code  int
		refID int64
		err   error
	}
	results := make(chan result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body, _ := json.Marshal(map[string]any{"merchant_id": merchant, "amount": 75_000, "authority": a})
			resp, err := http.Post(srv.URL+"/pg/v4/payment/verify.json", "application/json", bytes.NewReader(body))
			if err != nil {
				results <- result{err: err}
				return
			}
			defer resp.Body.Close()
			var env struct {
				Data struct {
					Code  int   `json:"code"`
					RefID int64 `json:"ref_id"`
				} `json:"data"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
				results <- result{err: fmt.Errorf("decode: %w", err)}
				return
			}
			results <- result{code: env.Data.Code, refID: env.Data.RefID}
		}()
	}
	close(start)
	wg.Wait()
	close(results)

	counts := map[int]int{}
	refIDs := map[int64]bool{}
	for r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		counts[r.code]++
		refIDs[r.refID] = true
	}
	if counts[100] != 1 || counts[101] != n-1 || len(counts) != 2 {
		t.Errorf("codes = %v, want one 100 and %d 101", counts, n-1)
	}
	if len(refIDs) != 1 {
		t.Errorf("ref ids = %v, want exactly one", refIDs)
	}
	if p, _ := b.Payment(a); p.VerifyCount != n || p.State != StateVerified {
		t.Errorf("payment after concurrent verifies: %+v", p)
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct {
		lang  i18n.Lang
		n     int64
		want  string
		toman string
	}{
		{i18n.EN, 0, "0", "0"},
		{i18n.EN, 999, "999", "99.9"},
		{i18n.EN, 1_000, "1,000", "100"},
		{i18n.EN, 1_234_567, "1,234,567", "123,456.7"},
		{i18n.FA, 1_234_560, "۱٬۲۳۴٬۵۶۰", "۱۲۳٬۴۵۶"},
	}
	for _, tc := range tests {
		if got := i18n.Group(tc.lang, tc.n); got != tc.want {
			t.Errorf("formatInt(%s, %d) = %q, want %q", tc.lang, tc.n, got, tc.want)
		}
		if got := i18n.TomansNumber(tc.lang, tc.n); got != tc.toman {
			t.Errorf("formatTomans(%s, %d) = %q, want %q", tc.lang, tc.n, got, tc.toman)
		}
	}
}

func TestServeStandalone(t *testing.T) {
	b := New(Options{Seed: 9})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln) }()

	body, _ := json.Marshal(newRequestBody(int64(10_000)))
	resp, err := http.Post("http://"+ln.Addr().String()+"/pg/v4/payment/request.json", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if res := decodeEnvelope(t, resp.StatusCode, raw); res.Code(t) != 100 {
		t.Errorf("request on the standalone bank: %s", res.Raw)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

// The bank's page follows the language chosen in the app (its lang cookie,
// sent by the browser to the bank on the app's host); the bank's own
// switch (?lang=) wins over it, and the browser's Accept-Language never
// chooses.
func TestStartPayPageFollowsTheAppsLanguage(t *testing.T) {
	_, srv := newTestBank(t, Options{})
	a := newPayment(t, srv, 500_000)
	for _, tc := range []struct {
		name, cookie, query, acceptLanguage, want string
	}{
		{"nothing chosen", "", "", "en-US,en;q=0.9", "fa"},
		{"english chosen in the app", "en", "", "", "en"},
		{"persian chosen in the app", "fa", "", "en", "fa"},
		{"the bank's switch wins", "en", "?lang=fa", "", "fa"},
		{"a bad cookie", "xx", "", "", "fa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/pg/StartPay/"+a+tc.query, nil)
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: "lang", Value: tc.cookie})
			}
			if tc.acceptLanguage != "" {
				req.Header.Set("Accept-Language", tc.acceptLanguage)
			}
			resp, err := noRedirect().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			p := readPage(t, resp)
			if !strings.Contains(p.body, `<html lang="`+tc.want+`"`) {
				t.Errorf("page not in %s", tc.want)
			}
			if !strings.Contains(p.body, `action="`+a+`/pay?lang=`+tc.want+`"`) {
				t.Errorf("the Pay button does not keep %s", tc.want)
			}
		})
	}
}

// The page counts down: the time left (m:ss, the page's digits) and the
// bank's script, which the CSP allows; the font and script are served.
func TestStartPayCountdown(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	_, srv := newTestBank(t, Options{Clock: clock, AuthorityTTL: 15 * time.Minute})
	a := newPayment(t, srv, 500_000)
	now = now.Add(61 * time.Second)
	p := get(t, srv, "/pg/StartPay/"+a)
	for _, want := range []string{`data-seconds-left="839"`, `>۱۳:۵۹</strong>`, bankpage.T(i18n.FA, "expires_note")} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "font-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	for _, asset := range []string{"/pg/assets/bank.js", "/pg/assets/vazirmatn.woff2", "/pg/assets/dejavu-sans-mono.woff2"} {
		if r := get(t, srv, asset); r.status != http.StatusOK || len(r.body) < 100 {
			t.Errorf("%s: %d, %d bytes", asset, r.status, len(r.body))
		}
	}
}

// The control API's expire ends the payer's page now as its TTL would:
// the bank then answers as Zarinpal does for an expired authority (the
// payer is sent back with Status=NOK, verify -51, inquiry FAILED), and
// only its own record and page say "expired".
func TestControlExpire(t *testing.T) {
	b, srv := newTestBank(t, Options{})
	if status, ans := control(t, srv, "S"+strings.Repeat("x", 35), "expire"); status != http.StatusNotFound || ans.Error == "" {
		t.Errorf("expire unknown: %d %+v", status, ans)
	}
	a := newPayment(t, srv, 10_000)
	status, ans := control(t, srv, a, "expire")
	if status != http.StatusOK || ans.Redirect != callback+"?Authority="+a+"&Status=NOK" {
		t.Fatalf("expire: %d %+v", status, ans)
	}
	if res := verify(t, srv, merchant, a, 10_000); res.Code(t) != -51 {
		t.Errorf("verify of an expired authority: %s", res.Raw)
	}
	if res := inquiry(t, srv, a); res.str("status") != "FAILED" {
		t.Errorf("inquiry of an expired authority: %s", res.Raw)
	}
	if p, _ := b.Payment(a); p.State != StateFailed || p.FailReason != FailExpired || p.FailedAt.IsZero() {
		t.Errorf("bank record: %+v", p)
	}
	resp := get(t, srv, "/pg/StartPay/"+a)
	if resp.status != http.StatusNotFound || !strings.Contains(resp.body, `data-testid="bank-expired"`) ||
		!strings.Contains(resp.body, "Authority="+a+"&amp;Status=NOK") {
		t.Errorf("StartPay of an expired authority: %d", resp.status)
	}
	for _, action := range []string{"expire", "pay", "cancel"} {
		if status, ans := control(t, srv, a, action); status != http.StatusConflict || ans.State != StateFailed {
			t.Errorf("%s after expire: %d %+v", action, status, ans)
		}
	}
	if _, err := b.Expire(a); !errors.Is(err, ErrNotInBank) {
		t.Errorf("Expire twice: err = %v", err)
	}
	paid := newPayment(t, srv, 10_000)
	if _, err := b.Pay(paid); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Expire(paid); !errors.Is(err, ErrNotInBank) {
		t.Errorf("Expire of a paid payment: err = %v", err)
	}
	if p, _ := b.Payment(paid); p.State != StatePaid {
		t.Errorf("a paid payment expired: %+v", p)
	}
}
