package callback

import (
	"strings"
	"testing"
)

func TestToken(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"S000000000000000000000000000000000001", true}, {strings.Repeat("A", 64), true}, {"1", true},
		{"", false}, {strings.Repeat("A", 65), false}, {"A 1", false}, {"A\n1", false}, {"Aé1", false}, {"A\x7f", false},
	} {
		got, ok := Token(tt.in)
		if ok != tt.ok || (ok && got != tt.in) || (!ok && got != "") {
			t.Errorf("Token(%q) = %q %v, want ok=%v", tt.in, got, ok, tt.ok)
		}
	}
}
