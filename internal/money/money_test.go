package money_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/money"
)

func TestParseTomansAccepted(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64 // rials
	}{
		{"latin", "10000", 100_000},
		{"comma groups", "10,000", 100_000},
		{"persian digits", "۱۰۰۰۰", 100_000},
		{"arabic-indic digits", "١٠٠٠٠", 100_000},
		{"persian with arabic thousands separator", "۱۰٬۰۰۰", 100_000},
		{"space groups", "10 000", 100_000},
		{"arabic comma groups", "10،000", 100_000},
		{"no-break space groups", "10\u00a0000", 100_000},
		{"underscore groups", "1_000_000", 10_000_000},
		{"apostrophe groups", "1'000", 10_000},
		{"leading plus", "+5000", 50_000},
		{"surrounding spaces", "  2500 ", 25_000},
		{"tab and newline around", "\t2500\n", 25_000},
		{"mixed digits", "۱0٠0۰", 100_000},
		{"mixed digits and separators", "۱0٬٠0۰", 100_000},
		{"leading zeros", "0005000", 50_000},
		{"persian leading zeros", "۰۰۱", 10},
		{"one toman", "1", 10},
		{"15 digits", "999999999999999", 9_999_999_999_999_990},
		{"15 digits after many leading zeros", "0000000000" + "100000000000000", 1_000_000_000_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := money.ParseTomans(tt.in)
			if err != nil {
				t.Fatalf("ParseTomans(%q): unexpected error %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseTomans(%q) = %d rials, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// TestParseTomansGrouping: a separator is read only where it groups
// thousands, one kind in a number. Anything else may be a decimal mark
// ("12,5" is twelve and a half to many) or a slip, and is refused rather
// than read as 125: an amount is never guessed.
func TestParseTomansGrouping(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want int64 // rials; 0: refused with ErrInvalid
	}{
		{"comma millions", "1,000,000", 10_000_000},
		{"persian thousands separator millions", "۱٬۰۰۰٬۰۰۰", 10_000_000},
		{"space thousands", "1 000", 10_000},
		{"comma thousands", "12,500", 125_000},
		{"three digit first group", "123,456", 1_234_560},
		{"arabic comma thousands", "۱۲،۵۰۰", 125_000},
		{"no-break space millions", "1\u00a0000\u00a0000", 10_000_000},
		{"narrow no-break and plain space are one kind", "1\u202f000 000", 10_000_000},
		{"both apostrophes are one kind", "1'000’000", 10_000_000},
		{"underscore thousands", "10_000", 100_000},
		{"leading zeros in the first group", "001,000", 10_000},
		{"rlm anywhere", "\u200f1,\u200f000\u200f", 10_000},
		{"zwnj inside a group", "۱۰\u200c۰۰۰", 100_000},
		{"plus then grouped", "+1,000", 10_000},
		{"plain run stays valid", "12500", 125_000},

		{"comma as decimal mark", "12,5", 0},
		{"persian comma as decimal mark", "۱۲،۵", 0},
		{"arabic thousands separator in a short group", "۱۲٬۵", 0},
		{"space between digits", "1 5", 0},
		{"two digit group", "1,00", 0},
		{"four digit group", "1,0000", 0},
		{"four digit first group", "1000,000", 0},
		{"short group in the middle", "1,00,000", 0},
		{"indian grouping", "1,00,00,000", 0},
		{"leading separator", ",000", 0},
		{"trailing separator", "1,000,", 0},
		{"repeated separator", "1,,000", 0},
		{"two spaces", "1  000", 0},
		{"separator after plus", "+,1000", 0},
		{"space after plus", "+ 1000", 0},
		{"mixed separators", "1,000 000", 0},
		{"mixed persian separators", "۱٬۰۰۰،۰۰۰", 0},
		{"mixed digits and separators", "۱٬0,٠0۰", 0},
		{"separators only", ",", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := money.ParseTomans(tt.in)
			if tt.want == 0 {
				if !errors.Is(err, money.ErrInvalid) || got != 0 {
					t.Fatalf("ParseTomans(%q) = %d, %v; want ErrInvalid", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseTomans(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestParseTomansRejectedKind: each mistake gets the message that fits it
// (a minus sign is not "no decimals"), and every kind is still ErrInvalid.
func TestParseTomansRejectedKind(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    error
		notWant []error
	}{
		{"-50000", money.ErrNegative, []error{money.ErrDecimal}},
		{" −۵۰۰۰۰", money.ErrNegative, []error{money.ErrDecimal}},
		{"-5.5", money.ErrNegative, []error{money.ErrDecimal}},
		{"5000.5", money.ErrDecimal, []error{money.ErrNegative}},
		{"۵۰۰۰٫۵", money.ErrDecimal, []error{money.ErrNegative}},
		{"۵۰۰۰/۵", money.ErrDecimal, nil},
		{"۵۰۰۰۰ تومان", money.ErrInvalid, []error{money.ErrNegative, money.ErrDecimal}},
		{"50000 tomans", money.ErrInvalid, []error{money.ErrNegative, money.ErrDecimal}},
		{".5", money.ErrInvalid, []error{money.ErrDecimal}},
		{"1e6", money.ErrInvalid, []error{money.ErrNegative, money.ErrDecimal}},
	} {
		_, err := money.ParseTomans(tt.in)
		if !errors.Is(err, tt.want) || !errors.Is(err, money.ErrInvalid) {
			t.Errorf("ParseTomans(%q): %v, want %v (and ErrInvalid)", tt.in, err, tt.want)
		}
		for _, e := range tt.notWant {
			if errors.Is(err, e) {
				t.Errorf("ParseTomans(%q): %v, must not be %v", tt.in, err, e)
			}
		}
	}
}

func TestParseTomansRejected(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", money.ErrEmpty},
		{"blank", "   ", money.ErrEmpty},
		{"blank tabs", "\t\n", money.ErrEmpty},
		{"letters", "abc", money.ErrInvalid},
		{"negative", "-5", money.ErrInvalid},
		{"exponent", "1e6", money.ErrInvalid},
		{"decimal point", "5000.5", money.ErrInvalid},
		{"dot as grouping", "5.000", money.ErrInvalid},
		{"persian decimal separator", "۵۰۰۰٫۵", money.ErrInvalid},
		{"trailing letter", "12a", money.ErrInvalid},
		{"hex", "0x10", money.ErrInvalid},
		{"arabic-indic with minus", "١٢-٣", money.ErrInvalid},
		{"plus only", "+", money.ErrInvalid},
		{"double plus", "++5", money.ErrInvalid},
		{"separators only", ",،٬", money.ErrInvalid},
		{"plus inside", "5+5", money.ErrInvalid},
		{"fullwidth digits", "１２", money.ErrInvalid},
		{"zero", "0", money.ErrNotPositive},
		{"zeros", "000", money.ErrNotPositive},
		{"persian zero", "۰", money.ErrNotPositive},
		{"zero with separators", "0,000", money.ErrNotPositive},
		{"16 digits", "1000000000000000", money.ErrTooLong},
		{"25 digits", strings.Repeat("9", 25), money.ErrTooLong},
		{"16 persian digits", strings.Repeat("۹", 16), money.ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := money.ParseTomans(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParseTomans(%q) = %d, %v; want error %v", tt.in, got, err, tt.want)
			}
			if got != 0 {
				t.Fatalf("ParseTomans(%q) returned %d with an error; want 0", tt.in, got)
			}
		})
	}
}

// referenceTomans reads the digits of s in any of the three scripts,
// ignoring everything else, the slow way.
func referenceTomans(s string) (int64, bool) {
	var b strings.Builder
	for _, r := range s {
		for _, zero := range []rune{'0', '۰', '٠'} {
			if r >= zero && r <= zero+9 {
				b.WriteRune('0' + (r - zero))
			}
		}
	}
	n, err := strconv.ParseInt(strings.TrimLeft(b.String(), "0"), 10, 64)
	return n, err == nil
}

func FuzzParseTomans(f *testing.F) {
	for _, s := range []string{
		"۱۲۳٬۴۵۶", "١٢٣،٤٥٦", "1'000'000", "1 000 000", "10\u00a0000", "۱۰\u200c۰۰۰", "999999999999999", "000000000000000001",
		"9223372036854775807", "92233720368547758070", "+", "++1", "1+1", "١٢٣abc", "٫", "１２３",
		"10000", "10,000", "۱۰۰۰۰", "١٠٠٠٠", "۱۰٬۰۰۰", "10 000", "+5000", "  2500 ",
		"", "-5", "1e6", "5000.5", "۵۰۰۰٫۵", "0", strings.Repeat("9", 15), strings.Repeat("9", 16),
		"\u200c۱۲", "0x10", "\xff\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rials, err := money.ParseTomans(s)
		if err != nil {
			if rials != 0 {
				t.Fatalf("ParseTomans(%q) = %d with error %v", s, rials, err)
			}
			if !errors.Is(err, money.ErrEmpty) && !errors.Is(err, money.ErrInvalid) &&
				!errors.Is(err, money.ErrNotPositive) && !errors.Is(err, money.ErrTooLong) {
				t.Fatalf("ParseTomans(%q): unexpected error %v", s, err)
			}
			return
		}
		if rials <= 0 {
			t.Fatalf("ParseTomans(%q) = %d, want > 0", s, rials)
		}
		if rials%money.RialsPerToman != 0 {
			t.Fatalf("ParseTomans(%q) = %d, not whole tomans", s, rials)
		}
		if rials > 10_000_000_000_000_000 {
			t.Fatalf("ParseTomans(%q) = %d, above 10^16", s, rials)
		}
		// The same number as the digits typed, whatever their script.
		if want, ok := referenceTomans(s); !ok || want*money.RialsPerToman != rials {
			t.Fatalf("ParseTomans(%q) = %d, the digits say %d (%v)", s, rials, want*money.RialsPerToman, ok)
		}
	})
}

func TestLatinDigits(t *testing.T) {
	for in, want := range map[string]string{"۱۴۰۴/۰۹/۱۰": "1404/09/10", "٣٠": "30", "abc 12": "abc 12", "": ""} {
		if got := money.LatinDigits(in); got != want {
			t.Errorf("LatinDigits(%q) = %q, want %q", in, got, want)
		}
	}
}

// The pages' amounts that are not whole tomans read back as the rials
// they are.
func TestParseTomansRials(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  error
	}{
		{"1,234.5", 12_345, nil},
		{"1,23.5", 0, money.ErrInvalid},
		{"12,5.5", 0, money.ErrInvalid},
		{"0,0.5", 0, money.ErrInvalid},
		{"0,000.5", 5, nil},
		{"۱٬۲۳۴٫۵", 12_345, nil},
		{"1234", 12_340, nil},
		{"1,234.50", 0, money.ErrDecimal},
		{"1.000", 0, money.ErrDecimal},
		{"0.5", 5, nil},
		{".5", 5, nil},
		{"1.0", 10, nil},
		{"1.", 0, money.ErrDecimal},
		{"1.25", 0, money.ErrDecimal},
		{"0.0", 0, money.ErrNotPositive},
		{"0", 0, money.ErrNotPositive},
		{"-1.5", 0, money.ErrNegative},
		{"1.x", 0, money.ErrInvalid},
		{"a.5", 0, money.ErrInvalid},
		{"", 0, money.ErrEmpty},
	} {
		got, err := money.ParseTomansRials(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("ParseTomansRials(%q) = %d, %v; want %d, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}
