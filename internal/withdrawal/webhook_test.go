package withdrawal_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// signedReceiver is a partner's endpoint: it checks each delivery's
// signature against its secret (on the test's clock) and keeps the
// bodies in the order they arrived.
type signedReceiver struct {
	t      *testing.T
	now    func() time.Time
	secret string
	mu     sync.Mutex
	bodies []map[string]any
	ids    []string
}

func (r *signedReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := webhook.Verify(r.secret, req.Header.Get(webhook.HeaderSignature), body, r.now(), 5*time.Minute); err != nil {
		r.t.Errorf("a delivery with a bad signature: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		r.t.Errorf("body %q: %v", body, err)
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, ev)
	r.ids = append(r.ids, req.Header.Get(webhook.HeaderEventID))
	r.mu.Unlock()
}

// TestWithdrawalWebhooks: a withdrawal paid, then returned, another
// failed by the provider, a third rejected by an admin and a fourth
// cancelled by its owner. Each of paid, failed (the rejection too) and
// returned wrote, in its move's transaction, one outbox row per endpoint
// subscribed to it (none for the endpoint that is not, none for the
// cancel), naming the withdrawal, its body the withdrawal as the API
// shows it; a move replayed (the same edge again) writes nothing more.
// The sender delivers each once, signed with the endpoint's secret, in
// order (paid before returned).
func TestWithdrawalWebhooks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db, "jibit")
		withdrawaltest.Fund(t, db, e.wallet, 600_000_000)
		adminID, _ := withdrawaltest.User(t, db, "admin@example.com")
		var kicks atomic.Int64 // the worker's rounds move withdrawals in parallel
		e.st.OnWebhookQueued(func() { kicks.Add(1) })
		hooks, err := webhook.New(db, e.clock.Now, webhook.Options{SessionSecret: []byte("0123456789abcdef0123456789abcdef-test"), AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		rec := &signedReceiver{t: t, now: e.clock.Now}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		ep, secret, err := hooks.Create(ctx, e.userID, srv.URL+"/hooks",
			[]string{webhook.TypeWithdrawalPaid, webhook.TypeWithdrawalFailed, webhook.TypeWithdrawalReturned}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.secret = secret
		other, _, err := hooks.Create(ctx, e.userID, srv.URL+"/credited", []string{webhook.TypeCredited}, nil)
		if err != nil {
			t.Fatal(err)
		}

		paid, failed := e.request(3_000_000), e.request(2_000_000)
		e.round(time.Second)
		if _, err := e.bank.Payouts().Settle(payouts.Jibit, paid.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.bank.Payouts().Fail(payouts.Jibit, failed.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Minute)
		if _, err := e.bank.Payouts().Return(payouts.Jibit, paid.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Hour)
		rejected := e.request(550_000_000) // above the review threshold: waits for an admin
		if _, err := e.svc.Reject(ctx, adminID, rejected.PublicID, "not this one"); err != nil {
			t.Fatal(err)
		}
		cancelled := e.request(1_000_000)
		if _, err := e.svc.Cancel(ctx, e.userID, cancelled.PublicID); err != nil {
			t.Fatal(err)
		}
		for w, want := range map[*withdrawal.Withdrawal]withdrawal.Status{&paid: withdrawal.StatusReturned, &failed: withdrawal.StatusFailed,
			&rejected: withdrawal.StatusRejected, &cancelled: withdrawal.StatusCancelled} {
			if *w = e.get(*w); w.Status != want {
				t.Fatalf("%s is %s, want %s", w.PublicID, w.Status, want)
			}
		}

		// Replays of edges already taken: nothing moves, nothing is queued.
		if _, err := e.st.Move(ctx, withdrawal.Move{ID: rejected.ID, PublicID: rejected.PublicID, From: withdrawal.StatusRequested,
			To: withdrawal.StatusRejected, Actor: withdrawal.ActorAdmin, Now: e.clock.Now()}); !errors.Is(err, withdrawal.ErrNotMoved) {
			t.Fatalf("a rejection replayed: %v", err)
		}
		if _, ok, err := e.st.Claim(ctx, withdrawal.Claim{ID: paid.ID, Statuses: []withdrawal.Status{withdrawal.StatusReturned}, Token: "replay",
			Now: e.clock.Now(), Until: e.clock.Now().Add(time.Minute)}); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		for _, edge := range [][2]withdrawal.Status{{withdrawal.StatusSubmitted, withdrawal.StatusPaid}, {withdrawal.StatusPaid, withdrawal.StatusReturned}} {
			if _, err := e.st.Move(ctx, withdrawal.Move{ID: paid.ID, PublicID: paid.PublicID, From: edge[0], To: edge[1],
				Actor: withdrawal.ActorWorker, Lease: "replay", Now: e.clock.Now()}); !errors.Is(err, withdrawal.ErrNotMoved) {
				t.Fatalf("%s → %s replayed: %v", edge[0], edge[1], err)
			}
		}

		ds, err := hooks.Deliveries(ctx, ep.ID, 100)
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			typ        string
			withdrawal int64
		}
		want := map[row]string{ // → the withdrawal's status in the body
			{webhook.TypeWithdrawalPaid, paid.ID}:       "paid",
			{webhook.TypeWithdrawalReturned, paid.ID}:   "returned",
			{webhook.TypeWithdrawalFailed, failed.ID}:   "failed",
			{webhook.TypeWithdrawalFailed, rejected.ID}: "rejected",
		}
		if len(ds) != len(want) {
			t.Fatalf("%d deliveries, want %d: %+v", len(ds), len(want), ds)
		}
		views := map[int64]withdrawal.View{paid.ID: withdrawal.ViewOf(paid), failed.ID: withdrawal.ViewOf(failed), rejected.ID: withdrawal.ViewOf(rejected)}
		got := map[row]bool{}
		for i, d := range ds {
			if d.WithdrawalID == nil || d.TopUpID != nil || d.TransferID != nil || d.Status != webhook.StatusPending {
				t.Errorf("delivery %d: %+v", i, d)
				continue
			}
			r := row{d.Type, *d.WithdrawalID}
			status, ok := want[r]
			if !ok || got[r] {
				t.Errorf("delivery %d: %s of withdrawal %d (unexpected or twice)", i, d.Type, *d.WithdrawalID)
				continue
			}
			got[r] = true
			var body struct {
				EventID    string          `json:"event_id"`
				Type       string          `json:"type"`
				CreatedAt  time.Time       `json:"created_at"`
				Withdrawal withdrawal.View `json:"withdrawal"`
			}
			if err := json.Unmarshal([]byte(d.Body), &body); err != nil {
				t.Fatal(err)
			}
			v := views[r.withdrawal]
			if body.EventID != d.EventID || body.Type != d.Type || body.Withdrawal.ID != v.ID || body.Withdrawal.Status != status ||
				body.Withdrawal.AmountRials != v.AmountRials || body.Withdrawal.IBANLast4 != "0042" || body.Withdrawal.Bank.Code != "017" ||
				body.Withdrawal.Bank.NameEN != "Bank Melli Iran" || body.Withdrawal.BankAccountID != e.account {
				t.Errorf("delivery %d's body: %s", i, d.Body)
			}
		}
		if ds, err := hooks.Deliveries(ctx, other.ID, 100); err != nil || len(ds) != 0 {
			t.Fatalf("the endpoint not subscribed got %d deliveries (%v)", len(ds), err)
		}
		if kicks.Load() != int64(len(want)) {
			t.Errorf("the sender was woken %d times, want %d", kicks.Load(), len(want))
		}

		// One attempt at a time to an endpoint: round after round until
		// nothing is due.
		s := webhook.NewSender(hooks, webhook.SenderOptions{})
		for range 10 {
			n, err := s.DeliverDue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.bodies) != len(want) {
			t.Fatalf("received %d events, want %d", len(rec.bodies), len(want))
		}
		seen := map[string]bool{}
		var paidAt, returnedAt int
		for i, b := range rec.bodies {
			if seen[rec.ids[i]] || b["event_id"] != rec.ids[i] {
				t.Errorf("event %d: id %s, body %v", i, rec.ids[i], b)
			}
			seen[rec.ids[i]] = true
			switch b["type"] {
			case webhook.TypeWithdrawalPaid:
				paidAt = i
			case webhook.TypeWithdrawalReturned:
				returnedAt = i
			}
		}
		if paidAt > returnedAt {
			t.Errorf("withdrawal.returned arrived before withdrawal.paid")
		}
	})
}
