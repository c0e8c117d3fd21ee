package withdrawal_test

import (
	"context"
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// The admin's queue lists who has waited longest first, and says when
// more wait beyond its page: the oldest are never the ones past it.
func TestQueueOldestFirst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		ctx := context.Background()
		withdrawaltest.Fund(t, db, e.wallet, 2_000_000_000)
		var ids []string
		for range 3 {
			w := e.request(600_000_000)
			if !w.ReviewRequired {
				t.Fatalf("not for review: %+v", w)
			}
			ids = append(ids, w.PublicID)
		}
		for _, tc := range []struct {
			name string
			f    withdrawal.Filter
			want []string
			more bool
		}{
			{"oldest, a page of two", withdrawal.Filter{ReviewOnly: true, Oldest: true, Limit: 2}, ids[:2], true},
			{"oldest, all", withdrawal.Filter{ReviewOnly: true, Oldest: true, Limit: 3}, ids, false},
			{"newest", withdrawal.Filter{ReviewOnly: true, Limit: 2}, []string{ids[2], ids[1]}, true},
		} {
			ws, more, err := e.svc.Queue(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range ws {
				got = append(got, w.PublicID)
			}
			if len(got) != len(tc.want) || more != tc.more {
				t.Fatalf("%s: %v more=%v, want %v more=%v", tc.name, got, more, tc.want, tc.more)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("%s: %v, want %v", tc.name, got, tc.want)
				}
			}
		}
	})
}
