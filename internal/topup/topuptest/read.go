package topuptest

import (
	"context"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
)

// Typed reads of the payments table for tests above the payment layer
// (the web app's, the e2e suite's): a test asks for a payment by what it
// knows (its authority, public id, row id, or "the newest") and reads the
// fields it checks, so that no test outside the stores spells the table
// or its columns. Each fails the test when the payment is not there.

// All is every payment, oldest first.
func All(t testing.TB, db *store.DB) []topup.TopUp {
	t.Helper()
	var ps []topup.TopUp
	if err := db.Gorm.Table("topups").Order("id").Find(&ps).Error; err != nil {
		t.Fatalf("read payments: %v", err)
	}
	return ps
}

// First is the oldest payment.
func First(t testing.TB, db *store.DB) topup.TopUp {
	t.Helper()
	return one(t, db, "the first payment", "1 = 1", "id")
}

// Last is the newest payment.
func Last(t testing.TB, db *store.DB) topup.TopUp {
	t.Helper()
	return one(t, db, "the last payment", "1 = 1", "id DESC")
}

// ByAuthority is the payment the bank knows by authority.
func ByAuthority(t testing.TB, db *store.DB, authority string) topup.TopUp {
	t.Helper()
	return one(t, db, "payment with authority "+authority, "authority = ?", "id", authority)
}

// ByPublicID is the payment with that public id.
func ByPublicID(t testing.TB, db *store.DB, publicID string) topup.TopUp {
	t.Helper()
	return one(t, db, "payment "+publicID, "public_id = ?", "id", publicID)
}

// ByID is the payment with that row id.
func ByID(t testing.TB, db *store.DB, id int64) topup.TopUp {
	t.Helper()
	return one(t, db, "payment row", "id = ?", "id", id)
}

// Status is the status of the payment with that row id.
func Status(t testing.TB, db *store.DB, id int64) topup.Status {
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

func one(t testing.TB, db *store.DB, what, where, order string, args ...any) topup.TopUp {
	t.Helper()
	var ps []topup.TopUp
	if err := db.Gorm.Table("topups").Where(where, args...).Order(order).Limit(1).Find(&ps).Error; err != nil {
		t.Fatalf("read %s: %v", what, err)
	}
	if len(ps) == 0 {
		t.Fatalf("no %s", what)
	}
	return ps[0]
}

// Count is how many payments are in one of statuses (every payment with
// none).
func Count(t testing.TB, db *store.DB, statuses ...topup.Status) int64 {
	t.Helper()
	var n int64
	for _, p := range All(t, db) {
		if len(statuses) == 0 || slices.Contains(statuses, p.Status) {
			n++
		}
	}
	return n
}

// AllCalls is every recorded bank attempt (gateway_calls), oldest first.
func AllCalls(t testing.TB, db *store.DB) []topup.GatewayCall {
	t.Helper()
	var out []topup.GatewayCall
	if err := db.Gorm.Table("gateway_calls").Order("id").Find(&out).Error; err != nil {
		t.Fatalf("read gateway calls: %v", err)
	}
	return out
}

// CountCalls is how many recorded bank attempts are of operation op (any
// with "") and ended in one of outcomes (any with none).
func CountCalls(t testing.TB, db *store.DB, op string, outcomes ...string) int64 {
	t.Helper()
	var n int64
	for _, c := range AllCalls(t, db) {
		if (op == "" || c.Operation == op) && (len(outcomes) == 0 || slices.Contains(outcomes, c.Outcome)) {
			n++
		}
	}
	return n
}

// CallsOf is a payment's recorded bank attempts, oldest first (Calls,
// failing the test on an error).
func CallsOf(t testing.TB, db *store.DB, topUpID int64) []topup.GatewayCall {
	t.Helper()
	out, err := Calls(context.Background(), db, topUpID)
	if err != nil {
		t.Fatalf("read gateway calls of payment %d: %v", topUpID, err)
	}
	return out
}

// LastEvent is a payment's latest status change.
func LastEvent(t testing.TB, db *store.DB, topUpID int64) topup.Event {
	t.Helper()
	evs, err := Events(context.Background(), db, topUpID)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events of payment %d: %d, %v", topUpID, len(evs), err)
	}
	return evs[len(evs)-1]
}

// Reconciles are the stored reconciliation reports, oldest first.
func Reconciles(t testing.TB, db *store.DB) []topup.ReconcileReport {
	t.Helper()
	var out []topup.ReconcileReport
	if err := db.Gorm.Table("reconcile_reports").Order("id").Find(&out).Error; err != nil {
		t.Fatalf("read reconciliation reports: %v", err)
	}
	return out
}

// CountCallsOf is CountCalls for one payment's attempts.
func CountCallsOf(t testing.TB, db *store.DB, topUpID int64, op string, outcomes ...string) int64 {
	t.Helper()
	var n int64
	for _, c := range CallsOf(t, db, topUpID) {
		if (op == "" || c.Operation == op) && (len(outcomes) == 0 || slices.Contains(outcomes, c.Outcome)) {
			n++
		}
	}
	return n
}

// Select is every payment keep keeps, oldest first.
func Select(t testing.TB, db *store.DB, keep func(topup.TopUp) bool) []topup.TopUp {
	t.Helper()
	var out []topup.TopUp
	for _, p := range All(t, db) {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// ReleaseLease ends a payment's lease, as if its holder's time had run
// out.
func ReleaseLease(t testing.TB, db *store.DB, topUpID int64) {
	t.Helper()
	if err := db.Gorm.Table("topups").Where("id = ?", topUpID).
		Updates(map[string]any{"lease_until": nil, "lease_owner": ""}).Error; err != nil {
		t.Fatalf("release the lease of payment %d: %v", topUpID, err)
	}
}

// Restamp gives payment id the public id publicID and the times of a
// payment created at created (updated, resolved, opened and checked a
// minute later, each only where the row has one; a next check at next):
// a fixture's fixed history for screenshots, never a lifecycle move.
func Restamp(t testing.TB, db *store.DB, id int64, publicID string, created, next time.Time) {
	t.Helper()
	later := created.Add(time.Minute)
	vals := map[string]any{"public_id": publicID, "created_at": created, "updated_at": later,
		"resolved_at":     gorm.Expr("CASE WHEN resolved_at IS NULL THEN NULL ELSE ? END", later),
		"next_check_at":   gorm.Expr("CASE WHEN next_check_at IS NULL THEN NULL ELSE ? END", next),
		"last_checked_at": gorm.Expr("CASE WHEN last_checked_at IS NULL THEN NULL ELSE ? END", later),
		"opened_at":       gorm.Expr("CASE WHEN opened_at IS NULL THEN NULL ELSE ? END", later)}
	if err := db.Gorm.Model(&topup.TopUp{}).Where("id = ?", id).Updates(vals).Error; err != nil {
		t.Fatalf("restamp payment %d: %v", id, err)
	}
}
