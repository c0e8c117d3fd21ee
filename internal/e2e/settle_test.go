package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/mellat"
	"github.com/kifpool/kifpool/internal/gateway/sep"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testhook"
)

// TestPOSTGatewayCrashPoints kills serve (SIGKILL, through the test hooks)
// at the points the POST gateways add, on SQLite and PostgreSQL, against a
// standalone sandbox bank: Mellat after verify and before settle
// (after_verify_before_settle), Mellat after settle and before the credit
// (after_settle), SEP after verify and before the credit (after_verify).
// Each payer pays and the bank posts them back; serve dies on the
// callback; the crash leaves the payment open with its receipt kept, the
// bank holding it verified (and settled). A Mellat payment is settling
// then, its verified facts on the row: restarted unarmed, the worker asks
// settle alone (0, or 45 when it was settled; verify is not asked again)
// and credits it exactly once. SEP's is verified again (ResultCode 2) and
// credited. Nothing is lost, nothing is credited twice.
func TestPOSTGatewayCrashPoints(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			for _, sc := range []struct {
				gateway, point string
			}{
				{"mellat", testhook.AfterVerifyBeforeSettle},
				{"mellat", testhook.AfterSettle},
				{"sep", testhook.AfterVerify},
			} {
				t.Run(sc.gateway+"/"+sc.point, func(t *testing.T) { postGatewayCrash(t, d, sc.gateway, sc.point) })
			}
		})
	}
}

var tokenFieldRE = map[string]*regexp.Regexp{
	"mellat": regexp.MustCompile(`name="RefId" value="([^"]+)"`),
	"sep":    regexp.MustCompile(`name="Token" value="([^"]+)"`),
}

func postGatewayCrash(t *testing.T, d store.Dialect, gw, point string) {
	dbURL := storetest.URL(t, d)
	_, bankURL := startBank(t)
	env := map[string]string{}
	for k, v := range crashServeEnv {
		env[k] = v
	}
	env["GATEWAYS"] = gw
	switch gw {
	case "mellat":
		for k, v := range mellat.Driver().Sandbox.Settings(bankURL) {
			env[k] = v
		}
	case "sep":
		for k, v := range sep.Driver().Sandbox.Settings(bankURL) {
			env[k] = v
		}
	}
	env["RECONCILE_INTERVAL"] = "off"
	env[testhook.EnvCrashAt] = point
	srv, appURL := newServe(t, "serve-"+gw, dbURL, bankURL, env)
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, dbURL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	br := newBrowser(appURL)
	email := fmt.Sprintf("%s-%s@e2e.example", gw, point)
	if err := br.signUp(ctx, email); err != nil {
		t.Fatalf("sign up: %v", err)
	}
	csrf, token, err := br.topUpForm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := br.do(ctx, http.MethodPost, "/wallet/topup", url.Values{"_csrf": {csrf}, "token": {token}, "amount": {"2345"}, "gateway": {gw}})
	m := tokenFieldRE[gw].FindStringSubmatch(r.body)
	if err != nil || r.status != http.StatusOK || m == nil {
		t.Fatalf("submit: %d %v\n%s", r.status, err, r.body)
	}
	tok := m[1]
	// The payer pays; the bank posts them back (the browser's POST).
	res, err := http.Post(bankURL+"/_sandbank/"+gw+"/payments/"+tok+"/pay", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var cb sandbank.CallbackRequest
	err = json.NewDecoder(res.Body).Decode(&cb)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || cb.Method != http.MethodPost {
		t.Fatalf("pay: %d %+v %v", res.StatusCode, cb, err)
	}
	form := url.Values{}
	for k, v := range cb.Form {
		form.Set(k, v)
	}
	before := srv.logCount("testhook: SIGKILL at " + point)
	_, _ = newBrowser(appURL).do(ctx, http.MethodPost, cb.URL, form) // dies with serve
	select {
	case <-srv.exited():
	case <-time.After(60 * time.Second):
		t.Fatal("serve never reached the point")
	}
	if n := srv.logCount("testhook: SIGKILL at " + point); n != before+1 {
		t.Fatalf("serve exited, but not at %s", point)
	}
	p, ok := paymentByAuthority(t, db, tok)
	if !ok || p.Status.Terminal() || p.Receipt == nil {
		t.Fatalf("after the crash: %+v", p)
	}
	if settles := gw == "mellat"; settles != (p.Status == payment.StatusSettling) ||
		settles && (p.RefID == nil || p.VerifiedAmountRials == nil || *p.VerifiedAmountRials != p.AmountRials) {
		t.Fatalf("after the crash at %s: %s, ref %v, verified %v (a verified Mellat payment is settling with its facts)",
			point, p.Status, p.RefID, p.VerifiedAmountRials)
	}
	bp := bankPayment(t, bankURL, tok)
	settled := !bp.SettledAt.IsZero()
	if bp.State != sandbank.StateVerified || settled != (point == testhook.AfterSettle) {
		t.Fatalf("after the crash the bank holds %s (settled %v)", bp.State, settled)
	}
	// Restart unarmed: the worker finishes it without the browser.
	srv.setEnv(testhook.EnvCrashAt, "")
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	if p, ok := waitStatus(ctx, db, tok, payment.StatusCredited, 60*time.Second); !ok {
		t.Fatalf("not credited after the restart: %s (%s)", p.Status, p.StatusReason)
	}
	bp = bankPayment(t, bankURL, tok)
	if gw == "mellat" && bp.SettledAt.IsZero() {
		t.Fatal("credited, but the bank never settled it")
	}
	if gw == "mellat" && bp.VerifyCount != 1 {
		t.Fatalf("verify asked %d times, want once (a settling payment is settled, not verified again)", bp.VerifyCount)
	}
	if bal := userBalances(t, db)[email]; bal != 23_450 {
		t.Fatalf("balance %d, want 23450 (credited once)", bal)
	}
}

// bankPayment is the bank's record of one payment.
func bankPayment(t *testing.T, bankURL, tok string) sandbank.Payment {
	t.Helper()
	return newBankClient(bankURL).payments(t)[tok]
}
