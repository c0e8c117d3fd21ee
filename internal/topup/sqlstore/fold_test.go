package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// TestCreditFoldWritesTheSameRows: the credit's event, outbox rows and
// gateway calls, written on PostgreSQL in one statement after the move
// (the fold), are the rows SQLite's statement-by-statement path writes for
// the same credit: event columns, one delivery per subscribed enabled
// endpoint with the same body, the calls cleaned alike, in order. Both
// the move from the status as read and the one from the status the
// locked row has are compared, and each queues (and kicks for) the
// deliveries it wrote.
func TestCreditFoldWritesTheSameRows(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 30, 0, 123_000_000, time.UTC)
	var got [2]string
	for k, d := range []store.Dialect{store.SQLite, store.Postgres} {
		db := storetest.New(t, d)
		got[k] = creditRows(t, db, now)
		topuptest.CheckInvariants(t, db)
	}
	if got[0] != got[1] {
		t.Fatalf("the fold (postgres) wrote other rows than sqlite:\n--- sqlite\n%s\n--- postgres\n%s", got[0], got[1])
	}
	if !strings.Contains(got[1], "/credits") || !strings.Contains(got[1], "inquire") || !strings.Contains(got[1], "verify") {
		t.Fatalf("rows compared lack deliveries or calls:\n%s", got[1])
	}
}

// creditRows credits two payments at now on db (one as read, one failed
// meanwhile) and returns every row the credits wrote, ids replaced by
// what they name.
func creditRows(t *testing.T, db *store.DB, now time.Time) string {
	t.Helper()
	ctx := context.Background()
	f := newFixture(t, db)
	f.now = now
	var kicks atomic.Int64
	f.st = sqlstore.New(db).OnWebhookQueued(func() { kicks.Add(1) })
	hooks, err := webhook.New(db, func() time.Time { return now }, webhook.Options{SessionSecret: []byte("0123456789abcdef0123456789abcdef"), AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []struct {
		url   string
		types []string
		off   bool
	}{
		{"http://127.0.0.1:1/all", webhook.Types(), false},
		{"http://127.0.0.1:1/credits", []string{webhook.TypeCredited}, false},
		{"http://127.0.0.1:1/failed", []string{webhook.TypeFailed}, false},
		{"http://127.0.0.1:1/off", webhook.Types(), true},
	} {
		e, _, err := hooks.Create(ctx, f.user, ep.url, ep.types, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ep.off {
			if err := hooks.Disable(ctx, f.user, e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out strings.Builder
	for i, from := range []topup.Status{topup.StatusAwaitingPayment, topup.StatusFailed} {
		pub := fmt.Sprintf("fold%020d", i)
		auth := fmt.Sprintf("A%035d", i)
		p := topup.TopUp{PublicID: pub, UserID: f.user, WalletID: f.wallet.ID, AmountRials: 70_000, Gateway: "fake", FormToken: formtoken.New(),
			Status: topup.StatusCreated, CreatedAt: now, UpdatedAt: now, OpenedAt: &now}
		if err := f.st.Create(ctx, &p); err != nil {
			t.Fatal(err)
		}
		p = f.move(p, topup.StatusAwaitingPayment, topup.ActorSubmit, "", topup.Fields{Authority: &auth})
		read := p
		if from == topup.StatusFailed { // failed meanwhile: the credit moves from the locked row's status
			tok := f.claim(p.ID, []topup.Status{p.Status})
			f.move(p, topup.StatusFailed, topup.ActorWorker, tok, topup.Fields{})
		}
		ref, amount, pan, code := int64(8100+i), p.AmountRials, "6037-99**-****-1234", 100
		m := topup.Move{TopUpID: p.ID, PublicID: pub, From: read.Status, To: topup.StatusCredited, Actor: topup.ActorCallback,
			Reason: topup.ReasonVerifiedPaid, GatewayCode: &code, Now: now,
			Fields: topup.Fields{RefID: &ref, VerifiedAmountRials: &amount, CardPANMasked: &pan, LastCheckedAt: &now, CountAttempt: true},
			Calls: []resilient.Call{{Ref: pub, Gateway: "fake", Operation: "inquire", Attempt: 1, StartedAt: now.Add(-time.Second),
				Duration: 40 * time.Millisecond, HTTPStatus: 200, GatewayCode: 100, Outcome: "ok"}}}
		calls := []resilient.Call{
			{Ref: pub, Gateway: "fake", Operation: "verify", Attempt: 1, StartedAt: now.Add(-900 * time.Millisecond), Duration: time.Second,
				HTTPStatus: 502, Outcome: "retry", Error: "bad \x00 byte \xff" + strings.Repeat("ش", 400)},
			{Ref: pub, Gateway: "fake", Operation: "verify", Attempt: 2, StartedAt: now.Add(-100 * time.Millisecond), Duration: 80 * time.Millisecond,
				HTTPStatus: 200, GatewayCode: 100, Outcome: "ok"},
		}
		before := kicks.Load()
		if _, was, err := f.st.Credit(ctx, m, f.wallet.ID, calls); err != nil || was != from {
			t.Fatalf("credit from %s: was %s, %v", from, was, err)
		}
		if n := kicks.Load() - before; n != 1 {
			t.Fatalf("credit from %s: %d kicks, want 1", from, n)
		}
		fmt.Fprintf(&out, "payment %d (from %s)\n", i, from)
		for _, e := range f.events(p.ID) {
			if e.TopUpID != p.ID {
				t.Fatalf("event of payment %d names %d", p.ID, e.TopUpID)
			}
			fmt.Fprintf(&out, "  event %s→%s %s %s code=%v admin=%v at=%s\n", e.FromStatus, e.ToStatus, e.Actor, e.Reason,
				deref(e.GatewayCode), deref(e.AdminID), e.CreatedAt.UTC().Format(time.RFC3339Nano))
		}
		cs, err := f.st.CallsOf(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.TopUpID == nil || *c.TopUpID != p.ID {
				t.Fatalf("call of payment %d names %v", p.ID, c.TopUpID)
			}
			fmt.Fprintf(&out, "  call %s %s #%d at=%s %dms http=%d code=%d %s %q\n", c.Gateway, c.Operation, c.Attempt,
				c.StartedAt.UTC().Format(time.RFC3339Nano), c.DurationMS, c.HTTPStatus, c.GatewayCode, c.Outcome, c.Error)
		}
		// The failed payment's earlier topup.failed deliveries are listed
		// too (written by moveTx on both databases).
		var ds []struct {
			webhook.Delivery
			URL string
		}
		if err := db.Gorm.Table("webhook_deliveries d").Select("d.*, e.url").Joins("JOIN webhook_endpoints e ON e.id = d.endpoint_id").
			Where("d.topup_id = ?", p.ID).Order("d.type, e.url, d.id").Find(&ds).Error; err != nil {
			t.Fatal(err)
		}
		first := map[string]string{} // each event's id, by type
		for _, d := range ds {
			if first[d.Type] == "" {
				first[d.Type] = d.EventID
			}
			var b map[string]any
			if err := json.Unmarshal([]byte(d.Body), &b); err != nil {
				t.Fatal(err)
			}
			if b["event_id"] != d.EventID || d.EventID != first[d.Type] {
				t.Fatalf("delivery %d: event id %s, body's %v, its event's %s", d.ID, d.EventID, b["event_id"], first[d.Type])
			}
			body := strings.Replace(d.Body, d.EventID, "EVENT", 1)
			fmt.Fprintf(&out, "  delivery %s %s %s attempts=%d next=%s created=%s retry=%s\n    %s\n", d.URL, d.Type, d.Status, d.Attempts,
				d.NextAttemptAt.UTC().Format(time.RFC3339Nano), d.CreatedAt.UTC().Format(time.RFC3339Nano),
				d.RetryFrom.UTC().Format(time.RFC3339Nano), body)
		}
	}
	return out.String()
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
