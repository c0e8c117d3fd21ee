package apptest

import (
	"testing"

	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// CheckInvariants asserts the promises of ARCHITECTURE §2 over the whole
// database (see topuptest.CheckInvariants).
func CheckInvariants(t testing.TB, db *store.DB) {
	t.Helper()
	topuptest.CheckInvariants(t, db)
}

// Count runs a query that answers one number (see storetest.Count).
func Count(t testing.TB, db *store.DB, sql string, args ...any) int64 {
	t.Helper()
	return storetest.Count(t, db, sql, args...)
}

// CheckBankAgrees compares our side with the sandbox bank's, for a
// scenario whose payments have all been resolved: every payment the bank
// counts as paid (PAID or VERIFIED) under one of our authorities is
// credited here, once, with the bank's reference and amount, and every
// payment credited here is VERIFIED at the bank (or REVERSED by a card
// refund of ours). The bank's paid set equals our credited set, and what
// the bank gave back to cards equals what our card refunds call
// refunded, top-up by top-up: none twice, none lost.
func CheckBankAgrees(t testing.TB, db *store.DB, bank *sandbank.Bank) {
	t.Helper()
	type row struct {
		PublicID    string
		Authority   *string
		Status      string
		RefID       *int64
		AmountRials int64
		// Refunded is what our card refunds call refunded of it;
		// Reversed, whether one of them was a reverse.
		Refunded int64
		Reversed bool
	}
	var rows []row
	if err := db.Gorm.Raw(`SELECT p.public_id, p.authority, p.status, p.ref_id, p.amount_rials,
			COALESCE((SELECT SUM(c.amount_rials) FROM card_refunds c WHERE c.topup_id = p.id AND c.status = 'refunded'), 0) AS refunded,
			EXISTS (SELECT 1 FROM card_refunds c WHERE c.topup_id = p.id AND c.status = 'refunded' AND c.method = 'reverse') AS reversed
		FROM topups p`).Scan(&rows).Error; err != nil {
		t.Fatalf("payments: %v", err)
	}
	ours := map[string]row{}
	for _, r := range rows {
		if r.Authority != nil {
			ours[*r.Authority] = r
		}
	}
	for _, bp := range bank.Payments() {
		r, mine := ours[bp.Authority]
		if !mine {
			continue
		}
		refunded := bp.RefundedAmount
		if bp.State == sandbank.StateReversed && r.Reversed {
			// Reversed by our card refund: the sale was ours, then went back.
			bp.State, refunded = sandbank.StateVerified, bp.Amount
		}
		if refunded != r.Refunded {
			t.Errorf("bank and card refunds disagree on %s: the bank gave %d rials back to the card, our card refunds %d", r.PublicID, refunded, r.Refunded)
		}
		paid := bp.State == sandbank.StatePaid || bp.State == sandbank.StateVerified
		switch {
		case paid && r.Status != "credited":
			t.Errorf("bank and ledger disagree: the bank holds %s (%s) as %s, our payment %s is %s", bp.Authority, bp.State, bp.State, r.PublicID, r.Status)
		case !paid && r.Status == "credited":
			t.Errorf("bank and ledger disagree: payment %s is credited, the bank holds it as %s", r.PublicID, bp.State)
		case paid && (bp.State != sandbank.StateVerified || r.RefID == nil || *r.RefID != bp.RefID || r.AmountRials != bp.Amount):
			t.Errorf("bank and ledger disagree on %s: bank %s ref %d amount %d; ours ref %v amount %d", r.PublicID, bp.State, bp.RefID, bp.Amount, r.RefID, r.AmountRials)
		}
	}
	for a, r := range ours {
		if _, ok := bank.Payment(a); !ok && r.Status == "credited" {
			t.Errorf("payment %s is credited, the bank does not know its authority", r.PublicID)
		}
	}
}
