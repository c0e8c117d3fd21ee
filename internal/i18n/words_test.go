package i18n

import "testing"

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
		{2_001_045, "دو میلیون و یک هزار و چهل و پنج", "two million one thousand forty-five"},
		{3_000_000_000, "سه میلیارد", "three billion"},
	} {
		if got := Words(FA, tc.n); got != tc.fa {
			t.Errorf("Words(fa, %d) = %q, want %q", tc.n, got, tc.fa)
		}
		if got := Words(EN, tc.n); got != tc.en {
			t.Errorf("Words(en, %d) = %q, want %q", tc.n, got, tc.en)
		}
	}
}
