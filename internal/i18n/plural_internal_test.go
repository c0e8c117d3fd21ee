package i18n

import (
	"regexp"
	"strings"
	"testing"
)

// English says one of a thing in the singular: {name|one|other} picks by
// the argument; Persian, a number with the singular, has no such forms.
func TestPluralForms(t *testing.T) {
	for _, tc := range []struct {
		lang Lang
		key  string
		args []any
		want string
	}{
		{EN, "time.days_ago", []any{"n", int64(1)}, "1 day ago"},
		{EN, "time.days_ago", []any{"n", int64(3)}, "3 days ago"},
		{EN, "time.in_days", []any{"n", 1}, "in 1 day"},
		{EN, "password.throttled", []any{"seconds", int64(1)}, "Too many failed attempts. Try again in 1 second."},
		{EN, "password.throttled", []any{"seconds", int64(0)}, "Too many failed attempts. Try again in 0 seconds."},
		{EN, "limits.left_count", []any{"left", "1", "limit", "5"}, "You can top up 1 more time today (limit 5 a day)."},
		{EN, "admin.breaker_counts", []any{"requests", int64(1), "failures", int64(2)}, "1 call, 2 failures in the current window"},
		{FA, "time.days_ago", []any{"n", int64(1)}, "۱ روز پیش"},
	} {
		if got := T(tc.lang, tc.key, tc.args...); got != tc.want {
			t.Errorf("%s %s %v = %q, want %q", tc.lang, tc.key, tc.args, got, tc.want)
		}
	}
}

// Every {name|one|other} names a placeholder of its own message, so that
// the form follows the number it is written beside, and no catalog has a
// form left unpicked.
func TestPluralFormsNameTheirNumber(t *testing.T) {
	re := regexp.MustCompile(`\{([A-Za-z0-9_]+)\|[^|{}]*\|[^|{}]*\}`)
	malformed := regexp.MustCompile(`\{[^{}]*\|[^{}]*\}`)
	for _, l := range []Lang{FA, EN} {
		for _, m := range table(l) {
			for k, msg := range m {
				for _, f := range re.FindAllStringSubmatch(msg, -1) {
					if !strings.Contains(msg, "{"+f[1]+"}") {
						t.Errorf("%s %s: the form %s names no placeholder of the message", l, k, f[0])
					}
				}
				if malformed.MatchString(re.ReplaceAllString(msg, "")) {
					t.Errorf("%s %s: a malformed plural form in %q", l, k, msg)
				}
			}
		}
	}
}
