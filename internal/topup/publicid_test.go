package topup_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/topup"
)

func TestValidPublicID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"abcdefghijklmnopqrstuvwx", true},
		{"234567234567234567234567", true},
		{"abcdefghijklmnopqrstuvw", false},   // 23
		{"abcdefghijklmnopqrstuvwxy", false}, // 25
		{"abcdefghijklmnopqrstuvw1", false},  // 1 is not base32
		{"abcdefghijklmnopqrstuvw8", false},
		{"Abcdefghijklmnopqrstuvwx", false}, // upper case
		{"abcdefghijklmnopqrstuvw/", false},
		{"abcdefghijklmnopqrstuv\u00e9", false}, // 24 bytes, not 24 base32 characters
		{"", false},
	} {
		if got := topup.ValidPublicID(tc.id); got != tc.want {
			t.Errorf("ValidPublicID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// FuzzValidPublicID holds the byte loop to the shape it replaced.
func FuzzValidPublicID(f *testing.F) {
	shape := regexp.MustCompile(`^[a-z2-7]{24}$`)
	f.Add("abcdefghijklmnopqrstuvwx")
	f.Add(strings.Repeat("z", 24) + "\n")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := topup.ValidPublicID(s), shape.MatchString(s); got != want {
			t.Fatalf("ValidPublicID(%q) = %v, the shape says %v", s, got, want)
		}
	})
}
