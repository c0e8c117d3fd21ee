package pay_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/zibal"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// TestZibalFlow: Kifpool against the sandbox bank's Zibal at its own
// paths, configured as a real Zibal would be (GATEWAYS=zibal and a base
// URL), through the form, the bank's page and Zibal's GET callback:
// paid → verified → credited exactly once, repeat callbacks answered
// "payment received"; cancelled → balance unchanged; verified before
// (201, as after a crash between verify and credit) → credited from the
// inquiry's details, never failed; a forged callback refused.
func TestZibalFlow(t *testing.T) {
	t.Parallel()
	bank := sandbank.New(sandbank.Options{})
	srv := apptest.Serve(t, bank.Handler())
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{
			"GATEWAYS": "zibal", "ZIBAL_MERCHANT": "zibal", "ZIBAL_BASE_URL": srv,
		}})
		c := app.NewClient(t)
		c.SignUp("zibal-" + string(db.Dialect) + "@example.com")
		start := func(tomans string) string {
			t.Helper()
			csrf, token := c.TopUpForm()
			r := c.PostTopUp(csrf, token, tomans)
			if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, srv+"/start/") {
				t.Fatalf("top-up: %d %q", r.Status, r.Location)
			}
			return r.Location
		}
		press := func(payURL, button string) string {
			t.Helper()
			page := c.Get(payURL)
			if page.Status != http.StatusOK || apptest.Parse(page.Body).TestID("bank-pay") == nil || apptest.Parse(page.Body).TestID("bank-cancel") == nil {
				t.Fatalf("bank page: %d", page.Status)
			}
			r := c.Post(payURL+"/"+button, url.Values{})
			if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, app.URL+routes.TopUps+"/") || !strings.Contains(r.Location, "trackId=") {
				t.Fatalf("bank %s: %d %q", button, r.Status, r.Location)
			}
			return r.Location
		}

		// Paid: credited once; every repeat callback says received.
		back := press(start("25000"), "pay")
		res := c.Get(back)
		if apptest.TopUpStatus(res.Body) != "credited" || apptest.Parse(res.Body).TestID("result-received") == nil {
			t.Fatalf("return: %d %q", res.Status, apptest.TopUpStatus(res.Body))
		}
		for range 3 {
			if again := c.Get(back); apptest.TopUpStatus(again.Body) != "credited" || apptest.Parse(again.Body).TestID("result-received") == nil {
				t.Fatalf("repeat callback: %q", apptest.TopUpStatus(again.Body))
			}
		}
		if b := c.Balance(); b != 250_000 {
			t.Fatalf("balance %d, want 250,000", b)
		}
		gw := topuptest.First(t, db).Gateway
		if gw != "zibal" {
			t.Errorf("payment's gateway %q", gw)
		}

		// Cancelled: failed, nothing credited.
		back = press(start("30000"), "cancel")
		if res := c.Get(back); apptest.TopUpStatus(res.Body) != "failed" {
			t.Fatalf("cancel: %q", apptest.TopUpStatus(res.Body))
		}
		if b := c.Balance(); b != 250_000 {
			t.Fatalf("balance after a cancel %d", b)
		}

		// Verified at Zibal before our callback (a verify whose answer was
		// lost): Zibal answers 201, and the payment is credited.
		payURL := start("40000")
		back = press(payURL, "pay")
		track := payURL[strings.LastIndex(payURL, "/")+1:]
		other, err := zibal.New(zibal.Config{Merchant: "zibal", BaseURL: srv})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if vr, err := other.Verify(ctx, gateway.VerifyInput{Authority: track, AmountRials: 400_000}); err != nil || vr.Outcome != gateway.VerifyPaid {
			t.Fatalf("verify at the bank first: %+v %v", vr, err)
		}
		if res := c.Get(back); apptest.TopUpStatus(res.Body) != "credited" {
			t.Fatalf("after 201: %q", apptest.TopUpStatus(res.Body))
		}
		if b := c.Balance(); b != 650_000 {
			t.Fatalf("balance after 201 %d, want 650,000", b)
		}

		// Forged callbacks: another payment's trackId, a made-up one, the
		// right trackId of an unpaid payment claiming success.
		unpaid := start("50000")
		unpaidTrack := unpaid[strings.LastIndex(unpaid, "/")+1:]
		unpaidID := topuptest.ByAuthority(t, db, unpaidTrack).PublicID
		for _, q := range []string{"trackId=" + track + "&success=1&status=2", "trackId=999999999&success=1&status=2", "trackId=abc", ""} {
			if r := c.Get(routes.TopUpReturn(unpaidID) + "?" + q); r.Status != http.StatusBadRequest {
				t.Errorf("forged %q: %d, want 400", q, r.Status)
			}
		}
		if r := c.Get(routes.TopUpReturn("pay_01HXAAAAAAAAAAAAAAAAAAAAAA") + "?trackId=" + unpaidTrack + "&success=1&status=2"); r.Status != http.StatusNotFound {
			t.Errorf("unknown payment: %d, want 404", r.Status)
		}
		anon := app.NewClient(t)
		r := anon.Get(routes.TopUpReturn(unpaidID) + "?trackId=" + unpaidTrack + "&success=1&status=2")
		if st := apptest.TopUpStatus(r.Body); st == "credited" || r.Status != http.StatusOK {
			t.Errorf("an unpaid payment's callback claiming success: %d %q", r.Status, st)
		}
		if b := c.Balance(); b != 650_000 {
			t.Fatalf("balance after forged callbacks %d", b)
		}
		if n := ledgertest.Credits(t, db); n != 2 {
			t.Errorf("%d ledger entries, want 2", n)
		}
		apptest.CheckInvariants(t, db)
	})
}

// TestZibalReconcileByInquiry: Zibal lists no unverified payments, so
// reconciliation asks it about each of our Zibal payments that ended here
// without money (a payer who paid but whose payment we had failed): the
// one the bank holds paid is reopened, verified and credited; one it says
// was not paid is left alone. One report per gateway is stored.
func TestZibalReconcileByInquiry(t *testing.T) {
	t.Parallel()
	bank := sandbank.New(sandbank.Options{})
	srv := apptest.Serve(t, bank.Handler())
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{
			"GATEWAYS": "zibal", "ZIBAL_MERCHANT": "zibal", "ZIBAL_BASE_URL": srv,
		}})
		c := app.NewClient(t)
		c.SignUp("zibal-recon-" + string(db.Dialect) + "@example.com")
		start := func(tomans string) (int64, string) {
			t.Helper()
			csrf, token := c.TopUpForm()
			r := c.PostTopUp(csrf, token, tomans)
			track := r.Location[strings.LastIndex(r.Location, "/")+1:]
			id := topuptest.ByAuthority(t, db, track).ID
			if id == 0 {
				t.Fatalf("top-up: %d %q", r.Status, r.Location)
			}
			return id, track
		}
		paidID, paidTrack := start("25000")
		unpaidID, unpaidTrack := start("30000")
		if _, err := bank.Finish(paidTrack, true); err != nil { // paid, the payer never came back
			t.Fatal(err)
		}
		if _, err := bank.Finish(unpaidTrack, false); err != nil {
			t.Fatal(err)
		}
		topuptest.ForceStatus(t, db, paidID, "failed", "not_paid_after_lifetime")
		topuptest.ForceStatus(t, db, unpaidID, "failed", "not_paid_after_lifetime")

		rep, err := app.Server.TopUps.Reconcile(context.Background())
		if err != nil || rep.Gateway != "zibal" || rep.Listed != 2 || rep.Credited != 1 || rep.CreditedRials != 250_000 {
			t.Fatalf("reconcile = %+v, %v", rep, err)
		}
		paid, unpaid := topuptest.Status(t, db, paidID), topuptest.Status(t, db, unpaidID)
		if paid != topup.StatusCredited || unpaid != topup.StatusFailed || c.Balance() != 250_000 {
			t.Errorf("after reconciliation: paid %s, unpaid %s, balance %d", paid, unpaid, c.Balance())
		}
		zibal := 0
		for _, rep := range topuptest.Reconciles(t, db) {
			if rep.Gateway == "zibal" {
				zibal++
			}
		}
		if zibal != 1 {
			t.Errorf("%d zibal reports", zibal)
		}
		// Again: nothing more to do.
		if rep, err := app.Server.TopUps.Reconcile(context.Background()); err != nil || rep.Credited != 0 {
			t.Errorf("again: %+v, %v", rep, err)
		}
		apptest.CheckInvariants(t, db)
	})
}
