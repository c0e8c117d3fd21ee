// Package money parses the amounts people type. Amounts are integer rials
// everywhere inside Kifpool; people think and type in tomans (10 rials).
package money

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RialsPerToman is the fixed ratio between the two units.
const RialsPerToman = 10

// maxTomanDigits bounds the input: 15 digits of tomans is far above any
// limit and far below int64's range once multiplied by 10.
const maxTomanDigits = 15

// Parse errors, each with its own message for the user.
var (
	ErrEmpty       = errors.New("amount is empty")
	ErrInvalid     = errors.New("amount is not a whole number")
	ErrTooLong     = errors.New("amount has too many digits")
	ErrNotPositive = errors.New("amount must be more than zero")
	// ErrNegative and ErrDecimal are kinds of ErrInvalid (errors.Is
	// matches both) with a message of their own: a minus sign, and a
	// decimal part.
	ErrNegative = fmt.Errorf("%w: it is negative", ErrInvalid)
	ErrDecimal  = fmt.Errorf("%w: it has a decimal part", ErrInvalid)
)

// ParseTomans reads a whole number of tomans as typed by a person and
// returns it in rials. It accepts Latin, Persian (۰-۹) and Arabic-Indic
// (٠-٩) digits, and the usual group separators: ',', '٬' (U+066C), '،'
// (U+060C), '_' , apostrophes and any kind of space, each only where it
// groups thousands ("1,000,000", "۱٬۰۰۰", "12 500": a first group of one
// to three digits, then groups of exactly three) and one kind in a
// number. "12,5", "1 5" or "1,,000" are refused, not read as 125 or 15:
// a comma may be someone's decimal mark. The invisible marks ZWNJ, LRM
// and RLM are ignored wherever they are. A leading '+' is allowed.
// Anything else (signs, decimal points, exponents, letters) is
// rejected: an amount of money is never guessed.
func ParseTomans(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, ErrEmpty
	}
	s = strings.TrimPrefix(strings.TrimSpace(withoutMarks(s)), "+")
	n, err := readWhole(s)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, ErrNotPositive
	}
	return n * RialsPerToman, nil
}

// readWhole reads s, digits with separators between groups of three (no
// sign, no surrounding space, no invisible marks), as a whole number of
// tomans, zero included.
func readWhole(s string) (int64, error) {
	var n int64
	digits := 0     // significant digits read
	seen := false   // a digit was read
	group := 0      // digits since the last separator (or the start)
	var kind rune   // the kind of separator the number uses, once one is seen
	grouped := true // every separator so far is where one belongs
	for _, r := range s {
		if d, ok := digitValue(r); ok {
			seen = true
			group++
			if kind != 0 && group > 3 {
				grouped = false
			}
			if n == 0 && d == 0 {
				continue // leading zeros carry no value
			}
			digits++
			if digits > maxTomanDigits {
				return 0, ErrTooLong
			}
			n = n*10 + int64(d)
			continue
		}
		k := separatorKind(r)
		if k == 0 {
			return 0, invalidKind(s)
		}
		// A separator closes a group: the first of one to three digits,
		// the others of exactly three, all with the same separator.
		switch {
		case group == 0, kind == 0 && group > 3, kind != 0 && (group != 3 || k != kind):
			grouped = false
		}
		kind, group = k, 0
	}
	if !seen {
		return 0, ErrInvalid
	}
	if !grouped || (kind != 0 && group != 3) {
		return 0, ErrInvalid
	}
	return n, nil
}

// ParseTomansRials reads an amount in tomans that may carry rials, as the
// pages write one that is not whole tomans: one digit after a decimal
// mark ("1,234.5", "۱٬۲۳۴٫۵": 12,345 rials), exactly one: "1.000" may
// be a thousand written with a dot, and an amount is never guessed.
// Without a decimal mark it is ParseTomans.
func ParseTomansRials(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexAny(t, ".٫")
	if i < 0 {
		return ParseTomans(t)
	}
	whole, frac := t[:i], strings.TrimSpace(t[i+utf8.RuneLen([]rune(t[i:])[0]):])
	var rials int64
	if strings.ContainsFunc(whole, func(r rune) bool { d, ok := digitValue(r); return ok && d != 0 }) {
		w, err := ParseTomans(whole)
		if err != nil {
			return 0, err
		}
		rials = w
	} else if w := strings.TrimSpace(withoutMarks(whole)); w != "" {
		if _, err := readWhole(w); err != nil { // zero tomans, grouped as any amount
			return 0, err
		}
	}
	r := []rune(frac)
	if len(r) != 1 {
		return 0, ErrDecimal
	}
	d, ok := digitValue(r[0])
	if !ok {
		return 0, ErrInvalid
	}
	rials += int64(d)
	if rials <= 0 {
		return 0, ErrNotPositive
	}
	return rials, nil
}

func digitValue(r rune) (int, bool) {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0'), true
	case r >= '۰' && r <= '۹': // EXTENDED ARABIC-INDIC (Persian)
		return int(r - '۰'), true
	case r >= '٠' && r <= '٩': // ARABIC-INDIC
		return int(r - '٠'), true
	}
	return 0, false
}

// separatorKind says which kind of group separator r is, 0 if none: each
// character is its own kind, except that all spaces are one and both
// apostrophes are one (they look alike).
func separatorKind(r rune) rune {
	switch r {
	case ',', '٬', '،', '_':
		return r
	case '\'', '’':
		return '\''
	}
	if unicode.IsSpace(r) {
		return ' '
	}
	return 0
}

// isMark reports the invisible characters a Persian keyboard or a pasted
// text puts anywhere (ZWNJ, LRM, RLM): they are ignored.
func isMark(r rune) bool { return r == '\u200c' || r == '\u200e' || r == '\u200f' }

// withoutMarks is s without its invisible marks.
func withoutMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if isMark(r) {
			return -1
		}
		return r
	}, s)
}

// LatinDigits rewrites Persian (۰-۹) and Arabic-Indic (٠-٩) digits of s
// as Latin ones and leaves everything else as it is: whole numbers typed
// on a Persian keyboard (days, codes) read like any other.
func LatinDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if d, ok := digitValue(r); ok {
			return rune("0123456789"[d]) // a byte: no integer conversion to narrow
		}
		return r
	}, s)
}

// invalidKind says why s, which has a character that is neither a digit
// nor a separator, is not an amount: a leading minus sign, a decimal
// mark after a digit, or anything else (letters, a unit, other signs).
func invalidKind(s string) error {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "−") { // hyphen-minus, MINUS SIGN
		return ErrNegative
	}
	seenDigit := false
	for _, r := range s {
		if _, ok := digitValue(r); ok {
			seenDigit = true
			continue
		}
		switch r {
		case '.', '٫', '/': // full stop, ARABIC DECIMAL SEPARATOR, the slash Persian handwriting uses
			if seenDigit {
				return ErrDecimal
			}
		}
	}
	return ErrInvalid
}
