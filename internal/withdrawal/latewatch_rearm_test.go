package withdrawal_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// rearmMigration re-arms the late watch of paid withdrawals whose dense
// watch ended before the sparse tail existed.
const rearmMigration = 60

// offering rebuilds e's service over its offers of the named providers,
// in that order: a new withdrawal goes to the first.
func (e *env) offering(names ...string) {
	var offers []withdrawal.Offer
	for _, n := range names {
		for _, o := range e.offers {
			if o.Name == n {
				offers = append(offers, o)
			}
		}
	}
	e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(e.db, ledger.New(e.db)), offers, testConfig(), e.clock.Now, nil)
}

// paidBy is a withdrawal of rials sent to provider and transferred there:
// paid.
func (e *env) paidBy(provider string, rials int64) withdrawal.Withdrawal {
	e.t.Helper()
	e.offering(provider)
	w := e.request(rials)
	e.round(time.Second)
	if _, err := e.bank.Payouts().Settle(provider, w.PublicID); err != nil {
		e.t.Fatal(err)
	}
	e.round(time.Minute)
	if w = e.get(w); w.Status != withdrawal.StatusPaid || w.Provider != provider || w.PaidAt == nil {
		e.t.Fatalf("paid by %s: %+v", provider, w)
	}
	return w
}

// migrateAgain runs migration version again, as on a database it had not
// reached yet.
func migrateAgain(t *testing.T, db *store.DB, version int64) {
	t.Helper()
	if err := db.Gorm.Exec(`DELETE FROM goose_db_version WHERE version_id = ?`, version).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(context.Background(), nil, store.PerSchemaLock()); err != nil {
		t.Fatal(err)
	}
}

// A Jibit withdrawal paid ten days before the deploy of the sparse tail,
// whose dense watch had ended (its next check cleared), is asked about
// again after migration 00060, and a payout Jibit failed by hand since
// is credited back. One paid 36 days before (past LateWatchHorizon), and
// one of Zibal (whose payouts do not fail late: no watch_until), are left
// unwatched. Run again, the migration changes nothing.
func TestLateWatchRearmedAfterUpgrade(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit", "zibal")
		// The migration reads the database's clock: the test's runs on
		// it from here.
		now := time.Now().UTC().Truncate(time.Second)
		e.clock.Advance(now.Add(-36 * 24 * time.Hour).Sub(e.clock.Now()))
		old := e.paidBy("jibit", 1_000_000)
		e.clock.Advance(26 * 24 * time.Hour)
		late := e.paidBy("jibit", 2_000_000)
		other := e.paidBy("zibal", 1_500_000)
		e.offering("jibit", "zibal")
		e.clock.Advance(time.Now().UTC().Sub(e.clock.Now()))
		if old.WatchUntil == nil || late.WatchUntil == nil || other.WatchUntil != nil {
			t.Fatalf("watch_until: old %v, late %v, zibal %v", old.WatchUntil, late.WatchUntil, other.WatchUntil)
		}
		// As the worker left them before the tail: the dense watch over,
		// no next check.
		if err := db.Gorm.Exec(`UPDATE withdrawals SET next_check_at = NULL WHERE status = 'paid'`).Error; err != nil {
			t.Fatal(err)
		}
		for _, w := range []withdrawal.Withdrawal{old, late} {
			if _, err := e.bank.Payouts().Return(payouts.Jibit, w.PublicID); err != nil {
				t.Fatal(err)
			}
		}
		asked := func(w withdrawal.Withdrawal) int {
			return withdrawaltest.Calls(t, db, w.PublicID)["payout_status"]
		}
		before := map[string]int{old.PublicID: asked(old), late.PublicID: asked(late), other.PublicID: asked(other)}

		migrateAgain(t, db, rearmMigration)
		rearmed := e.get(late)
		if rearmed.NextCheckAt == nil || rearmed.NextCheckAt.After(time.Now()) {
			t.Fatalf("paid ten days ago, not re-armed: %+v", rearmed)
		}
		for _, w := range []withdrawal.Withdrawal{old, other} {
			if w = e.get(w); w.NextCheckAt != nil {
				t.Fatalf("re-armed (paid %v by %s): %+v", w.PaidAt, w.Provider, w)
			}
		}
		// Again: nothing changes.
		migrateAgain(t, db, rearmMigration)
		if w := e.get(late); w.NextCheckAt == nil || !w.NextCheckAt.Equal(*rearmed.NextCheckAt) {
			t.Fatalf("run again: next check %v, was %v", w.NextCheckAt, rearmed.NextCheckAt)
		}
		for _, w := range []withdrawal.Withdrawal{old, other} {
			if w = e.get(w); w.NextCheckAt != nil {
				t.Fatalf("run again, re-armed: %+v", w)
			}
		}

		e.round(time.Hour)
		if w := e.get(late); w.Status != withdrawal.StatusReturned || w.NextCheckAt != nil || asked(w) != before[w.PublicID]+1 {
			t.Fatalf("failed by hand after the watch, re-armed: %+v (%d asks)", w, asked(w)-before[w.PublicID])
		}
		for _, w := range []withdrawal.Withdrawal{old, other} {
			if w = e.get(w); w.Status != withdrawal.StatusPaid || w.NextCheckAt != nil || asked(w) != before[w.PublicID] {
				t.Fatalf("asked about: %+v (%d asks)", w, asked(w)-before[w.PublicID])
			}
		}
		e.wantWallet(funded-1_000_000-1_500_000, 0)
		if n := withdrawaltest.Returns(t, db, late.PublicID); n != 1 {
			t.Fatalf("%d returns", n)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}
