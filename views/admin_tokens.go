package views

// AdminTokensView is the admins' list of every user's tokens.
type AdminTokensView struct {
	Filter string
	Notice string
	Tokens []TokenRow
}
