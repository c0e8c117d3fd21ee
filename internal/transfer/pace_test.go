package transfer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
