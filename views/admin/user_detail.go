package admin

// UserDetailView is GET /admin/users/{id}.
type UserDetailView struct {
	User        UserRow
	Ledger      []LedgerRow
	Payments    []PaymentRow
	PaymentsURL string // the full list of their payments
}
