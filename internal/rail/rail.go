// Package rail knows Iran's interbank rails a payout travels on and when
// each moves money: Paya (ACH, batches in cycles), Satna (RTGS, bank
// hours only) and Pol (instant by Sheba). It picks the rail of an amount
// and estimates when a payout sent now reaches the account: an estimate
// from a schedule, never a promise.
//
// The facts (Central Bank circulars of 1402–1404, see docs/withdrawals.md):
//   - Paya settles in four cycles on working days, cut off at 03:45,
//     09:45, 12:45 and 18:45 Tehran time, paid out within about half an
//     hour to an hour after each; on holidays one cycle (the sources
//     disagree on which: 12:45 or 03:45). At most 2 bn rials an order.
//   - Satna is real-time gross settlement, in bank hours only: customer
//     orders until 14:30; at least 1 bn rials an order.
//   - Pol is instant, around the clock, with a daily cap per person.
//
// The schedule is a table the operator may change (PAYA_CYCLES,
// PAYA_HOLIDAY_CYCLES, SATNA_CUTOFF); its defaults are the published
// cycles. The weekly holiday is Friday; other holidays are not known to
// it (an estimate on one is a cycle early, never late by more than the
// holiday).
package rail

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Rail is an interbank rail.
type Rail string

// The rails.
const (
	Paya  Rail = "paya"  // ACH, batches in cycles
	Satna Rail = "satna" // RTGS, bank hours
	Pol   Rail = "pol"   // instant by Sheba
)

// Valid reports whether r is a known rail.
func (r Rail) Valid() bool { return r == Paya || r == Satna || r == Pol }

// The published amount rules (since 1404/02).
const (
	// PayaMaxRials is the most one Paya order may carry.
	PayaMaxRials int64 = 2_000_000_000
	// SatnaMinRials is the least one Satna order may carry.
	SatnaMinRials int64 = 1_000_000_000
)

// Clock is a time of day in Tehran, in minutes after midnight.
type Clock int

// String is "HH:MM".
func (c Clock) String() string { return fmt.Sprintf("%02d:%02d", int(c)/60, int(c)%60) }

// ParseClock reads "HH:MM" (Latin digits, 24-hour).
func ParseClock(s string) (Clock, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return 0, fmt.Errorf("want a time of day as HH:MM, got %q", s)
	}
	return Clock(hh*60 + mm), nil
}

// Schedule is when the rails move money, in Tehran time.
type Schedule struct {
	// PayaCycles are the cut-offs of the working days' Paya cycles, and
	// PayaHolidayCycles those of the weekly holiday (Friday); sorted.
	PayaCycles        []Clock
	PayaHolidayCycles []Clock
	// SatnaCutoff is the last time of a working day a Satna order is
	// taken.
	SatnaCutoff Clock
	// PayoutDelay is how long after a cycle's cut-off its money usually
	// reaches accounts (the published windows: 30 to 60 minutes).
	PayoutDelay time.Duration
}

// Default is the published schedule.
func Default() Schedule {
	return Schedule{
		PayaCycles:        []Clock{3*60 + 45, 9*60 + 45, 12*60 + 45, 18*60 + 45},
		PayaHolidayCycles: []Clock{3*60 + 45},
		SatnaCutoff:       14*60 + 30,
		PayoutDelay:       time.Hour,
	}
}

// ParseCycles reads a list of cut-offs: "03:45,09:45,12:45,18:45", each
// once, at least one.
func ParseCycles(s string) ([]Clock, error) {
	var out []Clock
	for _, part := range strings.Split(s, ",") {
		c, err := ParseClock(part)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, c) {
			return nil, fmt.Errorf("%s named twice", c)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("want at least one cycle")
	}
	slices.Sort(out)
	return out, nil
}

// FormatCycles is the inverse of ParseCycles.
func FormatCycles(cs []Clock) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, ",")
}

// For picks the rail of an amount a provider may send on any of rails:
// Paya up to its cap, Satna above it (or when Paya is not offered and the
// amount reaches Satna's floor). ok is false when no offered rail takes
// the amount.
func For(amountRials int64, rails []Rail) (Rail, bool) {
	if slices.Contains(rails, Paya) && amountRials <= PayaMaxRials {
		return Paya, true
	}
	if slices.Contains(rails, Satna) && amountRials >= SatnaMinRials {
		return Satna, true
	}
	return "", false
}

// Estimate is when a payout sent at a moment is expected in the account.
type Estimate struct {
	Rail Rail
	// Cutoff is the cycle (Paya) or the order's acceptance (Satna) it
	// goes with, and Arrival when its money usually reaches the account.
	Cutoff, Arrival time.Time
}

// Estimate is when a payout on rail sent at now reaches the account, in
// Tehran time (loc): Paya with the next cycle whose cut-off is after now;
// Satna at once within bank hours, else at the next working day's opening
// (08:00); Pol at once.
func (s Schedule) Estimate(r Rail, now time.Time, loc *time.Location) Estimate {
	now = now.In(loc)
	switch r {
	case Satna:
		day := midnight(now)
		for i := 0; i < 8; i++ {
			d := day.AddDate(0, 0, i)
			if holiday(d) {
				continue
			}
			open := d.Add(8 * time.Hour)
			if i == 0 && now.Before(d.Add(time.Duration(s.SatnaCutoff)*time.Minute)) {
				at := now
				if at.Before(open) {
					at = open
				}
				return Estimate{Rail: r, Cutoff: at, Arrival: at}
			}
			if i > 0 {
				return Estimate{Rail: r, Cutoff: open, Arrival: open}
			}
		}
	case Paya:
		day := midnight(now)
		for i := 0; i < 8; i++ {
			d := day.AddDate(0, 0, i)
			cycles := s.PayaCycles
			if holiday(d) {
				cycles = s.PayaHolidayCycles
			}
			for _, c := range cycles {
				cut := d.Add(time.Duration(c) * time.Minute)
				if cut.After(now) {
					return Estimate{Rail: r, Cutoff: cut, Arrival: cut.Add(s.PayoutDelay)}
				}
			}
		}
	}
	return Estimate{Rail: r, Cutoff: now, Arrival: now}
}

// midnight is the start of t's day in its location.
func midnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// holiday reports the weekly holiday (Friday).
func holiday(t time.Time) bool { return t.Weekday() == time.Friday }
