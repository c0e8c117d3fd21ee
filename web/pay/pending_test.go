package pay_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// flakyVerify fails the first verifies as if the bank timed out.
type flakyVerify struct {
	gateway.Gateway
	failures atomic.Int32
}

func (f *flakyVerify) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	if f.failures.Add(-1) >= 0 {
		return gateway.VerifyResult{}, &gateway.TransientError{Op: "verify", Err: context.DeadlineExceeded}
	}
	return f.Gateway.Verify(ctx, in)
}

func TestUnknownVerifyOutcomeIsPendingThenCredited(t *testing.T) {
	t.Parallel()
	bank := sandbank.New(sandbank.Options{})
	bankURL := apptest.Serve(t, bank.Handler())
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const merchant = "11111111-2222-3333-4444-555555555555"
		zp, err := zarinpal.New(zarinpal.Config{MerchantID: merchant, BaseURL: bankURL})
		if err != nil {
			t.Fatal(err)
		}
		gw := &flakyVerify{Gateway: zp}
		gw.failures.Store(3) // every attempt of the first verify (the caller retries 3 times)
		const recheck = 20 * time.Second
		clk := topuptest.NewClock()
		app := apptest.Start(t, db, apptest.Options{
			Env: map[string]string{"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": merchant, "ZARINPAL_BASE_URL": bankURL,
				"PENDING_RECHECK_AFTER": recheck.String()},
			Server: server.Options{Gateway: gw, Now: clk.Now},
		})
		c := app.NewClient(t)
		c.SignUp("pending@example.com")
		csrf, token := c.TopUpForm()
		r := c.PostTopUp(csrf, token, "10000")
		back, err := bank.Pay(apptest.Authority(r.Location))
		if err != nil {
			t.Fatal(err)
		}
		res := c.Get(back)
		if res.Status != http.StatusOK || apptest.TopUpStatus(res.Body) != "pending_verification" ||
			!strings.Contains(res.Body, `http-equiv="refresh"`) || !strings.Contains(res.Body, `aria-live="polite"`) {
			t.Fatalf("first return: %d %q", res.Status, apptest.TopUpStatus(res.Body))
		}
		p := topuptest.First(t, db)
		if p.Status != topup.StatusPendingVerification || c.Balance() != 0 {
			t.Fatalf("db status %q balance %d", p.Status, c.Balance())
		}
		// Every attempt is recorded against the payment.
		n := 0
		for _, call := range topuptest.CallsOf(t, db, p.ID) {
			if call.Operation == "verify" && (call.Outcome == "transient" || call.Outcome == "timeout") {
				n++
			}
		}
		if n != 3 {
			t.Fatalf("%d transient verify attempts recorded, want 3", n)
		}
		// A reload within the re-check window does not ask the bank again.
		if res = c.Get(back); apptest.TopUpStatus(res.Body) != "pending_verification" {
			t.Fatalf("reload within the window: %q", apptest.TopUpStatus(res.Body))
		}
		if n := topuptest.CountCalls(t, db, "verify"); n != 3 {
			t.Fatalf("%d verify calls after a reload within the window, want still 3", n)
		}
		// Once the re-check is due, the refreshing page gets the answer.
		clk.Advance(recheck)
		if res = c.Get(back); apptest.TopUpStatus(res.Body) != "credited" {
			t.Fatalf("after the window: %q", apptest.TopUpStatus(res.Body))
		}
		if c.Balance() != 100_000 {
			t.Fatalf("balance %d", c.Balance())
		}
		apptest.CheckInvariants(t, db)
	})
}

// flakyReads is the top-up store with reads of a payment that fail while
// down is set, as a database does for a moment.
type flakyReads struct {
	topup.Store
	down atomic.Bool
}

func (f *flakyReads) ByPublicID(ctx context.Context, id string) (topup.TopUp, error) {
	if f.down.Load() {
		return topup.TopUp{}, errors.New("read payment: connection reset by peer")
	}
	return f.Store.ByPublicID(ctx, id)
}

// The payer comes back from paying while the database fails for a
// moment: not an error page (whose "try again" could send them to pay a
// second time) but the pending page, 503, which asks again through the
// same return a few seconds later; once the database answers, the
// payment is credited and shown so.
func TestReturnWhileTheDatabaseFailsIsPending(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var reads *flakyReads
		app := apptest.Start(t, db, apptest.Options{Server: server.Options{WrapTopUpStore: func(s topup.Store) topup.Store {
			reads = &flakyReads{Store: s}
			return reads
		}}})
		c, payURL := app.StartTopUp(t, "flaky@example.com", "20000")
		back := c.PayAtBank(payURL, "pay")
		reads.down.Store(true)
		res := c.Get(back)
		doc := apptest.Parse(res.Body)
		if res.Status != http.StatusServiceUnavailable || apptest.TopUpStatus(res.Body) != "pending_verification" ||
			!strings.Contains(res.Body, `http-equiv="refresh"`) || doc.TestID("amount") != nil {
			t.Fatalf("the return while the database fails: %d %q %.300s", res.Status, apptest.TopUpStatus(res.Body), res.Body)
		}
		if c.Balance() != 0 {
			t.Fatal("credited while the payment could not be read")
		}
		m := regexp.MustCompile(`http-equiv="refresh" content="\d+;url=([^"]+)"`).FindStringSubmatch(res.Body)
		if m == nil || !strings.HasSuffix(back, html.UnescapeString(m[1])) || !strings.Contains(m[1], "/return?") {
			t.Fatalf("the page refreshes to %q, want the same return %q", m, back)
		}
		again := html.UnescapeString(m[1])
		reads.down.Store(false)
		if res = c.Get(again); res.Status != http.StatusOK || apptest.TopUpStatus(res.Body) != "credited" {
			t.Fatalf("the refresh once the database answers: %d %q", res.Status, apptest.TopUpStatus(res.Body))
		}
		if c.Balance() != 200_000 {
			t.Fatalf("balance %d after paying 20,000 tomans", c.Balance())
		}
	})
}
