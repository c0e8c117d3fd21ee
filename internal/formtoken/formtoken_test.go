package formtoken

import "testing"

func TestNewIsValidAndFresh(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok := New()
		if !Valid(tok) {
			t.Fatalf("New() = %q is not Valid", tok)
		}
		if seen[tok] {
			t.Fatalf("New() repeated %q", tok)
		}
		seen[tok] = true
	}
	for _, bad := range []string{"", "short", "AAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAA/", "AAAAAAAAAAAAAAAAAAAAA\n"} {
		if Valid(bad) {
			t.Errorf("Valid(%q) = true", bad)
		}
	}
}
