package admin

import "github.com/kifpool/kifpool/views"

// TokensView is the admins' list of every user's tokens.
type TokensView struct {
	Filter string
	Notice string
	Tokens []views.TokenRow
}
