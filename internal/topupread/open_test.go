package topupread_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/topupread"
)

// TestEveryOpenStatusIsShownAsOpen: a top-up whose outcome is not final is
// open everywhere a person looks for it, whatever its status: the wallet's
// "in progress" list (OpenForUser), the payer's "open" filter (ForPayer
// with StatusGroup "open"; needs_review has its own filter), the admin's
// unresolved list (Unresolved) and the limits' open amount (Usage). A
// reversing payment (verified at the bank, not creditable, its reverse on
// the way) is one: before 00057 none of these showed it. Credited and
// failed payments are in none.
func TestEveryOpenStatusIsShownAsOpen(t *testing.T) {
	cases := []struct {
		status     topup.Status
		inProgress bool // the wallet's in-progress list, the admin's unresolved list, the open amount
		openFilter bool // the payer's "open" filter
	}{
		{topup.StatusAwaitingPayment, true, true},
		{topup.StatusPendingVerification, true, true},
		{topup.StatusSettling, true, true},
		{topup.StatusReversing, true, true},
		{topup.StatusNeedsReview, true, false},
		{topup.StatusCredited, false, false},
		{topup.StatusFailed, false, false},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		r := topupread.New(db)
		open, ok := topupread.StatusGroup("open")
		if !ok {
			t.Fatal(`no "open" status group`)
		}
		for i, c := range cases {
			t.Run(string(c.status), func(t *testing.T) {
				// One user of their own per case, one top-up of 70,000 rials.
				var uid, wid int64
				email := "open" + string(rune('a'+i)) + "@example.com"
				if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, role, locale, created_at) VALUES (?, 'x', 'user', 'fa', ?) RETURNING id`, email, topuptest.SeedBase).Scan(&uid).Error; err != nil {
					t.Fatal(err)
				}
				if err := db.Gorm.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, topuptest.SeedBase, topuptest.SeedBase).Scan(&wid).Error; err != nil {
					t.Fatal(err)
				}
				publicID := "open-" + string(c.status)
				var refID, verified any // a credited payment has both (payments_credited_has_ref)
				if c.status == topup.StatusCredited {
					refID, verified = "9001", 70000
				}
				if err := db.Gorm.Exec(`INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, status, authority, ref_id, verified_amount_rials, created_at, updated_at)
					VALUES (?, ?, ?, 70000, 'zarinpal', ?, ?, ?, ?, ?, ?, ?)`,
					publicID, uid, wid, publicID, string(c.status), "A-"+publicID, refID, verified, topuptest.SeedBase, topuptest.SeedBase).Error; err != nil {
					t.Fatal(err)
				}

				got, err := r.OpenForUser(ctx, uid, 10)
				if err != nil {
					t.Fatal(err)
				}
				if (len(got) == 1 && got[0].PublicID == publicID) != c.inProgress || len(got) > 1 {
					t.Errorf("wallet in progress: %d listed, want it listed %v", len(got), c.inProgress)
				}

				items, _, err := r.ForPayer(ctx, uid, topupread.PayerFilter{Statuses: open}, 0, 10)
				if err != nil {
					t.Fatal(err)
				}
				if (len(items) == 1) != c.openFilter || len(items) > 1 {
					t.Errorf(`payer's "open" filter: %d listed, want it listed %v`, len(items), c.openFilter)
				}

				u, err := r.Usage(ctx, uid, topuptest.SeedBase.Add(24*time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]int64{true: 70000, false: 0}[c.inProgress]; u.OpenRials != want {
					t.Errorf("open amount for limits %d, want %d", u.OpenRials, want)
				}

				un, err := r.Unresolved(ctx, 100)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, x := range un {
					found = found || x.PublicID == publicID
				}
				if found != c.inProgress {
					t.Errorf("admin's unresolved list has it %v, want %v", found, c.inProgress)
				}
			})
		}
	})
}
