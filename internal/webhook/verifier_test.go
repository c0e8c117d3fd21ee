package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// The receiver docs/webhooks.md shows, exactly (TestDocsVerifier compares).
// docs:verifier-begin
func kifpoolHook(secret string, store func(eventID string, body []byte) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var ts string
		var sigs []string
		for _, kv := range strings.Split(r.Header.Get("Kifpool-Signature"), ",") {
			if k, v, _ := strings.Cut(kv, "="); k == "t" {
				ts = v
			} else if k == "v1" {
				sigs = append(sigs, v) // two while the secret is rotated: any may match
			}
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts + "." + string(body)))
		want := []byte(hex.EncodeToString(mac.Sum(nil)))
		ok := false
		for _, sig := range sigs {
			ok = hmac.Equal([]byte(sig), want) || ok
		}
		sec, _ := strconv.ParseInt(ts, 10, 64)
		if !ok || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		// The event's id from the signed body (the Kifpool-Event-Id header
		// repeats it, unsigned). Store first (a unique event id makes a
		// repeat a no-op), answer, then process stored events elsewhere.
		var ev struct {
			EventID string `json:"event_id"`
		}
		if err := json.Unmarshal(body, &ev); err != nil || ev.EventID == "" {
			http.Error(w, "no event id", http.StatusBadRequest)
			return
		}
		if err := store(ev.EventID, body); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// docs:verifier-end

// The guide's receiver is the code above, byte for byte; it accepts the
// sender's real deliveries, refuses a forged one, and keeps one row per
// event however often it arrives.
func TestDocsVerifier(t *testing.T) {
	src, err := os.ReadFile("verifier_test.go")
	if err != nil {
		t.Fatal(err)
	}
	code := string(src)
	code = code[strings.Index(code, "// docs:verifier-begin\n")+len("// docs:verifier-begin\n") : strings.Index(code, "\n// docs:verifier-end")]
	doc, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+code+"```\n") {
		t.Fatalf("docs/webhooks.md does not show the tested receiver; it should hold:\n%s", code)
	}

	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, err := webhook.New(db, nil, webhook.Options{SessionSecret: secretKey, AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var secret string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			kifpoolHook(secret, func(id string, _ []byte) error {
				mu.Lock()
				defer mu.Unlock()
				seen[id]++
				return nil
			})(w, r)
		}))
		defer srv.Close()
		uid, pays := seedTopUp(t, db, "a@example.com", 1)
		var ep webhook.Endpoint
		if ep, secret, err = svc.Create(ctx, uid, srv.URL, webhook.Types(), nil); err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "p"}, CreatedAt: time.Now()})
		if n, err := webhook.NewSender(svc, webhook.SenderOptions{}).DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("deliver: %d %v", n, err)
		}
		var d webhook.Delivery
		db.Gorm.Take(&d)
		if d.Status != webhook.StatusDelivered {
			t.Fatalf("the guide's receiver refused a real delivery: %+v", d)
		}
		// The same delivery again (a lost answer): stored once.
		again, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader([]byte(d.Body)))
		again.Header.Set("Kifpool-Event-Id", d.EventID)
		again.Header.Set("Kifpool-Signature", webhook.Sign(secret, time.Now(), []byte(d.Body)))
		if resp, err := http.DefaultClient.Do(again); err != nil || resp.StatusCode != 204 {
			t.Fatalf("repeat: %v %v", resp, err)
		}
		// Seen once, replayed within the five minutes under another id
		// header: the signed body's id is the one stored.
		renamed, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader([]byte(d.Body)))
		renamed.Header.Set("Kifpool-Event-Id", "evt_another")
		renamed.Header.Set("Kifpool-Signature", again.Header.Get("Kifpool-Signature"))
		if resp, err := http.DefaultClient.Do(renamed); err != nil || resp.StatusCode != 204 {
			t.Fatalf("replayed under another id header: %v %v", resp, err)
		}
		forged, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader([]byte(d.Body)))
		forged.Header.Set("Kifpool-Signature", webhook.Sign("whsec_guess", time.Now(), []byte(d.Body)))
		if resp, err := http.DefaultClient.Do(forged); err != nil || resp.StatusCode != 400 {
			t.Fatalf("forged: %v %v", resp, err)
		}
		stale, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader([]byte(d.Body)))
		stale.Header.Set("Kifpool-Signature", webhook.Sign(secret, time.Now().Add(-time.Hour), []byte(d.Body)))
		if resp, err := http.DefaultClient.Do(stale); err != nil || resp.StatusCode != 400 {
			t.Fatalf("replayed an hour later: %v %v", resp, err)
		}
		// The receiver's own store dedupes: the map counts calls per id; a
		// database's unique key would keep one row.
		if len(seen) != 1 || seen[d.EventID] != 3 {
			t.Fatalf("stored %v", seen)
		}
		// The secret rotated: within the grace period each delivery
		// carries two v1, and the receiver accepts it whichever of the
		// two secrets it holds (the new one deployed, or not yet).
		previous := secret
		_, rotated, err := svc.Rotate(ctx, uid, ep.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, holds := range []string{rotated, previous} {
			secret = holds
			enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"id": "p"}, CreatedAt: time.Now()})
			if n, err := webhook.NewSender(svc, webhook.SenderOptions{}).DeliverDue(ctx); n != 1 || err != nil {
				t.Fatalf("deliver after the rotation: %d %v", n, err)
			}
			if d := deliveryRow(t, db, webhook.TypeCredited); d.Status != webhook.StatusDelivered {
				t.Fatalf("the guide's receiver holding the %s secret refused a delivery during the rotation: %+v",
					map[bool]string{true: "new", false: "previous"}[holds == rotated], d)
			}
		}
	})
}
