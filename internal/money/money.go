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
// (U+060C), '_' , apostrophes and any kind of space. A leading '+' is
// allowed. Anything else (signs, decimal points, exponents, letters) is
// rejected: an amount of money is never guessed.
func ParseTomans(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, ErrEmpty
	}
	s = strings.TrimPrefix(s, "+")
	var n int64
	digits := 0
	for _, r := range s {
		d, ok := digitValue(r)
		switch {
		case ok:
			if n == 0 && d == 0 {
				continue // leading zeros carry no value
			}
			digits++
			if digits > maxTomanDigits {
				return 0, ErrTooLong
			}
			n = n*10 + int64(d)
		case isSeparator(r):
			continue
		default:
			return 0, invalidKind(s)
		}
	}
	if !strings.ContainsFunc(s, func(r rune) bool { _, ok := digitValue(r); return ok }) {
		return 0, ErrInvalid
	}
	if n <= 0 {
		return 0, ErrNotPositive
	}
	return n * RialsPerToman, nil
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
	} else if strings.TrimFunc(whole, func(r rune) bool { _, ok := digitValue(r); return ok || isSeparator(r) }) != "" {
		return 0, invalidKind(whole)
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

func isSeparator(r rune) bool {
	switch r {
	case ',', '٬', '،', '_', '\'', '’':
		return true
	}
	return unicode.IsSpace(r) || r == '\u200c' || r == '\u200f' || r == '\u200e'
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
