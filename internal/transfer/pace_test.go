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
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
)

// TestPacePerSender: past RATE_LIMIT_TRANSFERS a minute a sender's new
// transfer, by a form or by a key, is refused with nothing written; a
// repeat of one made (the same form, the same key) is still answered with
// it, and counts nothing; refusals for other reasons count nothing either;
// a minute later the sender may send again, and another sender never
// waited.
func TestPacePerSender(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		f.svc.WithPace(ratelimit.New(3, time.Minute, func() time.Time { return f.now }).LimitPending(64))
		f.keyed()
		a, b, c := f.user("alice@example.com", 1_000_000), f.user("bob@example.com", 0), f.user("carol@example.com", 1_000_000)
		first := req(a, b.Email, 10_000)
		if _, err := f.svc.Send(ctx, first); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Send(ctx, req(a, "nobody@example.com", 10_000)); !errors.Is(err, transfer.ErrRecipientNotFound) {
			t.Fatalf("to an unknown address: %v", err)
		}
		byKey := req(a, b.Email, 10_000)
		if k, err := f.svc.SendKeyed(ctx, byKey, apiKey(a, "k-1", byKey)); err != nil || k.Transfer.PublicID == "" {
			t.Fatalf("by key: %+v %v", k, err)
		}
		if _, err := f.svc.Send(ctx, req(a, b.Email, 10_000)); err != nil {
			t.Fatalf("the third: %v", err)
		}
		var pace *transfer.PaceError
		if _, err := f.svc.Send(ctx, req(a, b.Email, 10_000)); !errors.As(err, &pace) || pace.Wait <= 0 || pace.Max != 3 {
			t.Fatalf("a fourth by form: %v, want refused with a wait", err)
		}
		fourth := req(a, b.Email, 10_000)
		if _, err := f.svc.SendKeyed(ctx, fourth, apiKey(a, "k-2", fourth)); !errors.As(err, &pace) {
			t.Fatalf("a fourth by key: %v, want refused", err)
		}
		if got := f.balance(b); got != 30_000 {
			t.Fatalf("bob has %d, want the three transfers' 30000", got)
		}
		// Repeats of what was made are answered, not refused.
		if res, err := f.svc.Send(ctx, first); err != nil || !res.Replayed {
			t.Fatalf("the first form again: %+v %v", res, err)
		}
		if k, err := f.svc.SendKeyed(ctx, byKey, apiKey(a, "k-1", byKey)); err != nil || k.Answer.Status != 201 {
			t.Fatalf("the first key again: %+v %v", k, err)
		}
		// Another sender never waited for alice.
		if _, err := f.svc.Send(ctx, req(c, b.Email, 10_000)); err != nil {
			t.Fatalf("carol: %v", err)
		}
		f.now = f.now.Add(time.Minute)
		if _, err := f.svc.Send(ctx, req(a, b.Email, 10_000)); err != nil {
			t.Fatalf("a minute later: %v", err)
		}
		if got := f.balance(b); got != 50_000 {
			t.Errorf("bob has %d, want 50000", got)
		}
		f.checkInvariants()
	})
}

// TestPaceHoldsAgainstABurst: transfers sent at once by one sender pass
// no more than the pace allows, whatever their number (open places count
// as transfers made), and each refused one wrote nothing.
func TestPaceHoldsAgainstABurst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		f.svc.WithPace(ratelimit.New(3, time.Minute, func() time.Time { return f.now }).LimitPending(3).CountPending())
		a, b := f.user("alice@example.com", 1_000_000), f.user("bob@example.com", 0)
		var wg sync.WaitGroup
		var made, paced atomic.Int32
		for range 12 {
			wg.Go(func() {
				_, err := f.svc.Send(ctx, req(a, b.Email, 10_000))
				var pace *transfer.PaceError
				switch {
				case err == nil:
					made.Add(1)
				case errors.As(err, &pace):
					paced.Add(1)
				default:
					t.Errorf("a transfer of the burst: %v", err)
				}
			})
		}
		wg.Wait()
		if made.Load() > 3 || made.Load()+paced.Load() != 12 {
			t.Fatalf("%d made, %d paced, want at most 3 made and the rest paced", made.Load(), paced.Load())
		}
		if got := f.balance(b); got != int64(made.Load())*10_000 {
			t.Errorf("bob has %d for %d transfers made", got, made.Load())
		}
		f.checkInvariants()
	})
}

// keyedOut is one SendKeyed's answer.
type keyedOut struct {
	k   transfer.Keyed
	err error
}

// TestPaceAnswersARetryOfAKeyInFlight: the sender has one place left in
// the minute; a request with key K takes it and is held inside its
// transaction (at its ledger postings, the key claimed, not committed);
// the client gives up and sends K again. The retry is never refused by
// the pace (a 429 saying nothing was sent, and the client would pay again
// under a new key): it waits on the key and replays the first answer once
// it commits (or is told the key is in use). One transfer, exact
// balances; a new key is still paced.
func TestPaceAnswersARetryOfAKeyInFlight(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var hold atomic.Bool
		held, release := make(chan struct{}), make(chan struct{})
		stop := func(tx *gorm.DB) {
			if strings.Contains(tx.Statement.SQL.String(), "INSERT INTO ledger_postings") && hold.CompareAndSwap(true, false) {
				close(held)
				<-release
			}
		}
		if err := db.Gorm.Callback().Raw().Before("gorm:raw").Register("test:hold", stop); err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Callback().Row().Before("gorm:row").Register("test:hold", stop); err != nil {
			t.Fatal(err)
		}
		released := false
		defer func() {
			if !released {
				close(release)
			}
		}()
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		// As the server sets it up (LimitPending(max).CountPending()).
		f.svc.WithPace(ratelimit.New(3, time.Minute, func() time.Time { return f.now }).LimitPending(3).CountPending())
		f.keyed()
		a, b := f.user("alice@example.com", 1_000_000), f.user("bob@example.com", 0)
		for range 2 {
			if _, err := f.svc.Send(ctx, req(a, b.Email, 10_000)); err != nil {
				t.Fatal(err)
			}
		}
		r := transfer.Request{SenderUserID: a.ID, ToEmail: b.Email, AmountRials: 50_000, Note: "rent"}
		k := apiKey(a, "k-slow", r)
		hold.Store(true)
		first := make(chan keyedOut, 1)
		go func() {
			res, err := f.svc.SendKeyed(ctx, r, k)
			first <- keyedOut{res, err}
		}()
		select {
		case <-held:
		case o := <-first:
			t.Fatalf("the first request was not held: %+v %v", o.k, o.err)
		case <-time.After(20 * time.Second):
			t.Fatal("the first request never reached its postings")
		}
		// The client timed out and retries with the same key while the
		// first is in flight: it may wait (on the key's unique index, or
		// SQLite's write lock) or be told the key is in use, never paced.
		retry := make(chan keyedOut, 1)
		go func() {
			res, err := f.svc.SendKeyed(ctx, r, k)
			retry <- keyedOut{res, err}
		}()
		var early *keyedOut
		select {
		case o := <-retry:
			early = &o
		case <-time.After(500 * time.Millisecond): // waiting, as it should
		}
		released = true
		close(release)
		o1 := <-first
		if o1.err != nil || o1.k.Outcome != idempotency.Acquired || o1.k.Answer.Status != 201 {
			t.Fatalf("the first request: %+v %v", o1.k, o1.err)
		}
		o2 := early
		if o2 == nil {
			o := <-retry
			o2 = &o
		}
		var pace *transfer.PaceError
		switch {
		case errors.As(o2.err, &pace):
			t.Fatalf("the retry of a key in flight was refused by the pace: %v", o2.err)
		case o2.err != nil:
			t.Fatalf("the retry: %v", o2.err)
		case o2.k.Outcome == idempotency.Replay:
			if string(o2.k.Answer.Body) != string(o1.k.Answer.Body) || o2.k.Answer.Status != 201 {
				t.Fatalf("the retry replayed %d %s, want the first's %s", o2.k.Answer.Status, o2.k.Answer.Body, o1.k.Answer.Body)
			}
		case o2.k.Outcome != idempotency.InUse:
			t.Fatalf("the retry: outcome %v, want a replay or in use", o2.k.Outcome)
		}
		// Once the first committed, the key replays its answer.
		if again, err := f.svc.SendKeyed(ctx, r, k); err != nil || again.Outcome != idempotency.Replay || string(again.Answer.Body) != string(o1.k.Answer.Body) {
			t.Fatalf("the key after its commit: %+v %v", again, err)
		}
		// The pace still holds for a new key.
		other := transfer.Request{SenderUserID: a.ID, ToEmail: b.Email, AmountRials: 10_000}
		if _, err := f.svc.SendKeyed(ctx, other, apiKey(a, "k-new", other)); !errors.As(err, &pace) {
			t.Fatalf("a new key past the pace: %v, want refused", err)
		}
		if f.balance(a) != 930_000 || f.balance(b) != 70_000 || f.count("transfers") != 3 {
			t.Fatalf("balances %d %d, %d transfers; want 930000 70000, 3", f.balance(a), f.balance(b), f.count("transfers"))
		}
		f.checkInvariants()
	})
}

// TestPaceOneKeyAtOnceAtTheLastPlace: fifty requests with one key at
// once, the sender with one place left in the minute: one transfer, and
// every request answers it with the same bytes (the losers wait on the
// key and replay its answer); none is refused by the pace.
func TestPaceOneKeyAtOnceAtTheLastPlace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		f.svc.WithPace(ratelimit.New(3, time.Minute, func() time.Time { return f.now }).LimitPending(3).CountPending())
		f.keyed()
		a, b := f.user("alice@example.com", 1_000_000), f.user("bob@example.com", 0)
		for range 2 {
			if _, err := f.svc.Send(ctx, req(a, b.Email, 10_000)); err != nil {
				t.Fatal(err)
			}
		}
		r := transfer.Request{SenderUserID: a.ID, ToEmail: b.Email, AmountRials: 50_000}
		k := apiKey(a, "one-key", r)
		var wg sync.WaitGroup
		var mu sync.Mutex
		bodies := map[string]int{}
		made, paced := 0, 0
		for range 50 {
			wg.Go(func() {
				res, err := f.svc.SendKeyed(ctx, r, k)
				mu.Lock()
				defer mu.Unlock()
				var pace *transfer.PaceError
				switch {
				case errors.As(err, &pace):
					paced++
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
			})
		}
		wg.Wait()
		if made != 1 || len(bodies) != 1 || paced != 0 {
			t.Fatalf("made %d, paced %d, answers %v", made, paced, bodies)
		}
		if f.balance(a) != 930_000 || f.balance(b) != 70_000 || f.count("transfers") != 3 {
			t.Fatalf("balances %d %d, %d transfers", f.balance(a), f.balance(b), f.count("transfers"))
		}
		f.checkInvariants()
	})
}
