package views

import "time"

// TokensView is the "API access" page: the creation form, the token just
// created (shown once) and the user's tokens.
type TokensView struct {
	Form     TokenForm
	NewToken string // the secret of the token just created; "" otherwise
	Notice   string // message key of the last action's result
	Tokens   []TokenRow
	// DefaultDays is a new token's validity when none is typed.
	DefaultDays int
}

// TokenForm is the creation form as submitted.
type TokenForm struct {
	Name        string
	Scope       string
	ExpiresDays string
	ErrorKey    string
	ErrorArgs   []any
}

// TokenRow is one token in a list.
type TokenRow struct {
	ID         int64
	Name       string
	Prefix     string
	Scope      string
	State      string // active, revoked, expired
	Owner      string // admin list: the owner's email
	CreatedAt  time.Time
	LastUsedAt *time.Time
	ExpiresAt  *time.Time
}
