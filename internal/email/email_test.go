package email_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/email"
)

// FuzzNormalize: never panics; what it accepts is already in its one
// form (normalising again changes nothing), is short enough, holds one @,
// no invisible or control characters, and an ASCII lower-case domain.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"alice@example.com", "  Alice@Example.COM ", "ＡＤＭＩＮ@example.com", "admin\u200b@example.com",
		"\u0430dmin@example.com", "علی@example.com", "user@bücher.example", "a@b@example.com", `"a b"@example.com`,
		"Alice <alice@example.com>", "@example.com", "alice@", "al\xffice@example.com", "\u202eadmin@example.com",
		strings.Repeat("a", 250) + "@example.com", "a@xn--80ak6aa92e.com", "a@-x-.com", "ß@example.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := email.Normalize(s)
		if err != nil {
			if err != email.ErrInvalid || out != "" {
				t.Fatalf("Normalize(%q) = %q, %v", s, out, err)
			}
			return
		}
		again, err := email.Normalize(out)
		if err != nil || again != out {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q, %v", s, out, out, again, err)
		}
		if len(out) > 254 || !utf8.ValidString(out) || strings.Count(out, "@") != 1 {
			t.Fatalf("Normalize(%q) = %q", s, out)
		}
		for _, r := range out {
			if unicode.In(r, unicode.Cf, unicode.Cc, unicode.Z) {
				t.Fatalf("Normalize(%q) = %q keeps %U", s, out, r)
			}
		}
		domain := out[strings.IndexByte(out, '@')+1:]
		for i := 0; i < len(domain); i++ {
			if c := domain[i]; c >= 0x80 || (c >= 'A' && c <= 'Z') {
				t.Fatalf("Normalize(%q): domain %q is not lower-case ASCII", s, domain)
			}
		}
	})
}
