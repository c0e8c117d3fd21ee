package transfer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
)

// keyed is the fixture's service with the API's idempotency keys.
func (f *fixture) keyed() *idempotency.Store {
	f.t.Helper()
	keys := idempotency.NewStore(f.db, idempotency.Options{Secret: []byte("test secret"), Now: func() time.Time { return f.now }})
	f.svc.WithKeys(keys)
	return keys
}

func apiKey(p person, key string, r transfer.Request) idempotency.Request {
	return idempotency.Request{UserID: p.ID, Key: key, Method: "POST", Path: routes.APITransfers,
		Fingerprint: idempotency.Fingerprint("POST", routes.APITransfers, idempotency.String("to_email", &r.ToEmail),
			idempotency.Int("amount_rials", &r.AmountRials), idempotency.String("note", &r.Note))}
}

// count is the number of rows of a table.
func (f *fixture) count(table string) int64 {
	f.t.Helper()
	var n int64
	if err := f.db.Gorm.Table(table).Count(&n).Error; err != nil {
		f.t.Fatal(err)
	}
	return n
}

// An API transfer is one transaction: the key's record, holding the
// answer, commits with the transfer; a replay answers the stored bytes; a
// key of another request is a mismatch; a refusal stores nothing and the
// same key works once the balance allows it.
func TestSendKeyed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		keys := f.keyed()
		ctx := context.Background()
		a, b := f.user("alice@example.com", 100_000), f.user("bob@example.com", 0)

		r := transfer.Request{SenderUserID: a.ID, ToEmail: "Bob@example.com", AmountRials: 40_000, Note: "rent"}
		k := apiKey(a, "k-1", r)
		res, err := f.svc.SendKeyed(ctx, r, k)
		if err != nil || res.Outcome != idempotency.Acquired || res.Answer.Status != 201 || res.Transfer.PublicID == "" {
			t.Fatalf("send: %+v %v", res, err)
		}
		if !strings.Contains(string(res.Answer.Body), res.Transfer.PublicID) || !strings.Contains(string(res.Answer.Body), `"direction":"sent"`) {
			t.Fatalf("answer %s", res.Answer.Body)
		}
		out, rec, found, err := keys.Lookup(ctx, k)
		if err != nil || !found || out != idempotency.Replay || *rec.ResponseBody != string(res.Answer.Body) || rec.LockedUntil != nil {
			t.Fatalf("the key's record: %v %+v %v %v", out, rec, found, err)
		}
		again, err := f.svc.SendKeyed(ctx, r, k)
		if err != nil || again.Outcome != idempotency.Replay || string(again.Answer.Body) != string(res.Answer.Body) || again.Answer.Status != 201 {
			t.Fatalf("replay: %+v %v", again, err)
		}
		other := r
		other.AmountRials = 50_000
		if m, err := f.svc.SendKeyed(ctx, other, apiKey(a, "k-1", other)); err != nil || m.Outcome != idempotency.Mismatch {
			t.Fatalf("same key, other body: %+v %v", m, err)
		}
		if f.balance(a) != 60_000 || f.balance(b) != 40_000 || f.count("transfers") != 1 {
			t.Fatalf("balances %d %d, transfers %d", f.balance(a), f.balance(b), f.count("transfers"))
		}

		// A refusal, twice: the same refusal, nothing stored.
		big := transfer.Request{SenderUserID: a.ID, ToEmail: b.Email, AmountRials: 90_000}
		kb := apiKey(a, "k-big", big)
		for range 2 {
			if _, err := f.svc.SendKeyed(ctx, big, kb); !errors.Is(err, transfer.ErrInsufficientFunds) {
				t.Fatalf("short balance: %v", err)
			}
			if _, _, found, err := keys.Lookup(ctx, kb); found || err != nil {
				t.Fatalf("a refusal's key stored: %v %v", found, err)
			}
		}
		for _, tc := range []struct {
			r    transfer.Request
			want error
		}{
			{transfer.Request{SenderUserID: a.ID, ToEmail: "nobody@example.com", AmountRials: 10_000}, transfer.ErrRecipientNotFound},
			{transfer.Request{SenderUserID: a.ID, ToEmail: a.Email, AmountRials: 10_000}, transfer.ErrToSelf},
		} {
			if _, err := f.svc.SendKeyed(ctx, tc.r, apiKey(a, "k-refused", tc.r)); !errors.Is(err, tc.want) {
				t.Fatalf("%+v: %v, want %v", tc.r, err, tc.want)
			}
		}
		if f.count("idempotency_keys") != 1 || f.count("transfers") != 1 {
			t.Fatalf("after refusals: %d keys, %d transfers", f.count("idempotency_keys"), f.count("transfers"))
		}
		f.user("carol@example.com", 0)
		ok := transfer.Request{SenderUserID: a.ID, ToEmail: "carol@example.com", AmountRials: 10_000}
		if res, err := f.svc.SendKeyed(ctx, ok, apiKey(a, "k-refused", ok)); err != nil || res.Outcome != idempotency.Acquired {
			t.Fatalf("the key of refused requests: %+v %v", res, err)
		}
		f.checkInvariants()
	})
}

// A failure inside the transaction (after the key, the transfer and its
// outbox rows are written, at the ledger's postings) rolls all of it
// back: neither the key nor the transfer is left, and the key works.
func TestSendKeyedRollsBackWhole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var fail atomic.Bool
		injected := errors.New("injected failure")
		trip := func(tx *gorm.DB) {
			if fail.Load() && strings.Contains(tx.Statement.SQL.String(), "INSERT INTO ledger_postings") {
				_ = tx.AddError(injected)
			}
		}
		if err := db.Gorm.Callback().Raw().Before("gorm:raw").Register("test:trip", trip); err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Callback().Row().Before("gorm:row").Register("test:trip", trip); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, db, cfg)
		keys := f.keyed()
		ctx := context.Background()
		a, b := f.user("alice@example.com", 100_000), f.user("bob@example.com", 0)
		r := transfer.Request{SenderUserID: a.ID, ToEmail: b.Email, AmountRials: 30_000}
		k := apiKey(a, "k-crash", r)
		fail.Store(true)
		if _, err := f.svc.SendKeyed(ctx, r, k); !errors.Is(err, injected) {
			t.Fatalf("send with a failing ledger: %v", err)
		}
		fail.Store(false)
		if _, _, found, err := keys.Lookup(ctx, k); found || err != nil {
			t.Fatalf("the key outlived its rolled back transaction: %v %v", found, err)
		}
		if f.count("transfers") != 0 || f.count("webhook_deliveries") != 0 || f.balance(a) != 100_000 {
			t.Fatalf("left behind: %d transfers, %d outbox rows, balance %d", f.count("transfers"), f.count("webhook_deliveries"), f.balance(a))
		}
		if res, err := f.svc.SendKeyed(ctx, r, k); err != nil || res.Outcome != idempotency.Acquired {
			t.Fatalf("the key after the rollback: %+v %v", res, err)
		}
		if f.balance(a) != 70_000 || f.balance(b) != 30_000 || f.count("transfers") != 1 {
			t.Fatalf("balances %d %d", f.balance(a), f.balance(b))
		}
		f.checkInvariants()
	})
}

// Fifty requests with one key at once: one transfer, and every one of
// them answers it with the same bytes (the losers of the key's unique
// index replay the winner's stored answer).
func TestSendKeyedOneKeyAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		f.keyed()
		ctx := context.Background()
		a, b := f.user("alice@example.com", 1_000_000), f.user("bob@example.com", 0)
		r := transfer.Request{SenderUserID: a.ID, ToEmail: b.Email, AmountRials: 50_000}
		k := apiKey(a, "one-key", r)
		var wg sync.WaitGroup
		var mu sync.Mutex
		bodies := map[string]int{}
		made := 0
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := f.svc.SendKeyed(ctx, r, k)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Error(err)
				case res.Outcome == idempotency.Acquired:
					made++
					bodies[string(res.Answer.Body)]++
				case res.Outcome == idempotency.Replay:
					bodies[string(res.Answer.Body)]++
				default:
					t.Errorf("outcome %v", res.Outcome)
				}
			}()
		}
		wg.Wait()
		if made != 1 || len(bodies) != 1 {
			t.Fatalf("made %d, answers %v", made, bodies)
		}
		if f.balance(a) != 950_000 || f.balance(b) != 50_000 || f.count("transfers") != 1 {
			t.Fatalf("balances %d %d", f.balance(a), f.balance(b))
		}
		f.checkInvariants()
	})
}

// A key an older instance left unfinished (Begin, then Release after its
// transfer was written) is taken over: the answer is the transfer its
// first request made, and no second one.
func TestSendKeyedTakesOverAnUnfinishedKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		keys := f.keyed()
		ctx := context.Background()
		a, b := f.user("alice@example.com", 100_000), f.user("bob@example.com", 0)
		r := transfer.Request{SenderUserID: a.ID, ToEmail: b.Email, AmountRials: 20_000}
		k := apiKey(a, "k-old", r)
		out, rec, err := keys.Begin(ctx, k)
		if err != nil || out != idempotency.Acquired {
			t.Fatalf("begin: %v %v", out, err)
		}
		first := r
		first.FormToken = keys.FormToken(rec)
		made, err := f.svc.Send(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.Release(ctx, rec); err != nil {
			t.Fatal(err)
		}
		res, err := f.svc.SendKeyed(ctx, r, k)
		if err != nil || res.Outcome != idempotency.Acquired || res.Transfer.PublicID != made.Transfer.PublicID {
			t.Fatalf("take over: %+v %v (first %s)", res, err, made.Transfer.PublicID)
		}
		if again, err := f.svc.SendKeyed(ctx, r, k); err != nil || again.Outcome != idempotency.Replay || string(again.Answer.Body) != string(res.Answer.Body) {
			t.Fatalf("replay after the take-over: %+v %v", again, err)
		}
		if f.balance(a) != 80_000 || f.count("transfers") != 1 {
			t.Fatalf("balance %d, transfers %d", f.balance(a), f.count("transfers"))
		}
		f.checkInvariants()
	})
}
