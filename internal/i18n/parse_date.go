package i18n

import (
	"errors"
	"strconv"
	"strings"
	"time"

	ptime "github.com/yaa110/go-persian-calendar"
)

// ErrBadDate is returned for a date that cannot be read.
var ErrBadDate = errors.New("date is not YYYY/MM/DD")

// ParseDay reads a calendar day as people type it — Jalali ("۱۴۰۳/۰۱/۱۵",
// "1403-1-15") or, for a year from 1900, Gregorian ("2024-04-03") — in
// Persian, Arabic-Indic or Latin digits, and returns the instant that day
// begins in Tehran, in UTC.
func ParseDay(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	var latin strings.Builder
	for _, r := range s {
		switch {
		case r >= '۰' && r <= '۹':
			latin.WriteRune('0' + (r - '۰'))
		case r >= '٠' && r <= '٩':
			latin.WriteRune('0' + (r - '٠'))
		case r == '-' || r == '.':
			latin.WriteRune('/')
		default:
			latin.WriteRune(r)
		}
	}
	parts := strings.Split(latin.String(), "/")
	if len(parts) != 3 {
		return time.Time{}, ErrBadDate
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v <= 0 || len(p) > 4 {
			return time.Time{}, ErrBadDate
		}
		n[i] = v
	}
	y, m, d := n[0], n[1], n[2]
	if m > 12 || d > 31 {
		return time.Time{}, ErrBadDate
	}
	loc := tehran()
	if y >= 1900 {
		t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)
		if t.Day() != d {
			return time.Time{}, ErrBadDate // 2024-02-30
		}
		return t.UTC(), nil
	}
	if y < 1300 || (m > 6 && d > 30) {
		return time.Time{}, ErrBadDate
	}
	pt := ptime.Date(y, ptime.Month(m), d, 0, 0, 0, 0, loc)
	if pt.Day() != d {
		return time.Time{}, ErrBadDate // 1403/12/30 in a common year
	}
	return pt.Time().UTC(), nil
}

// DayInput writes the Tehran calendar day of t the way ParseDay reads it
// back: Jalali with Latin digits ("1403/01/15"), for form fields.
func DayInput(t time.Time) string {
	return ptime.New(t.In(tehran())).Format("yyyy/MM/dd")
}
