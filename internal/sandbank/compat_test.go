package sandbank

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/routes"
)

// The client-library compatibility suite: third-party client libraries of
// each gateway, from npm, run unmodified against the bank on a real socket
// (node scripts in testdata/compat, each of which says how it points its
// library at the bank). A script requests a payment with its library; the
// test pays or cancels it through the control API, as the payer would on
// the bank's page; the script verifies (and for Mellat settles) with the
// library, twice; the test checks what the library reported against the
// bank's own record.
//
// One library per gateway where one could be used, and for Zarinpal also
// ZarinPal's own Node.js SDK: zarinpal-node-sdk, zarinpal-checkout, zibal,
// mellat-checkout (pinned in .ci/compat, installed by `make compat-deps`). SEP has none: no maintained SEP client on the
// registries reachable here speaks the token flow end to end (monopay's
// saman driver, the only one found, sends no ResNum and verifies through
// the legacy SOAP referencepayment.asmx).
//
// The suite skips when node or the libraries are missing, and fails
// instead under REQUIRE_COMPAT=1 (CI). COMPAT_NODE_MODULES names the
// node_modules folder (default .ci/compat/node_modules).

// compatPackages are the libraries the scripts require.
var compatPackages = []string{"zarinpal-node-sdk", "zarinpal-checkout", "zibal", "mellat-checkout"}

// compatAmount is every test payment's amount, in rials.
const compatAmount = 123_000

// compatCallback is the merchant's callback URL: never requested (the
// control API answers with the request the payer's browser would make).
const compatCallback = "https://merchant.example/pay/callback?attempt=7"

// compatEnv finds node and the libraries, or skips (fails under
// REQUIRE_COMPAT=1).
func compatEnv(t *testing.T) (node, modules string) {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("REQUIRE_COMPAT") == "1" {
			t.Fatalf("REQUIRE_COMPAT=1 but %s", msg)
		}
		t.Skipf("client-library suite skipped: %s; to run it: make compat-deps (REQUIRE_COMPAT=1 makes this a failure)", msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("no node on PATH")
	}
	modules = os.Getenv("COMPAT_NODE_MODULES")
	if modules == "" {
		modules = filepath.Join("..", "..", ".ci", "compat", "node_modules")
	}
	modules, err = filepath.Abs(modules)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range compatPackages {
		if _, err := os.Stat(filepath.Join(modules, p, "package.json")); err != nil {
			unavailable("no %s in %s", p, modules)
		}
	}
	return node, modules
}

// compatBank is a bank on a real socket for the libraries.
type compatBank struct {
	*Bank
	url          string
	node, module string
}

func newCompatBank(t *testing.T) *compatBank {
	t.Helper()
	node, modules := compatEnv(t)
	b := New(Options{})
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	return &compatBank{Bank: b, url: srv.URL, node: node, module: modules}
}

// run runs testdata/compat/script with args (plus "base") and decodes the
// one JSON line it prints into out.
func (cb *compatBank) run(t *testing.T, script string, args map[string]any, out any) {
	t.Helper()
	args["base"] = cb.url
	arg, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cb.node, script, string(arg))
	cmd.Dir = filepath.Join("testdata", "compat")
	cmd.Env = append(os.Environ(), "NODE_PATH="+cb.module, "NODE_NO_WARNINGS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %s: %v\nstdout: %s\nstderr: %s", script, arg, err, stdout.Bytes(), stderr.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s %s: output %q: %v\nstderr: %s", script, arg, stdout.Bytes(), err, stderr.Bytes())
	}
	t.Logf("node %s %s → %s", script, args["op"], bytes.TrimSpace(stdout.Bytes()))
}

// finish pays or cancels (action) a payment through the control API and
// returns the request the payer's browser then makes to the merchant.
func (cb *compatBank) finish(t *testing.T, gateway, token, action string) CallbackRequest {
	t.Helper()
	u := cb.url + fmt.Sprintf("/_sandbank/%s/payments/%s/%s", gateway, url.PathEscape(token), action)
	res, err := http.Post(u, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var cr CallbackRequest
	if err := json.NewDecoder(res.Body).Decode(&cr); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d, %v", u, res.StatusCode, err)
	}
	return cr
}

// payerPage checks that the payer's page at the path of the library's
// payment URL (its host the real gateway's) is the bank's page for token.
func (cb *compatBank) payerPage(t *testing.T, libraryURL, token string) {
	t.Helper()
	u, err := url.Parse(libraryURL)
	if err != nil || u.Path == "" {
		t.Fatalf("library's payment URL %q: %v", libraryURL, err)
	}
	res, err := http.Get(cb.url + u.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var body bytes.Buffer
	_, _ = body.ReadFrom(res.Body)
	if res.StatusCode != http.StatusOK || !bytes.Contains(body.Bytes(), []byte(token)) {
		t.Errorf("GET %s (the library's %s): %d, token in page: %v", u.Path, libraryURL, res.StatusCode, bytes.Contains(body.Bytes(), []byte(token)))
	}
}

func (cb *compatBank) payment(t *testing.T, token string) Payment {
	t.Helper()
	p, ok := cb.Payment(token)
	if !ok {
		t.Fatalf("the bank has no payment %q", token)
	}
	return p
}

// callbackQuery is the query of a GET callback.
func callbackQuery(t *testing.T, cr CallbackRequest) url.Values {
	t.Helper()
	if cr.Method != http.MethodGet {
		t.Fatalf("callback method %s, want GET", cr.Method)
	}
	u, err := url.Parse(cr.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// outcome is what a library call returned or threw.
type outcome[R, E any] struct {
	Returned *R `json:"returned"`
	Threw    *E `json:"threw"`
}

func (o outcome[R, E]) returned(t *testing.T, what string) R {
	t.Helper()
	if o.Returned == nil {
		t.Fatalf("%s: the library threw %+v", what, o.Threw)
	}
	return *o.Returned
}

func (o outcome[R, E]) threw(t *testing.T, what string) E {
	t.Helper()
	if o.Threw == nil {
		t.Fatalf("%s: the library returned %+v, want it to throw", what, o.Returned)
	}
	return *o.Threw
}

// ---- Zarinpal: zarinpal-checkout ----

type zpcRequest struct {
	Status    int    `json:"status"`
	Authority string `json:"authority"`
	URL       string `json:"url"`
}

type zpcVerification struct {
	Status  *int   `json:"status"` // absent when the body was an errors envelope
	Message string `json:"message"`
	RefID   int64  `json:"refId"`
	CardPan string `json:"cardPan"`
}

type zpcUnverified struct {
	Code        json.Number `json:"code"`
	Authorities []struct {
		Authority string `json:"authority"`
	} `json:"authorities"`
}

type zpcError struct {
	Message string `json:"message"`
	Errors  struct {
		Code int `json:"code"`
	} `json:"errors"`
}

func TestCompatZarinpalCheckout(t *testing.T) {
	cb := newCompatBank(t)
	request := func(t *testing.T) zpcRequest {
		t.Helper()
		var out outcome[zpcRequest, zpcError]
		cb.run(t, "zarinpal.js", map[string]any{"op": "request", "amount": compatAmount, "callback": compatCallback}, &out)
		r := out.returned(t, "PaymentRequest")
		if r.Status != codeSuccess || r.Authority == "" {
			t.Fatalf("PaymentRequest = %+v, want status 100 and an authority", r)
		}
		cb.payerPage(t, r.URL, r.Authority)
		return r
	}
	type verifyOut struct {
		Wrong      *outcome[zpcVerification, zpcError] `json:"wrong"`
		First      outcome[zpcVerification, zpcError]  `json:"first"`
		Second     outcome[zpcVerification, zpcError]  `json:"second"`
		Unverified outcome[zpcUnverified, zpcError]    `json:"unverified"`
	}
	verify := func(t *testing.T, authority string, wrongAmount int) verifyOut {
		t.Helper()
		var out verifyOut
		cb.run(t, "zarinpal.js", map[string]any{"op": "verify", "amount": compatAmount, "authority": authority, "wrongAmount": wrongAmount}, &out)
		return out
	}
	// notPaid checks a verify that must not succeed: the sandbox answers
	// the per-payment refusals with HTTP 200, which this library reads as
	// a status-less verification (see zarinpal.js); thrown, the answer
	// would carry errors.code.
	notPaid := func(t *testing.T, what string, o outcome[zpcVerification, zpcError], code int) {
		t.Helper()
		switch {
		case o.Returned != nil && o.Returned.Status != nil:
			t.Errorf("%s = status %d, want no success", what, *o.Returned.Status)
		case o.Threw != nil && o.Threw.Errors.Code != code:
			t.Errorf("%s threw %+v, want %d", what, *o.Threw, code)
		}
	}

	t.Run("paid", func(t *testing.T) {
		t.Parallel()
		r := request(t)
		q := callbackQuery(t, cb.finish(t, gatewayZarinpal, r.Authority, "pay"))
		if q.Get("Authority") != r.Authority || q.Get("Status") != "OK" {
			t.Errorf("callback query %v, want Authority=%s&Status=OK", q, r.Authority)
		}
		out := verify(t, r.Authority, compatAmount-1000)
		if out.Wrong == nil {
			t.Fatal("no verify with the wrong amount")
		}
		notPaid(t, "verify with another amount", *out.Wrong, codeAmountMismatch)
		p := cb.payment(t, r.Authority)
		first, second := out.First.returned(t, "first verify"), out.Second.returned(t, "second verify")
		if first.Status == nil || *first.Status != codeSuccess || first.RefID != p.RefID || first.RefID == 0 || first.CardPan != p.CardPAN {
			t.Errorf("first verify = %+v, want status 100, ref_id %d, card %s", first, p.RefID, p.CardPAN)
		}
		if second.Status == nil || *second.Status != codeVerified || second.RefID != p.RefID {
			t.Errorf("second verify = %+v, want status 101 (already verified), ref_id %d", second, p.RefID)
		}
		if p.State != StateVerified || p.Amount != compatAmount || p.VerifyCount != 3 {
			t.Errorf("bank: state %s, amount %d, verify calls %d; want VERIFIED, %d, 3", p.State, p.Amount, p.VerifyCount, compatAmount)
		}
		uv := out.Unverified.returned(t, "UnverifiedTransactions")
		if uv.Code.String() != "100" {
			t.Errorf("UnverifiedTransactions code %s, want 100", uv.Code)
		}
		for _, a := range uv.Authorities {
			if a.Authority == r.Authority {
				t.Errorf("UnverifiedTransactions lists the verified %s", r.Authority)
			}
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		r := request(t)
		q := callbackQuery(t, cb.finish(t, gatewayZarinpal, r.Authority, "cancel"))
		if q.Get("Authority") != r.Authority || q.Get("Status") != "NOK" {
			t.Errorf("callback query %v, want Authority=%s&Status=NOK", q, r.Authority)
		}
		out := verify(t, r.Authority, 0)
		notPaid(t, "verify of a cancelled payment", out.First, codeNotPaid)
		notPaid(t, "second verify of a cancelled payment", out.Second, codeNotPaid)
		if p := cb.payment(t, r.Authority); p.State != StateFailed || !p.VerifiedAt.IsZero() || p.RefID != 0 {
			t.Errorf("bank: state %s, ref %d; want FAILED, no ref", p.State, p.RefID)
		}
	})
}

// ---- Zarinpal: zarinpal-node-sdk, ZarinPal's own SDK ----

// zpsData is the data envelope of Zarinpal's answers as the SDK returns
// them (request, verify, inquiry).
type zpsData struct {
	Code      int    `json:"code"`
	Message   string `json:"message"`
	Authority string `json:"authority"`
	RefID     int64  `json:"ref_id"`
	CardPan   string `json:"card_pan"`
	Status    string `json:"status"`
}

// zpsAnswer is an answer as the SDK returned it: Zarinpal's envelope, its
// data an object on success and an empty list on a refusal, whose code is
// then in errors.
type zpsAnswer struct {
	Data   json.RawMessage `json:"data"`
	Errors json.RawMessage `json:"errors"`
}

// answer is the data object, or the refusal's code as Code.
func (a zpsAnswer) answer(t *testing.T) zpsData {
	t.Helper()
	var d zpsData
	if len(a.Data) > 0 && a.Data[0] == '{' {
		if err := json.Unmarshal(a.Data, &d); err != nil {
			t.Fatalf("data %s: %v", a.Data, err)
		}
		return d
	}
	var e struct {
		Code int `json:"code"`
	}
	if len(a.Errors) > 0 && a.Errors[0] == '{' {
		if err := json.Unmarshal(a.Errors, &e); err != nil {
			t.Fatalf("errors %s: %v", a.Errors, err)
		}
	}
	d.Code = e.Code
	return d
}

type zpsUnverified struct {
	Data struct {
		Code        json.Number `json:"code"`
		Authorities []struct {
			Authority string `json:"authority"`
		} `json:"authorities"`
	} `json:"data"`
}

// zpsError is what the SDK threw: axios's error with the bank's answer.
type zpsError struct {
	Message string    `json:"message"`
	Status  int       `json:"status"`
	Data    zpsAnswer `json:"data"`
}

func TestCompatZarinpalOfficialSDK(t *testing.T) {
	cb := newCompatBank(t)
	request := func(t *testing.T) string {
		t.Helper()
		var out struct {
			Created  outcome[zpsAnswer, zpsError] `json:"created"`
			Redirect string                       `json:"redirect"`
		}
		cb.run(t, "zarinpal-sdk.js", map[string]any{"op": "request", "amount": compatAmount, "callback": compatCallback}, &out)
		r := out.Created.returned(t, "payments.create").answer(t)
		if r.Code != codeSuccess || r.Authority == "" {
			t.Fatalf("payments.create = %+v, want code 100 and an authority", r)
		}
		cb.payerPage(t, out.Redirect, r.Authority)
		return r.Authority
	}
	type verifyOut struct {
		Wrong      *outcome[zpsAnswer, zpsError]    `json:"wrong"`
		First      outcome[zpsAnswer, zpsError]     `json:"first"`
		Second     outcome[zpsAnswer, zpsError]     `json:"second"`
		Inquiry    outcome[zpsAnswer, zpsError]     `json:"inquiry"`
		Unverified outcome[zpsUnverified, zpsError] `json:"unverified"`
	}
	verify := func(t *testing.T, authority string, wrongAmount int) verifyOut {
		t.Helper()
		var out verifyOut
		cb.run(t, "zarinpal-sdk.js", map[string]any{"op": "verify", "amount": compatAmount, "authority": authority, "wrongAmount": wrongAmount}, &out)
		return out
	}
	// refused checks a verify that must not succeed: the SDK returns a 2xx
	// body as it is and throws on any other status; either way the bank's
	// code must be the refusal's, never 100 or 101.
	refused := func(t *testing.T, what string, o outcome[zpsAnswer, zpsError], code int) {
		t.Helper()
		switch {
		case o.Returned != nil:
			if got := o.Returned.answer(t); got.Code != code {
				t.Errorf("%s returned %+v, want code %d", what, got, code)
			}
		case o.Threw != nil:
			if got := o.Threw.Data.answer(t); got.Code != code {
				t.Errorf("%s threw %s (%+v), want code %d", what, o.Threw.Message, got, code)
			}
		}
	}

	t.Run("paid", func(t *testing.T) {
		t.Parallel()
		authority := request(t)
		q := callbackQuery(t, cb.finish(t, gatewayZarinpal, authority, "pay"))
		if q.Get("Authority") != authority || q.Get("Status") != "OK" {
			t.Errorf("callback query %v, want Authority=%s&Status=OK", q, authority)
		}
		out := verify(t, authority, compatAmount-1000)
		if out.Wrong == nil {
			t.Fatal("no verify with the wrong amount")
		}
		refused(t, "verify with another amount", *out.Wrong, codeAmountMismatch)
		p := cb.payment(t, authority)
		first := out.First.returned(t, "first verify").answer(t)
		second := out.Second.returned(t, "second verify").answer(t)
		if first.Code != codeSuccess || first.RefID != p.RefID || first.RefID == 0 || first.CardPan != p.CardPAN {
			t.Errorf("first verify = %+v, want code 100, ref_id %d, card %s", first, p.RefID, p.CardPAN)
		}
		if second.Code != codeVerified || second.RefID != p.RefID {
			t.Errorf("second verify = %+v, want code 101 (already verified), ref_id %d", second, p.RefID)
		}
		if in := out.Inquiry.returned(t, "inquiries.inquire").answer(t); in.Code != codeSuccess || in.Status != string(StateVerified) {
			t.Errorf("inquiry = %+v, want code 100, status %s", in, StateVerified)
		}
		if p.State != StateVerified || p.Amount != compatAmount || p.VerifyCount != 3 {
			t.Errorf("bank: state %s, amount %d, verify calls %d; want VERIFIED, %d, 3", p.State, p.Amount, p.VerifyCount, compatAmount)
		}
		uv := out.Unverified.returned(t, "unverified.list").Data
		if uv.Code.String() != "100" {
			t.Errorf("unverified.list code %s, want 100", uv.Code)
		}
		for _, a := range uv.Authorities {
			if a.Authority == authority {
				t.Errorf("unverified.list lists the verified %s", authority)
			}
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		authority := request(t)
		q := callbackQuery(t, cb.finish(t, gatewayZarinpal, authority, "cancel"))
		if q.Get("Authority") != authority || q.Get("Status") != "NOK" {
			t.Errorf("callback query %v, want Authority=%s&Status=NOK", q, authority)
		}
		out := verify(t, authority, 0)
		refused(t, "verify of a cancelled payment", out.First, codeNotPaid)
		refused(t, "second verify of a cancelled payment", out.Second, codeNotPaid)
		if in := out.Inquiry.returned(t, "inquiries.inquire").answer(t); in.Status != string(StateFailed) {
			t.Errorf("inquiry = %+v, want status %s", in, StateFailed)
		}
		if p := cb.payment(t, authority); p.State != StateFailed || !p.VerifiedAt.IsZero() || p.RefID != 0 {
			t.Errorf("bank: state %s, ref %d; want FAILED, no ref", p.State, p.RefID)
		}
	})
}

// ---- Zibal: zibal ----

type zibalLibResult struct {
	Success    bool   `json:"success"`
	Result     int    `json:"result"`
	Message    string `json:"message"`
	TrackID    int64  `json:"trackId"`
	PaymentURL string `json:"paymentUrl"`
	Amount     int64  `json:"amount"`
	RefNumber  int64  `json:"refNumber"`
	Status     int    `json:"status"`
	OrderID    string `json:"orderId"`
	CardNumber string `json:"cardNumber"`
}

func TestCompatZibal(t *testing.T) {
	cb := newCompatBank(t)
	request := func(t *testing.T, orderID string) string {
		t.Helper()
		var out outcome[zibalLibResult, zibalLibResult]
		cb.run(t, "zibal.js", map[string]any{"op": "request", "amount": compatAmount, "callback": compatCallback, "orderId": orderID}, &out)
		r := out.returned(t, "request")
		if !r.Success || r.Result != zbSuccess || r.TrackID == 0 {
			t.Fatalf("request = %+v, want success, result 100 and a trackId", r)
		}
		track := strconv.FormatInt(r.TrackID, 10)
		cb.payerPage(t, r.PaymentURL, track)
		return track
	}
	type verifyOut struct {
		First  outcome[zibalLibResult, zibalLibResult] `json:"first"`
		Second outcome[zibalLibResult, zibalLibResult] `json:"second"`
	}
	verify := func(t *testing.T, track string) verifyOut {
		t.Helper()
		id, _ := strconv.ParseInt(track, 10, 64)
		var out verifyOut
		cb.run(t, "zibal.js", map[string]any{"op": "verify", "trackId": id}, &out)
		return out
	}

	t.Run("paid", func(t *testing.T) {
		t.Parallel()
		track := request(t, "order-paid")
		q := callbackQuery(t, cb.finish(t, gatewayZibal, track, "pay"))
		if q.Get("trackId") != track || q.Get("success") != "1" || q.Get("status") != "2" || q.Get("orderId") != "order-paid" {
			t.Errorf("callback query %v, want trackId=%s success=1 status=2 orderId=order-paid", q, track)
		}
		out := verify(t, track)
		p := cb.payment(t, track)
		first := out.First.returned(t, "first verify")
		if !first.Success || first.Result != zbSuccess || first.Amount != compatAmount || first.RefNumber != p.RefID || first.RefNumber == 0 ||
			first.Status != zbStatusVerified || first.OrderID != "order-paid" || first.CardNumber != p.CardPAN {
			t.Errorf("first verify = %+v, want result 100, amount %d, refNumber %d, status 1", first, compatAmount, p.RefID)
		}
		// zibal rejects on any result but 100: "already verified" arrives
		// as a rejection carrying result 201.
		if second := out.Second.threw(t, "second verify"); second.Result != zbAlreadyVerified || second.Success {
			t.Errorf("second verify rejected with %+v, want result 201", second)
		}
		if p.State != StateVerified || p.Amount != compatAmount || p.VerifyCount != 2 {
			t.Errorf("bank: state %s, amount %d, verify calls %d; want VERIFIED, %d, 2", p.State, p.Amount, p.VerifyCount, compatAmount)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		track := request(t, "order-cancelled")
		q := callbackQuery(t, cb.finish(t, gatewayZibal, track, "cancel"))
		if q.Get("success") != "0" || q.Get("status") != "3" {
			t.Errorf("callback query %v, want success=0 status=3", q)
		}
		out := verify(t, track)
		for i, o := range []outcome[zibalLibResult, zibalLibResult]{out.First, out.Second} {
			if r := o.threw(t, fmt.Sprintf("verify %d of a cancelled payment", i+1)); r.Result != zbNotPaid || r.Success {
				t.Errorf("verify %d of a cancelled payment rejected with %+v, want result 202", i+1, r)
			}
		}
		if p := cb.payment(t, track); p.State != StateFailed || p.RefID != 0 {
			t.Errorf("bank: state %s, ref %d; want FAILED, no ref", p.State, p.RefID)
		}
	})
}

// ---- Mellat: mellat-checkout ----

type mellatLibResult struct {
	ResCode    int     `json:"resCode"`
	RawResCode string  `json:"rawResCode"`
	RefID      *string `json:"refId"`
}

type mellatLibError struct {
	Message string `json:"message"`
}

func TestCompatMellatCheckout(t *testing.T) {
	cb := newCompatBank(t)
	request := func(t *testing.T, orderID string) string {
		t.Helper()
		var out outcome[mellatLibResult, mellatLibError]
		cb.run(t, "mellat.js", map[string]any{"op": "request", "amount": compatAmount, "callback": compatCallback, "orderId": orderID}, &out)
		r := out.returned(t, "paymentRequest")
		if r.ResCode != 0 || r.RefID == nil || *r.RefID == "" {
			t.Fatalf("paymentRequest = %+v, want resCode 0 and a RefId", r)
		}
		return *r.RefID
	}
	type verifyOut struct {
		Verify      outcome[mellatLibResult, mellatLibError] `json:"verify"`
		Settle      outcome[mellatLibResult, mellatLibError] `json:"settle"`
		VerifyAgain outcome[mellatLibResult, mellatLibError] `json:"verifyAgain"`
		SettleAgain outcome[mellatLibResult, mellatLibError] `json:"settleAgain"`
		Inquiry     outcome[mellatLibResult, mellatLibError] `json:"inquiry"`
	}
	verify := func(t *testing.T, orderID, saleOrderID, saleRef string) verifyOut {
		t.Helper()
		var out verifyOut
		cb.run(t, "mellat.js", map[string]any{"op": "verify", "orderId": orderID, "saleOrderId": saleOrderID, "saleReferenceId": saleRef}, &out)
		return out
	}
	postForm := func(t *testing.T, cr CallbackRequest) map[string]string {
		t.Helper()
		if cr.Method != http.MethodPost || cr.URL != compatCallback {
			t.Fatalf("callback %s %s, want POST %s", cr.Method, cr.URL, compatCallback)
		}
		return cr.Form
	}

	t.Run("paid", func(t *testing.T) {
		t.Parallel()
		refID := request(t, "880001")
		form := postForm(t, cb.finish(t, gatewayMellat, refID, "pay"))
		p := cb.payment(t, refID)
		if form["RefId"] != refID || form["ResCode"] != mlOK || form["SaleOrderId"] != "880001" ||
			form["SaleReferenceId"] != p.Receipt || form["SaleReferenceId"] == "" || form["FinalAmount"] != strconv.Itoa(compatAmount) {
			t.Errorf("callback form %v, want RefId %s, ResCode 0, SaleOrderId 880001, SaleReferenceId %s, FinalAmount %d", form, refID, p.Receipt, compatAmount)
		}
		// The orderId of verify and settle is a new number; the sale is
		// named by saleOrderId and saleReferenceId.
		out := verify(t, "880002", form["SaleOrderId"], form["SaleReferenceId"])
		for _, c := range []struct {
			name string
			got  outcome[mellatLibResult, mellatLibError]
			want string
		}{
			{"bpVerifyRequest", out.Verify, mlOK},
			{"bpSettleRequest", out.Settle, mlOK},
			{"bpVerifyRequest again", out.VerifyAgain, mlAlreadyVerified},
			{"bpSettleRequest again", out.SettleAgain, mlAlreadySettled},
			{"bpInquiryRequest", out.Inquiry, mlOK},
		} {
			if r := c.got.returned(t, c.name); r.RawResCode != c.want {
				t.Errorf("%s = %q, want %s", c.name, r.RawResCode, c.want)
			}
		}
		p = cb.payment(t, refID)
		if p.State != StateVerified || p.SettledAt.IsZero() || p.Amount != compatAmount || p.VerifyCount != 2 || p.SettleCount != 2 {
			t.Errorf("bank: state %s, settled %v, amount %d, verify/settle calls %d/%d; want VERIFIED, settled, %d, 2/2",
				p.State, !p.SettledAt.IsZero(), p.Amount, p.VerifyCount, p.SettleCount, compatAmount)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		refID := request(t, "880101")
		form := postForm(t, cb.finish(t, gatewayMellat, refID, "cancel"))
		if form["ResCode"] != mlCancelled || form["SaleReferenceId"] != "" {
			t.Errorf("callback form %v, want ResCode 17 and no SaleReferenceId", form)
		}
		// A merchant verifies only on ResCode 0; one that tries anyway
		// with what the callback gave is told there is no such sale.
		out := verify(t, "880102", form["SaleOrderId"], form["SaleReferenceId"])
		for name, o := range map[string]outcome[mellatLibResult, mellatLibError]{"bpVerifyRequest": out.Verify, "bpSettleRequest": out.Settle} {
			if r := o.returned(t, name); r.RawResCode == mlOK {
				t.Errorf("%s of a cancelled sale = 0, want a refusal", name)
			}
		}
		if p := cb.payment(t, refID); p.State != StateFailed || p.Receipt != "" || !p.SettledAt.IsZero() {
			t.Errorf("bank: state %s, receipt %q; want FAILED, none", p.State, p.Receipt)
		}
	})
}

// TestCompatWSDLNamesTheBank: the WSDL's soap:address is the absolute URL
// the client fetched it from, mount prefix included (mellat-checkout's
// node-soap posts every call there).
func TestCompatWSDLNamesTheBank(t *testing.T) {
	b := New(Options{})
	mux := http.NewServeMux()
	mux.Handle(routes.Sandbank+"/", http.StripPrefix(routes.Sandbank, b.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{routes.Sandbank + "/pgwchannel/services/pgw?wsdl"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(res.Body)
		_ = res.Body.Close()
		want := `<soap:address location="` + srv.URL + routes.Sandbank + "/pgwchannel/services/pgw\"/>"
		if res.StatusCode != http.StatusOK || !bytes.Contains(body.Bytes(), []byte(want)) {
			t.Errorf("GET %s: %d, want %s in\n%s", path, res.StatusCode, want, body.Bytes())
		}
	}
}
