package webhook_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// hit is one request a capturing receiver got.
type hit struct {
	header string
	body   []byte
}

// capture answers 200 to every delivery and keeps its signature header
// and body.
type capture struct {
	mu   sync.Mutex
	hits []hit
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.hits = append(c.hits, hit{r.Header.Get(webhook.HeaderSignature), body})
	c.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// take returns the requests received since the last take.
func (c *capture) take() []hit {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.hits
	c.hits = nil
	return out
}

// v1s counts the v1= values of a signature header.
func v1s(header string) int { return strings.Count(header, ",v1=") }

// A rotated endpoint keeps its row and its queue: the delivery queued
// before the rotation is still pending after it, and is sent signed with
// both secrets (two v1=, the new first), each of which verifies; past the
// grace period (the fake clock advanced) only the new secret signs. A
// second rotation within the grace period makes the then-current secret
// the previous one (the first no longer verifies). Another user cannot
// rotate the endpoint: ErrNotFound, nothing changes.
func TestRotate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		rec := &capture{}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		uid, pays := seedTopUp(t, db, "rotate@example.com", 4)
		other, _ := seedTopUp(t, db, "intruder@example.com", 0)
		ep, first, err := svc.Create(ctx, uid, srv.URL+"/hook", []string{webhook.TypeCredited}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := webhook.NewSender(svc, webhook.SenderOptions{Jitter: func() float64 { return 0 }})
		verify := func(secret string, h hit) error {
			return webhook.Verify(secret, h.header, h.body, clk.Now(), 5*time.Minute)
		}
		event := func(i int) {
			t.Helper()
			enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[i], Type: webhook.TypeCredited, TopUp: map[string]any{"i": i}, CreatedAt: clk.Now()})
		}
		deliver := func() hit {
			t.Helper()
			if n := drain(t, s); n != 1 {
				t.Fatalf("delivered %d, want 1", n)
			}
			got := rec.take()
			if len(got) != 1 {
				t.Fatalf("received %d requests, want 1", len(got))
			}
			return got[0]
		}

		// Never rotated: one v1.
		event(0)
		if h := deliver(); v1s(h.header) != 1 || verify(first, h) != nil {
			t.Fatalf("before any rotation: %q", h.header)
		}

		// Queued while the partner is down, then the secret is rotated:
		// the delivery is still there, untouched.
		event(1)
		queued := deliveryRow(t, db, webhook.TypeCredited)
		if queued.Status != webhook.StatusPending {
			t.Fatalf("queued delivery %+v", queued)
		}
		rotated, second, err := svc.Rotate(ctx, uid, ep.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if second == first || !strings.HasPrefix(second, "whsec_") || rotated.ID != ep.ID ||
			rotated.PreviousSecretUntil == nil || !rotated.PreviousSecretUntil.Equal(clk.Now().Add(webhook.RotationGrace)) {
			t.Fatalf("rotated %+v", rotated)
		}
		if strings.Contains(rotated.SecretEnc, second) || rotated.PreviousSecretEnc == nil || *rotated.PreviousSecretEnc != ep.SecretEnc {
			t.Fatal("the new secret is stored in the clear, or the previous one is not the secret the endpoint had")
		}
		if d := deliveryRow(t, db, webhook.TypeCredited); d.ID != queued.ID || d.Status != webhook.StatusPending || d.Body != queued.Body {
			t.Fatalf("the queued delivery after the rotation: %+v", d)
		}
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?`, ep.ID); n != 2 {
			t.Fatalf("%d deliveries after the rotation, want 2", n)
		}

		// Within the grace period: both secrets sign, the new first.
		clk.Add(time.Hour)
		h := deliver()
		if v1s(h.header) != 2 || verify(second, h) != nil || verify(first, h) != nil {
			t.Fatalf("within the grace period: %q", h.header)
		}
		if want := webhook.SignAll(clk.Now(), h.body, second, first); h.header != want {
			t.Fatalf("header %q, want %q", h.header, want)
		}
		if d := deliveryRow(t, db, webhook.TypeCredited); d.ID != queued.ID || d.Status != webhook.StatusDelivered {
			t.Fatalf("the delivery queued before the rotation: %+v", d)
		}

		// Another user cannot rotate it: not found, nothing changes.
		before, err := svc.Get(ctx, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, sec, err := svc.Rotate(ctx, other, ep.ID, nil); !errors.Is(err, webhook.ErrNotFound) || sec != "" {
			t.Fatalf("another user's rotation: %q %v", sec, err)
		}
		if _, _, err := svc.Rotate(ctx, uid, ep.ID+1000, nil); !errors.Is(err, webhook.ErrNotFound) {
			t.Fatalf("no such endpoint: %v", err)
		}
		after, err := svc.Get(ctx, ep.ID)
		if err != nil || after.SecretEnc != before.SecretEnc || *after.PreviousSecretEnc != *before.PreviousSecretEnc ||
			!after.PreviousSecretUntil.Equal(*before.PreviousSecretUntil) {
			t.Fatalf("a refused rotation changed the endpoint: %+v %v", after, err)
		}

		// Past the grace period: the new secret only.
		clk.Add(webhook.RotationGrace)
		event(2)
		h = deliver()
		if v1s(h.header) != 1 || verify(second, h) != nil || !errors.Is(verify(first, h), webhook.ErrBadSignature) {
			t.Fatalf("after the grace period: %q", h.header)
		}

		// Rotated twice within a grace period: the previous secret is the
		// one current at the second rotation; the first signs no more.
		_, third, err := svc.Rotate(ctx, uid, ep.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Minute)
		_, fourth, err := svc.Rotate(ctx, uid, ep.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		event(3)
		h = deliver()
		if v1s(h.header) != 2 || verify(fourth, h) != nil || verify(third, h) != nil || !errors.Is(verify(second, h), webhook.ErrBadSignature) {
			t.Fatalf("after a second rotation within the grace period: %q", h.header)
		}
	})
}
