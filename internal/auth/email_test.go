package auth_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/auth"
)

func TestNormalizeEmail(t *testing.T) {
	ok := []struct{ in, want string }{
		{"  Alice@Example.com ", "alice@example.com"},
		{"first.last+tag@example.co.uk", "first.last+tag@example.co.uk"},
		{"ＡＤＭＩＮ@example.com", "admin@example.com"}, // fullwidth folds (NFKC)
		{"admin@EXAMPLE.com", "admin@example.com"},
		{"علی@example.com", "علی@example.com"},                // one script
		{"user@bücher.example", "user@xn--bcher-kva.example"}, // IDN domain in ASCII form
		{"иван@example.com", "иван@example.com"},
	}
	for _, tc := range ok {
		got, err := auth.NormalizeEmail(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	bad := map[string]string{
		"zero-width space":          "admin\u200b@example.com",
		"zero-width joiner":         "ad\u200dmin@example.com",
		"zero-width non-joiner":     "ad\u200cmin@example.com",
		"right-to-left override":    "\u202eadmin@example.com",
		"BOM":                       "\ufeffadmin@example.com",
		"soft hyphen":               "ad\u00admin@example.com",
		"Cyrillic a among Latin":    "\u0430dmin@example.com",
		"Greek omicron among Latin": "r\u03bfot@example.com",
		"Hangul filler":             "admin\u3164@example.com",
		"no-break space":            "ad\u00a0min@example.com",
		"combining grapheme joiner": "ad\u034fmin@example.com",
		"control":                   "ad\x01min@example.com",
		"empty":                     "",
		"no at":                     "alice.example.com",
		"no dot in domain":          "alice@localhost",
		"display name":              "Alice <alice@example.com>",
		"space inside":              "al ice@example.com",
		"two ats":                   "a@b@example.com",
		"quoted local part":         `"a b"@example.com`,
		"empty local part":          "@example.com",
		"empty domain":              "alice@",
		"invalid utf-8":             "al\xffice@example.com",
		"bad domain label":          "alice@-example-.com",
	}
	for name, in := range bad {
		if got, err := auth.NormalizeEmail(in); err != auth.ErrEmailInvalid {
			t.Errorf("%s: NormalizeEmail(%q) = %q, %v; want ErrEmailInvalid", name, in, got, err)
		}
	}
}

func TestCheckPassword(t *testing.T) {
	for pw, want := range map[string]error{
		"correct horse battery": nil,
		"Tr0ub4dor&3":           nil,
		"رمز عبور من خیلی خوب است": nil, // Persian letters and spaces
		"          ":             auth.ErrPasswordTooShort, // ten spaces
		"        ":               auth.ErrPasswordTooShort, // eight spaces
		"   abc1234   ":          auth.ErrPasswordTooShort, // 7 once trimmed
		"abcdefghijk":            auth.ErrPasswordTooSimple,
		"12345678901":            auth.ErrPasswordTooSimple,
		"ABCDEFGHIJKLM":          auth.ErrPasswordTooSimple,
		"رمزعبورمنخوب":           auth.ErrPasswordTooSimple,
		"password123":            auth.ErrPasswordCommon,
		"Password123":            auth.ErrPasswordCommon,
		"  quiet river 7  ":      nil,
		"1qaz2wsx3edc":           auth.ErrPasswordCommon,
		string(make([]byte, 73)): auth.ErrPasswordTooLong,
	} {
		if got := auth.CheckPassword(pw); got != want {
			t.Errorf("CheckPassword(%q) = %v, want %v", pw, got, want)
		}
	}
	if !auth.IsCommonPassword("qwertyuiop") {
		t.Error("the embedded list is not loaded")
	}
}
