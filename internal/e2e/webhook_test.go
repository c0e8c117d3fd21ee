package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/webhook"
)

// The webhook settings of the e2e serve: loopback receivers, quick polls
// and short backoffs so that retries fit in a run.
var hookServeEnv = map[string]string{
	"WEBHOOK_ALLOW_LOOPBACK": "1",
	"WEBHOOK_INTERVAL":       "200ms",
	"WEBHOOK_BACKOFF_BASE":   "200ms",
	"WEBHOOK_BACKOFF_MAX":    "2s",
}

// hookSink is the partners' side: one real HTTP server in the test's
// process with an endpoint per user (its own secret). It verifies every
// delivery's signature and deduplicates by event id, as docs/webhooks.md
// tells receivers to. It answers 500 to the first attempt of every event
// (500, then 200), and 503 to everything while down.
type hookSink struct {
	srv     *httptest.Server
	mu      sync.Mutex
	secrets map[string]string         // path → signing secret
	events  map[string]map[string]any // event id → body
	tried   map[string]bool           // event ids answered 500 once
	calls   int
	dups    int // deliveries of an event already stored (at least once)
	bad     []string
	down    atomic.Bool
}

func newHookSink(t *testing.T) *hookSink {
	s := &hookSink{secrets: map[string]string{}, events: map[string]map[string]any{}, tried: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *hookSink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.down.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	secret, ok := s.secrets[r.URL.Path]
	if !ok {
		s.bad = append(s.bad, "unknown path "+r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if err := webhook.Verify(secret, r.Header.Get(webhook.HeaderSignature), body, time.Now(), 5*time.Minute); err != nil {
		s.bad = append(s.bad, fmt.Sprintf("%s: %v", r.URL.Path, err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		s.bad = append(s.bad, fmt.Sprintf("body %q: %v", body, err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id, _ := ev["event_id"].(string)
	if id == "" || id != r.Header.Get(webhook.HeaderEventID) {
		s.bad = append(s.bad, fmt.Sprintf("event id %q, header %q", id, r.Header.Get(webhook.HeaderEventID)))
	}
	if !s.tried[id] {
		s.tried[id] = true
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if _, seen := s.events[id]; seen {
		s.dups++
	} else {
		s.events[id] = ev
	}
	w.WriteHeader(http.StatusNoContent)
}

// register gives each user an endpoint subscribed to every event type,
// once they used the link that confirms their address (an unconfirmed
// account gets no endpoint).
func (s *hookSink) register(t *testing.T, db *store.DB, emails []string) {
	t.Helper()
	svc, err := webhook.New(db, nil, webhook.Options{SessionSecret: []byte(testSecret), AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, email := range emails {
		authtest.ConfirmEmail(t, db, email)
		var uid int64
		if err := db.Gorm.Raw(`SELECT id FROM users WHERE email = ?`, email).Scan(&uid).Error; err != nil || uid == 0 {
			t.Fatalf("user %s: %v", email, err)
		}
		path := fmt.Sprintf("/hooks/%d", uid)
		_, secret, err := svc.Create(context.Background(), uid, s.srv.URL+path, webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		s.secrets[path] = secret
		s.mu.Unlock()
	}
}

// flap takes the receiver down for 1–3 s every few seconds until ctx ends.
func (s *hookSink) flap(ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	for {
		if !sleepCtx(ctx, time.Duration(1000+rng.IntN(3000))*time.Millisecond) {
			return
		}
		s.down.Store(true)
		sleepCtx(ctx, time.Duration(1000+rng.IntN(2000))*time.Millisecond)
		s.down.Store(false)
	}
}

// waitDelivered waits until no webhook delivery is pending.
// deliveryWait bounds a wait for a delivery after serve was killed: a
// sender killed mid-attempt (or after its receiver answered, before it
// recorded the answer) holds its claim for the sender's lease, 60 s (five
// times the 10 s delivery timeout plus 10 s), before a restarted serve
// may retry it; then the retry and its backoff.
const deliveryWait = 100 * time.Second

func waitDelivered(t *testing.T, db *store.DB, limit time.Duration) {
	t.Helper()
	testwait.Eventually(t, limit, "no webhook delivery pending", func() bool {
		var n int64
		if err := db.Gorm.Raw(`SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

// check compares the credited set with the topup.credited events the
// deduplicating receiver kept: equal, one event per credit, every
// signature valid, nothing given up.
func (s *hookSink) check(t *testing.T, db *store.DB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bad {
		t.Errorf("webhook receiver: %s", b)
	}
	credited := map[string]bool{}
	for _, p := range allTopUps(t, db) {
		if p.Status == topup.StatusCredited {
			credited[p.PublicID] = true
		}
	}
	delivered := map[string]int{}
	for _, ev := range s.events {
		if ev["type"] != webhook.TypeCredited {
			continue
		}
		tu, _ := ev["topup"].(map[string]any)
		id, _ := tu["id"].(string)
		delivered[id]++
		if tu["status"] != "credited" || tu["ref_id"] == nil || tu["credited_at"] == nil {
			t.Errorf("topup.credited of %s shows %v", id, tu)
		}
	}
	for id := range credited {
		if delivered[id] != 1 {
			t.Errorf("credited payment %s: %d topup.credited events delivered, want 1", id, delivered[id])
		}
	}
	for id := range delivered {
		if !credited[id] {
			t.Errorf("topup.credited delivered for %s, which is not credited", id)
		}
	}
	var failed int64
	db.Gorm.Raw(`SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'delivered'`).Scan(&failed)
	if failed != 0 {
		t.Errorf("%d webhook deliveries not delivered", failed)
	}
	if len(credited) == 0 {
		t.Error("nothing was credited: the webhook check proves nothing")
	}
	types := map[string]int{}
	for _, ev := range s.events {
		types[ev["type"].(string)]++
	}
	t.Logf("webhooks: %d credited, events received %v, %d calls, %d duplicates dropped by event id",
		len(credited), types, s.calls, s.dups)
}

// TestWebhookAcrossCrashes runs the real binary on SQLite and PostgreSQL:
// a payer pays while the partner's receiver is down; serve kills itself
// right after the credit committed (after_credit), before any delivery;
// restarted, it retries into the down receiver, which then comes back
// and answers 500 to the first attempt, then 200. A second top-up's
// delivery is answered 2xx and serve dies before recording it
// (after_webhook_sent): it is sent again after the restart and the
// receiver drops the repeat by event id. Each credit reaches the
// deduplicating receiver exactly once, signed.
func TestWebhookAcrossCrashes(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			_, bankURL := startBank(t)
			bank := newBankClient(bankURL)
			env := map[string]string{"WORKER_INTERVAL": "100ms", "PENDING_RECHECK_AFTER": "1s"}
			for k, v := range hookServeEnv {
				env[k] = v
			}
			srv, appURL := newServe(t, "serve", dbURL, bankURL, env)
			if err := srv.start(); err != nil {
				t.Fatal(err)
			}
			db := openDB(t, dbURL)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			br := newBrowser(appURL)
			email := "hooks@e2e.example"
			if err := br.signUp(ctx, email); err != nil {
				t.Fatal(err)
			}
			sink := newHookSink(t)
			sink.register(t, db, []string{email})

			pay := func(point string) string {
				t.Helper()
				csrf, token, err := br.topUpForm(ctx)
				if err != nil {
					t.Fatal(err)
				}
				r, err := br.submitTopUp(ctx, csrf, token, 5000)
				authority := authorityOf(bankURL, r.location)
				if err != nil || authority == "" {
					t.Fatalf("submit: %d %q %v", r.status, r.location, err)
				}
				srv.kill()
				srv.setEnv(testhook.EnvCrashAt, point)
				if err := srv.start(); err != nil {
					t.Fatalf("restart armed at %s: %v", point, err)
				}
				redirect, status, err := bank.finish(ctx, authority, "pay")
				if err != nil || status != http.StatusOK {
					t.Fatalf("pay: %d %v", status, err)
				}
				_, _ = br.do(ctx, http.MethodGet, redirect, nil)
				select {
				case <-srv.exited():
				case <-time.After(60 * time.Second):
					t.Fatalf("serve never reached %s", point)
				}
				if srv.logCount("testhook: SIGKILL at "+point) == 0 {
					t.Fatalf("serve exited, but not at %s", point)
				}
				srv.setEnv(testhook.EnvCrashAt, "")
				if err := srv.start(); err != nil {
					t.Fatal(err)
				}
				return authority
			}

			// 1. Down receiver; killed between the credit and the delivery.
			sink.down.Store(true)
			first := pay(testhook.AfterCredit)
			if p, ok := topUpByAuthority(t, db, first); !ok || p.Status != topup.StatusCredited {
				t.Fatalf("after the crash at after_credit: %+v", p)
			}
			// The restarted serve keeps trying the down receiver. The
			// store kicks the sender when the credit commits, so the
			// killed serve may have claimed the row (attempts 1, leased
			// for the sender's 60 s) in the instant before its SIGKILL:
			// then the retry waits for that lease to end, as it must.
			testwait.Eventually(t, deliveryWait, "a retry into the down receiver", func() bool {
				var attempts int64
				db.Gorm.Raw(`SELECT COALESCE(MAX(attempts), 0) FROM webhook_deliveries`).Scan(&attempts)
				return attempts >= 2
			})
			sink.down.Store(false) // back: 500 to the first attempt, then 200
			waitDelivered(t, db, deliveryWait)

			// 2. Delivered (2xx) but not recorded: sent again, deduplicated.
			// The killed serve had claimed the row: its retry waits for
			// the lease (deliveryWait).
			second := pay(testhook.AfterWebhookSent)
			waitDelivered(t, db, deliveryWait)
			if first == second {
				t.Fatal("one authority for two top-ups")
			}
			sink.check(t, db)
			sink.mu.Lock()
			dups := sink.dups
			sink.mu.Unlock()
			if dups < 1 {
				t.Errorf("the delivery answered before the crash was not sent again (%d repeats)", dups)
			}
		})
	}
}
