package i18n_test

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
)

var placeholderRE = regexp.MustCompile(`\{[A-Za-z0-9_]+\}`)

func placeholders(s string) []string {
	p := placeholderRE.FindAllString(s, -1)
	slices.Sort(p)
	return slices.Compact(p)
}

func TestCatalogsComplete(t *testing.T) {
	fa, en := i18n.Keys(i18n.FA), i18n.Keys(i18n.EN)
	if len(fa) == 0 || len(en) == 0 {
		t.Fatalf("empty catalog: %d fa keys, %d en keys", len(fa), len(en))
	}
	// Both app messages and the admin console's ("admin.") are in Keys
	// (the sandbox bank's pages have their own table, in
	// internal/sandbank/page).
	for _, l := range i18n.Langs {
		if !slices.ContainsFunc(i18n.Keys(l), func(k string) bool { return strings.HasPrefix(k, "admin.") }) {
			t.Errorf("%s: no admin.* keys in Keys", l)
		}
		if !slices.ContainsFunc(i18n.Keys(l), func(k string) bool { return !strings.HasPrefix(k, "admin.") }) {
			t.Errorf("%s: no app keys in Keys", l)
		}
	}
	check := func(from, to i18n.Lang, keys []string) {
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Errorf("%s: key %q defined twice (in app and bank catalogs)", from, k)
			}
			seen[k] = true
			if !i18n.Has(to, k) {
				t.Errorf("key %q exists in %s but not in %s", k, from, to)
				continue
			}
			msg, other := i18n.T(from, k), i18n.T(to, k)
			if strings.TrimSpace(msg) == "" {
				t.Errorf("%s: key %q has an empty value", from, k)
			}
			if !slices.Equal(placeholders(msg), placeholders(other)) {
				t.Errorf("key %q: placeholders differ: %s %v, %s %v", k, from, placeholders(msg), to, placeholders(other))
			}
		}
	}
	check(i18n.FA, i18n.EN, fa)
	check(i18n.EN, i18n.FA, en)
	if len(fa) != len(en) {
		t.Errorf("fa has %d keys, en has %d", len(fa), len(en))
	}
}

func TestHas(t *testing.T) {
	for _, l := range i18n.Langs {
		if !i18n.Has(l, "app.name") || !i18n.Has(l, "admin.nav_label") {
			t.Errorf("%s: Has misses an app or admin key", l)
		}
		if i18n.Has(l, "no.such.key") {
			t.Errorf("%s: Has(no.such.key) = true", l)
		}
	}
}

func TestT(t *testing.T) {
	tests := []struct {
		name string
		lang i18n.Lang
		key  string
		args []any
		want string
	}{
		{"plain fa", i18n.FA, "unit.toman", nil, "تومان"},
		{"plain en", i18n.EN, "unit.toman", nil, "tomans"},
		{"admin key", i18n.EN, "admin.nav.topups", nil, "Top-ups"},
		{"money args en", i18n.EN, "topup.limits", []any{"min", i18n.Money(100_000), "max", i18n.Money(1_000_000_000)},
			"From 10,000 tomans to 100,000,000 tomans"},
		{"money args fa", i18n.FA, "topup.limits", []any{"min", i18n.Money(100_000), "max", i18n.Money(1_000_000_000)},
			"از ۱۰٬۰۰۰ تومان تا ۱۰۰٬۰۰۰٬۰۰۰ تومان"},
		{"money with odd rials en", i18n.EN, "result.received_text", []any{"amount", i18n.Money(125_005)},
			"We added 12,500.5 tomans to your wallet."},
		{"int arg fa", i18n.FA, "time.minutes_ago", []any{"n", 5}, "۵ دقیقه پیش"},
		{"int64 arg fa", i18n.FA, "time.days_ago", []any{"n", int64(12)}, "۱۲ روز پیش"},
		{"int arg en", i18n.EN, "time.minutes_ago", []any{"n", 5}, "5 min ago"},
		{"string arg kept as is", i18n.FA, "footer.operator", []any{"name", "Kifpool 123"}, "کیف‌پول را Kifpool 123 اداره می‌کند."},
		{"unknown arg ignored", i18n.EN, "unit.rial", []any{"x", 1}, "rials"},
		{"missing key fa", i18n.FA, "no.such.key", nil, "[no.such.key]"},
		{"missing key en with args", i18n.EN, "no.such.key", []any{"n", 1}, "[no.such.key]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := i18n.T(tt.lang, tt.key, tt.args...); got != tt.want {
				t.Fatalf("T(%s, %q, %v) = %q, want %q", tt.lang, tt.key, tt.args, got, tt.want)
			}
		})
	}
}

func TestDigits(t *testing.T) {
	tests := []struct {
		lang     i18n.Lang
		in, want string
	}{
		{i18n.FA, "0123456789", "۰۱۲۳۴۵۶۷۸۹"},
		{i18n.FA, "ref 42-7", "ref ۴۲-۷"},
		{i18n.FA, "", ""},
		{i18n.FA, "۱۲", "۱۲"},
		{i18n.EN, "0123456789", "0123456789"},
	}
	for _, tt := range tests {
		if got := i18n.Digits(tt.lang, tt.in); got != tt.want {
			t.Errorf("Digits(%s, %q) = %q, want %q", tt.lang, tt.in, got, tt.want)
		}
	}
}

func TestGroup(t *testing.T) {
	tests := []struct {
		n      int64
		fa, en string
	}{
		{0, "۰", "0"},
		{7, "۷", "7"},
		{999, "۹۹۹", "999"},
		{1000, "۱٬۰۰۰", "1,000"},
		{100_000, "۱۰۰٬۰۰۰", "100,000"},
		{1_234_567, "۱٬۲۳۴٬۵۶۷", "1,234,567"},
		{-1_234_567, "-۱٬۲۳۴٬۵۶۷", "-1,234,567"},
		{-999, "-۹۹۹", "-999"},
		{math.MaxInt64, "۹٬۲۲۳٬۳۷۲٬۰۳۶٬۸۵۴٬۷۷۵٬۸۰۷", "9,223,372,036,854,775,807"},
		{math.MinInt64, "-۹٬۲۲۳٬۳۷۲٬۰۳۶٬۸۵۴٬۷۷۵٬۸۰۸", "-9,223,372,036,854,775,808"},
	}
	for _, tt := range tests {
		if got := i18n.Group(i18n.FA, tt.n); got != tt.fa {
			t.Errorf("Group(fa, %d) = %q, want %q", tt.n, got, tt.fa)
		}
		if got := i18n.Group(i18n.EN, tt.n); got != tt.en {
			t.Errorf("Group(en, %d) = %q, want %q", tt.n, got, tt.en)
		}
	}
}

func TestTomans(t *testing.T) {
	tests := []struct {
		rials  int64
		fa, en string
	}{
		{125_000, "۱۲٬۵۰۰ تومان", "12,500 tomans"},
		{15, "۱٫۵ تومان", "1.5 tomans"},
		{5, "۰٫۵ تومان", "0.5 tomans"},
		{0, "۰ تومان", "0 tomans"},
		{10_000_000, "۱٬۰۰۰٬۰۰۰ تومان", "1,000,000 tomans"},
		{-125, "-۱۲٫۵ تومان", "-12.5 tomans"},
	}
	for _, tt := range tests {
		if got := i18n.Tomans(i18n.FA, tt.rials); got != tt.fa {
			t.Errorf("Tomans(fa, %d) = %q, want %q", tt.rials, got, tt.fa)
		}
		if got := i18n.Tomans(i18n.EN, tt.rials); got != tt.en {
			t.Errorf("Tomans(en, %d) = %q, want %q", tt.rials, got, tt.en)
		}
	}
	if got, want := i18n.TomansNumber(i18n.EN, 1_234_565), "123,456.5"; got != want {
		t.Errorf("TomansNumber(en) = %q, want %q", got, want)
	}
	if got, want := i18n.Rials(i18n.FA, 125_000), "۱۲۵٬۰۰۰ ریال"; got != want {
		t.Errorf("Rials(fa) = %q, want %q", got, want)
	}
	if got, want := i18n.Rials(i18n.EN, 125_000), "125,000 rials"; got != want {
		t.Errorf("Rials(en) = %q, want %q", got, want)
	}
}

func tehran(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Tehran")
	if err != nil {
		return time.FixedZone("IRST", 3*3600+1800)
	}
	return loc
}

func TestDateTime(t *testing.T) {
	teh := tehran(t)
	tests := []struct {
		name         string
		at           time.Time
		faDate, faDT string
		enDate, enDT string
	}{
		{"nowruz 1403", time.Date(2024, 3, 20, 12, 0, 0, 0, teh),
			"۱۴۰۳/۰۱/۰۱", "۱۴۰۳/۰۱/۰۱ ۱۲:۰۰", "2024-03-20", "2024-03-20 12:00"},
		{"nowruz 1404", time.Date(2025, 3, 21, 12, 0, 0, 0, teh),
			"۱۴۰۴/۰۱/۰۱", "۱۴۰۴/۰۱/۰۱ ۱۲:۰۰", "2025-03-21", "2025-03-21 12:00"},
		{"nowruz 1402", time.Date(2023, 3, 21, 12, 0, 0, 0, teh),
			"۱۴۰۲/۰۱/۰۱", "۱۴۰۲/۰۱/۰۱ ۱۲:۰۰", "2023-03-21", "2023-03-21 12:00"},
		{"last day of 1402 (29 Esfand)", time.Date(2024, 3, 19, 23, 59, 0, 0, teh),
			"۱۴۰۲/۱۲/۲۹", "۱۴۰۲/۱۲/۲۹ ۲۳:۵۹", "2024-03-19", "2024-03-19 23:59"},
		{"last day of leap 1403 (30 Esfand)", time.Date(2025, 3, 20, 18, 30, 0, 0, teh),
			"۱۴۰۳/۱۲/۳۰", "۱۴۰۳/۱۲/۳۰ ۱۸:۳۰", "2025-03-20", "2025-03-20 18:30"},
		// A UTC instant late on March 19 is already March 20 in Tehran.
		{"UTC instant shown in Tehran time", time.Date(2024, 3, 19, 21, 0, 0, 0, time.UTC),
			"۱۴۰۳/۰۱/۰۱", "۱۴۰۳/۰۱/۰۱ ۰۰:۳۰", "2024-03-20", "2024-03-20 00:30"},
		{"mid-year", time.Date(2024, 10, 1, 8, 5, 0, 0, time.UTC),
			"۱۴۰۳/۰۷/۱۰", "۱۴۰۳/۰۷/۱۰ ۱۱:۳۵", "2024-10-01", "2024-10-01 11:35"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := i18n.Date(i18n.FA, tt.at); got != tt.faDate {
				t.Errorf("Date(fa) = %q, want %q", got, tt.faDate)
			}
			if got := i18n.DateTime(i18n.FA, tt.at); got != tt.faDT {
				t.Errorf("DateTime(fa) = %q, want %q", got, tt.faDT)
			}
			if got := i18n.Date(i18n.EN, tt.at); got != tt.enDate {
				t.Errorf("Date(en) = %q, want %q", got, tt.enDate)
			}
			if got := i18n.DateTime(i18n.EN, tt.at); got != tt.enDT {
				t.Errorf("DateTime(en) = %q, want %q", got, tt.enDT)
			}
		})
	}
}

func TestRelative(t *testing.T) {
	now := time.Date(2024, 10, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		ago    time.Duration
		fa, en string
	}{
		{0, "همین حالا", "just now"},
		{-5 * time.Minute, "همین حالا", "just now"}, // a clock slightly ahead
		{59 * time.Second, "همین حالا", "just now"},
		{time.Minute, "۱ دقیقه پیش", "1 min ago"},
		{5*time.Minute + 30*time.Second, "۵ دقیقه پیش", "5 min ago"},
		{3 * time.Hour, "۳ ساعت پیش", "3 h ago"},
		{2 * 24 * time.Hour, "۲ روز پیش", "2 days ago"},
		{29 * 24 * time.Hour, "۲۹ روز پیش", "29 days ago"},
		{40 * 24 * time.Hour, "۱۴۰۳/۰۶/۰۱", "2024-08-22"}, // 1 Shahrivar 1403
	}
	for _, tt := range tests {
		at := now.Add(-tt.ago)
		if got := i18n.Relative(i18n.FA, at, now); got != tt.fa {
			t.Errorf("Relative(fa, -%v) = %q, want %q", tt.ago, got, tt.fa)
		}
		if got := i18n.Relative(i18n.EN, at, now); got != tt.en {
			t.Errorf("Relative(en, -%v) = %q, want %q", tt.ago, got, tt.en)
		}
	}
}

// Until: a time to come, the way Relative says a time gone by (a
// webhook delivery's next try: "just now" for a try in 3 hours was
// Relative's answer to a future time).
func TestUntil(t *testing.T) {
	now := time.Date(2024, 10, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     time.Duration
		fa, en string
	}{
		{-time.Hour, "تا یک دقیقهٔ دیگر", "within a minute"}, // due already
		{0, "تا یک دقیقهٔ دیگر", "within a minute"},
		{59 * time.Second, "تا یک دقیقهٔ دیگر", "within a minute"},
		{time.Minute, "۱ دقیقهٔ دیگر", "in 1 min"},
		{7*time.Minute + 30*time.Second, "۷ دقیقهٔ دیگر", "in 7 min"},
		{3 * time.Hour, "۳ ساعت دیگر", "in 3 h"},
		{2 * 24 * time.Hour, "۲ روز دیگر", "in 2 days"},
		{40 * 24 * time.Hour, "۱۴۰۳/۰۸/۲۰", "2024-11-10"},
	}
	for _, tt := range tests {
		at := now.Add(tt.in)
		if got := i18n.Until(i18n.FA, at, now); got != tt.fa {
			t.Errorf("Until(fa, +%v) = %q, want %q", tt.in, got, tt.fa)
		}
		if got := i18n.Until(i18n.EN, at, now); got != tt.en {
			t.Errorf("Until(en, +%v) = %q, want %q", tt.in, got, tt.en)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want i18n.Lang
		ok   bool
	}{
		{"fa", i18n.FA, true},
		{"en", i18n.EN, true},
		{"en-US", i18n.EN, true},
		{"EN_gb", i18n.EN, true},
		{" fa-IR ", i18n.FA, true},
		{"FA", i18n.FA, true},
		{"de", "", false},
		{"", "", false},
		{"english", "", false},
		{"farsi", "", false},
	}
	for _, tt := range tests {
		got, ok := i18n.Parse(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDirOther(t *testing.T) {
	if i18n.Default != i18n.FA || i18n.Langs[0] != i18n.FA {
		t.Errorf("default language = %q, Langs[0] = %q; want fa", i18n.Default, i18n.Langs[0])
	}
	if got := i18n.FA.Dir(); got != "rtl" {
		t.Errorf("fa.Dir() = %q", got)
	}
	if got := i18n.EN.Dir(); got != "ltr" {
		t.Errorf("en.Dir() = %q", got)
	}
	if got := i18n.FA.Other(); got != i18n.EN {
		t.Errorf("fa.Other() = %q", got)
	}
	if got := i18n.EN.Other(); got != i18n.FA {
		t.Errorf("en.Other() = %q", got)
	}
}

// Relative and Until climb one ladder (issue 29, item 18): the same span
// lands on the same rung, said as gone by or to come; a month or more
// away is the date.
func TestRelativeAndUntilShareOneLadder(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		span      time.Duration
		ago, till string // English
	}{
		{30 * time.Second, "just now", "within a minute"},
		{5*time.Minute + 10*time.Second, "5 min ago", "in 5 min"},
		{3*time.Hour + time.Minute, "3 h ago", "in 3 h"},
		{2*24*time.Hour + time.Hour, "2 days ago", "in 2 days"},
		{40 * 24 * time.Hour, "2026-10-23", "2027-01-11"},
	} {
		if got := i18n.Relative(i18n.EN, now.Add(-tt.span), now); got != tt.ago {
			t.Errorf("Relative(-%v) = %q, want %q", tt.span, got, tt.ago)
		}
		if got := i18n.Until(i18n.EN, now.Add(tt.span), now); got != tt.till {
			t.Errorf("Until(+%v) = %q, want %q", tt.span, got, tt.till)
		}
	}
	if got := i18n.Until(i18n.FA, now.Add(-time.Hour), now); got != i18n.T(i18n.FA, "time.soon") {
		t.Errorf("Until of a time past = %q, want it due", got)
	}
}
