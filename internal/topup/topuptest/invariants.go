package topuptest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
)

// CheckInvariants asserts the promises of ARCHITECTURE §2 over the whole
// database, by the rules of `kifpool check` (internal/integrity, written
// once): every balance equals the sum of its ledger (and each entry's
// balance_after its running sum) and is never negative; at most one ledger
// entry per payment and one payment per bank reference; every credited
// payment has a reference and a verified amount equal to its own amount,
// exactly one ledger entry of that amount in its wallet and one credit
// event; no other payment has a ledger entry; the events of a payment
// chain from created to its current status. The rules needing the call
// log (tests may use a bare fake gateway) or a clock (CheckNoneOpenPast)
// are left out.
func CheckInvariants(t testing.TB, db *store.DB) {
	t.Helper()
	rep, err := integrity.Check(context.Background(), db, integrity.Options{NoCallLog: true})
	if err != nil {
		t.Fatalf("invariants: %v", err)
	}
	for _, v := range rep.Violations() {
		t.Errorf("invariant broken: %s", v)
	}
}

// CheckNoneOpenPast asserts that no payment is still open (created,
// awaiting_payment, pending_verification, settling) more than maxOpen after it last
// became open, by the clock now: a payment past its deadlines must have
// ended (failed, or needs_review where a person looks).
func CheckNoneOpenPast(t testing.TB, db *store.DB, now time.Time, maxOpen time.Duration) {
	t.Helper()
	var ids []string
	err := db.Gorm.Raw(`SELECT public_id FROM topups WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling')
		AND COALESCE(opened_at, created_at) < ?`, now.Add(-maxOpen).UTC()).Scan(&ids).Error
	if err != nil {
		t.Fatalf("open payments: %v", err)
	}
	if len(ids) > 0 {
		t.Errorf("invariant broken: %d payments open past their deadline (%v): %v", len(ids), maxOpen, ids)
	}
}

// ForceStatus puts a payment into a status as the state machine would
// have (the status and one payment_events row), for tests that need a
// payment in a state their scenario does not reach by itself. Only an edge
// of the transition table may be taken, by one of the actors the table
// allows on it (the worker when it may); anything else fails the test.
func ForceStatus(t testing.TB, db *store.DB, topUpID int64, status, reason string) {
	t.Helper()
	err := db.Gorm.Transaction(func(tx *gorm.DB) error {
		var from string
		if err := tx.Raw(`SELECT status FROM topups WHERE id = ?`, topUpID).Scan(&from).Error; err != nil {
			return err
		}
		actor, ok := edgeActor(topup.Status(from), topup.Status(status))
		if !ok {
			return fmt.Errorf("%s → %s is not an edge of the state machine", from, status)
		}
		now := time.Now().UTC()
		var resolved any
		if status == "credited" || status == "failed" || status == "needs_review" {
			resolved = now
		}
		if err := tx.Exec(`UPDATE topups SET status = ?, status_reason = ?, resolved_at = ?, updated_at = ? WHERE id = ?`,
			status, reason, resolved, now, topUpID).Error; err != nil {
			return err
		}
		return tx.Exec(`INSERT INTO topup_events (topup_id, from_status, to_status, actor, reason, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			topUpID, from, status, string(actor), reason, now).Error
	})
	if err != nil {
		t.Fatalf("force payment %d to %s: %v", topUpID, status, err)
	}
}

// edgeActor is who may move a payment from → to by the transition table:
// the worker when it may, else the first actor the table names.
func edgeActor(from, to topup.Status) (topup.Actor, bool) {
	for _, e := range topup.Transitions() {
		if e.From != from || e.To != to || len(e.Actors) == 0 {
			continue
		}
		for _, a := range e.Actors {
			if a == topup.ActorWorker {
				return a, true
			}
		}
		return e.Actors[0], true
	}
	return "", false
}

// Events reads a payment's status changes (payment_events), oldest first.
func Events(ctx context.Context, db *store.DB, topUpID int64) ([]topup.Event, error) {
	var out []topup.Event
	err := db.Gorm.WithContext(ctx).Table("topup_events").Where("topup_id = ?", topUpID).Order("id").Find(&out).Error
	return out, err
}

// Calls reads a payment's recorded bank attempts (gateway_calls), oldest
// first.
func Calls(ctx context.Context, db *store.DB, topUpID int64) ([]topup.GatewayCall, error) {
	var out []topup.GatewayCall
	err := db.Gorm.WithContext(ctx).Table("gateway_calls").Where("topup_id = ?", topUpID).Order("id").Find(&out).Error
	return out, err
}
