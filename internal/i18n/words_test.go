package i18n

import (
	"math"
	"testing"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		n      int64
		fa, en string
	}{
		{0, "صفر", "zero"},
		{7, "هفت", "seven"},
		{15, "پانزده", "fifteen"},
		{120, "صد و بیست", "one hundred twenty"},
		{1_000, "هزار", "one thousand"},
		{12_000, "دوازده هزار", "twelve thousand"},
		{120_500, "صد و بیست هزار و پانصد", "one hundred twenty thousand five hundred"},
		{1_000_000, "یک میلیون", "one million"},
		{2_001_045, "دو میلیون و یک هزار و چهل و پنج", "two million one thousand forty-five"},
		{1_000_000_000, "یک میلیارد", "one billion"},
		{3_000_000_000, "سه میلیارد", "three billion"},
		{999_999_999_999, "نهصد و نود و نه میلیارد و نهصد و نود و نه میلیون و نهصد و نود و نه هزار و نهصد و نود و نه",
			"nine hundred ninety-nine billion nine hundred ninety-nine million nine hundred ninety-nine thousand nine hundred ninety-nine"},
		{1_000_000_000_000, "هزار میلیارد", "one trillion"},
		{1_500_000_000_000, "هزار و پانصد میلیارد", "one trillion five hundred billion"},
		{2_000_000_000_000, "دو هزار میلیارد", "two trillion"},
		{1_000_000_001_000, "هزار میلیارد و هزار", "one trillion one thousand"},
		{2_500_000_300_000, "دو هزار و پانصد میلیارد و سیصد هزار", "two trillion five hundred billion three hundred thousand"},
		{1_000_000_000_000_000, "یک میلیون میلیارد", "one quadrillion"},
		{1_000_000_000_000_000_000, "یک میلیارد میلیارد", "one quintillion"},
		{math.MaxInt64,
			"نه میلیارد و دویست و بیست و سه میلیون و سیصد و هفتاد و دو هزار و سی و شش میلیارد و هشتصد و پنجاه و چهار میلیون و هفتصد و هفتاد و پنج هزار و هشتصد و هفت",
			"nine quintillion two hundred twenty-three quadrillion three hundred seventy-two trillion thirty-six billion eight hundred fifty-four million seven hundred seventy-five thousand eight hundred seven"},
		{-1, "منفی یک", "minus one"},
		{-120_500, "منفی صد و بیست هزار و پانصد", "minus one hundred twenty thousand five hundred"},
		{-1_500_000_000_000, "منفی هزار و پانصد میلیارد", "minus one trillion five hundred billion"},
		{math.MinInt64 + 1,
			"منفی نه میلیارد و دویست و بیست و سه میلیون و سیصد و هفتاد و دو هزار و سی و شش میلیارد و هشتصد و پنجاه و چهار میلیون و هفتصد و هفتاد و پنج هزار و هشتصد و هفت",
			"minus nine quintillion two hundred twenty-three quadrillion three hundred seventy-two trillion thirty-six billion eight hundred fifty-four million seven hundred seventy-five thousand eight hundred seven"},
		// Its magnitude, 2^63, is not an int64: -n is n again.
		{math.MinInt64,
			"منفی نه میلیارد و دویست و بیست و سه میلیون و سیصد و هفتاد و دو هزار و سی و شش میلیارد و هشتصد و پنجاه و چهار میلیون و هفتصد و هفتاد و پنج هزار و هشتصد و هشت",
			"minus nine quintillion two hundred twenty-three quadrillion three hundred seventy-two trillion thirty-six billion eight hundred fifty-four million seven hundred seventy-five thousand eight hundred eight"},
	} {
		if got := Words(FA, tc.n); got != tc.fa {
			t.Errorf("Words(fa, %d) = %q, want %q", tc.n, got, tc.fa)
		}
		if got := Words(EN, tc.n); got != tc.en {
			t.Errorf("Words(en, %d) = %q, want %q", tc.n, got, tc.en)
		}
	}
}
