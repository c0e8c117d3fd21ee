// Package email holds the rules for email addresses: the one form an
// address is stored and compared in, and which addresses are refused
// (lookalikes of other accounts).
package email

import (
	"errors"
	"net/mail"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/norm"
)

// wholeRE is the shape of a whole address: one "@", a dot after it, no
// spaces.
var wholeRE = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)

// LooksWhole reports whether a search text has the shape of a whole
// address (searched exactly, by the unique index on lower(email)), not of
// a part of one. It checks the shape only, not that the address is valid.
func LooksWhole(s string) bool { return wholeRE.MatchString(s) }

// ErrInvalid: not an address Kifpool accepts.
var ErrInvalid = errors.New("email address is not valid")

// Normalize returns the one form an address is stored and compared in,
// or ErrInvalid. Lookalike accounts are refused: the address is
// NFKC-normalised (fullwidth and other compatibility forms fold to their
// plain letters), invisible and control characters (a zero-width space,
// a direction mark) are refused outright instead of dropped, the local
// part must pass the PRECIS IdentifierClass (RFC 8264, case-mapped as for
// usernames, RFC 8265) and must not mix scripts (a Cyrillic "а" among
// Latin letters), and the domain is converted to its ASCII (punycode)
// form with IDNA lookup rules.
func Normalize(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 254 || !utf8.ValidString(s) {
		return "", ErrInvalid
	}
	for _, r := range s {
		if invisible(r) {
			return "", ErrInvalid
		}
	}
	s = norm.NFKC.String(s)
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "", ErrInvalid
	}
	local, domain := s[:at], s[at+1:]
	local, err := precis.UsernameCaseMapped.String(local)
	if err != nil || mixedScripts(local) {
		return "", ErrInvalid
	}
	domain, err = idna.Lookup.ToASCII(strings.ToLower(domain))
	if err != nil || !strings.Contains(domain, ".") || strings.HasSuffix(domain, ".") {
		return "", ErrInvalid
	}
	out := local + "@" + domain
	if len(out) > 254 {
		return "", ErrInvalid
	}
	// What remains must be a plain addr-spec: no display name, comments,
	// quoted local parts or a second @.
	a, err := mail.ParseAddress(out)
	if err != nil || a.Address != out || strings.Count(out, "@") != 1 {
		return "", ErrInvalid
	}
	return out, nil
}

// invisible reports characters that show as nothing, or change how what
// surrounds them shows: format characters (zero-width space and joiners,
// direction marks and overrides, the BOM), controls, every kind of space,
// fillers and variation selectors.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Z, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) ||
		unicode.IsSpace(r)
}

// mixedScripts reports whether the letters of s come from more than one
// script (Common and Inherited characters, such as digits and dots, mix
// with any).
func mixedScripts(s string) bool {
	var first string
	for _, r := range s {
		if r < utf8.RuneSelf {
			if ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
				if first == "" {
					first = "Latin"
				} else if first != "Latin" {
					return true
				}
			}
			continue
		}
		sc := scriptOf(r)
		if sc == "" || sc == "Common" || sc == "Inherited" {
			continue
		}
		if first == "" {
			first = sc
		} else if first != sc {
			return true
		}
	}
	return false
}

func scriptOf(r rune) string {
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			return name
		}
	}
	return ""
}
