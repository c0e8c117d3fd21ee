package jibit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/payout/jibit"
	"github.com/kifpool/kifpool/internal/rail"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
)

var sheba = string(iban.Make("017", "0000000123456789012"))

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// bank is a sandbox bank on a real socket and a driver pointed at it
// with the driver's own sandbox settings.
func bank(t *testing.T) (*sandbank.Bank, payout.Provider) {
	t.Helper()
	b := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	d := jibit.Driver()
	p, err := d.New(d.Sandbox.Settings(srv.URL), payout.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return b, p
}

func order(id string) payout.Order {
	return payout.Order{ID: id, AmountRials: 1_500_000, Sheba: sheba, Rail: rail.Paya, Description: "withdrawal " + id}
}

// The whole life of a payout: taken, in progress, transferred, then
// failed by hand (MANUALLY_FAILED) with its money back; a second submit
// of the same id is a duplicate and no second payout.
func TestLifeOfAPayout(t *testing.T) {
	b, p := bank(t)
	ctx := ctxT(t, 10*time.Second)
	if st, err := p.Status(ctx, "w_1"); err != nil || st.State != payout.StateNotFound {
		t.Fatalf("before: %+v %v", st, err)
	}
	if s, err := p.Submit(ctx, order("w_1")); err != nil || s.Duplicate {
		t.Fatalf("submit: %+v %v", s, err)
	}
	if st, err := p.Status(ctx, "w_1"); err != nil || st.State != payout.StateInProgress || st.AmountRials != 1_500_000 {
		t.Fatalf("taken: %+v %v", st, err)
	}
	if s, err := p.Submit(ctx, order("w_1")); err != nil || !s.Duplicate {
		t.Fatalf("second submit: %+v %v", s, err)
	}
	if _, err := b.Payouts().Settle(payouts.Jibit, "w_1"); err != nil {
		t.Fatal(err)
	}
	st, err := p.Status(ctx, "w_1")
	if err != nil || st.State != payout.StateTransferred || st.Ref == "" || st.Raw != jibit.StateTransferred {
		t.Fatalf("settled: %+v %v", st, err)
	}
	if _, err := b.Payouts().Return(payouts.Jibit, "w_1"); err != nil {
		t.Fatal(err)
	}
	if st, err := p.Status(ctx, "w_1"); err != nil || st.State != payout.StateReturned || st.Raw != jibit.StateManuallyFailed {
		t.Fatalf("returned: %+v %v", st, err)
	}
	all := b.Payouts().Payouts()
	if len(all) != 1 || all[0].Submits != 2 || all[0].Mode != "ACH" || all[0].Sheba != sheba {
		t.Fatalf("the bank holds %+v", all)
	}
	// Satna goes as RTGS.
	o := order("w_2")
	o.Rail, o.AmountRials = rail.Satna, rail.SatnaMinRials
	if _, err := p.Submit(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Payouts().Payout(payouts.Jibit, "w_2"); got.Mode != "RTGS" {
		t.Fatalf("satna went as %q", got.Mode)
	}
	// The list finds both.
	l, err := p.Ops().List(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil || len(l) != 2 || l[0].ID != "w_1" || l[0].State != payout.StateReturned || l[1].AmountRials != rail.SatnaMinRials {
		t.Fatalf("list: %+v %v", l, err)
	}
	if bal, err := p.Ops().Balance(ctx); err != nil || bal != payouts.DefaultBalanceRials-rail.SatnaMinRials {
		t.Fatalf("balance %d %v", bal, err)
	}
	if p.Ops().CheckOwner != nil {
		t.Fatal("the Transferor has no ownership inquiry")
	}
}

// Each fault of the provider, as the driver reports it.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults payouts.ProviderFaults
		check  func(t *testing.T, b *sandbank.Bank, s payout.Submitted, err error)
	}{
		{"time-out after accepting: unknown, and taken", payouts.ProviderFaults{AcceptThenHangRate: 1, HangMS: 30_000},
			func(t *testing.T, b *sandbank.Bank, _ payout.Submitted, err error) {
				var te *gateway.TransientError
				if !errors.As(err, &te) || payout.NotSent(err) {
					t.Fatalf("err %v, want an unknown outcome", err)
				}
				if got, ok := b.Payouts().Payout(payouts.Jibit, "w"); !ok || got.State != payouts.StateInProgress {
					t.Fatalf("the bank holds %+v", got)
				}
			}},
		{"duplicate submit: already exists, one payout", payouts.ProviderFaults{DuplicateRate: 1},
			func(t *testing.T, b *sandbank.Bank, s payout.Submitted, err error) {
				if err != nil || !s.Duplicate {
					t.Fatalf("%+v %v", s, err)
				}
				if got, _ := b.Payouts().Payout(payouts.Jibit, "w"); got.Submits != 2 || len(b.Payouts().Payouts()) != 1 {
					t.Fatalf("the bank holds %+v", b.Payouts().Payouts())
				}
			}},
		{"balance short: refused for now, nothing taken", payouts.ProviderFaults{BalanceShort: true},
			func(t *testing.T, b *sandbank.Bank, _ payout.Submitted, err error) {
				if refused, forNow := payout.IsRefused(err); !refused || !forNow {
					t.Fatalf("err %v, want a refusal for now", err)
				}
				if len(b.Payouts().Payouts()) != 0 {
					t.Fatal("taken")
				}
			}},
		{"maintenance: unknown (503), nothing taken", payouts.ProviderFaults{Maintenance: true},
			func(t *testing.T, b *sandbank.Bank, _ payout.Submitted, err error) {
				var te *gateway.TransientError
				if !errors.As(err, &te) || te.HTTPStatus != http.StatusServiceUnavailable {
					t.Fatalf("err %v", err)
				}
				if len(b.Payouts().Payouts()) != 0 {
					t.Fatal("taken")
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, p := bank(t)
			if err := b.Payouts().SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{payouts.Jibit: tc.faults}}); err != nil {
				t.Fatal(err)
			}
			s, err := p.Submit(ctxT(t, 3*time.Second), order("w"))
			tc.check(t, b, s, err)
		})
	}
}

// A late failure the bank decides itself: transferred at the settle,
// failed by hand at the next inquiry.
func TestLateFailureFault(t *testing.T) {
	b, p := bank(t)
	ctx := ctxT(t, 10*time.Second)
	if err := b.Payouts().SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{payouts.Jibit: {LateFailRate: 1, AutoSettle: true}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, order("w")); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.Status(ctx, "w"); st.State != payout.StateTransferred {
		t.Fatalf("first inquiry: %+v", st)
	}
	if st, _ := p.Status(ctx, "w"); st.State != payout.StateReturned {
		t.Fatalf("second inquiry: %+v", st)
	}
}

// What the payout's own data gets: refused for good.
func TestRefusedForGood(t *testing.T) {
	_, p := bank(t)
	ctx := ctxT(t, 10*time.Second)
	bad := order("w")
	bad.Sheba = "IR000000000000000000000000"
	if _, err := p.Submit(ctx, bad); !isFinal(err) {
		t.Fatalf("a bad Sheba: %v", err)
	}
	small := order("w2")
	small.AmountRials = 100
	if _, err := p.Submit(ctx, small); !isFinal(err) {
		t.Fatalf("a small amount: %v", err)
	}
	pol := order("w3")
	pol.Rail = rail.Pol
	if _, err := p.Submit(ctx, pol); !isFinal(err) {
		t.Fatalf("Pol: %v", err)
	}
}

func isFinal(err error) bool {
	refused, forNow := payout.IsRefused(err)
	return refused && !forNow && gateway.IsRejected(err)
}

// The driver's reading of answers the sandbox does not give: every
// state, a submit that submitted nothing, a token the provider stopped
// taking (a new one, the call once more), keys refused.
func TestAnswers(t *testing.T) {
	var tokens, submits atomic.Int32
	state := "CANCELLING"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/tokens/generate"):
			n := tokens.Add(1)
			_, _ = w.Write([]byte(`{"accessToken":"tok` + string(rune('0'+n)) + `","refreshToken":"r"}`))
		case r.Header.Get("Authorization") == "Bearer tok1":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"errors":[{"code":"security.token_expired","message":"expired"}]}`))
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v2/transfers"):
			submits.Add(1)
			_, _ = w.Write([]byte(`{"submittedCount":0}`))
		case strings.HasSuffix(r.URL.Path, "/v2/transfers"):
			_, _ = w.Write([]byte(`{"transfers":[{"transferID":"w","state":"` + state + `","amount":150000,"currency":"TOMAN"}]}`))
		}
	}))
	defer srv.Close()
	p, err := jibit.New(jibit.Config{APIKey: "key-12345678", SecretKey: "secret-12345678", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	if _, err := p.Submit(ctx, order("w")); !isFinal(err) || tokens.Load() != 2 || submits.Load() != 1 {
		t.Fatalf("submittedCount 0: %v; %d tokens, %d submits", err, tokens.Load(), submits.Load())
	}
	for raw, want := range map[string]payout.State{"INITIALIZED": payout.StateInProgress, "IN_PROGRESS": payout.StateInProgress,
		"CANCELLING": payout.StateInProgress, "TRANSFERRED": payout.StateTransferred, "FAILED": payout.StateFailed,
		"CANCELLED": payout.StateFailed, "MANUALLY_FAILED": payout.StateReturned, "SOMETHING_NEW": payout.StateInProgress} {
		state = raw
		st, err := p.Status(ctx, "w")
		if err != nil || st.State != want || st.AmountRials != 1_500_000 {
			t.Errorf("%s: %+v %v, want %s in rials", raw, st, err, want)
		}
	}
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":[{"code":"security.auth_failed","message":"no"}]}`))
	}))
	defer refused.Close()
	p2, _ := jibit.New(jibit.Config{APIKey: "key-12345678", SecretKey: "secret-12345678", BaseURL: refused.URL})
	if _, err := p2.Submit(ctx, order("w")); func() bool { r, now := payout.IsRefused(err); return !r || !now }() {
		t.Fatalf("keys refused: %v, want a refusal for now", err)
	}
}

// "Not found" is Jibit's own word: an empty list, or a 404 with its
// error body. A 404 page of a proxy or an answer without the list is an
// error (asked again), never "not found", which moves a payout the
// provider holds to review.
func TestNotFoundIsJibitsWord(t *testing.T) {
	var status int
	var body, ctype string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tokens/generate") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"accessToken":"tok","refreshToken":"r"}`))
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	p, err := jibit.New(jibit.Config{APIKey: "key-12345678", SecretKey: "secret-12345678", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	for _, tc := range []struct {
		name         string
		status       int
		ctype, body  string
		wantNotFound bool
	}{
		{"an empty list", http.StatusOK, "application/json", `{"transfers":[]}`, true},
		{"a 404 with Jibit's error", http.StatusNotFound, "application/json", `{"errors":[{"code":"transfer.not_found","message":"no such transfer"}]}`, true},
		{"a proxy's 404 page", http.StatusNotFound, "text/html", `<html><body>404 Not Found</body></html>`, false},
		{"a 404 with no body", http.StatusNotFound, "text/plain", ``, false},
		{"an answer without the list", http.StatusOK, "application/json", `{"result":"ok"}`, false},
		{"a null list", http.StatusOK, "application/json", `{"transfers":null}`, false},
		// Another transfer's word (a filter ignored, a prefix matched)
		// never stands for ours: it would pay or fail this one.
		{"another transfer only", http.StatusOK, "application/json", `{"transfers":[{"transferID":"w2","state":"TRANSFERRED","amount":1,"currency":"RIALS"}]}`, false},
	} {
		status, ctype, body = tc.status, tc.ctype, tc.body
		st, err := p.Status(ctx, "w")
		switch {
		case tc.wantNotFound && (err != nil || st.State != payout.StateNotFound):
			t.Errorf("%s: %+v %v, want not found", tc.name, st, err)
		case !tc.wantNotFound && !errors.As(err, new(*gateway.TransientError)):
			t.Errorf("%s: %+v %v, want an error to ask again", tc.name, st, err)
		}
	}
}

func TestSettingsAreChecked(t *testing.T) {
	for _, c := range []jibit.Config{
		{APIKey: "short", SecretKey: "secret-12345678", BaseURL: jibit.ProductionBaseURL},
		{APIKey: "key-12345678", SecretKey: "secret 12345678", BaseURL: jibit.ProductionBaseURL},
		{APIKey: "key-12345678", SecretKey: "secret-12345678", BaseURL: "http://napi.jibit.ir/trf"},
	} {
		if _, err := jibit.New(c); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

// A refusal's code is sorted by its whole words: our access or balance
// refuse for now; the transfer's own data (its description, its
// recipient: "ip" is inside both words) for good.
func TestRefusalCodes(t *testing.T) {
	code := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/tokens/generate") {
			_, _ = w.Write([]byte(`{"accessToken":"tok","refreshToken":"r"}`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"errors":[{"code":"` + code + `","message":"no"}]}`))
	}))
	defer srv.Close()
	p, err := jibit.New(jibit.Config{APIKey: "key-12345678", SecretKey: "secret-12345678", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	for c, forNow := range map[string]bool{
		"balances.not_enough":                       true,
		"transfers.0.source_bank.not_supported":     true,
		"security.ip_not_allowed":                   true,
		"security.token_invalid":                    true,
		"transfers.0.description.too_long":          false,
		"transfers.0.destination.recipient_blocked": false,
		"transfers.0.destination.invalid":           false,
	} {
		code = c
		_, err := p.Submit(ctx, order("w-"+c))
		if refused, now := payout.IsRefused(err); !refused || now != forNow {
			t.Errorf("%s: refused %v, for now %v; want for now %v", c, refused, now, forNow)
		}
	}
}

// A submit answered with a 4xx that is not Jibit's own error body (a
// proxy's page, a firewall's) is not Jibit's word: the request may have
// reached Jibit and been taken, so its outcome is unknown (an error, no
// refusal, never "not sent"), and a bodiless 401 is not answered by a
// second submit. Taken as refused for now, the withdrawal read "nothing
// taken", and its next submit's refusal failed it while Jibit paid.
func TestBodilessRefusalOfASubmitIsUnknown(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests, http.StatusBadRequest,
		http.StatusUnauthorized, http.StatusNotFound, http.StatusRequestEntityTooLarge} {
		for _, body := range []string{`<html><body><h1>` + http.StatusText(status) + `</h1></body></html>`, ``, `{"message":"blocked"}`} {
			var submits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/tokens/generate") {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"accessToken":"tok","refreshToken":"r"}`))
					return
				}
				submits.Add(1)
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(body))
			}))
			p, err := jibit.New(jibit.Config{APIKey: "key-12345678", SecretKey: "secret-12345678", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Submit(ctxT(t, 10*time.Second), order("w"))
			var te *gateway.TransientError
			if refused, _ := payout.IsRefused(err); refused || !errors.As(err, &te) || payout.NotSent(err) || gateway.IsRejected(err) {
				t.Errorf("HTTP %d %q: %v, want an unknown outcome", status, body, err)
			}
			if n := submits.Load(); n != 1 {
				t.Errorf("HTTP %d %q: %d submits, want 1", status, body, n)
			}
			srv.Close()
		}
	}
}

// A token answer that cannot be read is an error that does not carry
// the answer: it holds the token.
func TestUndecodableTokenIsNotShown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"accessToken":"eyJSECRETTOKENPART","refreshToken":`))
	}))
	defer srv.Close()
	p, _ := jibit.New(jibit.Config{APIKey: "key-12345678", SecretKey: "secret-12345678", BaseURL: srv.URL})
	_, err := p.Status(ctxT(t, 10*time.Second), "w")
	if err == nil || strings.Contains(err.Error(), "SECRETTOKEN") {
		t.Fatalf("a garbled token answer: %v", err)
	}
}
