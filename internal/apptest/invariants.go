package apptest

import (
	"testing"

	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// CheckInvariants asserts the promises of ARCHITECTURE §2 over the whole
// database (see paymenttest.CheckInvariants).
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
// payment credited here is VERIFIED at the bank. The bank's paid set
// equals our credited set.
func CheckBankAgrees(t testing.TB, db *store.DB, bank *sandbank.Bank) {
	t.Helper()
	type row struct {
		PublicID    string
		Authority   *string
		Status      string
		RefID       *int64
		AmountRials int64
	}
	var rows []row
	if err := db.Gorm.Raw(`SELECT public_id, authority, status, ref_id, amount_rials FROM topups`).Scan(&rows).Error; err != nil {
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
