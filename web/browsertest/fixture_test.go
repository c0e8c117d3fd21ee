package browsertest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Amounts (rials) the fixture's gateway treats specially.
const (
	pendingRials       = 1_230_000 // verify never answers: pending verification
	gatewayFailedRials = 990_000   // the bank refuses to start the payment
)

// fixtureGateway is the zarinpal driver with two scripted troubles.
type fixtureGateway struct{ gateway.Gateway }

func (g fixtureGateway) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	if in.AmountRials == gatewayFailedRials {
		return gateway.RequestResult{}, &gateway.TransientError{Op: "request", Err: errors.New("connection refused (scripted)")}
	}
	return g.Gateway.Request(ctx, in)
}

func (g fixtureGateway) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	if in.AmountRials == pendingRials {
		return gateway.VerifyResult{}, &gateway.TransientError{Op: "verify", Err: context.DeadlineExceeded}
	}
	return g.Gateway.Verify(ctx, in)
}

// fixture is an app with a user whose payments are in every state, an
// admin, and a standalone sandbox bank (the pattern of web/pending_test.go).
type fixture struct {
	App   *apptest.App
	Bank  *sandbank.Bank
	User  string // email; password is the package's password
	Admin string

	Credited, Failed, Pending payment.Payment
	// Result pages (the bank's return URLs, absolute).
	CreditedReturn, FailedReturn, PendingReturn string
	// OpenPayURL is the bank's page of a payment waiting there.
	OpenPayURL string
	// PaidPayURL is the bank's page of a payment already paid.
	PaidPayURL string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	browserContext(t)
	bank := sandbank.New(sandbank.Options{})
	bankSrv := httptest.NewServer(bank.Handler())
	t.Cleanup(bankSrv.Close)
	const merchant = "11111111-2222-3333-4444-555555555555"
	zp, err := zarinpal.New(zarinpal.Config{MerchantID: merchant, BaseURL: bankSrv.URL})
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{
		Env: map[string]string{
			"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": merchant, "ZARINPAL_BASE_URL": bankSrv.URL,
			"BREAKER_MIN_REQUESTS": "1000",
		},
		// No re-check of the pending payment while the pages are shown.
		Server: server.Options{Gateway: fixtureGateway{zp}, Payment: payment.Config{RecheckDelay: time.Hour}},
	})
	f := &fixture{App: app, Bank: bank, User: "sara@example.com", Admin: "admin@example.com"}
	if _, err := app.Server.Auth.SignUp(context.Background(), f.Admin, password, auth.RoleAdmin, "fa"); err != nil {
		t.Fatal(err)
	}

	c := app.NewClient(t)
	c.SignUp(f.User)
	start := func(tomans string) string {
		t.Helper()
		csrf, token := c.TopUpForm()
		r := c.PostTopUp(csrf, token, tomans)
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, bankSrv.URL) {
			t.Fatalf("top-up of %s: %d %q", tomans, r.Status, r.Location)
		}
		return r.Location
	}
	finish := func(payURL string, pay bool) string {
		t.Helper()
		fn := bank.Cancel
		if pay {
			fn = bank.Pay
		}
		back, err := fn(apptest.Authority(payURL))
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Get(back); r.Status != http.StatusOK {
			t.Fatalf("return %s: %d", back, r.Status)
		}
		return back
	}
	byAuthority := func(payURL string) payment.Payment {
		t.Helper()
		var p payment.Payment
		if err := db.Gorm.Where("authority = ?", apptest.Authority(payURL)).First(&p).Error; err != nil {
			t.Fatalf("payment of %s: %v", payURL, err)
		}
		return p
	}

	first := start("200000")
	finish(first, true)
	f.PaidPayURL = first
	paid := start("50000")
	f.CreditedReturn = finish(paid, true)
	f.Credited = byAuthority(paid)
	cancelled := start("75000")
	f.FailedReturn = finish(cancelled, false)
	f.Failed = byAuthority(cancelled)
	pending := start("123000")
	f.PendingReturn = finish(pending, true)
	f.Pending = byAuthority(pending)
	f.OpenPayURL = start("30000")

	if f.Credited.Status != payment.StatusCredited || f.Failed.Status != payment.StatusFailed ||
		f.Pending.Status != payment.StatusPendingVerification {
		t.Fatalf("fixture payments: %s %s %s", f.Credited.Status, f.Failed.Status, f.Pending.Status)
	}
	return f
}

// Tab opens a tab on the fixture's app in lang, signed in as email ("" for
// nobody), after running setup (a viewport, say) on the blank tab.
func (f *fixture) Tab(t *testing.T, lang, email string, setup ...chromedp.Action) *Tab {
	t.Helper()
	b := NewTab(t, f.App.URL)
	b.Run(setup...)
	b.Go("/signin?lang=" + lang)
	if email != "" {
		b.SignIn(email, password)
	}
	return b
}
