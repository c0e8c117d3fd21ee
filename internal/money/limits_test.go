package money_test

import (
	"errors"
	"testing"

	"github.com/kifpool/kifpool/internal/money"
)

func TestLimitsCheck(t *testing.T) {
	l := money.Limits{MinRials: 10_000, MaxRials: 1_000_000}
	for _, tt := range []struct {
		rials int64
		want  error
	}{
		{-10, money.ErrNotPositive}, {0, money.ErrNotPositive}, {5, money.ErrNotWholeTomans},
		{10_005, money.ErrNotWholeTomans}, {9_990, money.ErrTooSmall}, {10_000, nil}, {500_000, nil},
		{1_000_000, nil}, {1_000_010, money.ErrTooLarge}, {1_000_001, money.ErrNotWholeTomans},
	} {
		if err := l.Check(tt.rials); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("Check(%d) = %v, want %v", tt.rials, err, tt.want)
		}
	}
}

func TestLimitsParseTomans(t *testing.T) {
	l := money.Limits{MinRials: 10_000, MaxRials: 1_000_000}
	for _, tt := range []struct {
		in    string
		rials int64
		want  error
	}{
		{"۱٬۰۰۰", 10_000, nil}, {"100,000", 1_000_000, nil}, {"999", 0, money.ErrTooSmall},
		{"100001", 0, money.ErrTooLarge}, {"", 0, money.ErrEmpty}, {"abc", 0, money.ErrInvalid}, {"0", 0, money.ErrNotPositive},
	} {
		got, err := l.ParseTomans(tt.in)
		if !errors.Is(err, tt.want) || (tt.want == nil && (err != nil || got != tt.rials)) {
			t.Errorf("ParseTomans(%q) = %d, %v; want %d, %v", tt.in, got, err, tt.rials, tt.want)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tt := range []struct {
		l        money.Limits
		min, max int // problems about each bound
	}{
		{money.Limits{MinRials: 10_000, MaxRials: 1_000_000}, 0, 0},
		{money.Limits{MinRials: 10_000, MaxRials: 10_000}, 0, 0},
		{money.Limits{MinRials: 5_000, MaxRials: 1_000_000}, 1, 0},
		{money.Limits{MinRials: 10_005, MaxRials: 1_000_000}, 1, 0},
		{money.Limits{MinRials: 10_000, MaxRials: 100_005}, 0, 1},
		{money.Limits{MinRials: 50_000, MaxRials: 20_000}, 0, 1},
	} {
		var mins, maxs int
		for _, e := range tt.l.Validate(10_000) {
			if e.Max {
				maxs++
			} else {
				mins++
			}
		}
		if mins != tt.min || maxs != tt.max {
			t.Errorf("%+v: %d problems with the minimum, %d with the maximum; want %d, %d", tt.l, mins, maxs, tt.min, tt.max)
		}
	}
}
