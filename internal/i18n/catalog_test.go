package i18n

import (
	"strings"
	"testing"
	"unicode"
)

// TestPersianCatalogWording walks every Persian entry for what an Iranian
// reader trips over: Latin digits (Persian text takes Persian digits,
// codes and versions included), the academic or stiff words people do
// not use, and the product's name spelled two ways.
func TestPersianCatalogWording(t *testing.T) {
	// Words that must not appear anywhere in the Persian catalog, and why.
	banned := []struct{ word, why string }{
		{"نویسه", `people say "کاراکتر"`},
		{"بایت", "nobody counts a password in bytes"},
		{"مرورگرهای واردشده", `stiff: "دستگاه‌های فعال"`},
		{"خروج از همه‌جا", `stiff: "خروج از همهٔ دستگاه‌ها"`},
		{"کیف پول", `the product and the word are "کیف‌پول", with a zero-width non-joiner, everywhere`},
		{"Kifpool", "the Persian text names the product in Persian"},
		{"هنوز توکنی نساخته‌اید", "not on pages where the reader is not the token's owner (tokens.none is checked below)"},
		{"۱۴۰۳/", "a fixed example date goes stale: examples are today's date"},
	}
	// "بدون اعشار" (no decimals) is the answer to a decimal amount only.
	decimalsOnly := map[string]bool{"topup.error_decimal": true}
	n := 0
	for _, m := range table(FA) {
		for key, msg := range m {
			n++
			if n := latinNumber(msg); n != "" {
				t.Errorf("%s: Latin digits %q in %q: write Persian digits", key, n, msg)
			}
			for _, b := range banned {
				if key == "tokens.none" && b.word == "هنوز توکنی نساخته‌اید" {
					continue
				}
				if strings.Contains(msg, b.word) {
					t.Errorf("%s: %q contains %q (%s)", key, msg, b.word, b.why)
				}
			}
			if strings.Contains(msg, "بدون اعشار") && !decimalsOnly[key] {
				t.Errorf("%s: %q speaks of decimals, which only a decimal amount's error may", key, msg)
			}
			if strings.Contains(msg, "  ") || msg != strings.TrimSpace(msg) {
				t.Errorf("%s: stray spaces in %q", key, msg)
			}
			// A dash glued to the word before it ("شد— بانک").
			if i := strings.Index(msg, "—"); i > 0 && !unicode.IsSpace([]rune(msg[:i])[len([]rune(msg[:i]))-1]) {
				t.Errorf("%s: no space before the dash in %q", key, msg)
			}
		}
	}
	if n < 300 {
		t.Fatalf("walked only %d Persian entries", n)
	}
	// The English catalog has no Persian digits either.
	for _, m := range table(EN) {
		for key, msg := range m {
			if key == "nav.other_lang" {
				continue
			}
			for _, r := range msg {
				if r >= '۰' && r <= '۹' {
					t.Errorf("en %s: Persian digit in %q", key, msg)
					break
				}
			}
		}
	}
}

// TestCatalogSentences checks sentences the issue found wrong, in both
// languages.
func TestCatalogSentences(t *testing.T) {
	for _, c := range []struct {
		lang    Lang
		key     string
		want    []string
		wantNot []string
	}{
		{EN, "result.received_text", []string{"We added"}, []string{"was added", "were added"}},
		{FA, "signup.password_rules", []string{"کاراکتر"}, nil},
		{FA, "signup.error_password_long", []string{"۷۲", "۳۶", "فارسی"}, nil},
		{EN, "signup.error_password_long", []string{"72", "36", "Persian"}, []string{"byte"}},
		{FA, "account.sessions", []string{"دستگاه‌های فعال"}, nil},
		{FA, "account.signout_everywhere", []string{"خروج از همهٔ دستگاه‌ها"}, nil},
		{FA, "topup.error_invalid", []string{"عدد"}, []string{"اعشار"}},
		{EN, "topup.error_invalid", []string{"number"}, []string{"decimal"}},
		{FA, "topup.error_negative", []string{"منفی"}, []string{"اعشار"}},
		{FA, "tokens.admin_none", nil, []string{"نساخته‌اید"}},
		{EN, "tokens.admin_none", nil, []string{"You have"}},
		{FA, "app.name", []string{"کیف‌پول"}, nil},
		{FA, "nav.wallet", []string{"کیف‌پول"}, nil},
	} {
		msg := T(c.lang, c.key)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %s = %q: want %q in it", c.lang, c.key, msg, w)
			}
		}
		for _, w := range c.wantNot {
			if strings.Contains(msg, w) {
				t.Errorf("%s %s = %q: %q must not be in it", c.lang, c.key, msg, w)
			}
		}
	}
}

// latinNumber returns the first number written in Latin digits in msg: a
// run of Latin digits, separators and signs without a Latin letter. A
// digit inside a Latin word (a command such as reset-2fa, a name such as
// CVV2) belongs to that word and is left alone.
func latinNumber(msg string) string {
	word := func(r rune) bool {
		return r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./:", r))
	}
	rs := []rune(msg)
	for i := 0; i < len(rs); {
		if !word(rs[i]) {
			i++
			continue
		}
		j := i
		letter, digit := false, false
		for j < len(rs) && word(rs[j]) {
			letter = letter || unicode.IsLetter(rs[j])
			digit = digit || (rs[j] >= '0' && rs[j] <= '9')
			j++
		}
		if digit && !letter {
			return string(rs[i:j])
		}
		i = j
	}
	return ""
}

func TestLatinNumber(t *testing.T) {
	for in, want := range map[string]string{
		"حداکثر 72 حرف":          "72",
		"ساعت 14:00":             "14:00",
		"kifpool user reset-2fa": "",
		"(CVV2)":                 "",
		"حداکثر ۷۲ حرف":          "",
		"مبلغ 1,000 تومان":       "1",
		"e.g. 50000":             "50000",
	} {
		if got := latinNumber(in); got != want {
			t.Errorf("latinNumber(%q) = %q, want %q", in, got, want)
		}
	}
}
