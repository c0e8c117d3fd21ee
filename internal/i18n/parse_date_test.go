package i18n

import (
	"testing"
	"time"
)

func TestParseDay(t *testing.T) {
	// 1403/01/01 (Nowruz) began on 2024-03-20 at 00:00 Tehran (UTC+3:30).
	nowruz := time.Date(2024, 3, 19, 20, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"1403/01/01", nowruz, true},
		{"۱۴۰۳/۰۱/۰۱", nowruz, true},
		{"١٤٠٣-١-١", nowruz, true},
		{" 1403-1-1 ", nowruz, true},
		{"2024-03-20", nowruz, true},
		{"1403/01/02", nowruz.Add(24 * time.Hour), true},
		{"1403/12/30", time.Time{}, false}, // 1403 is a leap year in this calendar? checked below
		{"1402/12/30", time.Time{}, false},
		{"1403/07/31", time.Time{}, false},
		{"2024-02-30", time.Time{}, false},
		{"1403/13/01", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"1403/01", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, err := ParseDay(tc.in)
		if tc.in == "1403/12/30" {
			// Leap or not, a valid answer must round-trip.
			if err == nil && DayInput(got) != "1403/12/30" {
				t.Errorf("1403/12/30 → %v (%s)", got, DayInput(got))
			}
			continue
		}
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("ParseDay(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if s := DayInput(nowruz); s != "1403/01/01" {
		t.Errorf("DayInput = %q", s)
	}
}
