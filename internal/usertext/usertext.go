// Package usertext checks the text people type into names and notes
// (API token names, top-up descriptions, admins' notes, search filters)
// before anything stores or shows it: no invalid UTF-8, no control
// characters (Unicode category Cc: NUL, escape, line breaks in a name) and
// no format characters (Cf: the bidi overrides and isolates U+202A–202E and
// U+2066–2069 that make "\u202Egnp.exe" show as "exe.png", zero-width
// spaces and joiners, the BOM). The one exception is the zero-width
// non-joiner between two letters: Persian is spelled with it. E-mail
// addresses are checked the same way, and more, by internal/email.
//
// Cut is the one cutter of text to a bound (an error kept on a row, a
// search filter, what a gateway is sent or sends back): by characters,
// never inside one, and always valid UTF-8.
package usertext

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid is text with a character a person cannot see or that
// reorders what they see.
var ErrInvalid = errors.New("text holds invisible or control characters")

// CheckName refuses a one-line name holding invalid UTF-8 or a Cc or Cf
// character.
func CheckName(s string) error { return check(s, false) }

// CheckNote is CheckName for text of several lines: line feeds, carriage
// returns and tabs are allowed, every other Cc or Cf character is not.
func CheckNote(s string) error { return check(s, true) }

func check(s string, lines bool) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrInvalid, i)
			}
		}
		if lines && (r == '\n' || r == '\r' || r == '\t') {
			continue
		}
		if r == zwnj && joinsLetters(s, i) {
			continue
		}
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("%w: U+%04X at byte %d", ErrInvalid, r, i)
		}
	}
	return nil
}

// zwnj is the zero-width non-joiner, the Persian keyboard's half-space
// (Shift+Space): part of how Persian is spelled ("می‌خواهم"), so it is
// allowed between two letters and nowhere else (not leading, trailing or
// doubled, where it could only pad or hide).
const zwnj = '\u200C'

// joinsLetters reports whether the ZWNJ at byte i of s stands between a
// letter (or a letter's combining mark) and a letter.
func joinsLetters(s string, i int) bool {
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(zwnj):])
	return (unicode.IsLetter(before) || unicode.Is(unicode.Mn, before)) && unicode.IsLetter(after)
}

// Cut shortens s to at most n characters, never inside one: the one
// cutter for text kept or sent with a bound (an error kept on a row, a
// search filter, a reconciliation's detail). Text that is not valid UTF-8
// has each run of bad bytes replaced by U+FFFD first: PostgreSQL refuses
// invalid UTF-8 in text, and a byte cut could make some.
func Cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if n <= 0 {
		return ""
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
