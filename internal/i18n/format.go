package i18n

import (
	"strconv"
	"sync"
	"time"

	ptime "github.com/yaa110/go-persian-calendar"
)

// Group writes n with thousands separators in the language's digits
// ("۱٬۲۳۴٬۵۶۷" in Persian, "1,234,567" in English).
func Group(l Lang, n int64) string {
	// The decimal digits without the sign (no conversion to uint64, which
	// would need care at math.MinInt64).
	s := strconv.FormatInt(n, 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	sep := ","
	if l == FA {
		sep = "٬" // U+066C ARABIC THOUSANDS SEPARATOR
	}
	out := make([]byte, 0, len(s)+len(s)/3*len(sep))
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, sep...)
		}
		out = append(out, s[i])
	}
	res := string(out)
	if neg {
		res = "-" + res
	}
	return Digits(l, res)
}

// Tomans formats an amount of rials as tomans, the unit people use
// ("۱۲٬۵۰۰ تومان"). Ten rials make a toman; an amount with odd rials
// keeps its last digit after a decimal mark, with no rounding.
func Tomans(l Lang, rials int64) string {
	return TomansNumber(l, rials) + " " + T(l, "unit.toman")
}

// TomansNumber is Tomans without the unit.
// The sign is written on its own: -5 rials is "-0.5", whose whole tomans
// (-5/10) are a zero without a sign.
func TomansNumber(l Lang, rials int64) string { return tomansNumber(l, rials, true) }

// TomansField is TomansNumber as a form's amount field is filled: without
// separators (money.ParseTomansRials reads it back).
func TomansField(l Lang, rials int64) string { return tomansNumber(l, rials, false) }

func tomansNumber(l Lang, rials int64, group bool) string {
	tomans, r := rials/10, rials%10
	sign := ""
	if rials < 0 {
		// -tomans cannot overflow: |rials/10| < math.MaxInt64.
		tomans, r, sign = -tomans, -r, "-"
	}
	whole := Digits(l, strconv.FormatInt(tomans, 10))
	if group {
		whole = Group(l, tomans)
	}
	s := sign + whole
	if r != 0 {
		dot := "."
		if l == FA {
			dot = "٫"
		}
		s += dot + Digits(l, strconv.FormatInt(r, 10))
	}
	return s
}

// Rials formats an amount of rials with its unit ("۱۲۵٬۰۰۰ ریال").
func Rials(l Lang, rials int64) string {
	return Group(l, rials) + " " + T(l, "unit.rial")
}

// tehran is Iran's time zone; Iran has had no daylight saving time since
// 2022, so a fixed zone is exact for present dates and a safe fallback.
// It is loaded once: time.LoadLocation reads and parses the zoneinfo file
// on every call, which was a sixth of the admin list's CPU time (one call
// per date on the page).
var tehran = sync.OnceValue(func() *time.Location {
	if loc, err := time.LoadLocation("Asia/Tehran"); err == nil {
		return loc
	}
	return time.FixedZone("IRST", 3*3600+1800)
})

// DateTime formats t in Tehran time: Jalali (Solar Hijri) in Persian
// ("۱۴۰۳/۰۱/۰۱ ۱۴:۰۵"), Gregorian in English ("2024-03-20 14:05").
func DateTime(l Lang, t time.Time) string {
	t = t.In(tehran())
	if l == FA {
		pt := ptime.New(t)
		return Digits(l, pt.Format("yyyy/MM/dd HH:mm"))
	}
	return t.Format("2006-01-02 15:04")
}

// Date formats the calendar day of t in Tehran time (Jalali in Persian).
func Date(l Lang, t time.Time) string {
	t = t.In(tehran())
	if l == FA {
		return Digits(l, ptime.New(t).Format("yyyy/MM/dd"))
	}
	return t.Format("2006-01-02")
}

// Relative says how long ago t was, relative to now ("۵ دقیقه پیش").
func Relative(l Lang, t, now time.Time) string { return ago.say(l, now.Sub(t), t) }

// Until says how long until t, a time to come, relative to now ("in 5
// min"); a time already past is "within a minute" (it is due: what waits
// for it runs at the next look). Relative is for times gone by.
func Until(l Lang, t, now time.Time) string { return until.say(l, t.Sub(now), t) }

// ladder is the one scale of Relative and Until: a span under a minute,
// in minutes, hours or days, each said with its own key; a month or more
// is t's date.
type ladder struct{ moment, minutes, hours, days string }

var (
	ago   = ladder{"time.just_now", "time.minutes_ago", "time.hours_ago", "time.days_ago"}
	until = ladder{"time.soon", "time.in_minutes", "time.in_hours", "time.in_days"}
)

func (k ladder) say(l Lang, d time.Duration, t time.Time) string {
	const day = 24 * time.Hour
	switch {
	case d < time.Minute:
		return T(l, k.moment)
	case d < time.Hour:
		return T(l, k.minutes, "n", int64(d/time.Minute))
	case d < day:
		return T(l, k.hours, "n", int64(d/time.Hour))
	case d < 30*day:
		return T(l, k.days, "n", int64(d/day))
	}
	return Date(l, t)
}

// JalaliDate formats the calendar day of t in Tehran time in the Jalali
// (Solar Hijri) calendar in both languages, with the language's digits
// ("۱۴۰۵/۰۹/۱۰", "1405/09/10"): the form the admin console's date
// filters take.
func JalaliDate(l Lang, t time.Time) string {
	return Digits(l, ptime.New(t.In(tehran())).Format("yyyy/MM/dd"))
}

// Tehran is Iran's time zone (Asia/Tehran, or a fixed +03:30 where the
// system has no zoneinfo).
func Tehran() *time.Location { return tehran() }
