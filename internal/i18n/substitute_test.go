package i18n

import (
	"strings"
	"testing"
)

// TestSubstituteIsTheReplacer: substitute gives exactly what
// strings.NewReplacer gives for placeholder pairs, edge cases included.
func TestSubstituteIsTheReplacer(t *testing.T) {
	tests := []struct {
		name  string
		msg   string
		pairs []string
	}{
		{"no placeholder", "plain text", []string{"{n}", "5"}},
		{"one", "{n} min ago", []string{"{n}", "5"}},
		{"twice", "{n} and {n}", []string{"{n}", "۵"}},
		{"two names", "From {min} to {max}", []string{"{min}", "1", "{max}", "2"}},
		{"unknown placeholder kept", "{x} and {n}", []string{"{n}", "5"}},
		{"value holding a placeholder is not rescanned", "{a}{b}", []string{"{a}", "{b}", "{b}", "B"}},
		{"first pair wins on a duplicate name", "{n}", []string{"{n}", "first", "{n}", "second"}},
		{"nested braces", "{{n}}", []string{"{n}", "5"}},
		{"unclosed brace", "{n", []string{"{n}", "5"}},
		{"empty name", "{} {n}", []string{"{}", "E", "{n}", "5"}},
		{"brace at the end", "{n}{", []string{"{n}", "5"}},
		{"persian text", "از {min} تومان تا {max} تومان", []string{"{min}", "۱۰", "{max}", "۱۰۰"}},
		{"no pairs", "{n}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := strings.NewReplacer(tt.pairs...).Replace(tt.msg)
			if got := substitute(tt.msg, tt.pairs); got != want {
				t.Fatalf("substitute(%q, %q) = %q, want %q", tt.msg, tt.pairs, got, want)
			}
		})
	}
}

func BenchmarkT(b *testing.B) {
	for range b.N {
		T(FA, "time.minutes_ago", "n", 5)
	}
}
