package payment_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The worker's deadline (AuthorityLifetime) must never overrule a callback
// that took the lease right after the worker released it and is hearing
// "paid" from the bank: the payment ends credited, once.
func TestDeadlineNeverOverrulesAVerifyInFlight(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(50_000)
		e.clock.Advance(21 * time.Minute)
		verifying := make(chan struct{})
		release := make(chan struct{})
		e.gw.set(func(f *fakeGW) {
			f.inquireFn = inquiry(gateway.InquiryInBank)
			f.verifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				if n == 1 {
					return gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: -51}, nil
				}
				close(verifying)
				<-release
				return paid(777)(n, in)
			}
		})
		var once sync.Once
		var cbDone = make(chan payment.Payment, 1)
		db.Gorm.Callback().Update().After("gorm:update").Register("test:callback-after-release", func(tx *gorm.DB) {
			m, ok := tx.Statement.Dest.(map[string]any)
			if !ok {
				return
			}
			if v, has := m["lease_until"]; has && v == nil {
				if _, st := m["status"]; !st {
					once.Do(func() {
						// the payer pays and the callback arrives right after the worker released
						go func() { got, _ := e.svc.Return(ctx, p.PublicID, p.AuthorityString()); cbDone <- got }()
						<-verifying
					})
				}
			}
		})
		w := e.svc.NewWorker(payment.WorkerConfig{})
		rr, err := w.RunOnce(ctx)
		t.Logf("worker round %+v err %v; row now %s", rr, err, dump(e.row(p.ID)))
		close(release)
		got := <-cbDone
		t.Logf("callback result %s", dump(got))
		t.Logf("bank verified 100 (ref 777); balance=%d", e.balance())
		if got.Status != payment.StatusCredited {
			t.Errorf("LOST: bank verified the payment but it ended %s", got.Status)
		}
		if b := e.balance(); b != 50_000 {
			t.Errorf("balance %d, want 50000", b)
		}
		checkInvariants(t, db)
	})
}
