package views

// UserDetailView is GET /admin/users/{id}.
type UserDetailView struct {
	User        AdminUserRow
	Ledger      []LedgerRow
	Payments    []AdminPaymentListRow
	PaymentsURL string // the full list of their payments
}
