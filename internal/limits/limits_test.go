package limits

import (
	"errors"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	r := Rules{DailyMaxRials: 1_000_000, DailyMaxCount: 3, BalanceMaxRials: 5_000_000}
	for _, tc := range []struct {
		name  string
		rules Rules
		u     Usage
		rials int64
		kind  string // "" allowed
		left  int64
	}{
		{"fresh", r, Usage{}, 1_000_000, "", 0},
		{"daily amount", r, Usage{TodayRials: 600_000, TodayCount: 1}, 500_000, KindDailyAmount, 400_000},
		{"daily amount exactly", r, Usage{TodayRials: 600_000, TodayCount: 1}, 400_000, "", 0},
		{"daily count", r, Usage{TodayRials: 30, TodayCount: 3}, 10, KindDailyCount, 0},
		{"balance", r, Usage{BalanceRials: 4_500_000}, 600_000, KindBalance, 500_000},
		{"balance counts open payments", r, Usage{BalanceRials: 4_000_000, OpenRials: 900_000}, 200_000, KindBalance, 100_000},
		{"all off", Rules{}, Usage{TodayRials: 1 << 40, TodayCount: 1 << 20, BalanceRials: 1 << 40}, 1 << 40, "", 0},
		{"only balance on", Rules{BalanceMaxRials: 100}, Usage{TodayCount: 99}, 100, "", 0},
		{"waiting below the cap", Rules{WaitingMaxCount: 3}, Usage{WaitingCount: 2}, 1 << 40, "", 0},
		{"waiting at the cap", Rules{WaitingMaxCount: 3}, Usage{WaitingCount: 3}, 10, KindWaiting, 0},
		{"waiting is said before the daily limits", Rules{WaitingMaxCount: 1, DailyMaxCount: 1}, Usage{WaitingCount: 1, TodayCount: 1}, 10, KindWaiting, 0},
		{"waiting off", Rules{DailyMaxCount: 5}, Usage{WaitingCount: 1 << 20}, 10, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rules.Check(tc.u, tc.rials)
			if tc.kind == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ex *Exceeded
			if !errors.As(err, &ex) || ex.Kind != tc.kind || ex.Left != tc.left {
				t.Fatalf("got %v, want %s with %d left", err, tc.kind, tc.left)
			}
			want := map[string]error{KindBalance: ErrBalance, KindWaiting: ErrWaiting}[tc.kind]
			if want == nil {
				want = ErrDaily
			}
			if !errors.Is(err, want) {
				t.Fatalf("%v is not %v", err, want)
			}
		})
	}
}

func TestDayStartIsTehranMidnight(t *testing.T) {
	// 20:29 UTC is 23:59 in Tehran; 20:31 UTC is the next Tehran day.
	a := DayStart(time.Date(2026, 12, 1, 20, 29, 0, 0, time.UTC))
	b := DayStart(time.Date(2026, 12, 1, 20, 31, 0, 0, time.UTC))
	if !a.Equal(time.Date(2026, 11, 30, 20, 30, 0, 0, time.UTC)) || !b.Equal(time.Date(2026, 12, 1, 20, 30, 0, 0, time.UTC)) {
		t.Fatalf("day starts %s, %s", a, b)
	}
}
