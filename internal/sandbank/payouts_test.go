package sandbank_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/payout/drivers"
	"github.com/kifpool/kifpool/internal/rail"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
)

func post(t *testing.T, url string, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// submit sends one payout of id through provider's own driver.
func submit(t *testing.T, base, provider, id string) {
	t.Helper()
	d, _ := drivers.Lookup(provider)
	p, err := d.New(d.Sandbox.Settings(base), payout.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.Submit(ctx, payout.Order{ID: id, AmountRials: 500_000, Sheba: string(iban.Make("017", "0000000000000000042")), Rail: rail.Paya}); err != nil {
		t.Fatal(err)
	}
}

// The control API of the payout provider: settle, fail and return a
// payout by its merchant's id, with 404 for an unknown payout and 409
// when its state does not allow the change (a return of a payout not
// transferred, a return at Zibal).
func TestPayoutControlAPI(t *testing.T) {
	b := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	submit(t, srv.URL, "jibit", "w_a")
	submit(t, srv.URL, "jibit", "w_b")
	submit(t, srv.URL, "zibal", "w_c")
	ctl := srv.URL + "/_sandbank/payouts/"
	for _, tc := range []struct {
		path  string
		code  int
		state string
	}{
		{"jibit/w_a/return", http.StatusConflict, "IN_PROGRESS"},
		{"jibit/w_a/settle", http.StatusOK, "TRANSFERRED"},
		{"jibit/w_a/settle", http.StatusConflict, "TRANSFERRED"},
		{"jibit/w_a/fail", http.StatusConflict, "TRANSFERRED"},
		{"jibit/w_a/return", http.StatusOK, "MANUALLY_FAILED"},
		{"jibit/w_b/fail", http.StatusOK, "FAILED"},
		{"zibal/w_c/settle", http.StatusOK, "TRANSFERRED"},
		{"zibal/w_c/return", http.StatusConflict, ""},
		{"zibal/w_a/settle", http.StatusNotFound, ""},
		{"jibit/nobody/settle", http.StatusNotFound, ""},
	} {
		code, out := post(t, ctl+tc.path, "")
		if code != tc.code || (tc.state != "" && out["state"] != tc.state) {
			t.Errorf("%s: %d %v, want %d %s", tc.path, code, out, tc.code, tc.state)
		}
	}
	if code, _ := post(t, ctl+"faults", `{"providers":{"paypal":{}}}`); code != http.StatusBadRequest {
		t.Errorf("an unknown provider's faults: %d", code)
	}
	if code, _ := post(t, ctl+"faults", `{"providers":{"zibal":{"late_fail_rate":0.5}}}`); code != http.StatusBadRequest {
		t.Errorf("a late failure at zibal: %d", code)
	}
	if code, _ := post(t, ctl+"faults", `{"providers":{"jibit":{"duplicate_rate":0.5,"error_rate":0.6}}}`); code != http.StatusBadRequest {
		t.Errorf("rates above 1: %d", code)
	}
	if code, out := post(t, ctl+"faults", `{"seed":3,"providers":{"jibit":{"late_fail_rate":0.5}}}`); code != http.StatusOK || out["seed"] != 3.0 {
		t.Errorf("faults: %d %v", code, out)
	}
}

// The bank inside serve (NoControlAPI) keeps its gateways' control API
// closed, but answers the payout control API to calls made on this
// machine, never to one through a proxy.
func TestBuiltInBankPayoutControlIsLoopbackOnly(t *testing.T) {
	b := sandbank.New(sandbank.Options{NoControlAPI: true})
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	submit(t, srv.URL, "jibit", "w_a")
	if code, _ := post(t, srv.URL+"/_sandbank/payouts/jibit/w_a/settle", "", "X-Forwarded-For", "203.0.113.9"); code != http.StatusNotFound {
		t.Fatalf("through a proxy: %d", code)
	}
	if p, _ := b.Payouts().Payout(payouts.Jibit, "w_a"); p.State != payouts.StateInProgress {
		t.Fatalf("settled through a proxy: %+v", p)
	}
	if code, _ := post(t, srv.URL+"/_sandbank/payouts/jibit/w_a/settle", ""); code != http.StatusOK {
		t.Fatalf("on loopback: %d", code)
	}
	if code, _ := post(t, srv.URL+"/_sandbank/payments/x/pay", ""); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Fatalf("the gateways' control API answered %d", code)
	}
}

// A bank on a state file keeps its payouts across a restart: the same
// id is a duplicate after it, and a payout taken before is settled after.
func TestStateFileKeepsPayouts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sandbank.json")
	b1, err := sandbank.Open(sandbank.Options{StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	srv1 := httptest.NewServer(b1.Handler())
	submit(t, srv1.URL, "jibit", "w_keep")
	srv1.Close()
	b2, err := sandbank.Open(sandbank.Options{StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Payouts().Settle(payouts.Jibit, "w_keep"); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if got := b2.Payouts().Balance(payouts.Jibit); got != payouts.DefaultBalanceRials-500_000 {
		t.Fatalf("balance %d", got)
	}
}
