package iban_test

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/iban"
)

// FuzzParse: whatever is typed, Parse either refuses it with one of its
// errors or returns a stored form that is "IR" and 24 Latin digits, passes
// mod-97 (CheckDigits agrees), names a known bank, and parses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{parsian, "820540102680020817909002", "IR۸۲۰۵۴۰۱۰۲۶۸۰۰۲۰۸۱۷۹۰۹۰۰۲", "", "IR", "ir82 0540", "\xff\xfe", "IR062960000000100324200001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, typed string) {
		s, err := iban.Parse(typed)
		if err != nil {
			if s != "" {
				t.Fatalf("Parse(%q) = %q with %v", typed, s, err)
			}
			if !errors.Is(err, iban.ErrEmpty) && !errors.Is(err, iban.ErrFormat) && !errors.Is(err, iban.ErrChecksum) && !errors.Is(err, iban.ErrUnknownBank) {
				t.Fatalf("Parse(%q): unexpected error %v", typed, err)
			}
			return
		}
		str := string(s)
		if len(str) != iban.Length || str[:2] != "IR" || !utf8.ValidString(str) {
			t.Fatalf("Parse(%q) = %q", typed, s)
		}
		for i := 2; i < len(str); i++ {
			if str[i] < '0' || str[i] > '9' {
				t.Fatalf("Parse(%q) = %q holds %q", typed, s, str[i])
			}
		}
		if iban.CheckDigits(str[4:]) != str[2:4] {
			t.Fatalf("Parse(%q) = %q: check digits disagree with CheckDigits", typed, s)
		}
		if _, ok := s.Bank(); !ok {
			t.Fatalf("Parse(%q) = %q: unknown bank", typed, s)
		}
		if again, err := iban.Parse(str); err != nil || again != s {
			t.Fatalf("Parse(%q) = %q, %v; not idempotent", str, again, err)
		}
	})
}

// FuzzParseNationalCode: a code accepted is ten Latin digits, not all the
// same, whose check digit is NationalCheckDigit's, and parses to itself.
func FuzzParseNationalCode(f *testing.F) {
	for _, s := range []string{"0499370899", "499370899", "۰۴۹۹۳۷۰۸۹۹", "1111111111", "", "\u200c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, typed string) {
		n, err := iban.ParseNationalCode(typed)
		if err != nil {
			if !errors.Is(err, iban.ErrNationalCodeFormat) && !errors.Is(err, iban.ErrNationalCodeCheck) {
				t.Fatalf("ParseNationalCode(%q): unexpected error %v", typed, err)
			}
			return
		}
		s := string(n)
		if len(s) != 10 || iban.NationalCheckDigit(s[:9]) != int(s[9]-'0') {
			t.Fatalf("ParseNationalCode(%q) = %q", typed, n)
		}
		if again, err := iban.ParseNationalCode(s); err != nil || again != n {
			t.Fatalf("not idempotent: %q → %q, %v", s, again, err)
		}
	})
}
