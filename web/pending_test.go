package web_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
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
	bank := sandbank.New(sandbank.Options{})
	bankURL := newHTTPServer(t, bank.Handler())
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const merchant = "11111111-2222-3333-4444-555555555555"
		zp, err := zarinpal.New(zarinpal.Config{MerchantID: merchant, BaseURL: bankURL})
		if err != nil {
			t.Fatal(err)
		}
		gw := &flakyVerify{Gateway: zp}
		gw.failures.Store(3) // every attempt of the first verify (the caller retries 3 times)
		app := apptest.Start(t, db, apptest.Options{
			Env:    map[string]string{"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": merchant, "ZARINPAL_BASE_URL": bankURL},
			Server: server.Options{Gateway: gw, Payment: payment.Config{RecheckDelay: 200 * time.Millisecond}},
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
		if res.Status != http.StatusOK || apptest.DataStatus(res.Body) != "pending_verification" ||
			!strings.Contains(res.Body, `http-equiv="refresh"`) || !strings.Contains(res.Body, `aria-live="polite"`) {
			t.Fatalf("first return: %d %q", res.Status, apptest.DataStatus(res.Body))
		}
		var status string
		db.Gorm.Raw(`SELECT status FROM payments`).Scan(&status)
		if status != "pending_verification" || c.Balance() != 0 {
			t.Fatalf("db status %q balance %d", status, c.Balance())
		}
		// Every attempt is recorded against the payment.
		if n := apptest.Count(t, db, `SELECT COUNT(*) FROM gateway_calls g JOIN payments p ON p.id = g.payment_id
			WHERE g.operation = 'verify' AND g.outcome IN ('transient', 'timeout')`); n != 3 {
			t.Fatalf("%d transient verify attempts recorded, want 3", n)
		}
		// An immediate reload does not hammer the bank.
		c.Get(back)
		// Once the re-check is due, the refreshing page gets the answer.
		deadline := time.Now().Add(5 * time.Second)
		for apptest.DataStatus(res.Body) != "credited" {
			if time.Now().After(deadline) {
				t.Fatalf("still %q", apptest.DataStatus(res.Body))
			}
			time.Sleep(50 * time.Millisecond)
			res = c.Get(back)
		}
		if c.Balance() != 100_000 {
			t.Fatalf("balance %d", c.Balance())
		}
		apptest.CheckInvariants(t, db)
	})
}
