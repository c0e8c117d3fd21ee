package mellat_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/mellat"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/testclock"
)

const (
	publicID    = "abcdefghijklmnopqrstuvwx"
	callbackURL = "https://wallet.example.ir/payments/" + publicID + "/return"
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// clock is the tests' adjustable clock.
type clock = testclock.Clock

func newBank(t *testing.T) (*sandbank.Bank, *mellat.Client, *clock, string) {
	t.Helper()
	clk := testclock.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	bank := sandbank.New(sandbank.Options{Clock: clk.Now})
	srv := httptest.NewServer(bank.Handler())
	t.Cleanup(srv.Close)
	d := mellat.Driver()
	g, err := d.New(d.Sandbox.Settings(srv.URL), gateway.Deps{HTTPClient: &http.Client{}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return bank, g.(*mellat.Client), clk, srv.URL
}

func request(t *testing.T, c *mellat.Client, id string, amount int64) string {
	t.Helper()
	res, err := c.Request(ctxT(t), gateway.RequestInput{AmountRials: amount, CallbackURL: callbackURL, OrderID: id, Description: "top-up"})
	if err != nil {
		t.Fatalf("bpPayRequest: %v", err)
	}
	return res.Authority
}

func parse(t *testing.T, cb sandbank.CallbackRequest) (string, string, bool) {
	t.Helper()
	if cb.Method != http.MethodPost || cb.URL != callbackURL {
		t.Fatalf("callback %s %s", cb.Method, cb.URL)
	}
	p, ok := mellat.ParseCallback(func(string) string { return "" }, func(k string) string { return cb.Form[k] }, true)
	if !ok {
		t.Fatalf("callback %v not parsed", cb.Form)
	}
	return p.Authority, p.Receipt, p.ClaimsPaid
}

// The whole Mellat flow against the sandbox bank's SOAP service: pay
// request, the POST form, pay, the POST callback (SaleOrderId is our order
// number), verify 0, verify 43, settle 0, settle 45: all successes.
func TestFlowAgainstSandbank(t *testing.T) {
	bank, c, _, _ := newBank(t)
	ref := request(t, c, publicID, 150_000)
	form := c.PayForm(ref)
	if !strings.HasSuffix(form.Action, mellat.PathStartPay) || len(form.Fields) != 1 || form.Fields[0] != (gateway.FormField{Name: "RefId", Value: ref}) {
		t.Fatalf("pay form %+v", form)
	}
	cb, err := bank.Finish(ref, true)
	if err != nil {
		t.Fatal(err)
	}
	gotRef, receipt, claims := parse(t, cb)
	if gotRef != ref || receipt == "" || !claims || cb.Form["SaleOrderId"] != strconv.FormatInt(mellat.OrderNumber(publicID), 10) {
		t.Fatalf("callback %v", cb.Form)
	}
	in := gateway.VerifyInput{Authority: ref, AmountRials: 150_000, OrderID: publicID, Receipt: receipt}
	// Settle before verify is refused by the bank.
	if sr, err := c.Settle(ctxT(t), in); err != nil || sr.Done() {
		t.Fatalf("settle before verify: %+v %v", sr, err)
	}
	vr, err := c.Verify(ctxT(t), in)
	if err != nil || vr.Outcome != gateway.VerifyPaid || strconv.FormatInt(vr.RefID, 10) != receipt || vr.AmountRials != 150_000 {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	if vr, err := c.Verify(ctxT(t), in); err != nil || vr.Outcome != gateway.VerifyAlreadyVerified || vr.Code != 43 {
		t.Fatalf("verify again: %+v %v", vr, err)
	}
	if sr, err := c.Settle(ctxT(t), in); err != nil || sr.Outcome != gateway.SettleDone {
		t.Fatalf("settle: %+v %v", sr, err)
	}
	if sr, err := c.Settle(ctxT(t), in); err != nil || sr.Outcome != gateway.SettleAlready || sr.Code != 45 || !sr.Done() {
		t.Fatalf("settle again: %+v %v", sr, err)
	}
	if ir, err := c.InquireSale(ctxT(t), in); err != nil || ir.Status != gateway.InquiryVerified {
		t.Fatalf("inquiry: %+v %v", ir, err)
	}
	p, _ := bank.Payment(ref)
	if p.State != sandbank.StateVerified || p.SettledAt.IsZero() || p.SettleCount != 3 {
		t.Fatalf("bank: %+v", p)
	}
	// Another payment's order number with this sale: not found.
	other := in
	other.OrderID = "zzzzzzzzzzzzzzzzzzzzzzzz"
	if vr, err := c.Verify(ctxT(t), other); err != nil || vr.Outcome != gateway.VerifyNoSale {
		t.Fatalf("verify with another order: %+v %v", vr, err)
	}
}

// A cancelled payment brings no SaleReferenceId: no sale to verify
// (VerifyNoSale, no call). A forged reference is no sale either; a sale
// not verified within 20 minutes is reversed by the bank (48: no sale).
func TestCancelForgedTooLate(t *testing.T) {
	bank, c, clk, _ := newBank(t)
	ref := request(t, c, "cancelledcancelledcancell", 20_000)
	cb, err := bank.Finish(ref, false)
	if err != nil {
		t.Fatal(err)
	}
	_, receipt, claims := parse(t, cb)
	if receipt != "" || claims || cb.Form["ResCode"] != "17" {
		t.Fatalf("cancel callback %v", cb.Form)
	}
	if vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: ref, AmountRials: 20_000, OrderID: "cancelledcancelledcancell"}); err != nil || vr.Outcome != gateway.VerifyNoSale {
		t.Fatalf("verify without reference: %+v %v", vr, err)
	}
	if bank.Stats()["mellat-verify"].Calls != 0 {
		t.Fatal("verify without a reference called the bank")
	}
	ref2 := request(t, c, "laterlaterlaterlaterlate", 20_000)
	if vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: ref2, AmountRials: 20_000, OrderID: "laterlaterlaterlaterlate", Receipt: "999"}); err != nil || vr.Outcome != gateway.VerifyNoSale {
		t.Fatalf("forged reference: %+v %v", vr, err)
	}
	cb, _ = bank.Finish(ref2, true)
	_, receipt, _ = parse(t, cb)
	clk.Add(21 * time.Minute)
	if vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: ref2, AmountRials: 20_000, OrderID: "laterlaterlaterlaterlate", Receipt: receipt}); err != nil || vr.Outcome != gateway.VerifyNoSale || vr.Code != 48 || vr.NotPaid != gateway.NotPaidReversed {
		t.Fatalf("verify after 21 minutes: %+v %v", vr, err)
	}
}

// Duplicate order ids and bad credentials are refusals; 5xx, SOAP faults
// on verify and a hung settle are outcome unknown.
func TestRefusalsAndFaults(t *testing.T) {
	bank, c, _, base := newBank(t)
	ref := request(t, c, publicID, 30_000)
	_, err := c.Request(ctxT(t), gateway.RequestInput{AmountRials: 30_000, CallbackURL: callbackURL, OrderID: publicID})
	var re *gateway.RejectedError
	if !errors.As(err, &re) || re.Code != 41 {
		t.Fatalf("duplicate order: %v", err)
	}
	cb, _ := bank.Finish(ref, true)
	_, receipt, _ := parse(t, cb)
	in := gateway.VerifyInput{Authority: ref, AmountRials: 30_000, OrderID: publicID, Receipt: receipt}

	wrong, err := mellat.New(mellat.Config{TerminalID: mellat.SandboxTerminalID, Username: mellat.SandboxUsername, Password: "wrong", BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	// Our terminal refused (24), not the sale: the outcome stays unknown.
	var terr *gateway.TransientError
	if vr, err := wrong.Verify(ctxT(t), in); !errors.As(err, &terr) || !strings.Contains(err.Error(), "code 24") {
		t.Fatalf("verify with a wrong password: %+v %v", vr, err)
	}

	if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"mellat-verify": {ErrorRate: 1}}}); err != nil {
		t.Fatal(err)
	}
	var te *gateway.TransientError
	if _, err := c.Verify(ctxT(t), in); !errors.As(err, &te) || te.HTTPStatus != 503 {
		t.Fatalf("5xx verify: %v", err)
	}
	bank.ClearFaults()
	if vr, err := c.Verify(ctxT(t), in); err != nil || vr.Outcome != gateway.VerifyPaid {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"mellat-settle": {CommitThenHang: true, HangMS: 30_000}}}); err != nil {
		t.Fatal(err)
	}
	// Time enough for the bank to commit on a loaded machine, far
	// short of its hang.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Settle(ctx, in); !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung settle: %v", err)
	}
	bank.ClearFaults()
	if sr, err := c.Settle(ctxT(t), in); err != nil || sr.Outcome != gateway.SettleAlready {
		t.Fatalf("settle after a hang: %+v %v", sr, err)
	}
}

// What each answer of the bank means, call by call: only its table's
// definite codes are answers; its system error (34), a code it does not
// list and a fault in an outage are outcome unknown (counted by the
// breaker, asked again), a fault otherwise refuses a request.
func TestAnswerCodes(t *testing.T) {
	soap := func(method, ret string) string {
		return `<?xml version="1.0"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns2:` + method +
			`Response xmlns:ns2="http://interfaces.core.sw.bps.com/"><return>` + ret + `</return></ns2:` + method + `Response></soap:Body></soap:Envelope>`
	}
	faultOf := func(code string) string {
		return `<?xml version="1.0"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><soap:Fault>` +
			`<faultcode>` + code + `</faultcode><faultstring>it went wrong</faultstring></soap:Fault></soap:Body></soap:Envelope>`
	}
	fault, ours := faultOf("soap:Server"), faultOf("soap:Client")
	const (
		made = iota
		refused
		unknown
	)
	for _, tt := range []struct {
		name, op string
		status   int
		body     string
		want     int
		outcome  string
	}{
		{"verify 0", "verify", 200, soap("bpVerifyRequest", "0"), made, string(gateway.VerifyPaid)},
		{"verify 43", "verify", 200, soap("bpVerifyRequest", "43"), made, string(gateway.VerifyAlreadyVerified)},
		{"verify 17", "verify", 200, soap("bpVerifyRequest", "17"), made, string(gateway.VerifyNoSale)},
		{"verify 48", "verify", 200, soap("bpVerifyRequest", "48"), made, string(gateway.VerifyNoSale)},
		// Our terminal refused (its merchant, credentials or address):
		// nothing known of the sale; a reversal so refused reversed nothing.
		{"verify 24", "verify", 200, soap("bpVerifyRequest", "24"), unknown, ""},
		{"verify 421", "verify", 200, soap("bpVerifyRequest", "421"), unknown, ""},
		{"verify 21", "verify", 200, soap("bpVerifyRequest", "21"), unknown, ""},
		{"settle 421", "settle", 200, soap("bpSettleRequest", "421"), unknown, ""},
		{"reverse 421", "reverse", 200, soap("bpReversalRequest", "421"), refused, ""},
		{"verify 34", "verify", 200, soap("bpVerifyRequest", "34"), unknown, ""},
		{"verify 999", "verify", 200, soap("bpVerifyRequest", "999"), unknown, ""},
		{"verify fault", "verify", 500, fault, unknown, ""},
		{"settle 0", "settle", 200, soap("bpSettleRequest", "0"), made, string(gateway.SettleDone)},
		{"settle 48", "settle", 200, soap("bpSettleRequest", "48"), made, string(gateway.SettleReversed)},
		{"settle 46", "settle", 200, soap("bpSettleRequest", "46"), made, string(gateway.SettleRefused)},
		{"settle 34", "settle", 200, soap("bpSettleRequest", "34"), unknown, ""},
		{"settle 777", "settle", 200, soap("bpSettleRequest", "777"), unknown, ""},
		{"reverse 0", "reverse", 200, soap("bpReversalRequest", "0"), made, ""},
		{"reverse 45", "reverse", 200, soap("bpReversalRequest", "45"), refused, ""},
		{"reverse 48", "reverse", 200, soap("bpReversalRequest", "48"), unknown, ""},
		{"reverse 34", "reverse", 200, soap("bpReversalRequest", "34"), unknown, ""},
		{"reverse 888", "reverse", 200, soap("bpReversalRequest", "888"), unknown, ""},
		{"reverse fault", "reverse", 500, fault, unknown, ""},
		{"request 0", "request", 200, soap("bpPayRequest", "0,ABCDEF0123456789"), made, ""},
		{"request 41", "request", 200, soap("bpPayRequest", "41"), refused, ""},
		{"request fault in an outage", "request", 500, fault, unknown, ""},
		{"request fault 503", "request", 503, fault, unknown, ""},
		{"request fault 200", "request", 200, fault, refused, ""},
		{"request fault of ours, on 500 as SOAP sends it", "request", 500, ours, refused, ""},
		{"verify fault of ours", "verify", 500, ours, unknown, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/xml; charset=utf-8")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := mellat.New(mellat.Config{TerminalID: mellat.SandboxTerminalID, Username: mellat.SandboxUsername, Password: mellat.SandboxPassword, BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			in := gateway.VerifyInput{Authority: "ABCDEF0123456789", AmountRials: 30_000, OrderID: publicID, Receipt: "184467440737"}
			var outcome string
			switch tt.op {
			case "verify":
				var vr gateway.VerifyResult
				vr, err = c.Verify(ctxT(t), in)
				outcome = string(vr.Outcome)
			case "settle":
				var sr gateway.SettleResult
				sr, err = c.Settle(ctxT(t), in)
				outcome = string(sr.Outcome)
			case "reverse":
				err = c.Reverse(ctxT(t), in)
			default:
				_, err = c.Request(ctxT(t), gateway.RequestInput{AmountRials: 30_000, CallbackURL: callbackURL, OrderID: publicID})
			}
			var te *gateway.TransientError
			switch tt.want {
			case made:
				if err != nil || outcome != tt.outcome {
					t.Fatalf("%s %v, want %s", outcome, err, tt.outcome)
				}
			case refused:
				if !gateway.IsRejected(err) {
					t.Fatalf("%v, want refused", err)
				}
				// Only the reversal's 45 says why: the sale is settled.
				var s interface{ SaleSettled() bool }
				if settled := errors.As(err, &s) && s.SaleSettled(); settled != (tt.name == "reverse 45") {
					t.Fatalf("%v: says the sale is settled: %v", err, settled)
				}
			case unknown:
				if !errors.As(err, &te) || gateway.IsRejected(err) {
					t.Fatalf("%s %v, want outcome unknown", outcome, err)
				}
			}
		})
	}
}

// SOAP answers are read leniently: any prefix, spaces, a fault.
func TestReadReturn(t *testing.T) {
	for _, tt := range []struct{ body, ret, fault string }{
		{`<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><ns2:bpPayRequestResponse xmlns:ns2="x"><return> 0,AF82041a2Bf6989c7fF9 </return></ns2:bpPayRequestResponse></S:Body></S:Envelope>`, "0,AF82041a2Bf6989c7fF9", ""},
		{`<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>For input string: "x"</faultstring></soap:Fault></soap:Body></soap:Envelope>`, "", `For input string: "x"`},
		{`<Envelope><Body><bpVerifyRequestResponse><return>43</return></bpVerifyRequestResponse></Body></Envelope>`, "43", ""},
	} {
		ret, fault, err := mellat.ReadReturn([]byte(tt.body))
		if err != nil || ret != tt.ret || strings.TrimSpace(fault) != tt.fault {
			t.Errorf("ReadReturn(%.40q) = %q %q %v", tt.body, ret, fault, err)
		}
	}
	if _, _, err := mellat.ReadReturn([]byte("<html>502</html>")); err == nil {
		t.Error("an HTML page read as an answer")
	}
}

// The order number is stable, positive and differs between payments.
func TestOrderNumber(t *testing.T) {
	a, b := mellat.OrderNumber(publicID), mellat.OrderNumber("bbcdefghijklmnopqrstuvwx")
	if a <= 0 || b <= 0 || a == b || a != mellat.OrderNumber(publicID) {
		t.Fatalf("%d %d", a, b)
	}
}

func TestDriverEntry(t *testing.T) {
	d := mellat.Driver()
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	_, errs := d.Read(func(string) string { return "" })
	if len(errs) != 3 {
		t.Fatalf("missing settings: %v", errs)
	}
	for _, s := range d.Settings {
		if s.Env == mellat.SettingPassword && !s.Secret {
			t.Fatal("the password is not secret")
		}
	}
}

// The card refund of a Mellat sale is bpReversalRequest: the whole sale,
// only before settle (a settled sale is refused: 45); its status is the
// sale's inquiry (48 reversed, 0 verified and standing).
func TestRefundIsAReversalBeforeSettle(t *testing.T) {
	bank, c, _, _ := newBank(t)
	verified := func(id string, amount int64) gateway.RefundInput {
		ref := request(t, c, id, amount)
		cb, err := bank.Finish(ref, true)
		if err != nil {
			t.Fatal(err)
		}
		_, receipt, _ := parse(t, cb)
		in := gateway.VerifyInput{Authority: ref, AmountRials: amount, OrderID: id, Receipt: receipt}
		if vr, err := c.Verify(ctxT(t), in); err != nil || vr.Outcome != gateway.VerifyPaid {
			t.Fatalf("verify: %+v %v", vr, err)
		}
		return gateway.RefundInput{Payment: in, AmountRials: amount}
	}
	in := verified(publicID, 150_000)
	if st, err := c.RefundStatus(ctxT(t), in); err != nil || st.Outcome != gateway.RefundNotDone {
		t.Fatalf("status before: %+v %v", st, err)
	}
	if _, err := c.Refund(ctxT(t), in); err != nil {
		t.Fatalf("reversal: %v", err)
	}
	if st, err := c.RefundStatus(ctxT(t), in); err != nil || st.Outcome != gateway.RefundDone || st.Code != 48 {
		t.Fatalf("status after: %+v %v", st, err)
	}
	// Sent again (its first answer lost): the bank says 48, which is not
	// a refusal, or the wallet would get back what the card already has.
	var te *gateway.TransientError
	if _, err := c.Refund(ctxT(t), in); !errors.As(err, &te) || gateway.IsRejected(err) {
		t.Fatalf("reversal sent again: %v, want outcome unknown", err)
	}
	settled := verified("zzzzzzzzzzzzzzzzzzzzzzzz", 90_000)
	if sr, err := c.Settle(ctxT(t), settled.Payment); err != nil || !sr.Done() {
		t.Fatalf("settle: %+v %v", sr, err)
	}
	var rej *gateway.RejectedError
	if _, err := c.Refund(ctxT(t), settled); !errors.As(err, &rej) || rej.Code != 45 {
		t.Fatalf("reversal of a settled sale: %v, want refused with 45", err)
	}
	// The reversal's refusal says why (the top-up worker settles such a
	// sale again rather than leave it uncredited).
	var s interface{ SaleSettled() bool }
	if err := c.Reverse(ctxT(t), settled.Payment); !errors.As(err, &s) || !s.SaleSettled() || !errors.As(err, &rej) || rej.Code != 45 {
		t.Fatalf("reversal of a settled sale: %v, want refused with 45, saying the sale is settled", err)
	}
}

// The callback's check (Ops.MatchCallback) refuses another order's
// SaleOrderId and a FinalAmount other than ours, and lets a callback that
// names neither through.
func TestMatchCallback(t *testing.T) {
	bank, c, _, _ := newBank(t)
	match := c.Ops().MatchCallback
	if match == nil {
		t.Fatal("no callback check")
	}
	ours := strconv.FormatInt(mellat.OrderNumber(publicID), 10)
	for _, tc := range []struct {
		name    string
		receipt string
		order   string
		paid    int64
		ok      bool
	}{
		{"its order and amount", "777", ours, 150_000, true},
		{"neither named (a cancel)", "", "", 0, true},
		{"a sale without its FinalAmount", "777", ours, 0, false},
		{"a sale without its SaleOrderId", "777", "", 150_000, false},
		{"another order", "777", strconv.FormatInt(mellat.OrderNumber("another-payment-id-00000"), 10), 150_000, false},
		{"an order that is no number", "", "12ab", 0, false},
		{"a discounted amount", "777", ours, 140_000, false},
		{"more than ours", "777", ours, 160_000, false},
	} {
		err := match(publicID, 150_000, callback.Params{Authority: "R", Receipt: tc.receipt, Order: tc.order, PaidRials: tc.paid})
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	// The sandbox bank's callback names both, as Mellat's does, and
	// passes.
	cb, err := bank.Finish(request(t, c, publicID, 150_000), true)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := mellat.ParseCallback(func(string) string { return "" }, func(k string) string { return cb.Form[k] }, true)
	if !ok || p.Order != ours || p.PaidRials != 150_000 || match(publicID, 150_000, p) != nil {
		t.Fatalf("the bank's own callback: %+v", p)
	}
}
