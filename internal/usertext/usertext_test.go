package usertext_test

import (
	"errors"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/usertext"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in         string
		name, note bool // accepted as a name, as a note
	}{
		{"CI deploy", true, true},
		{"توکن سرور ۱", true, true},
		{"emoji 🚀 ok", true, true},
		{"\uFFFD replacement typed as such", true, true},
		{"\u202Egnp.exe", false, false},
		{"a\u2066b\u2069", false, false},
		{"a\u2067b", false, false},
		{"a\u2068b", false, false},
		{"zero\u200Bwidth", false, false},
		{"می\u200Cخواهم", true, true},                   // the Persian half-space, between letters
		{"خانه\u200Cها و کتاب\u200Cهای من", true, true}, // twice, each between letters
		{"\u200Cاول", false, false},                     // leading
		{"آخر\u200C", false, false},                     // trailing
		{"دو\u200C\u200Cتا", false, false},              // doubled
		{"فاصله \u200Cبعد", false, false},               // after a space
		{"ab\u200Dcd", false, false},                    // the joiner is still refused
		{"bom\uFEFF", false, false},
		{"nul\x00", false, false},
		{"esc\x1b[31m", false, false},
		{"del\x7f", false, false},
		{"c1\u0085", false, false},
		{"two\nlines", false, true},
		{"tab\tstop\r\n", false, true},
		{"bad \xff utf8", false, false},
	} {
		if got := usertext.CheckName(tc.in) == nil; got != tc.name {
			t.Errorf("CheckName(%q) accepted=%v, want %v", tc.in, got, tc.name)
		}
		if err := usertext.CheckNote(tc.in); (err == nil) != tc.note || (err != nil && !errors.Is(err, usertext.ErrInvalid)) {
			t.Errorf("CheckNote(%q) = %v, want accepted=%v", tc.in, err, tc.note)
		}
	}
	// Every Cc and Cf code point is refused in a name.
	for _, tab := range []*unicode.RangeTable{unicode.Cc, unicode.Cf} {
		for _, r16 := range tab.R16 {
			for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
				if usertext.CheckName("x"+string(r)) == nil {
					t.Errorf("U+%04X accepted in a name", r)
				}
			}
		}
		for _, r32 := range tab.R32 {
			for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
				if usertext.CheckName("x"+string(r)) == nil {
					t.Errorf("U+%04X accepted in a name", r)
				}
			}
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"کیف\u200cپول", 3, "کیف"},  // characters, not bytes
		{"کیف", 10, "کیف"},          // shorter: as is
		{"ab\xffcd", 3, "ab\uFFFD"}, // a bad byte becomes U+FFFD, and counts as one
		{"ab\xff\xfecd", 10, "ab\uFFFDcd"},
		{"abc", 0, ""},
		{"abc", -1, ""},
	} {
		got := usertext.Cut(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
