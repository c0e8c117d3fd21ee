package i18n_test

import (
	"math"
	"testing"

	"github.com/kifpool/kifpool/internal/i18n"
)

// TestTomansNumberSign: a negative amount keeps its minus sign, also when
// it is less than one toman (its whole tomans are 0, which has no sign).
func TestTomansNumberSign(t *testing.T) {
	for _, tt := range []struct {
		rials  int64
		fa, en string
	}{
		{-5, "-۰٫۵", "-0.5"},
		{-1, "-۰٫۱", "-0.1"},
		{-9, "-۰٫۹", "-0.9"},
		{-10, "-۱", "-1"},
		{-15, "-۱٫۵", "-1.5"},
		{-125, "-۱۲٫۵", "-12.5"},
		{-1_234_565, "-۱۲۳٬۴۵۶٫۵", "-123,456.5"},
		{5, "۰٫۵", "0.5"},
		{0, "۰", "0"},
		{math.MaxInt64, "۹۲۲٬۳۳۷٬۲۰۳٬۶۸۵٬۴۷۷٬۵۸۰٫۷", "922,337,203,685,477,580.7"},
		{math.MinInt64, "-۹۲۲٬۳۳۷٬۲۰۳٬۶۸۵٬۴۷۷٬۵۸۰٫۸", "-922,337,203,685,477,580.8"},
	} {
		if got := i18n.TomansNumber(i18n.FA, tt.rials); got != tt.fa {
			t.Errorf("TomansNumber(fa, %d) = %q, want %q", tt.rials, got, tt.fa)
		}
		if got := i18n.TomansNumber(i18n.EN, tt.rials); got != tt.en {
			t.Errorf("TomansNumber(en, %d) = %q, want %q", tt.rials, got, tt.en)
		}
	}
}

// TestTomansField: a form's amount, as its field is filled: no
// separators, odd rials after the language's decimal mark.
func TestTomansField(t *testing.T) {
	for _, tt := range []struct {
		rials  int64
		fa, en string
	}{
		{500_000, "۵۰۰۰۰", "50000"},
		{399_995, "۳۹۹۹۹٫۵", "39999.5"},
		{5, "۰٫۵", "0.5"},
		{1_234_565, "۱۲۳۴۵۶٫۵", "123456.5"},
	} {
		if got := i18n.TomansField(i18n.FA, tt.rials); got != tt.fa {
			t.Errorf("TomansField(fa, %d) = %q, want %q", tt.rials, got, tt.fa)
		}
		if got := i18n.TomansField(i18n.EN, tt.rials); got != tt.en {
			t.Errorf("TomansField(en, %d) = %q, want %q", tt.rials, got, tt.en)
		}
	}
}
