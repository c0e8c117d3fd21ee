package scenario_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

func TestTopUpFlowPayAndCancel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})

		// Pay: credited once, receipt shows the bank reference.
		c, payURL := app.StartTopUp(t, "pay@example.com", "۵۰٬۰۰۰")
		back := c.PayAtBank(payURL, "pay")
		if !strings.Contains(back, "Status=OK") || !strings.HasPrefix(back, app.URL+routes.TopUps+"/") {
			t.Fatalf("bank redirect %q", back)
		}
		res := c.Get(back)
		if res.Status != http.StatusOK || apptest.TopUpStatus(res.Body) != "credited" || apptest.Parse(res.Body).TestID("result-received") == nil {
			t.Fatalf("return page: %d status=%q", res.Status, apptest.TopUpStatus(res.Body))
		}
		if got := c.Balance(); got != 500_000 {
			t.Fatalf("balance %d rials, want 500000", got)
		}
		// Reloading the return URL is the same "payment received" page.
		again := c.Get(back)
		if apptest.TopUpStatus(again.Body) != "credited" || apptest.Parse(again.Body).TestID("result-received") == nil {
			t.Fatalf("reload: %q", apptest.TopUpStatus(again.Body))
		}
		if got := c.Balance(); got != 500_000 {
			t.Fatalf("balance after reload %d", got)
		}
		publicID := strings.Split(strings.TrimPrefix(back, app.URL+routes.TopUps+"/"), "/")[0]
		receipt := c.Get(routes.TopUpPage(publicID))
		if receipt.Status != http.StatusOK || apptest.TopUpStatus(receipt.Body) != "credited" || apptest.Parse(receipt.Body).TestID("ref-id") == nil {
			t.Fatalf("receipt: %d %q", receipt.Status, apptest.TopUpStatus(receipt.Body))
		}
		wallet := c.Get(routes.Wallet)
		if len(apptest.Parse(wallet.Body).TestIDs("history-row")) != 1 || !strings.Contains(wallet.Body, routes.TopUpPage(publicID)) {
			t.Fatalf("wallet history does not list the top-up once")
		}
		var bankPaid int
		for _, p := range app.Server.Bank.Payments() {
			if p.State == sandbank.StateVerified {
				bankPaid++
			}
		}
		if bankPaid != 1 {
			t.Fatalf("bank has %d verified payments, want 1", bankPaid)
		}

		// Cancel: failed, balance unchanged, "no money was taken".
		c2, payURL2 := app.StartTopUp(t, "cancel@example.com", "20000")
		back2 := c2.PayAtBank(payURL2, "cancel")
		if !strings.Contains(back2, "Status=NOK") {
			t.Fatalf("cancel redirect %q", back2)
		}
		res2 := c2.Get(back2)
		if apptest.TopUpStatus(res2.Body) != "failed" || apptest.Parse(res2.Body).TestID("result-failed") == nil {
			t.Fatalf("cancel page status %q", apptest.TopUpStatus(res2.Body))
		}
		if got := c2.Balance(); got != 0 {
			t.Fatalf("balance after cancel %d", got)
		}
		if n := ledgertest.Credits(t, db); n != 1 {
			t.Fatalf("%d ledger entries, want 1", n)
		}
		apptest.CheckInvariants(t, db)
	})
}

func TestConcurrentCallbacksCreditOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c, payURL := app.StartTopUp(t, "burst@example.com", "100000")
		back, err := app.Server.Bank.Pay(apptest.Authority(payURL))
		if err != nil {
			t.Fatal(err)
		}
		const n = 50
		var wg sync.WaitGroup
		results := make([]apptest.Response, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each callback from its own browser without a session,
				// half of them as POSTs.
				cl := app.NewClient(t)
				if i%2 == 0 {
					results[i] = cl.Get(back)
				} else {
					u, _ := url.Parse(back)
					r := cl.Post(u.Path+"?"+u.RawQuery, url.Values{})
					if r.Status != http.StatusSeeOther {
						results[i] = r
						return
					}
					results[i] = cl.Get(r.Location)
				}
			}()
		}
		wg.Wait()
		for i, r := range results {
			if r.Status != http.StatusOK || apptest.Parse(r.Body).TestID("result-received") == nil {
				t.Errorf("callback %d: status %d page status %q", i, r.Status, apptest.TopUpStatus(r.Body))
			}
		}
		if got := c.Balance(); got != 1_000_000 {
			t.Fatalf("balance %d, want 1000000", got)
		}
		if n := ledgertest.Credits(t, db); n != 1 {
			t.Fatalf("%d ledger entries", n)
		}
		apptest.CheckInvariants(t, db)
	})
}

func TestConcurrentSubmitsOfOneForm(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("double@example.com")
		csrf, token := c.TopUpForm()
		const n = 20
		var wg sync.WaitGroup
		results := make([]apptest.Response, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = c.PostTopUp(csrf, token, "30000")
			}()
		}
		wg.Wait()
		for i, r := range results {
			if r.Status != http.StatusSeeOther || r.Location != results[0].Location {
				t.Errorf("submit %d: %d %q, want 303 %q", i, r.Status, r.Location, results[0].Location)
			}
		}
		if n := topuptest.Count(t, db); n != 1 {
			t.Fatalf("%d payments, want 1", n)
		}
		if got := len(app.Server.Bank.Payments()); got != 1 {
			t.Fatalf("%d gateway requests, want 1", got)
		}
		// Same token, other amount: 409 and nothing new.
		r := c.PostTopUp(csrf, token, "40000")
		if r.Status != http.StatusConflict {
			t.Fatalf("other amount: status %d", r.Status)
		}
		if n := topuptest.Count(t, db); n != 1 {
			t.Fatalf("%d payments after reuse", n)
		}
		// After paying, submitting the same form again (Back button) goes
		// to the same payment's receipt, and charges nothing.
		back, _ := app.Server.Bank.Pay(apptest.Authority(results[0].Location))
		c.Get(back)
		again := c.PostTopUp(csrf, token, "30000")
		if again.Status != http.StatusSeeOther || !strings.HasPrefix(again.Location, routes.TopUps+"/") {
			t.Fatalf("resubmit after payment: %d %q", again.Status, again.Location)
		}
		if got := c.Balance(); got != 300_000 {
			t.Fatalf("balance %d", got)
		}
		if got := len(app.Server.Bank.Payments()); got != 1 {
			t.Fatalf("%d gateway requests after resubmit", got)
		}
		apptest.CheckInvariants(t, db)
	})
}

func TestForgedCallbacksChangeNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const recheck = 20 * time.Second
		clk := topuptest.NewClock()
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"PENDING_RECHECK_AFTER": recheck.String()},
			Server: server.Options{Now: clk.Now}})
		c, payURL := app.StartTopUp(t, "forge@example.com", "10000")
		authority := apptest.Authority(payURL)
		publicID := topuptest.First(t, db).PublicID
		attacker := app.NewClient(t)
		cases := []struct {
			name, path string
			want       int
		}{
			{"unknown id", routes.TopUpReturn("aaaaaaaaaaaaaaaaaaaaaaaa") + "?Authority=" + authority + "&Status=OK", http.StatusNotFound},
			{"malformed id", routes.TopUps + "/x'--/return?Authority=" + authority + "&Status=OK", http.StatusNotFound},
			{"other authority", routes.TopUpReturn(publicID) + "?Authority=S" + strings.Repeat("0", 35) + "&Status=OK", http.StatusBadRequest},
			{"no authority", routes.TopUpReturn(publicID) + "?Status=OK", http.StatusBadRequest},
			{"huge authority", routes.TopUpReturn(publicID) + "?Authority=" + strings.Repeat("A", 500), http.StatusBadRequest},
			// Right authority, but the payer has not paid: Status=OK and an
			// amount are hints and lies; the bank says the payer is still
			// at its page, so the payment stays open.
			{"not paid yet", routes.TopUpReturn(publicID) + "?Authority=" + authority + "&Status=OK&amount=999999999", http.StatusOK},
		}
		for _, tc := range cases {
			r := attacker.Get(tc.path)
			if r.Status != tc.want {
				t.Errorf("%s: status %d, want %d", tc.name, r.Status, tc.want)
			}
			if strings.Contains(r.Body, "goroutine") || strings.Contains(r.Body, "runtime error") {
				t.Errorf("%s: leaks internals", tc.name)
			}
		}
		status := string(topuptest.First(t, db).Status)
		if status != "awaiting_payment" {
			t.Fatalf("payment status %q after forged callbacks, want awaiting_payment", status)
		}
		// Now the payer really pays, and a callback carrying a bigger
		// amount credits only the amount from our own row.
		back, err := app.Server.Bank.Pay(authority)
		if err != nil {
			t.Fatal(err)
		}
		// Within the pacing window the callback is answered from the row
		// (the forged one just made us ask the bank): nobody can make us
		// call the bank without limit. The page refreshes itself; once the
		// window ends, the callback asks the bank and credits.
		r := attacker.Get(back + "&amount=999999999&Amount=999999999")
		if st := apptest.TopUpStatus(r.Body); st == "credited" || r.Status != http.StatusOK {
			t.Fatalf("after payment, within the pacing window: %d %q; want answered from the row", r.Status, st)
		}
		clk.Advance(recheck)
		r = attacker.Get(back + "&amount=999999999&Amount=999999999")
		if apptest.TopUpStatus(r.Body) != "credited" {
			t.Fatalf("after payment: %q", apptest.TopUpStatus(r.Body))
		}
		if got := c.Balance(); got != 100_000 {
			t.Fatalf("balance %d, want 100000", got)
		}
		apptest.CheckInvariants(t, db)
	})
}

func TestBadAmountsWriteNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c := app.NewClient(t)
		c.SignUp("amounts@example.com")
		csrf, token := c.TopUpForm()
		for _, amount := range []string{"", "abc", "-5", "0", "1e6", "5000.5", strings.Repeat("9", 25), "999", "100000001", "12,5"} {
			r := c.PostTopUp(csrf, token, amount)
			if r.Status != http.StatusUnprocessableEntity || apptest.Parse(r.Body).TestID("amount-error") == nil || apptest.Parse(r.Body).TestID("topup-form") == nil {
				t.Errorf("amount %q: status %d, want 422 with the form and a message", amount, r.Status)
			}
		}
		// A malformed or missing form token is refused too.
		if r := c.PostTopUp(csrf, "short", "10000"); r.Status != http.StatusBadRequest {
			t.Errorf("bad token: %d", r.Status)
		}
		// No CSRF token: 403.
		if r := c.Post(routes.TopUp, url.Values{"token": {token}, "amount": {"10000"}}); r.Status != http.StatusForbidden {
			t.Errorf("no csrf: %d", r.Status)
		}
		if n := topuptest.Count(t, db); n != 0 {
			t.Fatalf("%d payments written by bad input", n)
		}
		if got := len(app.Server.Bank.Payments()); got != 0 {
			t.Fatalf("bank was asked %d times", got)
		}
		// Persian and Arabic-Indic digits with separators are accepted.
		for i, amount := range []string{"۱۲٬۵۰۰", "١٢٥٠٠", "12 500"} {
			_, tok := c.TopUpForm()
			r := c.PostTopUp(csrf, tok, amount)
			if r.Status != http.StatusSeeOther {
				t.Fatalf("amount %q: %d", amount, r.Status)
			}
			rials := topuptest.Last(t, db).AmountRials
			if rials != 125_000 {
				t.Fatalf("amount %d: %d rials, want 125000", i, rials)
			}
		}
	})
}

func TestReceiptIsOwnersOnly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		_, payURL := app.StartTopUp(t, "owner@example.com", "10000")
		_ = payURL
		publicID := topuptest.First(t, db).PublicID
		other := app.NewClient(t)
		other.SignUp("other@example.com")
		if r := other.Get(routes.TopUpPage(publicID)); r.Status != http.StatusNotFound {
			t.Fatalf("other user: %d", r.Status)
		}
		anon := app.NewClient(t)
		if r := anon.Get(routes.TopUpPage(publicID)); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.SignIn) {
			t.Fatalf("anonymous: %d %q", r.Status, r.Location)
		}
	})
}

func TestGatewayDownSaysNoMoneyTaken(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{
			"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": "11111111-2222-3333-4444-555555555555",
			"ZARINPAL_BASE_URL": "http://127.0.0.1:1", // nothing listens there
		}})
		c := app.NewClient(t)
		c.SignUp("down@example.com")
		csrf, token := c.TopUpForm()
		r := c.PostTopUp(csrf, token, "10000")
		if r.Status != http.StatusServiceUnavailable || apptest.Parse(r.Body).TestID("gateway-failed") == nil || apptest.Parse(r.Body).TestID("topup-form") == nil {
			t.Fatalf("status %d", r.Status)
		}
		if Field := apptest.Input(r.Body, "token"); Field == token || Field == "" {
			t.Fatalf("the page must offer a fresh form")
		}
		status := string(topuptest.First(t, db).Status)
		if status != "failed" {
			t.Fatalf("payment %q, want failed", status)
		}
		// The same form again answers the same way, without a new payment.
		again := c.PostTopUp(csrf, token, "10000")
		if again.Status != http.StatusServiceUnavailable {
			t.Fatalf("repeat: %d", again.Status)
		}
		if n := topuptest.Count(t, db); n != 1 {
			t.Fatalf("%d payments", n)
		}
	})
}

func TestStandaloneSandbankControlAPI(t *testing.T) {
	t.Parallel()
	bank := sandbank.New(sandbank.Options{})
	srv := apptest.Serve(t, bank.Handler())
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{
			"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": "11111111-2222-3333-4444-555555555555", "ZARINPAL_BASE_URL": srv,
		}})
		c := app.NewClient(t)
		c.SignUp("standalone@example.com")
		csrf, token := c.TopUpForm()
		r := c.PostTopUp(csrf, token, "25000")
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, srv+"/pg/StartPay/S") {
			t.Fatalf("top-up: %d %q", r.Status, r.Location)
		}
		resp, err := http.Post(srv+"/_sandbank/payments/"+apptest.Authority(r.Location)+"/pay", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Redirect string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if !strings.Contains(body.Redirect, "Status=OK") {
			t.Fatalf("control pay: %+v", body)
		}
		res := c.Get(body.Redirect)
		if apptest.TopUpStatus(res.Body) != "credited" || c.Balance() != 250_000 {
			t.Fatalf("status %q balance %d", apptest.TopUpStatus(res.Body), c.Balance())
		}
		apptest.CheckInvariants(t, db)
	})
}

func TestErrorPages(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	c := app.NewClient(t)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/no/such/page", 404},
		{"GET", routes.Wallet + "?before=abc", 303}, // not signed in: to sign-in first
		{"POST", routes.SignIn, 403},                // no CSRF token
		// The bank inside the app has no control API: nobody can list
		// payments or mark one paid over HTTP.
		{"GET", routes.Sandbank + "/_sandbank/payments", 404},
		{"POST", routes.Sandbank + "/_sandbank/payments/S000000000000000000000000000000000000/pay", 404},
		{"POST", routes.Sandbank + "/_sandbank/faults", 404},
	} {
		req, _ := http.NewRequest(tc.method, app.URL+tc.path, nil)
		r := c.Do(req)
		if r.Status != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, r.Status, tc.want)
		}
		if r.Status != 303 && !strings.HasPrefix(tc.path, routes.Sandbank+"/") && !strings.Contains(r.Body, "<html") {
			t.Errorf("%s %s: not an HTML page: %.100s", tc.method, tc.path, r.Body)
		}
	}
	c.SignUp("errors@example.com")
	if r := c.Get(routes.Wallet + "?before=abc"); r.Status != http.StatusBadRequest || apptest.Parse(r.Body).TestID("message") == nil {
		t.Errorf("bad cursor: %d", r.Status)
	}
}
