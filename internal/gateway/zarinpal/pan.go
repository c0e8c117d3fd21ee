package zarinpal

import (
	"strings"
	"unicode"
)

// Card numbers (PANs) reach the driver in two places: card_pan of a verify
// answer (normally already masked by the bank, 628023******8998) and free
// text of error messages. Neither may ever keep more than the first 6 and
// last 4 digits of a card, however the digits are grouped.
const (
	minPANDigits = 13 // shortest card number
	maxSepRun    = 3  // separators allowed between two digit groups ("6037 - 9912")
)

// maskPAN is card_pan as it is stored and shown: a card number written
// with separators (6037-9912-3456-7890, 6037 9912 3456 7890, other dashes
// and spaces, Persian digits), masked or not, becomes the unbroken masked
// form 603799******7890. A value that is not shaped like a card number has
// every card-number-shaped digit run masked instead.
func maskPAN(s string) string {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if d, ok := digitValue(r); ok {
			out = append(out, asciiDigits[d])
			continue
		}
		switch {
		case isMaskRune(r):
			out = append(out, '*')
		case isPANFieldSeparator(r):
		default:
			return maskDigitRuns(s)
		}
		if len(out) > 19 {
			return maskDigitRuns(s)
		}
	}
	if len(out) < minPANDigits || len(out) > 19 {
		return maskDigitRuns(s)
	}
	for i := 6; i < len(out)-4; i++ {
		out[i] = '*'
	}
	return string(out)
}

// maskDigitRuns masks every card-number-shaped run of digits: at least 13
// digits, possibly grouped by a few spaces or dashes, become their first 6
// and last 4 digits around stars, unbroken, as in 628023******8998. Other
// text is kept as it is.
func maskDigitRuns(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i := 0; i < len(rs); {
		if _, ok := digitValue(rs[i]); !ok {
			b.WriteRune(rs[i])
			i++
			continue
		}
		end, digits := i, 0
		for j := i; j < len(rs); {
			if _, ok := digitValue(rs[j]); ok {
				digits++
				j++
				end = j
				continue
			}
			k := j
			for k < len(rs) && k-j < maxSepRun && isRunSeparator(rs[k]) {
				k++
			}
			if k == j || k >= len(rs) {
				break
			}
			if _, ok := digitValue(rs[k]); !ok {
				break
			}
			j = k
		}
		run := rs[i:end]
		if digits >= minPANDigits {
			b.WriteString(maskedDigits(run, digits))
		} else {
			b.WriteString(string(run))
		}
		i = end
	}
	return b.String()
}

// maskedDigits is the digits of run (n of them, n >= 10) as first 6, stars,
// last 4.
func maskedDigits(run []rune, n int) string {
	out := make([]byte, 0, n)
	for _, r := range run {
		if d, ok := digitValue(r); ok {
			out = append(out, asciiDigits[d])
		}
	}
	for i := 6; i < len(out)-4; i++ {
		out[i] = '*'
	}
	return string(out)
}

// asciiDigits[d] is the ASCII digit of d (0-9): indexing instead of a
// conversion, so an out-of-range value panics instead of wrapping.
const asciiDigits = "0123456789"

// digitValue reads an ASCII, Persian or Arabic-Indic digit.
func digitValue(r rune) (int, bool) {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0'), true
	case r >= '\u06F0' && r <= '\u06F9': // Persian ۰-۹
		return int(r - '\u06F0'), true
	case r >= '\u0660' && r <= '\u0669': // Arabic-Indic ٠-٩
		return int(r - '\u0660'), true
	}
	return 0, false
}

// isRunSeparator: what may group the digits of a card number in free text:
// spaces of any kind, dashes of any kind (hyphen, en/em dash, non-breaking
// hyphen, minus sign) and invisible formatting marks.
func isRunSeparator(r rune) bool {
	return unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Pd, unicode.Cf) || r == '\u2212'
}

// isPANFieldSeparator: what card_pan may carry between its digits besides
// those, dots, slashes and underscores included.
func isPANFieldSeparator(r rune) bool {
	return isRunSeparator(r) || r == '.' || r == '/' || r == '_' || r == ','
}

// isMaskRune: the characters banks mask card digits with.
func isMaskRune(r rune) bool {
	switch r {
	case '*', 'x', 'X', '#', '\u2022', '\u25CF', '\u2217': // • ● ∗
		return true
	}
	return false
}
