package zarinpal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/routes"
)

const (
	testMerchant = "c0ffee00-1234-4abc-9def-0123456789ab"
	prodAuth     = "A00000000000000000000000000217885159"
	sandAuth     = "S0000000000000000000000000000wwOGYpd"
	callbackURL  = "https://kifpool.example/pay/callback"
)

// Recorded answer shapes (reference §1.2–§1.6).
const (
	bodyRequestOK = `{"data":{"code":100,"message":"Success","authority":"A00000000000000000000000000217885159","fee_type":"Merchant","fee":100},"errors":[]}`
	bodyRequest9  = `{"data":[],"errors":{"code":-9,"message":"The input params invalid, validation error.","validations":[{"description":"The description field is required."}]}}`
	bodyVerifyOK  = `{"data":{"code":100,"message":"Paid","card_hash":"C257DDFB3D47D5E1A9B7E2F45C1A0B8E9F6D2C3B4A5968778695A4B3C2D1B340","card_pan":"628023******8998","ref_id":59421827101,"fee_type":"Merchant","fee":3500,"shaparak_fee":"1200","order_id":"HSA1","wages":[]},"errors":[]}`
	cardHash      = "C257DDFB3D47D5E1A9B7E2F45C1A0B8E9F6D2C3B4A5968778695A4B3C2D1B340"
	htmlError     = "<html><head><title>500 Internal Server Error</title></head><body><h1>Internal Server Error</h1></body></html>"
)

// answerSpec is what the fake bank answers.
type answerSpec struct {
	status int
	header map[string]string
	body   string
	stall  bool // hold the answer until the client gives up
}

// call is one request as the fake bank received it.
type call struct {
	method, path, contentType, accept string
	body                              map[string]any
}

// fakeBank is an httptest.Server that records calls and answers one spec.
type fakeBank struct {
	srv   *httptest.Server
	ans   answerSpec
	mu    sync.Mutex
	calls []call
}

func newBank(t *testing.T, ans answerSpec) *fakeBank {
	t.Helper()
	b := &fakeBank{ans: ans}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *fakeBank) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept")}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&c.body)
	b.mu.Lock()
	b.calls = append(b.calls, c)
	b.mu.Unlock()

	if b.ans.stall {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return
	}
	for k, v := range b.ans.header {
		w.Header().Set(k, v)
	}
	status := b.ans.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, b.ans.body)
}

func (b *fakeBank) lastCall(t *testing.T) call {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) == 0 {
		t.Fatal("no call reached the bank")
	}
	return b.calls[len(b.calls)-1]
}

func (b *fakeBank) callCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

// client returns a driver whose base has a path and a trailing slash.
func (b *fakeBank) client(t *testing.T) *Client {
	t.Helper()
	return mustNew(t, b.srv.URL+routes.Sandbank+"/")
}

func mustNew(t *testing.T, base string) *Client {
	t.Helper()
	c, err := New(Config{MerchantID: strings.ToUpper(testMerchant), BaseURL: base, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func requestInput() gateway.RequestInput {
	return gateway.RequestInput{AmountRials: 150000, CallbackURL: callbackURL, Description: "شارژ کیف پول", OrderID: "pay_01HX"}
}

// errKind is what a test expects of an error.
type errKind int

const (
	noErr errKind = iota
	transient
	rejected
)

// checkErr asserts the error's type through the wrapping, and its fields.
func checkErr(t *testing.T, err error, kind errKind, code, httpStatus int, retry time.Duration) {
	t.Helper()
	switch kind {
	case noErr:
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
	case transient:
		var te *gateway.TransientError
		if !errors.As(err, &te) {
			t.Fatalf("want *gateway.TransientError, got %T: %v", err, err)
		}
		if gateway.IsRejected(err) {
			t.Fatalf("transient error is also rejected: %v", err)
		}
		if te.HTTPStatus != httpStatus {
			t.Errorf("HTTPStatus = %d, want %d", te.HTTPStatus, httpStatus)
		}
		if te.RetryAfter != retry {
			t.Errorf("RetryAfter = %v, want %v", te.RetryAfter, retry)
		}
	case rejected:
		var re *gateway.RejectedError
		if !errors.As(err, &re) {
			t.Fatalf("want *gateway.RejectedError, got %T: %v", err, err)
		}
		if re.Code != code {
			t.Errorf("Code = %d, want %d", re.Code, code)
		}
	}
	if err != nil && !strings.HasPrefix(err.Error(), "zarinpal ") {
		t.Errorf("error %q lacks the zarinpal prefix", err)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name, merchant, base string
		ok                   bool
		wantPay              string
	}{
		{"lower case", testMerchant, "https://payment.zarinpal.com", true, "https://payment.zarinpal.com/pg/StartPay/" + prodAuth},
		{"upper case and trailing slash", strings.ToUpper(testMerchant), "https://sandbox.zarinpal.com/", true, "https://sandbox.zarinpal.com/pg/StartPay/" + prodAuth},
		{"simulator base with path", testMerchant, "http://127.0.0.1:9999/sandbank//", true, "http://127.0.0.1:9999/sandbank/pg/StartPay/" + prodAuth},
		{"merchant not a uuid", "not-a-merchant-id", ProductionBaseURL, false, ""},
		{"merchant without dashes", strings.ReplaceAll(testMerchant, "-", "") + "abcd", ProductionBaseURL, false, ""},
		{"merchant with non-hex", "g0ffee00-1234-4abc-9def-0123456789ab", ProductionBaseURL, false, ""},
		{"empty base", testMerchant, "", false, ""},
		{"relative base", testMerchant, "payment.zarinpal.com", false, ""},
		{"ftp base", testMerchant, "ftp://payment.zarinpal.com", false, ""},
		{"base with query", testMerchant, "https://payment.zarinpal.com/?x=1", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Config{MerchantID: tt.merchant, BaseURL: tt.base})
			if !tt.ok {
				if err == nil {
					t.Fatal("want an error")
				}
				if tt.merchant != "" && strings.Contains(err.Error(), tt.merchant) {
					t.Errorf("error leaks the merchant id: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if c.Name() != "zarinpal" {
				t.Errorf("Name = %q", c.Name())
			}
			if got := c.PayURL(prodAuth); got != tt.wantPay {
				t.Errorf("PayURL = %q, want %q", got, tt.wantPay)
			}
			if c.hc == nil || c.hc.Timeout != 0 {
				t.Errorf("default HTTP client must exist without a Timeout")
			}
		})
	}
}

func TestRequest(t *testing.T) {
	tests := []struct {
		name       string
		ans        answerSpec
		want       gateway.RequestResult
		kind       errKind
		code       int
		httpStatus int
		msg        string // substring of the error
	}{
		{name: "success", ans: answerSpec{body: bodyRequestOK},
			want: gateway.RequestResult{Authority: prodAuth, Code: 100, FeeRials: 100}},
		{name: "sandbox authority, code and fee as strings",
			ans:  answerSpec{body: `{"data":{"code":"100","message":"Success","authority":"` + sandAuth + `","fee":"2500"},"errors":[]}`},
			want: gateway.RequestResult{Authority: sandAuth, Code: 100, FeeRials: 2500}},
		{name: "-9 errors object and data []", ans: answerSpec{body: bodyRequest9},
			kind: rejected, code: -9, msg: "The description field is required."},
		{name: "-9 with HTTP 422", ans: answerSpec{status: 422, body: bodyRequest9},
			kind: rejected, code: -9, msg: "validation error"},
		{name: "-10 errors object and data {}",
			ans:  answerSpec{body: `{"data":{},"errors":{"code":-10,"message":"Terminal is not valid, please check merchant_id or ip address.","validations":[]}}`},
			kind: rejected, code: -10, msg: "Terminal is not valid"},
		{name: "code as string in errors",
			ans:  answerSpec{body: `{"data":[],"errors":{"code":"-14","message":"Terminal domain and callback URL do not match."}}`},
			kind: rejected, code: -14},
		{name: "validations as map",
			ans:  answerSpec{status: 400, body: `{"data":[],"errors":{"code":-9,"message":"validation error","validations":{"amount":["The amount must be at least 10000."]}}}`},
			kind: rejected, code: -9, msg: "The amount must be at least 10000."},
		{name: "-12 is transient",
			ans:  answerSpec{body: `{"data":[],"errors":{"code":-12,"message":"Too many attempts, please try again later."}}`},
			kind: transient, httpStatus: 200, msg: "-12"},
		{name: "100 without authority",
			ans:  answerSpec{body: `{"data":{"code":100,"message":"Success"},"errors":[]}`},
			kind: transient, httpStatus: 200, msg: "authority"},
		{name: "100 with malformed authority",
			ans:  answerSpec{body: `{"data":{"code":100,"authority":"B123"},"errors":[]}`},
			kind: transient, httpStatus: 200, msg: "authority"},
		{name: "unknown positive code",
			ans:  answerSpec{body: `{"data":{"code":102,"authority":"` + prodAuth + `"},"errors":[]}`},
			kind: transient, httpStatus: 200, msg: "102"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bank := newBank(t, tt.ans)
			got, err := bank.client(t).Request(ctxT(t), requestInput())
			checkErr(t, err, tt.kind, tt.code, tt.httpStatus, 0)
			if err != nil && tt.msg != "" && !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRequestBody(t *testing.T) {
	bank := newBank(t, answerSpec{body: bodyRequestOK})
	c := bank.client(t)
	long := strings.Repeat("ش", 600)
	in := requestInput()
	in.Description = "  " + long + "  "
	in.Mobile = "09121234567"
	if _, err := c.Request(ctxT(t), in); err != nil {
		t.Fatalf("Request: %v", err)
	}
	got := bank.lastCall(t)
	if got.method != http.MethodPost || got.path != routes.Sandbank+"/pg/v4/payment/request.json" {
		t.Errorf("sent %s %s", got.method, got.path)
	}
	if got.contentType != "application/json" || got.accept != "application/json" {
		t.Errorf("Content-Type %q, Accept %q", got.contentType, got.accept)
	}
	b := got.body
	if b["merchant_id"] != testMerchant {
		t.Errorf("merchant_id = %v, want the lower-case id", b["merchant_id"])
	}
	if b["amount"] != json.Number("150000") {
		t.Errorf("amount = %#v, want the integer 150000", b["amount"])
	}
	if b["currency"] != "IRR" || b["callback_url"] != callbackURL {
		t.Errorf("currency %v, callback_url %v", b["currency"], b["callback_url"])
	}
	desc, _ := b["description"].(string)
	if n := utf8.RuneCountInString(desc); n != 500 || !strings.HasPrefix(long, desc) {
		t.Errorf("description has %d runes, want the first 500", n)
	}
	md, _ := b["metadata"].(map[string]any)
	if md["order_id"] != "pay_01HX" || md["mobile"] != "09121234567" {
		t.Errorf("metadata = %v", md)
	}
	if _, ok := md["email"]; ok {
		t.Errorf("empty email must be omitted: %v", md)
	}

	in = requestInput()
	in.OrderID = ""
	if _, err := c.Request(ctxT(t), in); err != nil {
		t.Fatalf("Request: %v", err)
	}
	if _, ok := bank.lastCall(t).body["metadata"]; ok {
		t.Errorf("empty metadata must be omitted")
	}
}

func TestRequestLocalRefusal(t *testing.T) {
	tests := []struct {
		name string
		edit func(*gateway.RequestInput)
	}{
		{"zero amount", func(in *gateway.RequestInput) { in.AmountRials = 0 }},
		{"negative amount", func(in *gateway.RequestInput) { in.AmountRials = -10 }},
		{"blank description", func(in *gateway.RequestInput) { in.Description = " \t" }},
		{"relative callback", func(in *gateway.RequestInput) { in.CallbackURL = "/pay/callback" }},
		{"javascript callback", func(in *gateway.RequestInput) { in.CallbackURL = "javascript:alert(1)" }},
	}
	bank := newBank(t, answerSpec{body: bodyRequestOK})
	c := bank.client(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := requestInput()
			tt.edit(&in)
			_, err := c.Request(ctxT(t), in)
			checkErr(t, err, rejected, 0, 0, 0)
		})
	}
	if n := bank.callCount(); n != 0 {
		t.Errorf("%d calls reached the bank, want none", n)
	}
}

func TestVerify(t *testing.T) {
	paid := gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, Message: "Paid", RefID: 59421827101,
		CardPANMasked: "628023******8998", CardHash: cardHash, FeeRials: 3500, AmountRials: 150000}
	tests := []struct {
		name       string
		ans        answerSpec
		want       gateway.VerifyResult
		kind       errKind
		code       int
		httpStatus int
	}{
		{name: "100 full data, ref_id as number", ans: answerSpec{body: bodyVerifyOK}, want: paid},
		{name: "100 ref_id, code and fee as strings, wages object",
			ans: answerSpec{body: `{"data":{"code":"100","message":"Paid","card_hash":"` + cardHash +
				`","card_pan":"628023******8998","ref_id":"59421827101","fee_type":"Payer","fee":"3500","shaparak_fee":1200,"wages":{}},"errors":[]}`},
			want: paid},
		{name: "100 ref_id in exponent form",
			ans:  answerSpec{body: `{"data":{"code":100.0,"message":"Paid","ref_id":5.9421827101e10},"errors":{}}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, Message: "Paid", RefID: 59421827101, AmountRials: 150000}},
		{name: "100 without ref_id",
			ans:  answerSpec{body: `{"data":{"code":100,"message":"Paid","ref_id":null,"card_pan":""},"errors":[]}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, Message: "Paid", AmountRials: 150000}},
		{name: "100 with an unmasked card number",
			ans:  answerSpec{body: `{"data":{"code":100,"message":"Paid","ref_id":7,"card_pan":"6280231234568998"},"errors":[]}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, Message: "Paid", RefID: 7, CardPANMasked: "628023******8998", AmountRials: 150000}},
		{name: "101 already verified",
			ans: answerSpec{body: `{"data":{"code":101,"message":"Verified","card_hash":"` + cardHash +
				`","card_pan":"628023******8998","ref_id":59421827101,"fee_type":"Merchant","fee":0},"errors":[]}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 101, Message: "Verified", RefID: 59421827101,
				CardPANMasked: "628023******8998", CardHash: cardHash, AmountRials: 150000}},
		{name: "101 without ref_id",
			ans:  answerSpec{body: `{"data":{"code":101,"message":"Verified"},"errors":[]}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 101, Message: "Verified", AmountRials: 150000}},
		{name: "-50 amount mismatch",
			ans:  answerSpec{body: `{"data":[],"errors":{"code":-50,"message":"Session is not valid, amounts values is not the same.","validations":[]}}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyAmountMismatch, Code: -50, Message: "Session is not valid, amounts values is not the same."}},
		{name: "-51 not paid",
			ans:  answerSpec{body: `{"data":[],"errors":{"code":-51,"message":"Session is not valid, session is not active paid try.","validations":[]}}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51, Message: "Session is not valid, session is not active paid try."}},
		{name: "-53 not this merchant",
			ans:  answerSpec{body: `{"data":{},"errors":{"code":-53,"message":"Session is not this merchant_id session"}}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyInvalid, Code: -53, Message: "Session is not this merchant_id session"}},
		{name: "-54 invalid authority",
			ans:  answerSpec{body: `{"data":[],"errors":{"code":"-54","message":"Invalid authority."}}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyInvalid, Code: -54, Message: "Invalid authority."}},
		{name: "-9 validation",
			ans:  answerSpec{body: `{"data":[],"errors":{"code":-9,"message":"The input params invalid, validation error.","validations":[{"amount":"The amount field is required."}]}}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyInvalid, Code: -9, Message: "The input params invalid, validation error. (The amount field is required.)"}},
		{name: "400 with a JSON error body is decided by the code",
			ans:  answerSpec{status: 400, body: `{"data":[],"errors":{"code":-51,"message":"Session is not valid, session is not active paid try."}}`},
			want: gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51, Message: "Session is not valid, session is not active paid try."}},
		{name: "-12 too many attempts is transient",
			ans:  answerSpec{body: `{"data":[],"errors":{"code":-12,"message":"Too many attempts, please try again later."}}`},
			kind: transient, httpStatus: 200},
		{name: "-52 unexpected error is transient",
			ans:  answerSpec{body: `{"data":[],"errors":{"code":-52,"message":"Oops!! please contact our support team"}}`},
			kind: transient, httpStatus: 200},
		{name: "unknown positive code is transient",
			ans:  answerSpec{body: `{"data":{"code":200,"message":"?"},"errors":[]}`},
			kind: transient, httpStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bank := newBank(t, tt.ans)
			got, err := bank.client(t).Verify(ctxT(t), gateway.VerifyInput{Authority: prodAuth, AmountRials: 150000})
			checkErr(t, err, tt.kind, tt.code, tt.httpStatus, 0)
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), `zarinpal verify "`+prodAuth+`"`) {
				t.Errorf("error %q does not name the authority", err)
			}
		})
	}
}

func TestVerifyBody(t *testing.T) {
	bank := newBank(t, answerSpec{body: bodyVerifyOK})
	if _, err := bank.client(t).Verify(ctxT(t), gateway.VerifyInput{Authority: prodAuth, AmountRials: 150000}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	got := bank.lastCall(t)
	if got.path != routes.Sandbank+"/pg/v4/payment/verify.json" || got.contentType != "application/json" || got.accept != "application/json" {
		t.Errorf("sent %s %s (%q, %q)", got.method, got.path, got.contentType, got.accept)
	}
	want := map[string]any{"merchant_id": testMerchant, "amount": json.Number("150000"), "authority": prodAuth}
	if len(got.body) != len(want) {
		t.Errorf("body = %v, want exactly %v", got.body, want)
	}
	for k, v := range want {
		if got.body[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got.body[k], v)
		}
	}
}

func TestInquire(t *testing.T) {
	statuses := []gateway.InquiryStatus{gateway.InquiryInBank, gateway.InquiryPaid, gateway.InquiryVerified, gateway.InquiryFailed, gateway.InquiryReversed}
	for _, st := range statuses {
		t.Run(string(st), func(t *testing.T) {
			bank := newBank(t, answerSpec{body: `{"data":{"code":100,"message":"Success","status":"` + string(st) + `","amount":150000},"errors":[]}`})
			got, err := bank.client(t).Inquire(ctxT(t), prodAuth)
			checkErr(t, err, noErr, 0, 0, 0)
			if want := (gateway.InquiryResult{Code: 100, Status: st}); got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			c := bank.lastCall(t)
			if c.path != routes.Sandbank+"/pg/v4/payment/inquiry.json" || c.body["merchant_id"] != testMerchant || c.body["authority"] != prodAuth || len(c.body) != 2 {
				t.Errorf("sent %s %v", c.path, c.body)
			}
		})
	}
	tests := []struct {
		name string
		body string
		kind errKind
		code int
	}{
		{"-54 invalid authority", `{"data":[],"errors":{"code":-54,"message":"Invalid authority."}}`, rejected, -54},
		{"-10 wrong merchant", `{"data":{},"errors":{"code":"-10","message":"Terminal is not valid"}}`, rejected, -10},
		{"100 without status", `{"data":{"code":100,"message":"Success"},"errors":[]}`, transient, 0},
		{"-12 too many attempts", `{"data":[],"errors":{"code":-12,"message":"Too many attempts"}}`, transient, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bank := newBank(t, answerSpec{body: tt.body})
			got, err := bank.client(t).Inquire(ctxT(t), prodAuth)
			checkErr(t, err, tt.kind, tt.code, 200, 0)
			if got != (gateway.InquiryResult{}) {
				t.Errorf("got %+v with an error", got)
			}
		})
	}
}

func TestListUnverified(t *testing.T) {
	body := `{"data":{"code":"100","message":"Success","authorities":[
		{"authority":"A0000000000000000000000000000wwOGYpd","amount":50500,"callback_url":"https://golroz.com/vpay","referer":"https://golroz.com/test-form/","date":"2020-07-01 17:33:25"},
		{"authority":"A00000000000000000000000000217885159","amount":"1200000","callback_url":"https://kifpool.example/cb","referer":"","date":"2020-12-31 23:59:59"},
		{"authority":"","amount":1},
		"junk"
	]},"errors":[]}`
	bank := newBank(t, answerSpec{body: body})
	got, err := bank.client(t).ListUnverified(ctxT(t))
	if err != nil {
		t.Fatalf("ListUnverified: %v", err)
	}
	want := []gateway.Unverified{
		// Iran kept summer time (+04:30) until 2022.
		{Authority: "A0000000000000000000000000000wwOGYpd", AmountRials: 50500, CallbackURL: "https://golroz.com/vpay",
			Date: time.Date(2020, 7, 1, 13, 3, 25, 0, time.UTC)},
		{Authority: "A00000000000000000000000000217885159", AmountRials: 1200000, CallbackURL: "https://kifpool.example/cb",
			Date: time.Date(2020, 12, 31, 20, 29, 59, 0, time.UTC)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Authority != w.Authority || g.AmountRials != w.AmountRials || g.CallbackURL != w.CallbackURL || !g.Date.Equal(w.Date) {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
		if g.Date.Location().String() != "Asia/Tehran" {
			t.Errorf("entry %d date in %s, want Asia/Tehran", i, g.Date.Location())
		}
	}
	c := bank.lastCall(t)
	if c.path != routes.Sandbank+"/pg/v4/payment/unVerified.json" || len(c.body) != 1 || c.body["merchant_id"] != testMerchant {
		t.Errorf("sent %s %v", c.path, c.body)
	}

	tests := []struct {
		name string
		body string
		kind errKind
		code int
		n    int
	}{
		{"empty list", `{"data":{"code":100,"message":"Success","authorities":[]},"errors":[]}`, noErr, 0, 0},
		{"authorities missing", `{"data":{"code":100,"message":"Success"},"errors":[]}`, noErr, 0, 0},
		{"-10 wrong merchant", `{"data":[],"errors":{"code":-10,"message":"Terminal is not valid"}}`, rejected, -10, 0},
		{"-12 too many attempts", `{"data":[],"errors":{"code":-12,"message":"Too many attempts"}}`, transient, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bank := newBank(t, answerSpec{body: tt.body})
			got, err := bank.client(t).ListUnverified(ctxT(t))
			checkErr(t, err, tt.kind, tt.code, 200, 0)
			if len(got) != tt.n {
				t.Errorf("got %d entries, want %d", len(got), tt.n)
			}
		})
	}
}

func TestParseDateFallbackZone(t *testing.T) {
	fixed := time.FixedZone("+0330", tehranOffsetSecs)
	got := parseDate("2020-12-31 23:59:59", fixed)
	if want := time.Date(2020, 12, 31, 20, 29, 59, 0, time.UTC); !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := parseDate("yesterday", fixed); !got.IsZero() {
		t.Errorf("unparsable date = %v, want zero", got)
	}
}

// operations runs each gateway operation against a client.
func operations() map[string]func(context.Context, *Client) error {
	return map[string]func(context.Context, *Client) error{
		"request": func(ctx context.Context, c *Client) error {
			_, err := c.Request(ctx, requestInput())
			return err
		},
		"verify": func(ctx context.Context, c *Client) error {
			_, err := c.Verify(ctx, gateway.VerifyInput{Authority: prodAuth, AmountRials: 150000})
			return err
		},
		"inquiry": func(ctx context.Context, c *Client) error {
			_, err := c.Inquire(ctx, prodAuth)
			return err
		},
		"unverified": func(ctx context.Context, c *Client) error {
			_, err := c.ListUnverified(ctx)
			return err
		},
	}
}

// TestHTTPFailures covers answers that say nothing definite, for every op.
func TestHTTPFailures(t *testing.T) {
	huge := `{"data":{"code":100,"message":"` + strings.Repeat("a", maxBodyBytes) + `"},"errors":[]}`
	tests := []struct {
		name       string
		ans        answerSpec
		kind       errKind
		httpStatus int
		retry      time.Duration
		msg        string
		// safeOps: how verify, inquiry and unverified see it, when it
		// differs from request (a plain 4xx refuses a request, but says
		// nothing about an existing payment).
		safeOps errKind
	}{
		{name: "500 with HTML", ans: answerSpec{status: 500, header: map[string]string{"Content-Type": "text/html"}, body: htmlError},
			kind: transient, httpStatus: 500},
		{name: "500 with a JSON code is still transient", ans: answerSpec{status: 500, body: bodyRequest9},
			kind: transient, httpStatus: 500},
		{name: "502 empty", ans: answerSpec{status: 502}, kind: transient, httpStatus: 502},
		{name: "503 Retry-After HTTP-date",
			ans:  answerSpec{status: 503, header: map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}},
			kind: transient, httpStatus: 503},
		{name: "408", ans: answerSpec{status: 408}, kind: transient, httpStatus: 408},
		{name: "429 with Retry-After: 3",
			ans:  answerSpec{status: 429, header: map[string]string{"Retry-After": "3"}, body: `{"data":[],"errors":{"code":-12,"message":"Too many attempts"}}`},
			kind: transient, httpStatus: 429, retry: 3 * time.Second},
		{name: "404 with HTML", ans: answerSpec{status: 404, body: "<html><body>Not Found</body></html>"},
			kind: rejected, msg: "HTTP 404", safeOps: transient},
		{name: "405 empty", ans: answerSpec{status: 405}, kind: rejected, msg: "HTTP 405", safeOps: transient},
		{name: "403 from a firewall", ans: answerSpec{status: 403, body: "<html>Forbidden</html>"}, kind: rejected, msg: "HTTP 403", safeOps: transient},
		{name: "invalid JSON", ans: answerSpec{body: `{"data":{"code":100,`}, kind: transient, httpStatus: 200},
		{name: "JSON array", ans: answerSpec{body: `[]`}, kind: transient, httpStatus: 200},
		{name: "empty 200", ans: answerSpec{}, kind: transient, httpStatus: 200},
		{name: "no code at all", ans: answerSpec{body: `{"data":[],"errors":[]}`}, kind: transient, httpStatus: 200},
		{name: "code 0", ans: answerSpec{body: `{"data":{"code":0},"errors":{"code":"0"}}`}, kind: transient, httpStatus: 200},
		{name: "code not a number", ans: answerSpec{body: `{"data":{"code":"OK"},"errors":[]}`}, kind: transient, httpStatus: 200},
		{name: "conflicting codes", ans: answerSpec{status: 400, body: `{"data":{"code":100},"errors":{"code":-9}}`},
			kind: transient, httpStatus: 400},
		{name: "body over 1 MiB", ans: answerSpec{body: huge}, kind: transient, httpStatus: 200},
	}
	for _, tt := range tests {
		for op, run := range operations() {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				bank := newBank(t, tt.ans)
				err := run(ctxT(t), bank.client(t))
				kind, status := tt.kind, tt.httpStatus
				if tt.safeOps != 0 && op != "request" {
					kind, status = tt.safeOps, tt.ans.status
				}
				checkErr(t, err, kind, 0, status, tt.retry)
				if tt.msg != "" && !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("error %q does not mention %q", err, tt.msg)
				}
				if !strings.HasPrefix(err.Error(), "zarinpal "+op) {
					t.Errorf("error %q does not start with zarinpal %s", err, op)
				}
			})
		}
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c := mustNew(t, base)
	for op, run := range operations() {
		t.Run(op, func(t *testing.T) {
			err := run(ctxT(t), c)
			checkErr(t, err, transient, 0, 0, 0)
		})
	}
}

func TestContextDeadline(t *testing.T) {
	for op, run := range operations() {
		t.Run(op, func(t *testing.T) {
			bank := newBank(t, answerSpec{stall: true})
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := run(ctx, bank.client(t))
			checkErr(t, err, transient, 0, 0, 0)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("errors.Is(err, DeadlineExceeded) = false: %v", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("call took %v, the deadline was not honoured", d)
			}
		})
	}
}

func TestContextCanceled(t *testing.T) {
	bank := newBank(t, answerSpec{body: bodyVerifyOK})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := bank.client(t).Verify(ctx, gateway.VerifyInput{Authority: prodAuth, AmountRials: 1})
	checkErr(t, err, transient, 0, 0, 0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, Canceled) = false: %v", err)
	}
}

func TestNoSecretsInErrorsOrLogs(t *testing.T) {
	var logs bytes.Buffer
	echo := `{"data":[],"errors":{"code":-10,"message":"merchant ` + strings.ToUpper(testMerchant) +
		` is not valid for card 6037991234567890","validations":[{"merchant_id":"` + testMerchant + `"}]}}`
	bank := newBank(t, answerSpec{status: 400, body: echo})
	c, err := New(Config{MerchantID: testMerchant, BaseURL: bank.srv.URL,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Request(ctxT(t), requestInput())
	checkErr(t, err, rejected, -10, 0, 0)
	// A verify our terminal's refusal answered: unknown, the message in
	// the error.
	_, verr := c.Verify(ctxT(t), gateway.VerifyInput{Authority: prodAuth, AmountRials: 1})
	var te *gateway.TransientError
	if !errors.As(verr, &te) {
		t.Fatalf("Verify: %v, want the outcome unknown", verr)
	}
	vr := gateway.VerifyResult{Message: verr.Error()}
	for _, s := range []string{err2s(c.Request(ctxT(t), requestInput())), vr.Message, logs.String()} {
		low := strings.ToLower(s)
		if strings.Contains(low, testMerchant) || strings.Contains(s, "6037991234567890") {
			t.Errorf("secret leaked: %s", s)
		}
	}
	if !strings.Contains(vr.Message, "603799******7890") {
		t.Errorf("card number not masked as expected: %q", vr.Message)
	}
	if logs.Len() == 0 {
		t.Errorf("nothing was logged")
	}
}

func err2s(_ gateway.RequestResult, err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDecodeHelpers(t *testing.T) {
	ints := []struct {
		in   string
		want flexInt
	}{
		{`100`, flexInt{100, true}},
		{`"100"`, flexInt{100, true}},
		{`" -9 "`, flexInt{-9, true}},
		{`59421827101`, flexInt{59421827101, true}},
		{`1e2`, flexInt{100, true}},
		{`1.5`, flexInt{}},
		{`"NaN"`, flexInt{}},
		{`1e300`, flexInt{}},
		{`null`, flexInt{}},
		{`{}`, flexInt{}},
		{`[]`, flexInt{}},
		{`true`, flexInt{}},
		{`""`, flexInt{}},
	}
	for _, tt := range ints {
		if got := parseFlexInt([]byte(tt.in)); got != tt.want {
			t.Errorf("parseFlexInt(%s) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	auths := map[string]bool{prodAuth: true, sandAuth: true, "B0000000000000000000000000000wwOGYpd": false,
		"A000": false, "A0000000000000000000000000000wwOGYp!": false, "": false}
	for in, want := range auths {
		if got := ValidAuthority(in); got != want {
			t.Errorf("ValidAuthority(%q) = %v", in, got)
		}
	}
	if got := sanitize("a\x00b\nc " + strings.Repeat("x", 400)); utf8.RuneCountInString(got) > maxMessageRunes+1 || strings.ContainsAny(got, "\x00\n") {
		t.Errorf("sanitize left %q", got)
	}
}

// FuzzDecode feeds arbitrary bodies and statuses through the decoder and
// every classifier: nothing may panic, and every error must be typed.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		bodyRequestOK, bodyRequest9, bodyVerifyOK, htmlError, "", "null", "[]", "{}", `{"data":null,"errors":null}`,
		`{"data":{"code":"100","authorities":[{"authority":"A","amount":"x","date":"2020-07-01 17:33:25"},1,null]},"errors":[]}`,
		`{"data":[{"code":100}],"errors":[{"code":-9,"validations":{"a":[["deep",{"b":"c"}]]}}]}`,
		`{"data":{"code":1e400,"ref_id":"-1","fee":-5},"errors":{"code":[]}}`,
		`{"data":{"code":100,"status":"paid","card_pan":"12345678901234567890123"}}`,
		`{"data":{"code":100,"ref_id":7,"card_pan":"6037–9912 3456-7890"},"errors":{"message":""}}`,
		`{"data":{"code":101,"card_pan":"۶۰۳۷-۹۹۱۲-۳۴۵۶-۷۸۹۰"},"errors":[[[{"a":[0,false,null,""]}]]]}`,
	} {
		f.Add(uint16(200), []byte(s))
		f.Add(uint16(400), []byte(s))
	}
	loc := tehranLocation()
	now := time.Now()
	f.Fuzz(func(t *testing.T, st uint16, body []byte) {
		status := 100 + int(st)%500
		r, err := interpret("fuzz", status, http.Header{"Retry-After": []string{string(body)}}, body, now)
		if err != nil {
			mustBeTyped(t, err)
			return
		}
		if _, err := requestResult(r); err != nil {
			mustBeTyped(t, err)
		}
		if v, err := verifyResult(r); err != nil {
			mustBeTyped(t, err)
		} else if (v.Outcome == gateway.VerifyPaid || v.Outcome == gateway.VerifyAlreadyVerified) && !saysPaid(status, body) {
			// Never a success from a malformed answer: only a well-formed
			// JSON answer, not an HTTP error, carrying 100 or 101.
			t.Fatalf("verify reported %s for HTTP %d %q", v.Outcome, status, body)
		} else if v.Outcome == "" || v.RefID < 0 || v.FeeRials < 0 {
			t.Fatalf("bad verify result %+v", v)
		} else if maskDigitRuns(v.CardPANMasked) != v.CardPANMasked {
			t.Fatalf("card %q keeps a card number", v.CardPANMasked)
		}
		if _, err := inquiryResult(r); err != nil {
			mustBeTyped(t, err)
		}
		if list, err := unverifiedResult(r, loc); err != nil {
			mustBeTyped(t, err)
		} else {
			for _, u := range list {
				if u.Authority == "" || u.AmountRials < 0 {
					t.Fatalf("bad unverified entry %+v", u)
				}
			}
		}
		if utf8.RuneCountInString(r.message) > maxMessageRunes+1 {
			t.Fatalf("message not capped: %d runes", utf8.RuneCountInString(r.message))
		}
	})
}

// saysPaid: the body is valid JSON whose data (object, or first object of
// an array) has code 100 or 101, and the HTTP status is not an error the
// driver treats as transient.
func saysPaid(status int, body []byte) bool {
	if status >= 500 || status == 408 || status == 429 || !json.Valid(body) {
		return false
	}
	var env struct{ Data json.RawMessage }
	if json.Unmarshal(body, &env) != nil {
		return false
	}
	raw := bytes.TrimSpace(env.Data)
	if len(raw) > 0 && raw[0] == '[' {
		var items []json.RawMessage
		_ = json.Unmarshal(raw, &items)
		raw = nil
		for _, it := range items {
			if it = bytes.TrimSpace(it); len(it) > 0 && it[0] == '{' {
				raw = it
				break
			}
		}
	}
	var d struct{ Code json.RawMessage }
	if json.Unmarshal(raw, &d) != nil {
		return false
	}
	c := strings.Trim(string(bytes.TrimSpace(d.Code)), `"`)
	f, err := strconv.ParseFloat(strings.TrimSpace(c), 64)
	return err == nil && (f == 100 || f == 101)
}

func mustBeTyped(t *testing.T, err error) {
	t.Helper()
	var te *gateway.TransientError
	var re *gateway.RejectedError
	if !errors.As(err, &te) && !errors.As(err, &re) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
}
