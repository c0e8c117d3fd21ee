package admin

// UserDetailView is GET /admin/users/{id}.
type UserDetailView struct {
	User      UserRow
	Ledger    []LedgerRow
	TopUps    []TopUpRow
	TopUpsURL string // the full list of their payments
	// Withdrawals are their latest withdrawals, each linking to its page.
	Withdrawals []WithdrawalRow
	// Merchant: the user's merchant (IsMerchant false: none yet), and
	// the form that makes them one or renames them.
	Merchant UserMerchantView
	// Notice and ErrorKey are the last action's outcome.
	Notice    string
	ErrorKey  string
	ErrorArgs []any
}

// UserMerchantView is the user's merchant side on their admin page.
type UserMerchantView struct {
	IsMerchant   bool
	DisplayName  string
	BalanceRials int64
	// Action is where the form posts; Name what it shows typed.
	Action string
	Name   string
	// CodeInvalid: the second factor's code typed was refused (the
	// field is marked, described by the page's error).
	CodeInvalid bool
}
