// Package iban reads and checks what a person types to name their bank
// account and themselves: an Iranian Sheba number (the IBAN of an Iranian
// account) and a national code (کد ملی). It knows the banks by the code
// inside a Sheba, in Persian and English, and nothing else: whether an
// account belongs to a person is the payout provider's inquiry, never a
// checksum (a Sheba that passes mod-97 only can exist).
//
// The rules, from the Central Bank's Sheba standard (ISO 13616) and the
// national code's published check digit:
//   - Sheba: "IR" and 24 digits. Moved to the end, "IR" becomes 18 27, and
//     the 26-digit number mod 97 is 1, with check digits 02 to 98 (00,
//     01 and 99 would be other spellings of 97, 98 and 02). Characters 5
//     to 7 are the bank's code (017 Melli, 012 Mellat, …).
//   - National code: 10 digits, not all the same; s = Σ dᵢ·(11−i) over the
//     first nine, r = s mod 11; valid when r < 2 and d₁₀ = r, or r ≥ 2 and
//     d₁₀ = 11 − r. Eight or nine digits are left-padded with zeros.
//
// People type Persian or Arabic-Indic digits, spaces, dashes, and often
// leave out "IR": all of that is accepted and normalised; anything else
// is refused with an error saying what is wrong.
package iban

import (
	"errors"
	"fmt"
	"strings"
)

// The refusals of Parse (test them with errors.Is).
var (
	// ErrEmpty: nothing was typed.
	ErrEmpty = errors.New("iban: empty")
	// ErrFormat: not "IR" and 24 digits (another country, letters,
	// too short or too long).
	ErrFormat = errors.New(`iban: not "IR" and 24 digits`)
	// ErrChecksum: the check digits do not match (a typo).
	ErrChecksum = errors.New("iban: check digits do not match")
	// ErrUnknownBank: the bank code names no Iranian bank.
	ErrUnknownBank = errors.New("iban: unknown bank code")
)

// Length is the length of a Sheba: "IR" and 24 digits.
const Length = 26

// Sheba is a checked Sheba number in its one stored form: "IR" and 24
// Latin digits, no spaces.
type Sheba string

// String is the stored form.
func (s Sheba) String() string { return string(s) }

// BankCode is the bank's three digits (characters 5 to 7).
func (s Sheba) BankCode() string {
	if len(s) != Length {
		return ""
	}
	return string(s[4:7])
}

// Bank is the bank the Sheba belongs to (ok false for a code the table
// does not know; Parse refuses those).
func (s Sheba) Bank() (Bank, bool) { return BankByCode(s.BankCode()) }

// Last4 is the account's last four digits, as people are shown it
// ("…1234"): enough to recognise one's own account, too little to use.
func (s Sheba) Last4() string {
	if len(s) < 4 {
		return ""
	}
	return string(s[len(s)-4:])
}

// Grouped is the Sheba in groups of four, as it is printed on a card
// ("IR06 2960 0000 …"); written left to right in every language.
func (s Sheba) Grouped() string {
	var b strings.Builder
	for i, r := range string(s) {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Masked is the Sheba with all but its country, check digits, bank code
// and last four digits hidden, for logs and lists.
func (s Sheba) Masked() string {
	if len(s) != Length {
		return ""
	}
	return string(s[:7]) + strings.Repeat("•", Length-11) + s.Last4()
}

// Parse reads a typed Sheba: Persian, Arabic-Indic or Latin digits,
// spaces, dashes and dots between them, "IR" in any case or left out.
// It returns the stored form, or ErrEmpty, ErrFormat, ErrChecksum or
// ErrUnknownBank, in that order of checking.
func Parse(typed string) (Sheba, error) {
	var b strings.Builder
	for _, r := range strings.TrimSpace(typed) {
		if d, ok := latin(r); ok {
			b.WriteRune(d)
			continue
		}
		switch {
		case separator(r):
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		default:
			b.WriteRune(r)
		}
	}
	s := b.String()
	if s == "" {
		return "", ErrEmpty
	}
	if !strings.HasPrefix(s, "IR") && len(s) == Length-2 {
		s = "IR" + s
	}
	if len(s) != Length || s[:2] != "IR" || !allDigits(s[2:]) {
		return "", ErrFormat
	}
	// ISO 7064 MOD 97-10 check digits are 02 to 98: 00, 01 and 99 pass
	// mod-97 too, but only as other spellings of 97, 98 and 02, and one
	// account must have one stored form.
	if cd := s[2:4]; cd < "02" || cd > "98" || mod97(s) != 1 {
		return "", ErrChecksum
	}
	if _, ok := BankByCode(s[4:7]); !ok {
		return "", ErrUnknownBank
	}
	return Sheba(s), nil
}

// CheckDigits returns the two check digits of a Sheba whose 22 digits
// after them (bank code and account) are bban: a test's or the sandbox's
// way to make a valid number. It returns "" when bban is not 22 digits.
func CheckDigits(bban string) string {
	if len(bban) != Length-4 || !allDigits(bban) {
		return ""
	}
	// With check digits 00 the number mod 97 is r; 98 − r makes it 1.
	r := mod97("IR00" + bban)
	return fmt.Sprintf("%02d", 98-r)
}

// Make is the valid Sheba of bank code and a 19-digit account part
// (CheckDigits placed); "" when they are not 3 and 19 digits.
func Make(bankCode, account string) Sheba {
	cd := CheckDigits(bankCode + account)
	if cd == "" || len(bankCode) != 3 {
		return ""
	}
	return Sheba("IR" + cd + bankCode + account)
}

// mod97 is the ISO 13616 check of a 26-character "IR…" string of
// digits: the four first characters moved to the end, I and R as 18 and
// 27, the whole number mod 97 (computed digit by digit: no big integers).
func mod97(s string) int {
	r := 0
	feed := func(c byte) { r = (r*10 + int(c-'0')) % 97 }
	for i := 4; i < len(s); i++ {
		feed(s[i])
	}
	for _, c := range []byte("1827") {
		feed(c)
	}
	feed(s[2])
	feed(s[3])
	return r
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// latin is the Latin digit of a decimal digit in Latin, Persian or
// Arabic-Indic script.
func latin(r rune) (rune, bool) {
	switch {
	case r >= '0' && r <= '9':
		return r, true
	case r >= '۰' && r <= '۹': // EXTENDED ARABIC-INDIC (Persian)
		return r - '۰' + '0', true
	case r >= '٠' && r <= '٩': // ARABIC-INDIC
		return r - '٠' + '0', true
	}
	return 0, false
}

// separator reports the characters people type between groups: spaces
// (and the no-break and zero-width ones a copy brings along), dashes,
// dots, and the direction marks a right-to-left field adds.
func separator(r rune) bool {
	switch r {
	case ' ', '\t', '-', '.', '_', '\u00a0', '\u200c', '\u200b', '\u200e', '\u200f', '\u202f', '\u2007', '\u2009':
		return true
	}
	return false
}
