package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/webhook"
)

var secretKey = []byte("0123456789abcdef0123456789abcdef-test")

// seedPayment inserts a user with a wallet and n payments; it returns
// the user id and the payments' ids.
// newService is the webhook service of the tests on db, loopback URLs
// allowed, at a fake clock.
func newService(t *testing.T, db *store.DB) (*webhook.Service, *testclock.Clock) {
	t.Helper()
	clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	svc, err := webhook.New(db, clk.Now, webhook.Options{SessionSecret: secretKey, AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	return svc, clk
}

func seedTopUp(t *testing.T, db *store.DB, email string, n int) (int64, []int64) {
	t.Helper()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	g := db.Gorm
	var uid, wid int64
	if err := g.Raw(`INSERT INTO users (email, password_hash, created_at, email_verified_at) VALUES (?, 'x', ?, ?) RETURNING id`, email, now, now).Scan(&uid).Error; err != nil {
		t.Fatal(err)
	}
	if err := g.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, now, now).Scan(&wid).Error; err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range n {
		var id int64
		err := g.Raw(`INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, status, created_at, updated_at)
			VALUES (?, ?, ?, 10000, 'sandbox', ?, 'awaiting_payment', ?, ?) RETURNING id`,
			email+string(rune('a'+i)), uid, wid, email+string(rune('a'+i)), now, now).Scan(&id).Error
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return uid, ids
}

func enqueue(t *testing.T, db *store.DB, e webhook.Event) {
	t.Helper()
	if err := db.Tx(context.Background(), func(tx *gorm.DB) error { _, err := webhook.Enqueue(tx, e); return err }); err != nil {
		t.Fatal(err)
	}
}

// receiver is a real HTTP server that answers from a script and keeps
// what it received, verified.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	secret string
	now    func() time.Time
	// answer returns the status for the n-th request (0-based).
	answer func(n int) int
	n      int
	got    []webhook.Body
	bad    int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n++
	status := 200
	if r.answer != nil {
		status = r.answer(n)
	}
	if err := webhook.Verify(r.secret, req.Header.Get(webhook.HeaderSignature), body, r.now(), 5*time.Minute); err != nil {
		r.bad++
		w.WriteHeader(400)
		return
	}
	var b webhook.Body
	if err := json.Unmarshal(body, &b); err != nil || b.EventID != req.Header.Get(webhook.HeaderEventID) {
		r.bad++
		w.WriteHeader(400)
		return
	}
	if status/100 == 2 {
		r.got = append(r.got, b)
	}
	w.WriteHeader(status)
}

func (r *receiver) received() []webhook.Body {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhook.Body(nil), r.got...)
}

func deliveryRow(t *testing.T, db *store.DB, eventType string) webhook.Delivery {
	t.Helper()
	var d webhook.Delivery
	if err := db.Gorm.Where("type = ?", eventType).Order("id DESC").Take(&d).Error; err != nil {
		t.Fatal(err)
	}
	return d
}

// An event is queued only for the owner's enabled endpoints subscribed
// to its type; delivered signed; a 500 is retried after the backoff (on
// the fake clock) until a 200; events of one top-up arrive in order even
// when the first needs retries; past the retry window the delivery gives
// up and the endpoint is marked failing; an admin's "send again" delivers
// it and clears the mark.
func TestSender(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		rec := &receiver{t: t, now: clk.Now}
		fails := 2
		rec.answer = func(n int) int {
			if n < fails {
				return 500
			}
			return 200
		}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		uid, pays := seedTopUp(t, db, "a@example.com", 2)
		other, otherPays := seedTopUp(t, db, "b@example.com", 1)
		ep, secret, err := svc.Create(ctx, uid, srv.URL+"/hook", []string{webhook.TypeCredited, webhook.TypeFailed}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.secret = secret
		if _, _, err := svc.Create(ctx, other, srv.URL+"/other", []string{webhook.TypeNeedsReview}, nil); err != nil {
			t.Fatal(err)
		}
		s := webhook.NewSender(svc, webhook.SenderOptions{Jitter: func() float64 { return 0 }, RetryFor: time.Hour})

		// Not subscribed (needs_review), another user's event for a type the
		// other endpoint does not want: nothing queued.
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeNeedsReview, TopUp: map[string]any{"id": "x"}, CreatedAt: clk.Now()})
		enqueue(t, db, webhook.Event{UserID: other, TopUpID: otherPays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "y"}, CreatedAt: clk.Now()})
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_deliveries`); n != 0 {
			t.Fatalf("queued %d rows for events nobody subscribed to", n)
		}
		// TopUp 0: failed, then credited (in this order); payment 1 credited.
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeFailed, TopUp: map[string]any{"id": "p0", "status": "failed"}, CreatedAt: clk.Now()})
		clk.Add(time.Second)
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "p0", "status": "credited"}, CreatedAt: clk.Now()})
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[1], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "p1", "status": "credited"}, CreatedAt: clk.Now()})

		// First pass: p0's failed event and p1's credit are claimed (p0's
		// credit waits behind its failed event; one attempt at a time to
		// the endpoint); both get 500.
		if n := drain(t, s); n != 2 {
			t.Fatalf("first pass claimed %d, want 2", n)
		}
		if got := rec.received(); len(got) != 0 {
			t.Fatalf("received %v after 500s", got)
		}
		// Nothing is due before the backoff (15 s, half of it without jitter).
		if n := drain(t, s); n != 0 {
			t.Fatalf("claimed %d before the backoff", n)
		}
		// Both delivered now, and p0's credit, due only once its failed
		// event is.
		clk.Add(8 * time.Second)
		if n := drain(t, s); n != 3 {
			t.Fatalf("after the backoff claimed %d, want 3", n)
		}
		got := rec.received()
		if len(got) != 3 {
			t.Fatalf("received %d events, want 3: %+v", len(got), got)
		}
		var order []string
		for _, b := range got {
			var tu map[string]string
			_ = json.Unmarshal(b.TopUp, &tu)
			if tu["id"] == "p0" {
				order = append(order, b.Type)
			}
		}
		if strings.Join(order, ",") != "topup.failed,topup.credited" {
			t.Fatalf("p0's events arrived as %v", order)
		}
		if rec.bad != 0 {
			t.Fatalf("%d requests failed verification", rec.bad)
		}
		d := deliveryRow(t, db, webhook.TypeFailed)
		if d.Status != webhook.StatusDelivered || d.Attempts != 2 || d.LastHTTPStatus == nil || *d.LastHTTPStatus != 200 || d.DeliveredAt == nil {
			t.Fatalf("delivery row %+v", d)
		}

		// Down for good: retried within the window, then it gives up and the
		// endpoint is failing.
		fails = 1 << 30
		_, more := seedTopUp(t, db, "c@example.com", 0)
		_ = more
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[1], Type: webhook.TypeFailed, TopUp: map[string]any{"id": "p1"}, CreatedAt: clk.Now()})
		for i := 0; i < 20; i++ {
			if _, err := s.DeliverDue(ctx); err != nil {
				t.Fatal(err)
			}
			clk.Add(10 * time.Minute)
		}
		d = deliveryRow(t, db, webhook.TypeFailed)
		if d.Status != webhook.StatusFailed || d.Attempts < 3 {
			t.Fatalf("after the window: %+v", d)
		}
		if got, _ := svc.Get(ctx, ep.ID); got.FailingSince == nil {
			t.Fatal("endpoint not marked failing")
		}
		st, err := svc.Stats(ctx)
		if err != nil || st.Failed != 1 || st.FailingEndpoints != 1 || st.Pending != 0 {
			t.Fatalf("stats %+v %v", st, err)
		}
		// Send again: its backoff starts over (the first retry 15 s on, not
		// hours as after the attempts of the window that gave up); then
		// delivered, the mark cleared.
		admin, _ := seedTopUp(t, db, "admin@example.com", 0)
		if _, err := svc.Resend(ctx, admin, d.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Resend(ctx, admin, d.ID); err == nil {
			t.Fatal("a pending delivery was queued again")
		}
		if n, _ := s.DeliverDue(ctx); n != 1 {
			t.Fatalf("resend claimed %d", n)
		}
		if d = deliveryRow(t, db, webhook.TypeFailed); d.Status != webhook.StatusPending || d.NextAttemptAt.Sub(clk.Now()) > 30*time.Second {
			t.Fatalf("the first failure after a resend: next attempt %s after now, %+v", d.NextAttemptAt.Sub(clk.Now()), d)
		}
		// Waiting out its backoff, it is pending but not overdue; a minute
		// on, no sender having run, it is overdue by what it waited past
		// its time (the alert on a stalled sender reads this).
		if st, err := svc.Stats(ctx); err != nil || st.Pending != 1 || st.Overdue != 0 {
			t.Fatalf("stats in its backoff: %+v %v", st, err)
		}
		fails = 0
		clk.Add(time.Minute)
		if st, err := svc.Stats(ctx); err != nil || st.Overdue != clk.Now().Sub(d.NextAttemptAt) || st.Overdue <= 0 {
			t.Fatalf("stats past its time: %+v %v, want overdue %s", st, err, clk.Now().Sub(d.NextAttemptAt))
		}
		if n, _ := s.DeliverDue(ctx); n != 1 {
			t.Fatalf("the retry after the resend claimed %d", n)
		}
		if got, _ := svc.Get(ctx, ep.ID); got.FailingSince != nil || got.LastSuccessAt == nil {
			t.Fatalf("endpoint after a success: %+v", got)
		}
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM admin_actions WHERE action = 'webhook_resend'`); n != 1 {
			t.Fatalf("%d audit rows", n)
		}
	})
}

// drain runs s's rounds (DeliverDue) until one claims nothing and
// returns how many rows they claimed.
func drain(t *testing.T, s *webhook.Sender) int {
	t.Helper()
	total := 0
	for {
		n, err := s.DeliverDue(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

// Two senders on one database never deliver a row at once, and every
// event arrives (once, as the rows record it).
func TestSendersRace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, rec := subscribed(t, db, "a@example.com", 20)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := webhook.NewSender(svc, webhook.SenderOptions{Batch: 3})
				// A round may claim nothing while the others' claims hold
				// the last rows (SKIP LOCKED): each sender goes on until
				// nothing is pending, as the background loop's next tick
				// would, within a bound far above the 20 rows.
				for range 500 {
					if _, err := s.DeliverDue(ctx); err != nil {
						t.Error(err)
						return
					}
					var pending int64
					if err := db.Gorm.Raw(`SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&pending).Error; err != nil {
						t.Error(err)
						return
					}
					if pending == 0 {
						return
					}
				}
			}()
		}
		wg.Wait()
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'delivered' AND attempts = 1`); n != 20 {
			t.Errorf("%d rows delivered at their first attempt, want 20", n)
		}
		got := rec.received()
		seen := map[string]int{}
		for _, b := range got {
			seen[b.EventID]++
		}
		if len(seen) != 20 || len(got) != 20 {
			t.Fatalf("received %d deliveries of %d events, want 20 of 20", len(got), len(seen))
		}
	})
}

func TestSignVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"a":1}`)
	h := webhook.Sign("whsec_x", now, body)
	if !strings.HasPrefix(h, "t=1800000000,v1=") {
		t.Fatalf("header %q", h)
	}
	if err := webhook.Verify("whsec_x", h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		secret, header string
		body           []byte
		at             time.Time
	}{
		"other secret": {"whsec_y", h, body, now},
		"other body":   {"whsec_x", h, []byte(`{"a":2}`), now},
		"stale":        {"whsec_x", h, body, now.Add(6 * time.Minute)},
		"no v1":        {"whsec_x", "t=1800000000", body, now},
		"garbage":      {"whsec_x", "v1=,t=x", body, now},
	} {
		if webhook.Verify(c.secret, c.header, c.body, c.at, 5*time.Minute) == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestBackoff(t *testing.T) {
	s := webhook.NewSender(&webhook.Service{}, webhook.SenderOptions{Jitter: func() float64 { return 0.999999 }})
	s0 := webhook.NewSender(&webhook.Service{}, webhook.SenderOptions{Jitter: func() float64 { return 0 }})
	prev := time.Duration(0)
	for n := 1; n <= 30; n++ {
		lo, hi := s0.Backoff(n), s.Backoff(n)
		if lo > hi || hi > 6*time.Hour || lo < 7*time.Second || lo < prev/2 {
			t.Fatalf("attempt %d: backoff in [%s, %s]", n, lo, hi)
		}
		prev = lo
	}
	if s0.Backoff(1) != 7500*time.Millisecond || s0.Backoff(30) != 3*time.Hour {
		t.Fatalf("backoff(1)=%s backoff(30)=%s", s0.Backoff(1), s0.Backoff(30))
	}
}

// A delivery that found no one (a refused connection) keeps what went
// wrong, never the endpoint's URL: a partner's URL may carry its own
// secret in the query, and the row and the log are read by others.
func TestFailedDeliveryKeepsNoURL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, err := webhook.New(db, nil, webhook.Options{SessionSecret: secretKey, AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		closed := httptest.NewServer(http.NotFoundHandler())
		addr := closed.URL
		closed.Close()
		uid, pays := seedTopUp(t, db, "nourl@example.com", 1)
		if _, _, err := svc.Create(ctx, uid, addr+"/hook?token=PartnerSecret0123", webhook.Types(), nil); err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "p"}, CreatedAt: time.Now()})
		if n, err := webhook.NewSender(svc, webhook.SenderOptions{}).DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("deliver: %d %v", n, err)
		}
		d := deliveryRow(t, db, webhook.TypeCredited)
		if d.LastError == "" || strings.Contains(d.LastError, "PartnerSecret0123") || strings.Contains(d.LastError, "/hook") {
			t.Fatalf("the failed attempt's error: %q", d.LastError)
		}
	})
}
