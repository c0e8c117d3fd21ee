package admin

import "github.com/kifpool/kifpool/views"

// SectionCharges is the admin console's charges page.
const SectionCharges Section = "charges"

// ChargesView is the admins' search of charges (by id, order id, or the
// merchant's or the payer's e-mail).
type ChargesView struct {
	Query   string
	Charges []views.ChargeRow
}

// ChargeDetailView is one charge with its refunds, history and ledger
// transactions.
type ChargeDetailView struct {
	Charge       *views.ChargeDetail
	HoldID       int64
	Transactions []LedgerTransactionRow
}
