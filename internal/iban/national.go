package iban

import (
	"errors"
	"strings"
)

// The refusals of ParseNationalCode.
var (
	// ErrNationalCodeFormat: not 8 to 10 digits.
	ErrNationalCodeFormat = errors.New("national code: not 10 digits")
	// ErrNationalCodeCheck: the check digit does not match, or all ten
	// digits are the same.
	ErrNationalCodeCheck = errors.New("national code: check digit does not match")
)

// NationalCode is a checked national code: ten Latin digits.
type NationalCode string

// String is the stored form.
func (n NationalCode) String() string { return string(n) }

// Masked shows the first three and last digit only ("001•••••8"), for
// pages that confirm whose code is on file.
func (n NationalCode) Masked() string {
	if len(n) != 10 {
		return ""
	}
	return string(n[:3]) + strings.Repeat("•", 6) + string(n[9:])
}

// ParseNationalCode reads a typed national code: Persian, Arabic-Indic or
// Latin digits, spaces and dashes between them; eight or nine digits are
// left-padded with zeros (codes of some provinces start with 00 and are
// often typed without them). It refuses anything else, ten equal digits,
// and a wrong check digit.
func ParseNationalCode(typed string) (NationalCode, error) {
	var b strings.Builder
	for _, r := range strings.TrimSpace(typed) {
		if d, ok := latin(r); ok {
			b.WriteRune(d)
			continue
		}
		if separator(r) {
			continue
		}
		return "", ErrNationalCodeFormat
	}
	s := b.String()
	if len(s) < 8 || len(s) > 10 {
		return "", ErrNationalCodeFormat
	}
	s = strings.Repeat("0", 10-len(s)) + s
	if strings.Count(s, s[:1]) == 10 {
		return "", ErrNationalCodeCheck
	}
	sum := 0
	for i := 0; i < 9; i++ {
		sum += int(s[i]-'0') * (10 - i)
	}
	r, last := sum%11, int(s[9]-'0')
	if (r < 2 && last != r) || (r >= 2 && last != 11-r) {
		return "", ErrNationalCodeCheck
	}
	return NationalCode(s), nil
}

// NationalCheckDigit is the check digit of nine digits (-1 when they are
// not nine digits): a test's way to make a valid code.
func NationalCheckDigit(nine string) int {
	if len(nine) != 9 || !allDigits(nine) {
		return -1
	}
	sum := 0
	for i := 0; i < 9; i++ {
		sum += int(nine[i]-'0') * (10 - i)
	}
	r := sum % 11
	if r >= 2 {
		return 11 - r
	}
	return r
}
