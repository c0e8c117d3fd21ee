package topuptest

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
)

// SeedRow is a payment as Seed inserts it, straight into the table: the
// reads' tests (admin console, wallet, API) need every status without
// walking each payment through the state machine.
type SeedRow struct {
	ID                  int64 `gorm:"primaryKey"`
	PublicID            string
	UserID              int64
	WalletID            int64
	AmountRials         int64
	Gateway             string
	FormToken           string
	Authority           *string
	RefID               *int64
	VerifiedAmountRials *int64
	CardPANMasked       string
	Status              string
	CreatedAt           time.Time
	UpdatedAt           time.Time
	Email               string `gorm:"-"`
}

func (SeedRow) TableName() string { return "topups" }

// SeedBase is the first creation time of the seeded payments.
var SeedBase = time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC)

// SeedPublicID is the i-th seeded public id.
func SeedPublicID(i int) string {
	// 24 characters of base32's alphabet, unique per i.
	const alpha = "abcdefghijklmnopqrstuvwxyz234567"
	b := []byte("aaaaaaaaaaaaaaaaaaaaaaaa")
	for j := 0; i > 0; j++ {
		b[23-j] = alpha[i%32]
		i /= 32
	}
	return string(b)
}

// seedStatuses are the statuses Seed gives its rows in turn (the order
// of the admin console's status filter).
var seedStatuses = []string{string(topup.StatusCreated), string(topup.StatusAwaitingPayment),
	string(topup.StatusPendingVerification), string(topup.StatusNeedsReview), string(topup.StatusCredited),
	string(topup.StatusFailed)}

// Seed inserts three users and 40 payments (SeedN with 40).
func Seed(t testing.TB, db *store.DB) []SeedRow { return SeedN(t, db, 40) }

// SeedN inserts three users and n payments: statuses in turn, two
// gateways, amounts from 10,000 to 49,000 tomans, and only 8 distinct
// creation times, so that many rows tie on created_at.
func SeedN(t testing.TB, db *store.DB, n int) []SeedRow {
	t.Helper()
	emails := []string{"alice@example.com", "Bob.Smith@Example.com", "carol_x@test.org"}
	var userIDs, walletIDs []int64
	for _, e := range emails {
		var uid, wid int64
		if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, role, locale, created_at) VALUES (?, 'x', 'user', 'fa', ?) RETURNING id`, e, SeedBase).Scan(&uid).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, SeedBase, SeedBase).Scan(&wid).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := ledger.CreateWalletAccount(db.Gorm, wid, uid, SeedBase); err != nil {
			t.Fatal(err)
		}
		userIDs, walletIDs = append(userIDs, uid), append(walletIDs, wid)
	}
	var rows []SeedRow
	for i := 1; i <= n; i++ {
		u := i % 3
		st := seedStatuses[i%len(seedStatuses)]
		r := SeedRow{PublicID: SeedPublicID(i), UserID: userIDs[u], WalletID: walletIDs[u], AmountRials: int64(100_000 + (i%40)*10_000),
			Gateway: "zarinpal", FormToken: fmt.Sprintf("form-token-%04d", i), Status: st,
			CreatedAt: SeedBase.Add(time.Duration(i%8) * time.Hour), UpdatedAt: SeedBase, Email: emails[u]}
		if i%5 == 0 {
			r.Gateway = "otherbank"
		}
		if st != "created" {
			a := fmt.Sprintf("A%035d", i)
			r.Authority = &a
		}
		if st == "credited" {
			ref := int64(50_000_000 + i)
			r.RefID, r.VerifiedAmountRials = &ref, &r.AmountRials
			r.CardPANMasked = fmt.Sprintf("603799******%04d", 1000+i%3)
		}
		if err := db.Gorm.Create(&r).Error; err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// InListOrder returns the rows keep selects, in the list's order (newest first,
// or oldest first; ties on created_at broken by id).
func InListOrder(rows []SeedRow, oldest bool, keep func(SeedRow) bool) []SeedRow {
	var sel []SeedRow
	for _, r := range rows {
		if keep(r) {
			sel = append(sel, r)
		}
	}
	sort.SliceStable(sel, func(i, j int) bool {
		a, b := sel[i], sel[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt) == oldest
		}
		return (a.ID < b.ID) == oldest
	})
	return sel
}

// SeedFailed inserts n failed payments of 10,000 rials of the wallet,
// created at SeedBase, in one statement: a table far larger than any
// scenario writes (the dashboard's estimated counts). On PostgreSQL the
// table's statistics are brought up to date after.
func SeedFailed(t testing.TB, db *store.DB, userID, walletID, n int64) {
	t.Helper()
	err := db.Gorm.Exec(`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
		INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, status, created_at, updated_at)
		SELECT 'many' || n, ?, ?, 10000, 'zarinpal', 'many' || n, 'failed', ?, ? FROM g`,
		n, userID, walletID, SeedBase, SeedBase).Error
	if err != nil {
		t.Fatalf("seed %d failed payments: %v", n, err)
	}
	if db.Dialect == store.Postgres {
		if err := db.Gorm.Exec(`ANALYZE topups`).Error; err != nil {
			t.Fatalf("analyze payments: %v", err)
		}
	}
}

// SeedUsers inserts users with these e-mail addresses (no wallets, no
// top-ups): people a search finds.
func SeedUsers(t testing.TB, db *store.DB, emails ...string) {
	t.Helper()
	for _, e := range emails {
		if err := db.Gorm.Exec(`INSERT INTO users (email, password_hash, role, locale, created_at) VALUES (?, 'x', 'user', 'fa', ?)`, e, SeedBase).Error; err != nil {
			t.Fatalf("seed user %s: %v", e, err)
		}
	}
}
