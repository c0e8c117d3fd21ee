package auth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/auth"
)

func TestNormalizeDisplayName(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"", "", nil},
		{"   ", "", nil},
		{"  Sara   Ahmadi ", "Sara Ahmadi", nil},
		{"مهدی\u200Cپور", "مهدی\u200Cپور", nil},                 // the Persian half-space between letters
		{"علي كريمي", "علی کریمی", nil},                         // Arabic yeh and kaf become Persian
		{"tab\tinside", "", auth.ErrDisplayNameInvalid},         // a control character
		{"\u202Eevil", "", auth.ErrDisplayNameInvalid},          // a bidi override
		{"zero\u200Bwidth", "", auth.ErrDisplayNameInvalid},     // a zero-width space
		{"\u200Cپیش", "", auth.ErrDisplayNameInvalid},           // a half-space not between letters
		{strings.Repeat("ن", 60), strings.Repeat("ن", 60), nil}, // 60 characters, 120 bytes
		{strings.Repeat("a", 61), "", auth.ErrDisplayNameTooLong},
		{strings.Repeat("a", 30) + "      " + strings.Repeat("b", 29), strings.Repeat("a", 30) + " " + strings.Repeat("b", 29), nil},
	} {
		got, err := auth.NormalizeDisplayName(tc.in)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || got != tc.want {
			t.Errorf("NormalizeDisplayName(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
