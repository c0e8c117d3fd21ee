package auth

import (
	_ "embed"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Password rules. bcrypt reads at most 72 bytes.
const (
	MinPasswordLen = 10 // characters, not counting spaces at either end
	MaxPasswordLen = 72 // bytes
)

//go:embed common_passwords.txt
var commonPasswordsFile string

// commonPasswords is the embedded list, parsed once on first use.
var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	set := make(map[string]struct{}, 5000)
	for _, line := range strings.Split(commonPasswordsFile, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		set[line] = struct{}{}
	}
	return set
})

// examplePasswords are the passwords Kifpool's own documentation and
// usage texts have shown as examples: copied as they are, they would make
// a weak account (an admin's, as a rule), so they are refused like the
// common ones.
var examplePasswords = map[string]struct{}{
	"a-long-password":              {},
	"a long password":              {},
	"a-new-long-password":          {},
	"correct horse battery staple": {},
}

// IsCommonPassword reports whether pw (ignoring case and spaces at either
// end) is on the embedded list of common passwords, or is one that has
// been shown as an example.
func IsCommonPassword(pw string) bool {
	pw = strings.ToLower(strings.TrimSpace(pw))
	if _, ok := examplePasswords[pw]; ok {
		return true
	}
	_, ok := commonPasswords()[pw]
	return ok
}

// CheckPassword applies the password rules: at least MinPasswordLen
// characters once spaces at either end are trimmed, at most
// MaxPasswordLen bytes, characters of at least two kinds (lower-case,
// upper-case, letters without case such as Persian ones, digits, and
// everything else: spaces, punctuation, symbols), and not on the list of
// common passwords.
func CheckPassword(pw string) error {
	if len(pw) > MaxPasswordLen {
		return ErrPasswordTooLong
	}
	trimmed := strings.TrimSpace(pw)
	if utf8.RuneCountInString(trimmed) < MinPasswordLen {
		return ErrPasswordTooShort
	}
	if characterKinds(trimmed) < 2 {
		return ErrPasswordTooSimple
	}
	if IsCommonPassword(trimmed) {
		return ErrPasswordCommon
	}
	return nil
}

func characterKinds(s string) int {
	const (
		lower = 1 << iota
		upper
		uncased
		digit
		other
	)
	var seen int
	for _, r := range s {
		switch {
		case unicode.IsLower(r):
			seen |= lower
		case unicode.IsUpper(r):
			seen |= upper
		case unicode.IsLetter(r):
			seen |= uncased
		case unicode.IsDigit(r):
			seen |= digit
		default:
			seen |= other
		}
	}
	n := 0
	for ; seen != 0; seen &= seen - 1 {
		n++
	}
	return n
}
