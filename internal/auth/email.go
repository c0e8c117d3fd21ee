package auth

import "github.com/kifpool/kifpool/internal/email"

// NormalizeEmail returns the one form an address is stored and compared
// in (see package email), or ErrEmailInvalid.
func NormalizeEmail(s string) (string, error) {
	out, err := email.Normalize(s)
	if err != nil {
		return "", ErrEmailInvalid
	}
	return out, nil
}
