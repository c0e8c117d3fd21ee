package zibal_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/gateway/zibal"
	"github.com/kifpool/kifpool/internal/sandbank"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, base, merchant string) *zibal.Client {
	t.Helper()
	c, err := zibal.New(zibal.Config{Merchant: merchant, BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const cb = "http://127.0.0.1:8080/payments/pay_01HXAAAAAAAAAAAAAAAAAAAAAA/return"

func request(t *testing.T, c *zibal.Client, amount int64) string {
	t.Helper()
	res, err := c.Request(ctxT(t), gateway.RequestInput{AmountRials: amount, CallbackURL: cb, Description: "top-up", OrderID: "pay_01HXAAAAAAAAAAAAAAAAAAAAAA"})
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return res.Authority
}

// TestAgainstTheSandboxBank: the driver's whole protocol against the
// sandbox bank's Zibal at its real paths: request, the payer's page and
// its GET callback, verify (100 with the amount and the reference),
// verify again (201: already verified, the details from the inquiry,
// never a failure), inquiry states, cancel (202, FAILED), and the
// refusals.
func TestAgainstTheSandboxBank(t *testing.T) {
	bank := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(bank.Handler())
	defer srv.Close()
	c := client(t, srv.URL, zibal.SandboxMerchant)

	track := request(t, c, 150_000)
	if !strings.HasPrefix(c.PayURL(track), srv.URL+"/start/") {
		t.Errorf("PayURL = %s", c.PayURL(track))
	}
	page, err := http.Get(c.PayURL(track))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, page)
	if page.StatusCode != 200 || !strings.Contains(body, `data-testid="bank-pay"`) || !strings.Contains(body, `data-testid="bank-cancel"`) {
		t.Errorf("bank page: %d, pay/cancel buttons missing", page.StatusCode)
	}
	if q, err := c.Inquire(ctxT(t), track); err != nil || q.Status != gateway.InquiryInBank {
		t.Errorf("inquiry before payment = %+v, %v", q, err)
	}
	if vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: track, AmountRials: 150_000}); err != nil || vr.Outcome != gateway.VerifyNotPaid || vr.Code != 202 {
		t.Errorf("verify before payment = %+v, %v", vr, err)
	}

	back, err := bank.Finish(track, true)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(back.URL)
	if back.Method != http.MethodGet || u.Query().Get("trackId") != track || u.Query().Get("success") != "1" || u.Query().Get("status") != "2" ||
		u.Query().Get("orderId") != "pay_01HXAAAAAAAAAAAAAAAAAAAAAA" || !strings.HasPrefix(back.URL, cb+"?") {
		t.Errorf("callback = %+v", back)
	}
	p, ok := zibal.ParseCallback(u.Query().Get, func(string) string { return "" }, false)
	if !ok || p.Authority != track || !p.ClaimsPaid {
		t.Errorf("ParseCallback = %+v, %v", p, ok)
	}
	if q, err := c.Inquire(ctxT(t), track); err != nil || q.Status != gateway.InquiryPaid {
		t.Errorf("inquiry after payment = %+v, %v", q, err)
	}

	vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: track, AmountRials: 150_000})
	if err != nil || vr.Outcome != gateway.VerifyPaid || vr.Code != 100 || vr.AmountRials != 150_000 || vr.RefID <= 0 ||
		!strings.Contains(vr.CardPANMasked, "******") {
		t.Fatalf("verify = %+v, %v", vr, err)
	}
	again, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: track, AmountRials: 150_000})
	if err != nil || again.Outcome != gateway.VerifyAlreadyVerified || again.Code != 201 || again.RefID != vr.RefID || again.AmountRials != 150_000 {
		t.Errorf("verify again = %+v, %v; want 201 with the details of %+v", again, err, vr)
	}
	if q, err := c.Inquire(ctxT(t), track); err != nil || q.Status != gateway.InquiryVerified {
		t.Errorf("inquiry after verify = %+v, %v", q, err)
	}

	// Cancel: not paid, and the inquiry's definite FAILED.
	other := request(t, c, 20_000)
	back, err = bank.Finish(other, false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ = url.Parse(back.URL)
	if u.Query().Get("success") != "0" || u.Query().Get("status") != "3" {
		t.Errorf("cancel callback = %s", back.URL)
	}
	if p, ok := zibal.ParseCallback(u.Query().Get, func(string) string { return "" }, false); !ok || p.ClaimsPaid {
		t.Errorf("cancel ParseCallback = %+v, %v", p, ok)
	}
	if vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: other, AmountRials: 20_000}); err != nil || vr.Outcome != gateway.VerifyNotPaid {
		t.Errorf("verify of a cancelled one = %+v, %v", vr, err)
	}
	if q, err := c.Inquire(ctxT(t), other); err != nil || q.Status != gateway.InquiryFailed {
		t.Errorf("inquiry of a cancelled one = %+v, %v", q, err)
	}

	// Another merchant's payment, an unknown trackId: the verify refused.
	if vr, err := client(t, srv.URL, "someoneelse").Verify(ctxT(t), gateway.VerifyInput{Authority: track, AmountRials: 150_000}); err != nil || vr.Outcome != gateway.VerifyInvalid || vr.Code != 203 {
		t.Errorf("another merchant's verify = %+v, %v", vr, err)
	}
	if vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: "123", AmountRials: 1}); err != nil || vr.Outcome != gateway.VerifyInvalid {
		t.Errorf("unknown trackId = %+v, %v", vr, err)
	}
	// Refusals of request: definite, with Zibal's code.
	_, err = c.Request(ctxT(t), gateway.RequestInput{AmountRials: 1_000, CallbackURL: cb, Description: "x"})
	if !gateway.IsRejected(err) {
		t.Errorf("1,000 rials: %v, want a refusal", err)
	}
	_, err = c.Request(ctxT(t), gateway.RequestInput{AmountRials: 2_000_000_000, CallbackURL: cb, Description: "x"})
	var rej *gateway.RejectedError
	if !errors.As(err, &rej) || rej.Code != 113 {
		t.Errorf("over the limit: %v, want result 113", err)
	}
}

// TestAlreadyVerifiedNeedsTheInquiry: 201 carries no details; when the
// inquiry cannot give them the outcome is unknown (a transient error),
// never a failure, and a 201 whose inquiry does not say verified is not
// believed either.
func TestAlreadyVerifiedNeedsTheInquiry(t *testing.T) {
	for _, tt := range []struct {
		name    string
		inquiry func(w http.ResponseWriter)
		want    gateway.VerifyOutcome // "" = transient error
	}{
		{"inquiry gives the details", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"result":100,"message":"success","status":1,"amount":"50000","refNumber":778899,"cardNumber":"6037-99**-****-1234"}`))
		}, gateway.VerifyAlreadyVerified},
		{"inquiry down", func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) }, ""},
		{"inquiry says paid, not verified", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"result":100,"message":"success","status":2,"amount":50000,"refNumber":778899}`))
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var in map[string]any
				_ = json.NewDecoder(r.Body).Decode(&in)
				if in["merchant"] != "zibal" || in["trackId"] != float64(3001) {
					t.Errorf("%s body = %v", r.URL.Path, in)
				}
				switch r.URL.Path {
				case "/v1/verify":
					_, _ = w.Write([]byte(`{"result":201,"message":"previously verifed"}`))
				case "/v1/inquiry":
					tt.inquiry(w)
				}
			}))
			defer srv.Close()
			vr, err := client(t, srv.URL, "zibal").Verify(ctxT(t), gateway.VerifyInput{Authority: "3001", AmountRials: 50_000})
			if tt.want == "" {
				var te *gateway.TransientError
				if !errors.As(err, &te) {
					t.Errorf("= %+v, %v; want a transient error (outcome unknown)", vr, err)
				}
				return
			}
			if err != nil || vr.Outcome != tt.want || vr.RefID != 778899 || vr.AmountRials != 50_000 || vr.CardPANMasked != "603799******1234" {
				t.Errorf("= %+v, %v", vr, err)
			}
		})
	}
}

// TestParseCallback: the trackId is the token (a positive number, shape
// checked); success=1 with status 2 (or 1) claims payment.
func TestParseCallback(t *testing.T) {
	for _, tt := range []struct {
		query string
		ok    bool
		paid  bool
	}{
		{"trackId=15966442233&success=1&status=2&orderId=x", true, true},
		{"trackId=15966442233&success=0&status=3", true, false},
		{"trackId=15966442233&success=1&status=3", true, false},
		{"trackId=15966442233", true, false},
		{"trackId=abc&success=1&status=2", false, false},
		{"trackId=-5", false, false},
		{"trackId=1%200", false, false},
		{"Authority=15966442233&Status=OK", false, false},
		{"", false, false},
	} {
		q, _ := url.ParseQuery(tt.query)
		p, ok := zibal.ParseCallback(q.Get, func(string) string { return "" }, false)
		if ok != tt.ok || p.ClaimsPaid != tt.paid {
			t.Errorf("%q: %+v, %v; want ok %v paid %v", tt.query, p, ok, tt.ok, tt.paid)
		}
	}
	form := url.Values{"trackId": {"42"}, "success": {"1"}, "status": {"2"}}
	if p, ok := zibal.ParseCallback(func(string) string { return "" }, form.Get, true); !ok || p.Authority != "42" {
		t.Errorf("a POST's form: %+v, %v", p, ok)
	}
}

// TestDriver: the registry entry is complete, its settings are checked,
// and the sandbox bank speaks its protocol.
func TestDriver(t *testing.T) {
	d, ok := drivers.Lookup("zibal")
	if !ok {
		t.Fatal("zibal is not registered")
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if !sandbank.Speaks(d.Sandbox.Protocol) {
		t.Errorf("the sandbox bank does not speak %s", d.Sandbox.Protocol)
	}
	env := map[string]string{zibal.SettingMerchant: "bad merchant!", zibal.SettingBaseURL: "http://gateway.example"}
	_, errs := d.Read(func(k string) string { return env[k] })
	if len(errs) != 2 {
		t.Errorf("errors = %v, want the merchant and the plain-http base URL", errs)
	}
	env = map[string]string{zibal.SettingMerchant: "abc123"}
	s, errs := d.Read(func(k string) string { return env[k] })
	if len(errs) != 0 || s[zibal.SettingBaseURL] != zibal.ProductionBaseURL {
		t.Errorf("settings = %v, %v", s, errs)
	}
}

func readAll(t *testing.T, r *http.Response) string {
	t.Helper()
	defer r.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return sb.String()
}
