package page

import "testing"

// Latin stretches of a merchant's description are isolated from the
// Persian around them, brackets outside (issue 10, point 2).
func TestBidiRuns(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []bidiRun
	}{
		//lint:ignore ST1018 Persian is written with the zero-width non-joiner (U+200C) inside words; escaped it would be unreadable
		{"افزایش موجودی کیف‌پول (Kifpool wallet top-up)", []bidiRun{{"افزایش موجودی کیف‌پول ", false}, {"(Kifpool wallet top-up)", true}}},
		{"خرید (Kifpool) تمام", []bidiRun{{"خرید ", false}, {"(Kifpool)", true}, {" تمام", false}}},
		{"خرید (Kifpool تمام", []bidiRun{{"خرید (", false}, {"Kifpool", true}, {" تمام", false}}},
		{"Kifpool", []bidiRun{{"Kifpool", true}}},
		{"شارژ", []bidiRun{{"شارژ", false}}},
		{"سفارش 123 تایید", []bidiRun{{"سفارش ", false}, {"123", true}, {" تایید", false}}},
		{"", nil},
	} {
		got := bidiRuns(tc.in)
		if len(got) != len(tc.want) {
			t.Errorf("bidiRuns(%q) = %+v, want %+v", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("bidiRuns(%q) = %+v, want %+v", tc.in, got, tc.want)
				break
			}
		}
	}
}
