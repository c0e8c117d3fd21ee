package admin

import "time"

// SectionTransfers is the admin console's transfers page.
const SectionTransfers Section = "transfers"

// TransfersView is the admins' search of transfers (by id or by either
// person's e-mail address).
type TransfersView struct {
	Query     string
	Transfers []TransferRow
}

// TransferRow is one transfer in the admins' list.
type TransferRow struct {
	PublicID    string
	From, To    string
	AmountRials int64
	Note        string
	CreatedAt   time.Time
}

// TransferDetailView is one transfer with its ledger transactions.
type TransferDetailView struct {
	Transfer     TransferRow
	Transactions []LedgerTransactionRow
}

// LedgerTransactionRow is one ledger transaction of a movement, with its
// postings.
type LedgerTransactionRow struct {
	ID        int64
	Kind      string
	Reference string
	CreatedAt time.Time
	Postings  []LedgerPostingRow
}

// LedgerPostingRow is one posting: the account (its code), the signed
// amount and the account's posted balance after it.
type LedgerPostingRow struct {
	AccountCode       string
	AmountRials       int64
	BalanceAfterRials int64
}
