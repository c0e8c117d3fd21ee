package iban_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/iban"
)

const parsian = "IR820540102680020817909002" // a published example: Parsian (054)

func TestParse(t *testing.T) {
	melli := iban.Make("017", "0000000123456789012")
	if melli == "" {
		t.Fatal("Make gave nothing")
	}
	for _, tc := range []struct {
		name, typed string
		want        iban.Sheba
		err         error
	}{
		{"stored form", parsian, parsian, nil},
		{"lower case ir", "ir820540102680020817909002", parsian, nil},
		{"groups of four", "IR82 0540 1026 8002 0817 9090 02", parsian, nil},
		{"dashes and surrounding space", "  IR82-0540-1026-8002-0817-9090-02 ", parsian, nil},
		{"without IR", "820540102680020817909002", parsian, nil},
		{"Persian digits", "IR۸۲۰۵۴۰۱۰۲۶۸۰۰۲۰۸۱۷۹۰۹۰۰۲", parsian, nil},
		{"Arabic-Indic digits without IR", "٨٢٠٥٤٠١٠٢٦٨٠٠٢٠٨١٧٩٠٩٠٠٢", parsian, nil},
		{"Persian digits with zero-width non-joiners and marks", "\u200fIR۸۲\u200c۰۵۴۰ ۱۰۲۶ ۸۰۰۲ ۰۸۱۷ ۹۰۹۰ ۰۲", parsian, nil},
		{"made", string(melli), melli, nil},
		{"empty", "   ", "", iban.ErrEmpty},
		{"too short", "IR82054010268002081790900", "", iban.ErrFormat},
		{"too long", "IR8205401026800208179090021", "", iban.ErrFormat},
		{"another country", "DE89370400440532013000", "", iban.ErrFormat},
		{"26 characters of another country", "DE820540102680020817909002", "", iban.ErrFormat},
		{"a letter inside", "IR82054010268002081790900A", "", iban.ErrFormat},
		{"a stray symbol", "IR82/0540102680020817909002", "", iban.ErrFormat},
		{"one digit changed", "IR820540102680020817909003", "", iban.ErrChecksum},
		{"two digits swapped", "IR820540102680020817909020", "", iban.ErrChecksum},
		{"check digits wrong", "IR830540102680020817909002", "", iban.ErrChecksum},
		{"a valid number of no bank", "IR062960000000100324200001", "", iban.ErrUnknownBank},
		// Check digits 00, 01 and 99 pass mod-97 as 97, 98 and 02 do: the
		// same account spelt twice. Only 02 to 98 are check digits.
		{"check digits 97", "IR970170000000000000000011", "IR970170000000000000000011", nil},
		{"check digits 00, alias of 97", "IR000170000000000000000011", "", iban.ErrChecksum},
		{"check digits 00 without IR", "000170000000000000000011", "", iban.ErrChecksum},
		{"check digits 98", "IR980170000000000000000090", "IR980170000000000000000090", nil},
		{"check digits 01, alias of 98", "IR010170000000000000000090", "", iban.ErrChecksum},
		{"check digits 02", "IR020170000000000000000072", "IR020170000000000000000072", nil},
		{"check digits 99, alias of 02", "IR990170000000000000000072", "", iban.ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := iban.Parse(tc.typed)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("Parse(%q) = %q, %v; want %q, %v", tc.typed, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestShebaParts(t *testing.T) {
	s, err := iban.Parse(parsian)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := s.Bank()
	if s.BankCode() != "054" || !ok || b.Name("fa") != "بانک پارسیان" || b.Name("en") != "Parsian Bank" {
		t.Fatalf("bank %q: %+v %v", s.BankCode(), b, ok)
	}
	if s.Last4() != "9002" || s.Grouped() != "IR82 0540 1026 8002 0817 9090 02" {
		t.Fatalf("last4 %q, grouped %q", s.Last4(), s.Grouped())
	}
	if m := s.Masked(); !strings.HasPrefix(m, "IR82054") || !strings.HasSuffix(m, "9002") || strings.Contains(m, "0102680020817") {
		t.Fatalf("masked %q shows the account", m)
	}
}

// Every bank of the table has a unique three-digit code and both names,
// and a Sheba made for it parses back to it.
func TestBankTable(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range iban.Banks() {
		if len(b.Code) != 3 || seen[b.Code] || b.FA == "" || b.EN == "" {
			t.Errorf("bank %+v", b)
		}
		seen[b.Code] = true
		s := iban.Make(b.Code, "0000000000000000042")
		got, err := iban.Parse(string(s))
		if err != nil || got.BankCode() != b.Code {
			t.Errorf("Make(%s) = %q parses to %q, %v", b.Code, s, got, err)
		}
	}
	for _, code := range []string{"017", "019", "056", "062", "012", "018"} { // the reference's examples
		if !seen[code] {
			t.Errorf("bank %s missing", code)
		}
	}
	if _, ok := iban.BankByCode("999"); ok {
		t.Error("999 is no bank")
	}
}

func TestCheckDigits(t *testing.T) {
	if got := iban.CheckDigits("0540102680020817909002"); got != "82" {
		t.Fatalf("CheckDigits = %q, want 82", got)
	}
	for _, bad := range []string{"", "054", "054010268002081790900A", "05401026800208179090021"} {
		if got := iban.CheckDigits(bad); got != "" {
			t.Errorf("CheckDigits(%q) = %q", bad, got)
		}
	}
	if iban.Make("54", "0102680020817909002") != "" || iban.Make("054", "1") != "" {
		t.Error("Make of bad parts")
	}
}

// Of the hundred check digits 00 to 99 before one bank code and account,
// exactly one is accepted, CheckDigits's, in 02 to 98; the alias that also
// passes mod-97 (00 for 97, 01 for 98, 99 for 02) is refused.
func TestOneSpellingPerAccount(t *testing.T) {
	for _, bban := range []string{
		"0540102680020817909002", // 82
		"0170000000000000000011", // 97, alias 00
		"0170000000000000000090", // 98, alias 01
		"0170000000000000000072", // 02, alias 99
	} {
		want := iban.CheckDigits(bban)
		for cd := 0; cd <= 99; cd++ {
			typed := fmt.Sprintf("IR%02d%s", cd, bban)
			got, err := iban.Parse(typed)
			if typed[2:4] == want {
				if err != nil || string(got) != typed {
					t.Errorf("Parse(%q) = %q, %v; want it accepted", typed, got, err)
				}
			} else if !errors.Is(err, iban.ErrChecksum) {
				t.Errorf("Parse(%q) = %q, %v; want %v", typed, got, err, iban.ErrChecksum)
			}
		}
	}
}

func TestParseNationalCode(t *testing.T) {
	for _, tc := range []struct {
		name, typed string
		want        iban.NationalCode
		err         error
	}{
		{"valid", "0499370899", "0499370899", nil},
		{"valid, r < 2", "0013542419", "0013542419", nil},
		{"Persian digits", "۰۴۹۹۳۷۰۸۹۹", "0499370899", nil},
		{"Arabic-Indic digits and dashes", "٠٤٩-٩٣٧٠٨-٩٩", "0499370899", nil},
		{"nine digits, padded", "499370899", "0499370899", nil},
		{"eight digits, padded", "13542419", "0013542419", nil},
		{"spaces", " 049 937 0899 ", "0499370899", nil},
		{"wrong check digit", "0499370898", "", iban.ErrNationalCodeCheck},
		{"all the same", "1111111111", "", iban.ErrNationalCodeCheck},
		{"all zeros", "0000000000", "", iban.ErrNationalCodeCheck},
		{"seven digits", "1354241", "", iban.ErrNationalCodeFormat},
		{"eleven digits", "04993708990", "", iban.ErrNationalCodeFormat},
		{"a letter", "04993708A9", "", iban.ErrNationalCodeFormat},
		{"empty", "", "", iban.ErrNationalCodeFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := iban.ParseNationalCode(tc.typed)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("ParseNationalCode(%q) = %q, %v; want %q, %v", tc.typed, got, err, tc.want, tc.err)
			}
		})
	}
	if m := iban.NationalCode("0499370899").Masked(); m != "049••••••9" {
		t.Fatalf("masked %q", m)
	}
}

// Every nine digits but the nine equal ones have exactly one check digit
// that makes a valid code, and it is NationalCheckDigit's.
func TestNationalCheckDigit(t *testing.T) {
	for _, nine := range []string{"049937089", "001354241", "123456789", "987654321", "000000001"} {
		want := iban.NationalCheckDigit(nine)
		for d := 0; d <= 9; d++ {
			_, err := iban.ParseNationalCode(nine + string(rune('0'+d)))
			if (err == nil) != (d == want) {
				t.Errorf("%s%d: %v (check digit %d)", nine, d, err, want)
			}
		}
	}
	if iban.NationalCheckDigit("12345678") != -1 {
		t.Error("eight digits have no check digit")
	}
}
