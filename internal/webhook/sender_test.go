package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Only a 2xx within the timeout is delivered: a redirect (not followed),
// a client or server error, and an answer slower than the timeout are
// failed attempts, retried after the backoff, with the answer (or the
// time-out) in the log.
func TestOnlyA2xxInTimeIsDelivered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/slow":
				// Answers only when the sender has given up waiting (the
				// body read, the server notices the closed connection).
				_, _ = io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
				case <-time.After(30 * time.Second): // real time: a bound should the close go unnoticed
				}
				w.WriteHeader(http.StatusOK)
			case "/redirect":
				http.Redirect(w, r, "/200", http.StatusFound)
			default:
				var code int
				for _, c := range []int{200, 204, 299, 404, 500} {
					if r.URL.Path == "/"+itoa(c) {
						code = c
					}
				}
				w.WriteHeader(code)
			}
		}))
		defer srv.Close()
		for i, c := range []struct {
			path      string
			delivered bool
			lastError string
		}{
			{"/200", true, ""},
			{"/204", true, ""},
			{"/299", true, ""},
			{"/redirect", false, "HTTP 302"},
			{"/404", false, "HTTP 404"},
			{"/500", false, "HTTP 500"},
			{"/slow", false, "timed out: "}, // "context deadline exceeded" or "timeout awaiting response headers"; never the URL
		} {
			uid, pays := seedTopUp(t, db, "u"+itoa(i)+"@example.com", 1)
			if _, _, err := svc.Create(ctx, uid, srv.URL+c.path, webhook.Types(), nil); err != nil {
				t.Fatal(err)
			}
			enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": c.path}, CreatedAt: clk.Now()})
			// Long enough for a loaded machine's round trip to the fast
			// answers; /slow answers only once the sender gave up.
			s := webhook.NewSender(svc, webhook.SenderOptions{Timeout: 2 * time.Second, Jitter: func() float64 { return 0 }})
			if n, err := s.DeliverDue(ctx); n != 1 || err != nil {
				t.Fatalf("%s: claimed %d, %v", c.path, n, err)
			}
			d := deliveryRowOf(t, db, pays[0])
			if (d.Status == webhook.StatusDelivered) != c.delivered || d.Attempts != 1 || !strings.Contains(d.LastError, c.lastError) {
				t.Errorf("%s: %s after %d attempt(s), last error %q; want delivered=%v, error with %q", c.path, d.Status, d.Attempts, d.LastError, c.delivered, c.lastError)
			}
			if !c.delivered && (d.Status != webhook.StatusPending || !d.NextAttemptAt.Equal(clk.Now().Add(7500*time.Millisecond))) {
				t.Errorf("%s: not retried after the backoff: %s, next %s", c.path, d.Status, d.NextAttemptAt)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// One Tick of the background loop delivers everything due, each place
// filled again as its attempt ends: a backlog does not wait a period per
// batch (here one endpoint's, one attempt at a time). A kick reaches the
// loop once, however often it is given.
func TestSenderTickDrainsFullBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc, rec := subscribed(t, db, "tick@example.com", 7)
		s := webhook.NewSender(svc, webhook.SenderOptions{Batch: 3})
		s.Tick(context.Background())
		if got := len(rec.received()); got != 7 {
			t.Errorf("one tick delivered %d of 7", got)
		}
		s.Kick()
		s.Kick()
		for i, want := range []bool{true, false} {
			select {
			case <-s.Kicks():
				if !want {
					t.Error("a second wake-up from two kicks")
				}
			default:
				if want {
					t.Errorf("kick %d did not reach Kicks", i)
				}
			}
		}
	})
}

// subscribed is a service (on a stopped clock) whose one user's endpoint
// is a receiver until the test ends, with n credits of theirs queued.
func subscribed(t *testing.T, db *store.DB, email string, n int) (*webhook.Service, *receiver) {
	t.Helper()
	ctx := context.Background()
	clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	svc, err := webhook.New(db, clk.Now, webhook.Options{SessionSecret: secretKey, AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := &receiver{t: t, now: clk.Now}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	uid, pays := seedTopUp(t, db, email, n)
	if _, rec.secret, err = svc.Create(ctx, uid, srv.URL, webhook.Types(), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range pays {
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: p, Type: webhook.TypeCredited, TopUp: map[string]any{"p": p}, CreatedAt: clk.Now()})
	}
	return svc, rec
}

// gatedTransport holds each request until release is closed, then sends
// it: a delivery under way for as long as the test needs (a slow
// network), its start told on started.
type gatedTransport struct {
	next    http.RoundTripper
	started chan<- struct{}
	release <-chan struct{}
}

func (g gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	g.started <- struct{}{}
	<-g.release
	return g.next.RoundTrip(r)
}

// A shutdown (Tick's context ending) does not cut the attempts under way:
// one whose answer comes after the shutdown began is delivered; one whose
// endpoint is slower than the timeout is an ordinary failed attempt (timed
// out, retried after the backoff), never "context canceled".
func TestShutdownLetsAttemptsUnderWayFinish(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc, clk := newService(t, db)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.URL.Path == "/slow" {
				select { // until the sender gives up waiting
				case <-r.Context().Done():
				case <-time.After(30 * time.Second): // real time: a bound should the close go unnoticed
				}
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		defer srv.Close()
		for i, c := range []struct {
			name, path string
			timeout    time.Duration
			status     string
			lastError  string
		}{
			{"answers after the shutdown began", "/ok", time.Minute, webhook.StatusDelivered, ""},
			{"slower than the timeout", "/slow", 200 * time.Millisecond, webhook.StatusPending, "timed out: "},
		} {
			uid, pays := seedTopUp(t, db, "shutdown"+itoa(i)+"@example.com", 1)
			ep, _, err := svc.Create(context.Background(), uid, srv.URL+c.path, webhook.Types(), nil)
			if err != nil {
				t.Fatal(err)
			}
			enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": c.path}, CreatedAt: clk.Now()})
			started, release := make(chan struct{}, 1), make(chan struct{})
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			s := webhook.NewSender(svc, webhook.SenderOptions{Timeout: c.timeout, Jitter: func() float64 { return 0 },
				Client: &http.Client{Transport: gatedTransport{next: tr, started: started, release: release}}})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.Tick(ctx)
			}()
			select {
			case <-started:
			case <-time.After(10 * time.Second): // real time: a bound on another goroutine
				t.Fatalf("%s: no attempt started", c.name)
			}
			cancel() // SIGTERM, the request under way
			close(release)
			select {
			case <-done:
			case <-time.After(30 * time.Second): // real time: a bound on another goroutine
				t.Fatalf("%s: Tick did not return once its attempt ended", c.name)
			}
			d := deliveryRowOf(t, db, pays[0], ep.ID)
			if d.Status != c.status || d.Attempts != 1 || !strings.Contains(d.LastError, c.lastError) || strings.Contains(d.LastError, "cancel") {
				t.Errorf("%s: %s after %d attempt(s), last error %q; want %s, error with %q", c.name, d.Status, d.Attempts, d.LastError, c.status, c.lastError)
			}
			if c.status == webhook.StatusPending && !d.NextAttemptAt.Equal(clk.Now().Add(7500*time.Millisecond)) {
				t.Errorf("%s: not retried after the backoff: next %s", c.name, d.NextAttemptAt)
			}
		}
	})
}
