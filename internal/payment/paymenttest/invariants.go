package paymenttest

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/store"
)

// CheckInvariants asserts the promises of ARCHITECTURE §2 over the whole
// database: every balance equals the sum of its ledger and is never
// negative; at most one ledger entry per payment and one payment per bank
// reference; every credited payment has a reference and a verified amount
// equal to its own amount, and exactly one ledger entry of that amount in
// its wallet; no other payment has a ledger entry; every status change
// has its payment_events row (the events of a payment chain from created
// to its current status).
func CheckInvariants(t testing.TB, db *store.DB) {
	t.Helper()
	for _, c := range []struct{ what, sql string }{
		{"balance = sum(ledger)", `SELECT COUNT(*) FROM wallets w WHERE w.balance_rials <>
			COALESCE((SELECT SUM(l.amount_rials) FROM ledger_entries l WHERE l.wallet_id = w.id), 0)`},
		{"balance >= 0", `SELECT COUNT(*) FROM wallets WHERE balance_rials < 0`},
		{"at most one ledger entry per payment", `SELECT COUNT(*) FROM (SELECT payment_id FROM ledger_entries
			WHERE payment_id IS NOT NULL GROUP BY payment_id HAVING COUNT(*) > 1) x`},
		{"at most one payment per (gateway, ref_id)", `SELECT COUNT(*) FROM (SELECT gateway, ref_id FROM payments
			WHERE ref_id IS NOT NULL GROUP BY gateway, ref_id HAVING COUNT(*) > 1) x`},
		{"credited has ref_id and the verified amount", `SELECT COUNT(*) FROM payments WHERE status = 'credited'
			AND (ref_id IS NULL OR verified_amount_rials IS NULL OR verified_amount_rials <> amount_rials)`},
		{"credited has exactly its ledger entry", `SELECT COUNT(*) FROM payments p WHERE p.status = 'credited'
			AND (SELECT COUNT(*) FROM ledger_entries l WHERE l.payment_id = p.id AND l.amount_rials = p.amount_rials AND l.wallet_id = p.wallet_id) <> 1`},
		{"only credited payments have ledger entries", `SELECT COUNT(*) FROM ledger_entries l JOIN payments p
			ON p.id = l.payment_id WHERE p.status <> 'credited'`},
		{"every status change has its event (the last event ends in the status)", `SELECT COUNT(*) FROM payments p
			WHERE p.status <> COALESCE((SELECT e.to_status FROM payment_events e WHERE e.payment_id = p.id
				ORDER BY e.id DESC LIMIT 1), 'created')`},
		{"events chain (each starts where the previous ended)", `SELECT COUNT(*) FROM payment_events e
			WHERE e.from_status <> COALESCE((SELECT e2.to_status FROM payment_events e2 WHERE e2.payment_id = e.payment_id
				AND e2.id < e.id ORDER BY e2.id DESC LIMIT 1), 'created')`},
		{"every credited payment has one credit event", `SELECT COUNT(*) FROM payments p WHERE p.status = 'credited'
			AND (SELECT COUNT(*) FROM payment_events e WHERE e.payment_id = p.id AND e.to_status = 'credited') <> 1`},
	} {
		var n int64
		if err := db.Gorm.Raw(c.sql).Scan(&n).Error; err != nil {
			t.Fatalf("invariant %s: %v", c.what, err)
		}
		if n != 0 {
			t.Errorf("invariant broken: %s (%d rows)", c.what, n)
		}
	}
}

// CheckNoneOpenPast asserts that no payment is still open (created,
// awaiting_payment, pending_verification) more than maxOpen after it last
// became open, by the clock now: a payment past its deadlines must have
// ended (failed, or needs_review where a person looks).
func CheckNoneOpenPast(t testing.TB, db *store.DB, now time.Time, maxOpen time.Duration) {
	t.Helper()
	var ids []string
	err := db.Gorm.Raw(`SELECT public_id FROM payments WHERE status IN ('created', 'awaiting_payment', 'pending_verification')
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
func ForceStatus(t testing.TB, db *store.DB, paymentID int64, status, reason string) {
	t.Helper()
	err := db.Gorm.Transaction(func(tx *gorm.DB) error {
		var from string
		if err := tx.Raw(`SELECT status FROM payments WHERE id = ?`, paymentID).Scan(&from).Error; err != nil {
			return err
		}
		actor, ok := edgeActor(payment.Status(from), payment.Status(status))
		if !ok {
			return fmt.Errorf("%s → %s is not an edge of the state machine", from, status)
		}
		now := time.Now().UTC()
		var resolved any
		if status == "credited" || status == "failed" || status == "needs_review" {
			resolved = now
		}
		if err := tx.Exec(`UPDATE payments SET status = ?, status_reason = ?, resolved_at = ?, updated_at = ? WHERE id = ?`,
			status, reason, resolved, now, paymentID).Error; err != nil {
			return err
		}
		return tx.Exec(`INSERT INTO payment_events (payment_id, from_status, to_status, actor, reason, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			paymentID, from, status, string(actor), reason, now).Error
	})
	if err != nil {
		t.Fatalf("force payment %d to %s: %v", paymentID, status, err)
	}
}

// edgeActor is who may move a payment from → to by the transition table:
// the worker when it may, else the first actor the table names.
func edgeActor(from, to payment.Status) (payment.Actor, bool) {
	for _, e := range payment.Transitions() {
		if e.From != from || e.To != to || len(e.Actors) == 0 {
			continue
		}
		for _, a := range e.Actors {
			if a == payment.ActorWorker {
				return a, true
			}
		}
		return e.Actors[0], true
	}
	return "", false
}
