package topup_test

// Tests of the in-memory answers for credited payments (credited.go).

import (
	"context"
	"errors"
	"testing"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// hidePayments makes the payments table unreachable until the returned
// function puts it back: whatever is answered meanwhile was answered
// without the database.
func hideTopUps(t *testing.T, db *store.DB) (restore func()) {
	t.Helper()
	if err := db.Gorm.Exec(`ALTER TABLE topups RENAME TO topups_hidden`).Error; err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := db.Gorm.Exec(`ALTER TABLE topups_hidden RENAME TO topups`).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// A credited payment never changes again: its repeat callbacks and its
// receipt are answered from memory — the same answer, the authority still
// checked, the owner still checked — while an open one always comes from
// the database.
func TestCreditedTopUpsAreAnsweredFromMemory(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		paid := e.start(50_000)
		open := e.start(60_000)
		e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(777) })
		first, err := e.back(ctx, paid.PublicID, paid.AuthorityString())
		if err != nil || first.Status != topup.StatusCredited {
			t.Fatalf("first callback: %s, %v", dump(first), err)
		}
		_, verifies, _ := e.gw.Counts()

		func() {
			defer hideTopUps(t, db)()
			tests := []struct {
				name string
				call func() (topup.TopUp, error)
				want error
			}{
				{"repeat callback", func() (topup.TopUp, error) { return e.back(ctx, paid.PublicID, paid.AuthorityString()) }, nil},
				{"receipt of the owner", func() (topup.TopUp, error) { return e.svc.ForOwner(ctx, paid.PublicID, e.user.ID) }, nil},
				{"by public id", func() (topup.TopUp, error) { return e.svc.ByPublicID(ctx, paid.PublicID) }, nil},
				{"callback with another authority", func() (topup.TopUp, error) {
					return e.back(ctx, paid.PublicID, topuptest.NewAuthority())
				}, topup.ErrAuthorityMismatch},
				{"receipt of someone else", func() (topup.TopUp, error) { return e.svc.ForOwner(ctx, paid.PublicID, e.user.ID+1000) }, topup.ErrNotFound},
			}
			for _, tc := range tests {
				got, err := tc.call()
				if !errors.Is(err, tc.want) {
					t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
					continue
				}
				if tc.want == nil && (got.ID != paid.ID || got.Status != topup.StatusCredited || got.RefIDValue() != 777 ||
					got.AmountRials != 50_000 || got.CardPANMasked != topuptest.Card || got.ResolvedAt == nil ||
					!got.ResolvedAt.Equal(*first.ResolvedAt) || got.AuthorityString() != paid.AuthorityString()) {
					t.Errorf("%s: %s, want the credited payment as first answered", tc.name, dump(got))
				}
			}
			// An open payment is not kept: it needs the database.
			if _, err := e.svc.ByPublicID(ctx, open.PublicID); err == nil {
				t.Errorf("an open payment was answered without the database")
			}
		}()

		// A copy handed out cannot change what the next caller gets.
		got, _ := e.svc.ByPublicID(ctx, paid.PublicID)
		*got.RefID = 1
		*got.Authority = "changed"
		if again, _ := e.svc.ByPublicID(ctx, paid.PublicID); again.RefIDValue() != 777 || again.AuthorityString() != paid.AuthorityString() {
			t.Errorf("a caller changed the kept copy: %s", dump(again))
		}
		if _, v, _ := e.gw.Counts(); v != verifies {
			t.Errorf("%d more verifies for repeats of a credited payment", v-verifies)
		}
		if b := e.balance(); b != 50_000 {
			t.Errorf("balance = %d, want 50000 (credited once)", b)
		}
		topuptest.CheckInvariants(t, db)
	})
}

// Another instance that did not credit the payment keeps it once it has
// read it credited; and the cache is bounded: the oldest make room.
func TestCreditedCacheIsBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnvWith(t, db, func(c *topup.Config) { c.CreditedCacheSize = 2 })
		var ps []topup.TopUp
		for i := range 3 {
			e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(int64(100 + i)) })
			p := e.start(int64(10_000 * (i + 1)))
			if got, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || got.Status != topup.StatusCredited {
				t.Fatalf("credit %d: %s %v", i, dump(got), err)
			}
			ps = append(ps, p)
		}
		// A second instance over the same database has kept nothing yet.
		other := topup.NewService(sqlstore.New(db), gateway.Set{e.gw}, e.clock.Now, nil, topuptest.Config())
		if _, err := other.ByPublicID(ctx, ps[0].PublicID); err != nil {
			t.Fatal(err)
		}
		defer hideTopUps(t, db)()
		if got, err := other.ByPublicID(ctx, ps[0].PublicID); err != nil || got.Status != topup.StatusCredited {
			t.Errorf("the other instance did not keep what it read credited: %v", err)
		}
		// Two kept of three: the first credited made room for the third.
		for i, want := range []bool{false, true, true} {
			_, err := e.svc.ByPublicID(ctx, ps[i].PublicID)
			if got := err == nil; got != want {
				t.Errorf("payment %d answered from memory = %v, want %v (%v)", i, got, want, err)
			}
		}
	})
}

// CREDITED_CACHE_SIZE=0 (a negative size in the service) keeps nothing.
func TestCreditedCacheOff(t *testing.T) {
	db := storetest.New(t, store.SQLite)
	ctx := context.Background()
	e := newEnvWith(t, db, func(c *topup.Config) { c.CreditedCacheSize = -1 })
	e.gw.Set(func(f *topuptest.Gateway) { f.VerifyFn = topuptest.Paid(5) })
	p := e.start(10_000)
	if got, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || got.Status != topup.StatusCredited {
		t.Fatalf("credit: %s %v", dump(got), err)
	}
	defer hideTopUps(t, db)()
	if _, err := e.svc.ByPublicID(ctx, p.PublicID); err == nil {
		t.Fatal("answered from memory with the cache off")
	}
}
