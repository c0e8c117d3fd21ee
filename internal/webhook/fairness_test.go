package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/webhook"
)

// An endpoint that accepts connections and never answers holds one place
// of the sender, not the sender: with twenty of its rows due ahead of
// another partner's one (more than a batch), the other partner's row is
// delivered while the first attempt still hangs, and no second row of
// the hanging endpoint is under way beside it.
func TestHangingEndpointHoldsOnePlace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc, clk := newService(t, db)
		release := make(chan struct{})
		var hanging atomic.Int32
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			hanging.Add(1)
			select { // until the test ends, or the sender gives up the request
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(slow.Close)
		var releaseOnce sync.Once
		answer := func() { releaseOnce.Do(func() { close(release) }) }
		t.Cleanup(answer)
		reached := make(chan struct{}, 1)
		fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
			select {
			case reached <- struct{}{}:
			default:
			}
		}))
		t.Cleanup(fast.Close)

		ctx := context.Background()
		a, aPays := seedTopUp(t, db, "slow@example.com", 20)
		if _, _, err := svc.Create(ctx, a, slow.URL, webhook.Types(), nil); err != nil {
			t.Fatal(err)
		}
		for _, p := range aPays {
			enqueue(t, db, webhook.Event{UserID: a, TopUpID: p, Type: webhook.TypeCredited, TopUp: map[string]any{"p": p}, CreatedAt: clk.Now()})
		}
		b, bPays := seedTopUp(t, db, "fast@example.com", 1)
		bEndpoint, _, err := svc.Create(ctx, b, fast.URL, webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, webhook.Event{UserID: b, TopUpID: bPays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"p": bPays[0]}, CreatedAt: clk.Now()})

		// A minute's timeout: the hanging attempt outlasts the test's bounds.
		s := webhook.NewSender(svc, webhook.SenderOptions{Timeout: time.Minute})
		tickCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Tick(tickCtx)
		}()
		defer func() {
			// An attempt under way finishes when Tick's context ends
			// (shutdown): the hanging endpoint answers, then Tick stops.
			answer()
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second): // real time: a bound on another goroutine
				t.Error("Tick did not return once its context ended")
			}
		}()
		select {
		case <-reached:
		case <-time.After(10 * time.Second): // real time: a bound on another goroutine
			t.Fatal("the other partner's row was not sent while one endpoint hangs")
		}
		testwait.Eventually(t, 10*time.Second, "the other partner's row recorded delivered", func() bool {
			return deliveryRowOf(t, db, bPays[0], bEndpoint.ID).Status == webhook.StatusDelivered
		})
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_deliveries WHERE topup_id IN ? AND attempts > 0`, aPays); n != 1 || hanging.Load() > 1 {
			t.Fatalf("%d rows of the hanging endpoint claimed (%d requests under way), want 1", n, hanging.Load())
		}
	})
}

// A pending row of a disabled endpoint (queued as the endpoint was being
// disabled) is never sent: the claim ends it as failed, "endpoint
// disabled", with no request made.
func TestDisabledEndpointIsNotSent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		var requests atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			w.WriteHeader(http.StatusNoContent)
		}))
		defer srv.Close()
		uid, pays := seedTopUp(t, db, "off@example.com", 1)
		ep, _, err := svc.Create(ctx, uid, srv.URL, webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "p0"}, CreatedAt: clk.Now()})
		// The disable committed, its sweep of the pending rows did not see
		// this one (the race of an insert committed just after it).
		if err := db.Gorm.Exec(`UPDATE webhook_endpoints SET disabled_at = ?, disabled_by = user_id WHERE id = ?`, clk.Now(), ep.ID).Error; err != nil {
			t.Fatal(err)
		}
		s := webhook.NewSender(svc, webhook.SenderOptions{})
		if n, err := s.DeliverDue(ctx); n != 0 || err != nil {
			t.Fatalf("claimed %d (%v) of a disabled endpoint", n, err)
		}
		s.Tick(ctx) // returns: nothing left to do
		if got := requests.Load(); got != 0 {
			t.Fatalf("%d requests to a disabled endpoint", got)
		}
		if d := deliveryRowOf(t, db, pays[0], ep.ID); d.Status != webhook.StatusFailed || d.LastError != webhook.LastErrorEndpointDisabled || d.Attempts != 0 {
			t.Fatalf("the disabled endpoint's row: %s, %d attempts, %q", d.Status, d.Attempts, d.LastError)
		}
	})
}

// counter is an Observer that counts.
type counter struct{ attempts, gaveUp atomic.Int32 }

func (c *counter) WebhookAttempt(bool, time.Duration) { c.attempts.Add(1) }
func (c *counter) WebhookGaveUp()                     { c.gaveUp.Add(1) }

// A failed attempt past the retry window gives up (counted once, the
// endpoint marked failing) only when it records that: a row ended while
// the attempt was under way (its endpoint disabled meanwhile) is not
// counted nor its endpoint marked.
func TestGaveUpCountedOnlyWhenRecorded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		var owner, disableMe atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.URL.Path == "/disable-meanwhile" {
				if err := svc.Disable(r.Context(), owner.Load(), disableMe.Load()); err != nil {
					t.Error(err)
				}
			}
			w.WriteHeader(http.StatusInternalServerError)
		}))
		defer srv.Close()
		uid, pays := seedTopUp(t, db, "down@example.com", 2)
		owner.Store(uid)
		down, _, err := svc.Create(ctx, uid, srv.URL+"/down", []string{webhook.TypeCredited}, nil)
		if err != nil {
			t.Fatal(err)
		}
		obs := &counter{}
		s := webhook.NewSender(svc, webhook.SenderOptions{RetryFor: time.Millisecond, Observer: obs})

		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "p0"}, CreatedAt: clk.Now()})
		clk.Add(time.Second) // past the window
		if n, err := s.DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("claimed %d, %v", n, err)
		}
		if obs.gaveUp.Load() != 1 || deliveryRowOf(t, db, pays[0], down.ID).Status != webhook.StatusFailed {
			t.Fatalf("gave up %d times, row %s", obs.gaveUp.Load(), deliveryRowOf(t, db, pays[0], down.ID).Status)
		}
		if e, _ := svc.Get(ctx, down.ID); e.FailingSince == nil {
			t.Fatal("the endpoint that gave up is not marked failing")
		}
		if err := svc.Disable(ctx, uid, down.ID); err != nil {
			t.Fatal(err)
		}

		meanwhile, _, err := svc.Create(ctx, uid, srv.URL+"/disable-meanwhile", []string{webhook.TypeCredited}, nil)
		if err != nil {
			t.Fatal(err)
		}
		disableMe.Store(meanwhile.ID)
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[1], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "p1"}, CreatedAt: clk.Now()})
		clk.Add(time.Second)
		if n, err := s.DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("claimed %d, %v", n, err)
		}
		if got := obs.gaveUp.Load(); got != 1 || obs.attempts.Load() != 2 {
			t.Fatalf("gave up counted %d times (want 1), %d attempts", got, obs.attempts.Load())
		}
		if d := deliveryRowOf(t, db, pays[1], meanwhile.ID); d.Status != webhook.StatusFailed || d.LastError != webhook.LastErrorEndpointDisabled {
			t.Fatalf("the row ended meanwhile: %s %q", d.Status, d.LastError)
		}
		if e, _ := svc.Get(ctx, meanwhile.ID); e.FailingSince != nil {
			t.Fatal("an endpoint disabled meanwhile marked failing")
		}
	})
}

// Endpoints and return origins asked for at once never pass their limits:
// the owner's row is locked before the count that allows the insert.
func TestLimitsHoldUnderConcurrentCreates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, _ := newService(t, db)
		uid, _ := seedTopUp(t, db, "many@example.com", 0)
		var wg sync.WaitGroup
		for i := range 2 * webhook.MaxEndpoints {
			wg.Go(func() {
				_, _, _ = svc.Create(ctx, uid, fmt.Sprintf("https://hooks%d.example/kifpool", i), []string{webhook.TypeCredited}, nil)
			})
		}
		for i := range 2 * webhook.MaxOrigins {
			wg.Go(func() {
				_, _ = svc.AddOrigin(ctx, uid, fmt.Sprintf("https://shop%d.example", i))
			})
		}
		wg.Wait()
		eps, err := svc.ForUser(ctx, uid)
		if err != nil || len(eps) != webhook.MaxEndpoints {
			t.Fatalf("%d endpoints (%v), want exactly %d", len(eps), err, webhook.MaxEndpoints)
		}
		var origins int64
		if err := db.Gorm.Table("webhook_return_origins").Where("user_id = ?", uid).Count(&origins).Error; err != nil || origins != webhook.MaxOrigins {
			t.Fatalf("%d origins (%v), want exactly %d", origins, err, webhook.MaxOrigins)
		}
	})
}
