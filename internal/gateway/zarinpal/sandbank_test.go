package zarinpal

import (
	"net/http/httptest"
	"testing"

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
