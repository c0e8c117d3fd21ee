package views

// UserDetailView is GET /admin/users/{id}.
type UserDetailView struct {
	User        ConsoleUser
	Ledger      []LedgerRow
	Payments    []ConsolePaymentRow
	PaymentsURL string // the full list of their payments
}
