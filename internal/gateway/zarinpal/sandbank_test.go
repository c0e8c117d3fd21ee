package zarinpal

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/sandbank"
)

// The unverified list carries each payment's callback URL exactly as it
// was requested (reconciliation finds our public id in it), end to end
// through the driver and the sandbox bank.
func TestListUnverifiedCarriesCallbackURL(t *testing.T) {
	bank := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(bank.Handler())
	defer srv.Close()
	c := mustNew(t, srv.URL)

	tests := []struct {
		name     string
		callback string
		amount   int64
		finish   string // pay, cancel, none, verify
		listed   bool
	}{
		{"paid, unverified", "http://127.0.0.1:8080/payments/pay_01HXAAAAAAAAAAAAAAAAAAAAAA/return", 150000, "pay", true},
		{"paid, with a query", "https://wallet.example.ir/payments/pay_01HXBBBBBBBBBBBBBBBBBBBBBB/return?lang=fa&x=1", 250000, "pay", true},
		{"paid, escaped path", "https://wallet.example.ir/payments/pay%2F01HXC/return", 10000, "pay", true},
		{"paid and verified", "https://wallet.example.ir/payments/pay_verified/return", 10000, "verify", false},
		{"cancelled", "https://wallet.example.ir/payments/pay_cancelled/return", 10000, "cancel", false},
		{"never paid", "https://wallet.example.ir/payments/pay_open/return", 10000, "none", false},
	}
	auths := map[string]int{}
	for i, tt := range tests {
		in := requestInput()
		in.CallbackURL, in.AmountRials = tt.callback, tt.amount
		res, err := c.Request(ctxT(t), in)
		if err != nil {
			t.Fatalf("%s: request: %v", tt.name, err)
		}
		auths[res.Authority] = i
		switch tt.finish {
		case "pay", "verify":
			if _, err := bank.Pay(res.Authority); err != nil {
				t.Fatalf("%s: pay: %v", tt.name, err)
			}
		case "cancel":
			if _, err := bank.Cancel(res.Authority); err != nil {
				t.Fatalf("%s: cancel: %v", tt.name, err)
			}
		}
		if tt.finish == "verify" {
			if vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: res.Authority, AmountRials: tt.amount}); err != nil || !vr.Settled() {
				t.Fatalf("%s: verify %+v %v", tt.name, vr, err)
			}
		}
	}
	list, err := c.ListUnverified(ctxT(t))
	if err != nil {
		t.Fatalf("ListUnverified: %v", err)
	}
	seen := map[int]gateway.Unverified{}
	for _, u := range list {
		i, ok := auths[u.Authority]
		if !ok {
			t.Fatalf("unknown authority listed: %+v", u)
		}
		seen[i] = u
	}
	for i, tt := range tests {
		u, ok := seen[i]
		if ok != tt.listed {
			t.Errorf("%s: listed %v, want %v", tt.name, ok, tt.listed)
			continue
		}
		if ok && (u.CallbackURL != tt.callback || u.AmountRials != tt.amount || u.Date.IsZero()) {
			t.Errorf("%s: listed %+v, want callback %q amount %d and a date", tt.name, u, tt.callback, tt.amount)
		}
	}
}

// Zarinpal answers an expired page and a cancel alike (Status=NOK, verify
// -51, inquiry FAILED): the driver tells them apart by how long the payer
// had the page (VerifyInput.PageTime) against its PageLifetime.
func TestNotPaidCauseAgainstTheSandboxBank(t *testing.T) {
	bank := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(bank.Handler())
	defer srv.Close()
	c, err := New(Config{MerchantID: testMerchant, BaseURL: srv.URL, PageLifetime: sandbank.DefaultAuthorityTTL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		end      func(string) (string, error)
		pageTime time.Duration
		want     gateway.NotPaidCause
	}{
		{"cancelled at once", bank.Cancel, 40 * time.Second, gateway.NotPaidCancelled},
		{"cancelled just in time", bank.Cancel, sandbank.DefaultAuthorityTTL - time.Second, gateway.NotPaidCancelled},
		{"page expired", bank.Expire, sandbank.DefaultAuthorityTTL, gateway.NotPaidExpired},
		{"never came back", bank.Expire, 40 * time.Minute, gateway.NotPaidExpired},
		{"time unknown", bank.Expire, 0, gateway.NotPaidUnknown},
	} {
		res, err := c.Request(ctxT(t), requestInput())
		if err != nil {
			t.Fatal(err)
		}
		back, err := tt.end(res.Authority)
		if err != nil || !strings.HasSuffix(back, "&Status=NOK") {
			t.Fatalf("%s: back %q %v", tt.name, back, err)
		}
		vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: res.Authority, AmountRials: requestInput().AmountRials, PageTime: tt.pageTime})
		if err != nil || vr.Outcome != gateway.VerifyNotPaid || vr.Code != -51 || vr.NotPaid != tt.want {
			t.Errorf("%s: verify %+v %v, want not paid (%q)", tt.name, vr, err, tt.want)
		}
		if ir, err := c.Inquire(ctxT(t), res.Authority); err != nil || ir.Status != gateway.InquiryFailed {
			t.Errorf("%s: inquiry %+v %v", tt.name, ir, err)
		}
	}
	// Without a page lifetime the driver does not tell.
	if got := notPaidCause(0, time.Hour); got != gateway.NotPaidUnknown {
		t.Errorf("no lifetime: %q", got)
	}
}

// The driver's page lifetime setting: a duration from 0 to 24h, 15m by
// default (the sandbox bank's TTL), read by Driver().New.
func TestPageLifetimeSetting(t *testing.T) {
	if DefaultPageLifetime != sandbank.DefaultAuthorityTTL {
		t.Errorf("default page lifetime %s, sandbox bank's TTL %s", DefaultPageLifetime, sandbank.DefaultAuthorityTTL)
	}
	for in, want := range map[string]string{"": "15m0s", "15m": "15m0s", "0": "0s", "90s": "1m30s", "24h": "24h0m0s"} {
		if got, err := checkPageLifetime(in); err != nil || got != want {
			t.Errorf("checkPageLifetime(%q) = %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"-1m", "25h", "soon", "15"} {
		if _, err := checkPageLifetime(in); err == nil {
			t.Errorf("checkPageLifetime(%q) accepted", in)
		}
	}
	d := Driver()
	if s := d.Sandbox.Settings("http://127.0.0.1:1/sandbank"); s[SettingPageLife] != "15m" {
		t.Errorf("sandbox settings: %v", s)
	}
	gw, err := d.New(gateway.Settings{SettingMerchantID: testMerchant, SettingBaseURL: "http://127.0.0.1:1", SettingPageLife: "2m0s"}, gateway.Deps{})
	if err != nil || gw.(*Client).pageLife != 2*time.Minute {
		t.Errorf("New with a page lifetime: %v", err)
	}
	if _, err := d.New(gateway.Settings{SettingMerchantID: testMerchant, SettingBaseURL: "http://127.0.0.1:1", SettingPageLife: "-1s"}, gateway.Deps{}); err == nil {
		t.Error("New with a negative page lifetime")
	}
}
