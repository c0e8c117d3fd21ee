package drivers_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
)

// TestEveryDriverIsComplete: every registry entry has every capability
// set, a callback parser, a constructor that builds the driver from its
// sandbox settings, and unique names.
func TestEveryDriverIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range drivers.All() {
		if err := d.Check(); err != nil {
			t.Errorf("%v", err)
		}
		if seen[d.Name] || d.Name == drivers.Sandbox {
			t.Errorf("driver name %q is taken", d.Name)
		}
		seen[d.Name] = true
		if d.Name != strings.ToLower(d.Name) || strings.ContainsAny(d.Name, " _") {
			t.Errorf("driver name %q: want lower-case letters (it is stored with every payment)", d.Name)
		}
		// Its parser refuses a callback without a token.
		none := func(string) string { return "" }
		if p, ok := d.ParseCallback(none, none, true); ok || p.Authority != "" {
			t.Errorf("%s: an empty callback parsed as %+v", d.Name, p)
		}
		if d.Sandbox.Settings != nil {
			gw, err := d.New(d.Sandbox.Settings("http://127.0.0.1:1/sandbank"), gateway.Deps{})
			if err != nil {
				t.Errorf("%s against the sandbox bank: %v", d.Name, err)
			} else if gw.Name() != d.Name {
				t.Errorf("driver %q builds a gateway named %q", d.Name, gw.Name())
			}
		}
	}
	if d, ok := drivers.Lookup(drivers.SandboxDriver); !ok || d.Sandbox.Settings == nil {
		t.Errorf("the sandbox driver %q is not registered with sandbox settings", drivers.SandboxDriver)
	}
}

// TestCheckFindsWhatIsMissing: Check is what makes a half-declared driver
// fail the test above.
func TestCheckFindsWhatIsMissing(t *testing.T) {
	full, _ := drivers.Lookup("zarinpal")
	if err := full.Check(); err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(d *gateway.Driver){
		"parser":          func(d *gateway.Driver) { d.ParseCallback = nil },
		"Redirect":        func(d *gateway.Driver) { d.Capabilities.Redirect = 0 },
		"Callback":        func(d *gateway.Driver) { d.Capabilities.Callback = 0 },
		"AlreadyVerified": func(d *gateway.Driver) { d.Capabilities.AlreadyVerified = nil },
		"VerifyDeadline":  func(d *gateway.Driver) { d.Capabilities.VerifyDeadline = gateway.Window{} },
		"ReverseWindow":   func(d *gateway.Driver) { d.Capabilities.ReverseWindow = gateway.Window{Kind: gateway.WindowWithin} },
		"Settle":          func(d *gateway.Driver) { d.Capabilities.Settle = gateway.Window{} },
		"VerifyData":      func(d *gateway.Driver) { d.Capabilities.VerifyData = 0 },
		"Reconcile":       func(d *gateway.Driver) { d.Capabilities.Reconcile = 0 },
		"Receipt": func(d *gateway.Driver) {
			d.Capabilities.VerifyData = gateway.VerifyNeedsCallback // and no word on a receipt of the token
		},
		"Receipt without a callback": func(d *gateway.Driver) { d.Capabilities.Receipt = gateway.Within(3600e9) },
		"Unit":                       func(d *gateway.Driver) { d.Capabilities.Unit = 0 },
		"MinAmountRials":             func(d *gateway.Driver) { d.Capabilities.MinAmountRials = 0 },
		"CardRefund":                 func(d *gateway.Driver) { d.Capabilities.CardRefund = gateway.CardRefund{} },
		"CardRefund's minimum":       func(d *gateway.Driver) { d.Capabilities.CardRefund.MinAmountRials = 0 },
		"CardRefund's reason": func(d *gateway.Driver) {
			d.Capabilities.CardRefund = gateway.CardRefund{Method: gateway.CardRefundNone}
		},
		"constructor":      func(d *gateway.Driver) { d.New = nil },
		"label":            func(d *gateway.Driver) { d.Label = "" },
		"setting":          func(d *gateway.Driver) { d.Settings = append(d.Settings, gateway.Setting{Env: "X"}) },
		"sandbox protocol": func(d *gateway.Driver) { d.Sandbox.Protocol = "" },
	} {
		d := full
		d.Capabilities.AlreadyVerified = append([]gateway.Signal(nil), full.Capabilities.AlreadyVerified...)
		spoil(&d)
		if err := d.Check(); err == nil {
			t.Errorf("a driver without its %s passes Check", name)
		}
	}
}

// TestCapabilitiesDescribeTheNextGateways: the record can state what the
// gateways to come need (facts from the gateways' documentation and
// field notes), so adding them needs no new field.
func TestCapabilitiesDescribeTheNextGateways(t *testing.T) {
	full, _ := drivers.Lookup("zarinpal")
	for name, c := range map[string]gateway.Capabilities{
		"zibal": {Redirect: gateway.RedirectGET, Callback: gateway.CallbackGET,
			AlreadyVerified: []gateway.Signal{{Op: "verify", Code: 201}},
			VerifyDeadline:  gateway.Window{Kind: gateway.WindowUnknown}, ReverseWindow: gateway.Window{Kind: gateway.WindowNone},
			Settle:     gateway.Window{Kind: gateway.WindowNone},
			VerifyData: gateway.VerifyWithoutCallback, Reconcile: gateway.ReconcileInquiry, Unit: gateway.UnitRial, MinAmountRials: 1_010,
			CardRefund: gateway.CardRefund{Method: gateway.CardRefundNone, Why: "not confirmed"}},
		"sep": {Redirect: gateway.RedirectPOSTForm, Callback: gateway.CallbackPOST | gateway.CallbackGET,
			AlreadyVerified: []gateway.Signal{{Op: "verify", Code: 2}},
			VerifyDeadline:  gateway.Within(30 * 60e9), ReverseWindow: gateway.Within(50 * 60e9),
			Settle:     gateway.Window{Kind: gateway.WindowNone},
			VerifyData: gateway.VerifyNeedsCallback, Receipt: gateway.Within(3600e9),
			Reconcile: gateway.ReconcileInquiry, Unit: gateway.UnitRial, MinAmountRials: 10_000,
			CardRefund: gateway.CardRefund{Method: gateway.CardRefundReverse}},
		"mellat": {Redirect: gateway.RedirectPOSTForm, Callback: gateway.CallbackPOST,
			AlreadyVerified: []gateway.Signal{{Op: "verify", Code: 43}, {Op: "settle", Code: 45}},
			VerifyDeadline:  gateway.Within(20 * 60e9), ReverseWindow: gateway.Within(3 * 3600e9),
			Settle:     gateway.Within(20 * 60e9),
			VerifyData: gateway.VerifyNeedsCallback, Receipt: gateway.Window{Kind: gateway.WindowNone}, Reconcile: gateway.ReconcileInquiry, Unit: gateway.UnitRial, MinAmountRials: 10_000,
			CardRefund: gateway.CardRefund{Method: gateway.CardRefundReverse, BeforeSettleOnly: true}},
	} {
		d := full
		d.Name, d.Capabilities = name, c
		if err := d.Check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestLabeler: the console names payments of the built-in sandbox bank
// "sandbox" (they store the driver's name), others by the driver's label,
// and a gateway the registry no longer has by its stored name.
func TestLabeler(t *testing.T) {
	for _, tt := range []struct {
		sandbox       bool
		stored, label string
	}{
		{true, drivers.SandboxDriver, "Zarinpal (sandbox)"},
		{false, "zarinpal", "Zarinpal"},
		{true, "otherbank", "otherbank"},
		{false, "otherbank", "otherbank"},
	} {
		if got := drivers.Labeler(tt.sandbox)(tt.stored); got != tt.label {
			t.Errorf("Labeler(%v)(%q) = %q, want %q", tt.sandbox, tt.stored, got, tt.label)
		}
	}
	if d, ok := drivers.Lookup("nobank"); ok {
		t.Errorf("Lookup(nobank) = %+v", d)
	}
}

// TestSupported: every registered driver fits the flow: a POST-form
// driver's gateway.Ops has the form payer, whose form carries the token;
// a settling one's (Capabilities.Settle) has settle; one that reverses
// declares a reverse window.
func TestSupported(t *testing.T) {
	for _, d := range drivers.All() {
		if err := drivers.Supported(d); err != nil {
			t.Errorf("registered driver %s: %v", d.Name, err)
		}
		if d.Sandbox.Settings == nil {
			continue
		}
		gw, err := d.New(d.Sandbox.Settings("http://127.0.0.1:1/sandbank"), gateway.Deps{})
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		ops := gw.Ops()
		isForm := ops.PayForm != nil
		if isForm != (d.Capabilities.Redirect == gateway.RedirectPOSTForm) {
			t.Errorf("%s: builds a form payer %v, redirect capability %v", d.Name, isForm, d.Capabilities.Redirect)
		}
		if isForm {
			if form := ops.PayForm("TOKEN1"); len(form.Fields) != 1 || form.Fields[0].Value != "TOKEN1" || !strings.HasPrefix(form.Action, "http://127.0.0.1:1/sandbank/") {
				t.Errorf("%s: pay form %+v", d.Name, form)
			}
		}
		settles := ops.Settle != nil
		if settles != (d.Capabilities.Settle.Kind != gateway.WindowNone) {
			t.Errorf("%s: settler %v, settle capability %+v", d.Name, settles, d.Capabilities.Settle)
		}
		if ops.Reverse != nil && d.Capabilities.ReverseWindow.Kind == gateway.WindowNone {
			t.Errorf("%s: reverses, but its reverse window says it cannot", d.Name)
		}
		if ops.Down != nil {
			t.Errorf("%s: a driver says the bank is down; only the resilient caller knows", d.Name)
		}
	}
	d, _ := drivers.Lookup("zarinpal")
	d.Capabilities.Redirect = 0
	if drivers.Supported(d) == nil {
		t.Error("a driver without a redirect is supported")
	}
}

// TestDriversReadTheirInjectedClock: every driver reads the time from the
// clock it is built with (gateway.Deps.Now), never from the machine's: a
// bank's "Retry-After: <date>" is turned into a wait against that clock,
// so tests control it.
func TestDriversReadTheirInjectedClock(t *testing.T) {
	now := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("busy"))
	}))
	t.Cleanup(srv.Close)
	for _, d := range drivers.All() {
		t.Run(d.Name, func(t *testing.T) {
			if d.Sandbox.Settings == nil {
				t.Skip("no sandbox settings")
			}
			gw, err := d.New(d.Sandbox.Settings(srv.URL), gateway.Deps{HTTPClient: srv.Client(), Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err = gw.Request(ctx, gateway.RequestInput{AmountRials: 100_000, CallbackURL: "http://127.0.0.1/payments/x/return",
				OrderID: "p0123456789", Description: "top-up"})
			var te *gateway.TransientError
			if !errors.As(err, &te) {
				t.Fatalf("a 503: %v, want a transient error", err)
			}
			if te.RetryAfter != 90*time.Second {
				t.Errorf("Retry-After 90 s after the injected clock's now read as %v", te.RetryAfter)
			}
		})
	}
}
