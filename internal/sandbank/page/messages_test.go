package page

import (
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/i18n"
)

// Every text of the bank's pages is in both languages, and every kind of
// finished payment has its title and body.
func TestMessagesHaveEveryKeyInBothLanguages(t *testing.T) {
	for _, k := range Keys() {
		if m := messages[k]; m[0] == "" || m[1] == "" {
			t.Errorf("%s: fa %q en %q", k, m[0], m[1])
		}
	}
	for _, kind := range []string{"closed", "paid", "cancelled", "reversed", "expired", "not_found"} {
		for _, suffix := range []string{".title", ".body"} {
			if !Has(kind + suffix) {
				t.Errorf("missing %s%s", kind, suffix)
			}
		}
	}
	if got := T(i18n.EN, "amount_rials", "amount", "1,000"); got != "1,000 rials" {
		t.Errorf("T with a placeholder = %q", got)
	}
	if got := T(i18n.FA, "no.such.key"); got != "[bank.no.such.key]" {
		t.Errorf("a missing key = %q", got)
	}
}

// The Persian texts follow the app catalogue's rules (internal/i18n's
// TestPersianCatalogWording): Persian digits, the product's name with its
// zero-width non-joiner and in Persian, no stray spaces.
func TestPersianMessagesWording(t *testing.T) {
	for _, k := range Keys() {
		fa := messages[k][0]
		if strings.ContainsAny(fa, "0123456789") {
			t.Errorf("%s: Latin digits in %q", k, fa)
		}
		for _, bad := range []string{"کیف پول", "Kifpool"} {
			if strings.Contains(fa, bad) {
				t.Errorf("%s: %q contains %q", k, fa, bad)
			}
		}
		if strings.Contains(fa, "  ") || fa != strings.TrimSpace(fa) {
			t.Errorf("%s: stray spaces in %q", k, fa)
		}
	}
}
