package withdrawal_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/sqlstore"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// missedFastPath is the store as a double click's second request sees it
// when both requests looked for the form before either wrote: the
// service's lookup of each form misses once.
type missedFastPath struct {
	*sqlstore.Store
	mu     sync.Mutex
	missed map[string]bool
}

func (m *missedFastPath) ByFormToken(ctx context.Context, userID int64, token string) (withdrawal.Withdrawal, error) {
	m.mu.Lock()
	first := !m.missed[token]
	m.missed[token] = true
	m.mu.Unlock()
	if first {
		return withdrawal.Withdrawal{}, withdrawal.ErrNotFound
	}
	return m.Store.ByFormToken(ctx, userID, token)
}

// TestRepeatUnderTheLockIsAReplay: the second request of a double click
// on a withdrawal of the whole balance, or of the day's whole limit,
// reaches the write after the first committed. It is answered as the
// first's repeat (the same withdrawal), not refused by the balance or the
// limit the first just used; one withdrawal and one hold are written.
func TestRepeatUnderTheLockIsAReplay(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		daily int64 // the day's limit (testConfig's when 0)
	}{
		{"the whole balance", 0},
		{"the day's whole limit", 30_000_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				e := newEnv(t, db, "jibit")
				cfg := testConfig()
				amount := int64(funded)
				if c.daily > 0 {
					cfg.DailyMaxRials, amount = c.daily, c.daily
				}
				st := &missedFastPath{Store: e.st, missed: map[string]bool{}}
				svc := withdrawal.New(st, e.accts, wallet.NewService(db, ledger.New(db)), e.offers, cfg, e.clock.Now, nil)
				tok := formtoken.New()
				req := withdrawal.Request{UserID: e.userID, FormToken: tok, BankAccountID: e.account, AmountRials: amount}
				first, err := svc.Request(ctx, req)
				if err != nil || first.Replay {
					t.Fatalf("first request: %+v %v", first, err)
				}
				// The second request's lookup misses too (both looked
				// before either wrote).
				st.mu.Lock()
				st.missed[tok] = false
				st.mu.Unlock()
				again, err := svc.Request(ctx, req)
				if err != nil || !again.Replay || again.Withdrawal.PublicID != first.Withdrawal.PublicID {
					t.Fatalf("the repeat: %+v %v, want a replay of %s", again, err, first.Withdrawal.PublicID)
				}
				e.wantWallet(funded, amount)
				if ws, _, err := e.st.List(ctx, withdrawal.Filter{UserID: e.userID, Limit: 10}); err != nil || len(ws) != 1 {
					t.Fatalf("%d withdrawals, want 1: %v", len(ws), err)
				}
				// The store alone: the same form again, with a limit that
				// would refuse it, is a repeat and writes nothing.
				w := first.Withdrawal
				w.ID, w.HoldID, w.PublicID = 0, 0, withdrawal.NewPublicID()
				refuse := withdrawal.Quota{Admit: func(int64) error { return &withdrawal.DailyLimitError{} }}
				if err := e.st.Create(ctx, &w, refuse); !errors.Is(err, withdrawal.ErrDuplicate) {
					t.Fatalf("the same form under a refusing limit: %v, want ErrDuplicate", err)
				}
				e.wantWallet(funded, amount)
				withdrawaltest.CheckInvariants(t, db)
			})
		})
	}
}
