package store_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/store"
)

func TestTrigramSearchable(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"", false},
		{"a", false},
		{"ab", false},
		{"a.b", false},
		{"ab.cd", false},
		{"a_b%c", false},
		{"ab@", false},
		{"abc", true},
		{"x@tes", true},
		{"b.smi", true},
		{"123", true},
		{"user123", true},
		{"علی", true},
		{"ع.لی", false},
	} {
		if got := store.TrigramSearchable(c.text); got != c.want {
			t.Errorf("TrigramSearchable(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}
