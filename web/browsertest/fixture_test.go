package browsertest

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// Amounts (rials) the fixture's gateway treats specially.
const (
	pendingRials       = 1_230_000 // verify never answers: pending verification
	gatewayFailedRials = 990_000   // the bank refuses to start the payment
	expiredRials       = 650_000   // the payer stays on the bank's page until it expires
)

// fixtureGateway is the zarinpal driver with three scripted troubles.
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
	if in.AmountRials == expiredRials {
		// The fixture's clock may stand still: the payer had the page
		// for its whole lifetime (the bank expired it), as time would say.
		in.PageTime = max(in.PageTime, zarinpal.DefaultPageLifetime)
	}
	return g.Gateway.Verify(ctx, in)
}

// fixture is an app with a user whose payments are in every state, an
// admin, and a standalone sandbox bank (the pattern of web/pay/pending_test.go).
type fixture struct {
	App   *apptest.App
	Bank  *sandbank.Bank
	User  string // email; password is the package's password
	Admin string

	now         func() time.Time // the app's clock (nil: real time)
	adminPassed bool             // the admin has enrolled and passed the second factor once

	Credited, Failed, Pending, Expired topup.TopUp
	// Result pages (the bank's return URLs, absolute). ExpiredReturn is
	// where the bank's expired page sends the payer: "the time ran out".
	CreditedReturn, FailedReturn, PendingReturn, ExpiredReturn string
	// OpenPayURL is the bank's page of a payment waiting there.
	OpenPayURL string
	// ShotPayURL is the bank's page the screenshots show (OpenPayURL,
	// or with fixed values the same payment asked for with its fixed id).
	ShotPayURL string
	// PaidPayURL is the bank's page of a payment already paid.
	PaidPayURL string

	spent *spending // the admin's charge and transfer pages' data, once made
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureAt(t, time.Time{})
}

// newFixtureAt is newFixture with every visible value fixed when at is not
// zero (the screenshots): the app's and the bank's clock stand still at
// at, the bank draws authorities, cards and references from a fixed seed,
// and the payments' public ids and times are rewritten to fixed values, so
// that the same pages give the same pixels on every run.
func newFixtureAt(t *testing.T, at time.Time) *fixture {
	t.Helper()
	browserContext(t)
	bankOpts := sandbank.Options{}
	var now func() time.Time
	if !at.IsZero() {
		now = func() time.Time { return at }
		bankOpts.Clock, bankOpts.Seed = now, 1405
	}
	bank := sandbank.New(bankOpts)
	bankSrv := httptest.NewServer(bank.Handler())
	t.Cleanup(bankSrv.Close)
	const merchant = "11111111-2222-3333-4444-555555555555"
	// With its card refund (the bank's GraphQL API): the admin's top-up
	// page offers "refund to card".
	zp, err := zarinpal.New(zarinpal.Config{MerchantID: merchant, BaseURL: bankSrv.URL, PageLifetime: zarinpal.DefaultPageLifetime,
		AccessToken: zarinpal.SandboxAccessToken, TerminalID: zarinpal.SandboxTerminalID,
		GraphQLURL: zarinpal.Driver().Sandbox.Settings(bankSrv.URL)[zarinpal.SettingGraphQLURL]})
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.New(t, store.SQLite)
	env := map[string]string{
		"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": merchant, "ZARINPAL_BASE_URL": bankSrv.URL,
		"BREAKER_MIN_REQUESTS": "1000",
	}
	if !at.IsZero() {
		// The admin page counts the breaker's calls of the last window
		// (real time): a window too short to hold any keeps it at zero.
		env["BREAKER_WINDOW"] = "1ms"
	}
	// No re-check of the pending payment while the pages are shown.
	env["PENDING_RECHECK_AFTER"] = "1h"
	app := apptest.Start(t, db, apptest.Options{
		Env:    env,
		Server: server.Options{Gateway: fixtureGateway{zp}, Now: now},
	})
	f := &fixture{App: app, Bank: bank, User: "sara@example.com", Admin: "admin@example.com", now: now}
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
	finishWith := func(payURL string, fn func(string) (string, error)) string {
		t.Helper()
		back, err := fn(apptest.Authority(payURL))
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Get(back); r.Status != http.StatusOK {
			t.Fatalf("return %s: %d", back, r.Status)
		}
		return back
	}
	byAuthority := func(payURL string) topup.TopUp {
		t.Helper()
		return topuptest.ByAuthority(t, db, apptest.Authority(payURL))
	}

	first := start("200000")
	finishWith(first, bank.Pay)
	f.PaidPayURL = first
	paid := start("50000")
	f.CreditedReturn = finishWith(paid, bank.Pay)
	f.Credited = byAuthority(paid)
	cancelled := start("75000")
	f.FailedReturn = finishWith(cancelled, bank.Cancel)
	f.Failed = byAuthority(cancelled)
	expired := start(strconv.FormatInt(expiredRials/10, 10))
	f.ExpiredReturn = finishWith(expired, bank.Expire)
	f.Expired = byAuthority(expired)
	pending := start("123000")
	f.PendingReturn = finishWith(pending, bank.Pay)
	f.Pending = byAuthority(pending)
	f.OpenPayURL = start("30000")

	if f.Credited.Status != topup.StatusCredited || f.Failed.Status != topup.StatusFailed ||
		f.Pending.Status != topup.StatusPendingVerification || f.Expired.Status != topup.StatusFailed ||
		f.Expired.StatusReason != string(topup.ReasonBankExpired) || f.Failed.StatusReason != string(topup.ReasonBankCancelled) {
		t.Fatalf("fixture payments: %s %s %s %s (%s)", f.Credited.Status, f.Failed.Status, f.Pending.Status, f.Expired.Status, f.Expired.StatusReason)
	}
	f.ShotPayURL = f.OpenPayURL
	if !at.IsZero() {
		f.freeze(t, at)
		// The bank keeps the order id (our public id) it was given when
		// the payment started: ask it for one more payment, with the
		// open payment's fixed id, for the bank's screenshot.
		open := topuptest.ByAuthority(t, db, apptest.Authority(f.OpenPayURL))
		res, err := zp.Request(context.Background(), gateway.RequestInput{
			AmountRials: open.AmountRials, OrderID: open.PublicID, Email: f.User,
			CallbackURL: app.URL + routes.TopUpReturn(open.PublicID),
			//lint:ignore ST1018 Persian is written with the zero-width non-joiner (U+200C) inside words; escaped it would be unreadable
			Description: "افزایش موجودی کیف‌پول",
		})
		if err != nil {
			t.Fatal(err)
		}
		f.ShotPayURL = zp.PayURL(res.Authority)
	}
	return f
}

// freeze gives every payment a fixed public id (derived from its row id)
// and fixed times before at (ledger entries follow their payment), and
// updates the fixture's URLs to match.
func (f *fixture) freeze(t *testing.T, at time.Time) {
	t.Helper()
	ps := topuptest.All(t, f.App.DB)
	renamed := map[string]string{}
	for i, p := range ps {
		sum := sha256.Sum256([]byte("kifpool screenshots " + strconv.FormatInt(p.ID, 10)))
		id := strings.ToLower(base32.StdEncoding.EncodeToString(sum[:]))[:len(p.PublicID)]
		created := at.Add(-time.Duration(len(ps)-i) * 47 * time.Minute)
		topuptest.Restamp(t, f.App.DB, p.ID, id, created, at.Add(time.Hour))
		// The screenshots' fixed times reach the ledger too.
		ledgertest.RestampTopUp(t, f.App.DB, p.ID, created.Add(time.Minute))
		renamed[p.PublicID] = id
	}
	for _, p := range []*topup.TopUp{&f.Credited, &f.Failed, &f.Pending, &f.Expired} {
		p.PublicID = renamed[p.PublicID]
	}
	for _, u := range []*string{&f.CreditedReturn, &f.FailedReturn, &f.PendingReturn, &f.ExpiredReturn} {
		for old, id := range renamed {
			*u = strings.Replace(*u, routes.TopUpPage(old)+"/", routes.TopUpPage(id)+"/", 1)
		}
	}
}

// Tab opens a tab on the fixture's app in lang, signed in as email ("" for
// nobody), after running setup (a viewport, say) on the blank tab.
func (f *fixture) Tab(t *testing.T, lang, email string, setup ...chromedp.Action) *Tab {
	t.Helper()
	b := NewTab(t, f.App.URL)
	b.Run(setup...)
	b.Go(routes.SignIn + "?lang=" + lang)
	if email != "" {
		b.SignIn(email, password)
		if email == f.Admin {
			f.passAdminChecks(t, b, email)
		}
	}
	return b
}

// passAdminChecks passes the admin's second factor in a new tab: through
// the page the first time (enrolment and a code at the app's clock), then
// by marking the tab's new session as passed — under a fixed clock the
// authenticator's next fresh code never comes, and the page itself is
// tested elsewhere.
func (f *fixture) passAdminChecks(t *testing.T, b *Tab, email string) {
	t.Helper()
	if !f.adminPassed {
		b.PassAdminChecksAt(f.App.DB, email, f.now)
		f.adminPassed = true
		return
	}
	at := time.Now()
	if f.now != nil {
		at = f.now()
	}
	authtest.PassSecondFactor(t, f.App.DB, email, at)
}

// openPublicID is the public id of the payment still waiting at the bank
// (OpenPayURL): its receipt is the "not paid yet" page.
func (f *fixture) openPublicID(t *testing.T) string {
	t.Helper()
	return topuptest.ByAuthority(t, f.App.DB, apptest.Authority(f.OpenPayURL)).PublicID
}
