package zibal_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/payout/zibal"
	"github.com/kifpool/kifpool/internal/rail"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
)

var sheba = string(iban.Make("056", "0000000123456789012"))

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func bank(t *testing.T) (*sandbank.Bank, payout.Provider) {
	t.Helper()
	b := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	d := zibal.Driver()
	p, err := d.New(d.Sandbox.Settings(srv.URL), payout.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return b, p
}

func order(id string) payout.Order {
	return payout.Order{ID: id, AmountRials: 2_000_000, Sheba: sheba, Rail: rail.Paya, Description: "withdrawal " + id}
}

func TestLifeOfAPayout(t *testing.T) {
	b, p := bank(t)
	ctx := ctxT(t, 10*time.Second)
	if st, err := p.Status(ctx, "w_1"); err != nil || st.State != payout.StateNotFound {
		t.Fatalf("before: %+v %v", st, err)
	}
	s, err := p.Submit(ctx, order("w_1"))
	if err != nil || s.Duplicate || s.Ref == "" {
		t.Fatalf("submit: %+v %v", s, err)
	}
	if st, err := p.Status(ctx, "w_1"); err != nil || st.State != payout.StateInProgress || st.Raw != "checkoutQueue" {
		t.Fatalf("taken: %+v %v", st, err)
	}
	if s, err := p.Submit(ctx, order("w_1")); err != nil || !s.Duplicate {
		t.Fatalf("second submit: %+v %v", s, err)
	}
	if _, err := b.Payouts().Settle(payouts.Zibal, "w_1"); err != nil {
		t.Fatal(err)
	}
	if st, err := p.Status(ctx, "w_1"); err != nil || st.State != payout.StateTransferred || st.Ref == "" || st.AmountRials != 2_000_000 {
		t.Fatalf("settled: %+v %v", st, err)
	}
	if _, err := b.Payouts().Return(payouts.Zibal, "w_1"); !errors.Is(err, payouts.ErrNoLateFailure) {
		t.Fatalf("zibal has no late failure: %v", err)
	}
	if _, err := p.Submit(ctx, order("w_2")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Payouts().Fail(payouts.Zibal, "w_2"); err != nil {
		t.Fatal(err)
	}
	if st, err := p.Status(ctx, "w_2"); err != nil || st.State != payout.StateFailed {
		t.Fatalf("failed: %+v %v", st, err)
	}
	if bal, err := p.Ops().Balance(ctx); err != nil || bal != payouts.DefaultBalanceRials-2_000_000 {
		t.Fatalf("balance %d %v", bal, err)
	}
	if p.Ops().List != nil {
		t.Fatal("zibal has no list of payouts")
	}
	// Only Paya.
	satna := order("w_3")
	satna.Rail = rail.Satna
	if _, err := p.Submit(ctx, satna); err == nil {
		t.Fatal("satna accepted")
	}
}

// Zibal's ownership inquiry: a match, a mismatch, and "no upstream
// provider", which is unknown and never a mismatch.
func TestCheckOwner(t *testing.T) {
	b, p := bank(t)
	ctx := ctxT(t, 10*time.Second)
	if o, err := p.Ops().CheckOwner(ctx, sheba, "0499370899"); err != nil || o != payout.OwnerMatch {
		t.Fatalf("owned: %v %v", o, err)
	}
	b.Payouts().SetOwner(sheba, "0013542419", false)
	if o, err := p.Ops().CheckOwner(ctx, sheba, "0013542419"); err != nil || o != payout.OwnerMismatch {
		t.Fatalf("not owned: %v %v", o, err)
	}
	if err := b.Payouts().SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{payouts.Zibal: {NoUpstream: true}}}); err != nil {
		t.Fatal(err)
	}
	if o, err := p.Ops().CheckOwner(ctx, sheba, "0013542419"); err != nil || o != payout.OwnerUnknown {
		t.Fatalf("no upstream: %v %v", o, err)
	}
	if err := b.Payouts().SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{payouts.Zibal: {Maintenance: true}}}); err != nil {
		t.Fatal(err)
	}
	if o, err := p.Ops().CheckOwner(ctx, sheba, "0499370899"); err == nil || o != payout.OwnerUnknown {
		t.Fatalf("maintenance: %v %v", o, err)
	}
}

func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults payouts.ProviderFaults
		check  func(t *testing.T, b *sandbank.Bank, s payout.Submitted, err error)
	}{
		{"time-out after accepting: unknown, and taken", payouts.ProviderFaults{AcceptThenHangRate: 1, HangMS: 30_000},
			func(t *testing.T, b *sandbank.Bank, _ payout.Submitted, err error) {
				var te *gateway.TransientError
				if !errors.As(err, &te) {
					t.Fatalf("err %v", err)
				}
				if _, ok := b.Payouts().Payout(payouts.Zibal, "w"); !ok {
					t.Fatal("not taken")
				}
			}},
		{"duplicate submit: the message, one payout", payouts.ProviderFaults{DuplicateRate: 1},
			func(t *testing.T, b *sandbank.Bank, s payout.Submitted, err error) {
				if err != nil || !s.Duplicate || len(b.Payouts().Payouts()) != 1 {
					t.Fatalf("%+v %v", s, err)
				}
			}},
		{"balance short (11): for now", payouts.ProviderFaults{BalanceShort: true},
			func(t *testing.T, b *sandbank.Bank, _ payout.Submitted, err error) {
				var r *payout.RefusedError
				if !errors.As(err, &r) || !r.ForNow || r.Err.Code != 11 || len(b.Payouts().Payouts()) != 0 {
					t.Fatalf("err %v", err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, p := bank(t)
			if err := b.Payouts().SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{payouts.Zibal: tc.faults}}); err != nil {
				t.Fatal(err)
			}
			s, err := p.Submit(ctxT(t, 3*time.Second), order("w"))
			tc.check(t, b, s, err)
		})
	}
}

// Result codes as the driver sorts them.
func TestResultCodes(t *testing.T) {
	for _, tc := range []struct {
		body            string
		refused, forNow bool
	}{
		{`{"result":21,"message":"bad iban"}`, true, false},
		{`{"result":12,"message":"min"}`, true, false},
		{`{"result":17,"message":"instant"}`, true, false},
		{`{"result":11,"message":"balance"}`, true, true},
		{`{"result":3,"message":"key"}`, true, true},
		{`{"result":7,"message":"ip"}`, true, true},
		{`{"result":10,"message":"wallet"}`, true, true},
		{`{"result":18,"message":"merchant disabled"}`, true, true},
		{`{"result":23,"message":"beneficiary invalid"}`, true, false},
		// A code the driver does not know (a new one, an internal error
		// answered 200): no refusal, for good or for now; the outcome is
		// unknown, and the payout is asked about.
		{`{"result":99,"message":"internal error"}`, false, false},
		{`{"result":0,"message":""}`, false, false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(tc.body)) }))
		p, err := zibal.New(zibal.Config{Token: "token-12345678", Wallet: "1", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Submit(ctxT(t, 5*time.Second), order("w"))
		refused, forNow := payout.IsRefused(err)
		if refused != tc.refused || forNow != tc.forNow || err == nil || payout.NotSent(err) {
			t.Errorf("%s: %v (refused %v, for now %v)", tc.body, err, refused, forNow)
		}
		srv.Close()
	}
	// The duplicate's answer, however Zibal spells it, is the payout it
	// holds: never a refusal for good (which would fail it).
	for _, msg := range []string{zibal.DuplicateMessage, "این درخواست تسویه قبلاً ثبت شده است", "اين درخواست تسويه قبلا ثبت شده است.",
		"این درخواست\u200cتسویه  قبلا ثبت\u200cشده است"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"result":22,"message":"` + msg + `"}`))
		}))
		p, _ := zibal.New(zibal.Config{Token: "token-12345678", Wallet: "1", BaseURL: srv.URL})
		if s, err := p.Submit(ctxT(t, 5*time.Second), order("w")); err != nil || !s.Duplicate {
			t.Errorf("duplicate %q: %+v %v", msg, s, err)
		}
		srv.Close()
	}
	garbled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`<html>`)) }))
	defer garbled.Close()
	p, _ := zibal.New(zibal.Config{Token: "token-12345678", Wallet: "1", BaseURL: garbled.URL})
	var te *gateway.TransientError
	if _, err := p.Submit(ctxT(t, 5*time.Second), order("w")); !errors.As(err, &te) {
		t.Fatalf("an undecodable answer: %v, want unknown", err)
	}
}

// A submit answered with a 4xx that is not Zibal's {result, message} (a
// proxy's page, a firewall's) is not Zibal's word: its outcome is
// unknown, never a refusal (which would read "nothing taken").
func TestBodilessRefusalOfASubmitIsUnknown(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests, http.StatusBadRequest, http.StatusUnauthorized} {
		for _, body := range []string{`<html><body>` + http.StatusText(status) + `</body></html>`, ``, `{"message":"blocked"}`} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(body))
			}))
			p, err := zibal.New(zibal.Config{Token: "token-12345678", Wallet: "1", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Submit(ctxT(t, 5*time.Second), order("w"))
			var te *gateway.TransientError
			if refused, _ := payout.IsRefused(err); refused || !errors.As(err, &te) || payout.NotSent(err) {
				t.Errorf("HTTP %d %q: %v, want an unknown outcome", status, body, err)
			}
			srv.Close()
		}
	}
}

// The inquiry's details, as Zibal may list them: only those of our
// uniqueCode count, and details of ours that disagree (a cancelled
// attempt, then one queued or paid) say nothing definite: an unknown,
// asked again, never "failed".
func TestInquiryDetails(t *testing.T) {
	const ours = "w_1"
	for _, tc := range []struct {
		name, data string
		want       payout.Status // zero: unknown (an error)
	}{
		{"one detail, paid", `{"type":"checkout","details":[{"checkoutStatus":0,"refCode":"R1","amount":2000000}]}`,
			payout.Status{State: payout.StateTransferred, Ref: "R1", Raw: "checkoutStatus 0", AmountRials: 2_000_000}},
		{"one detail, cancelled", `{"type":"checkout","details":[{"checkoutStatus":1,"refCode":"R1","amount":2000000}]}`,
			payout.Status{State: payout.StateFailed, Ref: "R1", Raw: "checkoutStatus 1", AmountRials: 2_000_000}},
		{"one detail of ours, paid", `{"type":"checkout","details":[{"uniqueCode":"w_1","checkoutStatus":0,"refCode":"R1","amount":2000000}]}`,
			payout.Status{State: payout.StateTransferred, Ref: "R1", Raw: "checkoutStatus 0", AmountRials: 2_000_000}},
		{"one detail, status not known", `{"type":"checkout","details":[{"checkoutStatus":7}]}`,
			payout.Status{State: payout.StateInProgress, Raw: "checkoutStatus 7"}},
		{"no details", `{"type":"checkout"}`, payout.Status{State: payout.StateInProgress, Raw: "checkout"}},
		{"queued", `{"type":"checkoutQueue"}`, payout.Status{State: payout.StateInProgress, Raw: "checkoutQueue"}},
		{"cancelled", `{"type":"canceledCheckout"}`, payout.Status{State: payout.StateFailed, Raw: "canceledCheckout"}},
		{"two details agreeing", `{"type":"checkout","details":[{"uniqueCode":"w_1","checkoutStatus":2,"refCode":"R1"},{"checkoutStatus":1,"refCode":"R2"}]}`,
			payout.Status{State: payout.StateFailed, Ref: "R1", Raw: "checkoutStatus 2"}},
		{"two details: cancelled, then paid", `{"type":"checkout","details":[{"checkoutStatus":1,"refCode":"R1"},{"checkoutStatus":0,"refCode":"R2"}]}`,
			payout.Status{}},
		{"two details of ours: cancelled, then paid", `{"type":"checkout","details":[{"uniqueCode":"w_1","checkoutStatus":2},{"uniqueCode":"w_1","checkoutStatus":0,"refCode":"R2"}]}`,
			payout.Status{}},
		{"two details: cancelled, then one not known", `{"type":"checkout","details":[{"checkoutStatus":1},{"checkoutStatus":5}]}`,
			payout.Status{}},
		{"cancelled type, a detail paid", `{"type":"canceledCheckout","details":[{"checkoutStatus":1},{"checkoutStatus":0,"refCode":"R2"}]}`,
			payout.Status{}},
		{"cancelled type, its one detail paid", `{"type":"canceledCheckout","details":[{"uniqueCode":"w_1","checkoutStatus":0}]}`,
			payout.Status{}},
		{"another id's cancelled detail ignored", `{"type":"checkout","details":[{"uniqueCode":"w_9","checkoutStatus":1,"refCode":"X"},{"uniqueCode":"w_1","checkoutStatus":0,"refCode":"R1","amount":2000000}]}`,
			payout.Status{State: payout.StateTransferred, Ref: "R1", Raw: "checkoutStatus 0", AmountRials: 2_000_000}},
		{"another id's paid detail ignored", `{"type":"checkout","details":[{"uniqueCode":"w_1","checkoutStatus":1,"refCode":"R1"},{"uniqueCode":"w_10","checkoutStatus":0,"refCode":"X"}]}`,
			payout.Status{State: payout.StateFailed, Ref: "R1", Raw: "checkoutStatus 1"}},
		{"a numeric uniqueCode of another id ignored", `{"type":"checkout","details":[{"uniqueCode":17,"checkoutStatus":1},{"checkoutStatus":0,"refCode":"R1"}]}`,
			payout.Status{State: payout.StateTransferred, Ref: "R1", Raw: "checkoutStatus 0"}},
		{"only another id's detail", `{"type":"checkout","details":[{"uniqueCode":"w_2","checkoutStatus":1}]}`,
			payout.Status{}},
		{"cancelled type, only another id's detail", `{"type":"canceledCheckout","details":[{"uniqueCode":"w_2","checkoutStatus":1}]}`,
			payout.Status{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"result":1,"message":"success","data":` + tc.data + `}`))
			}))
			defer srv.Close()
			p, err := zibal.New(zibal.Config{Token: "token-12345678", Wallet: "1", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			st, err := p.Status(ctxT(t, 5*time.Second), ours)
			if tc.want == (payout.Status{}) {
				var te *gateway.TransientError
				if !errors.As(err, &te) || st.State != "" {
					t.Fatalf("Status = %+v, %v; want an unknown (a transient error)", st, err)
				}
				return
			}
			if err != nil || st != tc.want {
				t.Fatalf("Status = %+v, %v; want %+v", st, err, tc.want)
			}
		})
	}
}
