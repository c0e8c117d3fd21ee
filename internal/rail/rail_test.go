package rail_test

import (
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/rail"
)

var tehran = time.FixedZone("Asia/Tehran", 3*3600+1800)

func at(day, hh, mm int) time.Time { return time.Date(2025, time.June, day, hh, mm, 0, 0, tehran) } // June 2025: the 6th is a Friday

func TestFor(t *testing.T) {
	both := []rail.Rail{rail.Paya, rail.Satna}
	for _, tc := range []struct {
		amount int64
		rails  []rail.Rail
		want   rail.Rail
		ok     bool
	}{
		{100_000, both, rail.Paya, true},
		{rail.PayaMaxRials, both, rail.Paya, true},
		{rail.PayaMaxRials + 10, both, rail.Satna, true},
		{rail.PayaMaxRials + 10, []rail.Rail{rail.Paya}, "", false},
		{rail.SatnaMinRials, []rail.Rail{rail.Satna}, rail.Satna, true},
		{rail.SatnaMinRials - 10, []rail.Rail{rail.Satna}, "", false},
	} {
		got, ok := rail.For(tc.amount, tc.rails)
		if got != tc.want || ok != tc.ok {
			t.Errorf("For(%d, %v) = %s, %v; want %s, %v", tc.amount, tc.rails, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPayaEstimate(t *testing.T) {
	s := rail.Default()
	for _, tc := range []struct {
		name     string
		now, cut time.Time
	}{
		{"Saturday 10:00 → the 12:45 cycle", at(7, 10, 0), at(7, 12, 45)},
		{"just before a cut-off", at(7, 9, 44), at(7, 9, 45)},
		{"at a cut-off: the next one", at(7, 9, 45), at(7, 12, 45)},
		{"after the last cycle → tomorrow's first", at(7, 19, 0), at(8, 3, 45)},
		{"Thursday 19:00 → Friday's one cycle", at(5, 19, 0), at(6, 3, 45)},
		{"Friday after its cycle → Saturday's first", at(6, 4, 0), at(7, 3, 45)},
	} {
		e := s.Estimate(rail.Paya, tc.now, tehran)
		if !e.Cutoff.Equal(tc.cut) || !e.Arrival.Equal(tc.cut.Add(time.Hour)) || e.Rail != rail.Paya {
			t.Errorf("%s: %+v, want cut-off %v", tc.name, e, tc.cut)
		}
	}
	// The estimate is in Tehran time whatever the clock's zone.
	e := s.Estimate(rail.Paya, at(7, 10, 0).UTC(), tehran)
	if e.Cutoff.Location() != tehran || e.Cutoff.Hour() != 12 {
		t.Errorf("from UTC: %v", e.Cutoff)
	}
}

func TestSatnaEstimate(t *testing.T) {
	s := rail.Default()
	for _, tc := range []struct {
		name     string
		now, arr time.Time
	}{
		{"in bank hours: at once", at(7, 10, 0), at(7, 10, 0)},
		{"before opening: at 08:00", at(7, 6, 0), at(7, 8, 0)},
		{"after the cut-off: next working day", at(7, 15, 0), at(8, 8, 0)},
		{"Thursday afternoon: Saturday (Friday is a holiday)", at(5, 15, 0), at(7, 8, 0)},
		{"on Friday: Saturday", at(6, 10, 0), at(7, 8, 0)},
	} {
		e := s.Estimate(rail.Satna, tc.now, tehran)
		if !e.Arrival.Equal(tc.arr) {
			t.Errorf("%s: %+v, want %v", tc.name, e, tc.arr)
		}
	}
}

func TestParseCycles(t *testing.T) {
	cs, err := rail.ParseCycles("18:45, 03:45,09:45,12:45")
	if err != nil || rail.FormatCycles(cs) != "03:45,09:45,12:45,18:45" {
		t.Fatalf("%v %v", cs, err)
	}
	if rail.FormatCycles(rail.Default().PayaCycles) != "03:45,09:45,12:45,18:45" {
		t.Fatal("the default is not the published cycles")
	}
	for _, bad := range []string{"", "3:45,3:45", "24:00", "09:5", "nine", "03:45,"} {
		if _, err := rail.ParseCycles(bad); err == nil {
			t.Errorf("ParseCycles(%q) accepted", bad)
		}
	}
}
