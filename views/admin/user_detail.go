package admin

// UserDetailView is GET /admin/users/{id}.
type UserDetailView struct {
	User      UserRow
	Ledger    []LedgerRow
	TopUps    []TopUpRow
	TopUpsURL string // the full list of their payments
}
