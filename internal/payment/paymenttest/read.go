package paymenttest

import (
	"testing"

	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/store"
)

// Typed reads of the payments table for tests above the payment layer
// (the web app's, the e2e suite's): a test asks for a payment by what it
// knows (its authority, public id, row id, or "the newest") and reads the
// fields it checks, so that no test outside the stores spells the table
// or its columns. Each fails the test when the payment is not there.

// All is every payment, oldest first.
func All(t testing.TB, db *store.DB) []payment.Payment {
	t.Helper()
	var ps []payment.Payment
	if err := db.Gorm.Table("payments").Order("id").Find(&ps).Error; err != nil {
		t.Fatalf("read payments: %v", err)
	}
	return ps
}

// First is the oldest payment.
func First(t testing.TB, db *store.DB) payment.Payment {
	t.Helper()
	return one(t, db, "the first payment", "1 = 1", "id")
}

// Last is the newest payment.
func Last(t testing.TB, db *store.DB) payment.Payment {
	t.Helper()
	return one(t, db, "the last payment", "1 = 1", "id DESC")
}

// ByAuthority is the payment the bank knows by authority.
func ByAuthority(t testing.TB, db *store.DB, authority string) payment.Payment {
	t.Helper()
	return one(t, db, "payment with authority "+authority, "authority = ?", "id", authority)
}

// ByPublicID is the payment with that public id.
func ByPublicID(t testing.TB, db *store.DB, publicID string) payment.Payment {
	t.Helper()
	return one(t, db, "payment "+publicID, "public_id = ?", "id", publicID)
}

// ByID is the payment with that row id.
func ByID(t testing.TB, db *store.DB, id int64) payment.Payment {
	t.Helper()
	return one(t, db, "payment row", "id = ?", "id", id)
}

// Status is the status of the payment with that row id.
func Status(t testing.TB, db *store.DB, id int64) payment.Status {
	t.Helper()
	return ByID(t, db, id).Status
}

// ForceAll puts every payment into status, as the state machine would
// have (ForceStatus, one by one).
func ForceAll(t testing.TB, db *store.DB, status, reason string) {
	t.Helper()
	for _, p := range All(t, db) {
		ForceStatus(t, db, p.ID, status, reason)
	}
}

func one(t testing.TB, db *store.DB, what, where, order string, args ...any) payment.Payment {
	t.Helper()
	var ps []payment.Payment
	if err := db.Gorm.Table("payments").Where(where, args...).Order(order).Limit(1).Find(&ps).Error; err != nil {
		t.Fatalf("read %s: %v", what, err)
	}
	if len(ps) == 0 {
		t.Fatalf("no %s", what)
	}
	return ps[0]
}
