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

func TestFieldPrecedence(t *testing.T) {
	query := map[string]string{"both": "q", "onlyQuery": "q"}
	form := map[string]string{"both": "f", "onlyForm": "f"}
	q := func(k string) string { return query[k] }
	f := func(k string) string { return form[k] }
	tests := []struct {
		name   string
		read   func(query, form func(string) string, isPost bool) func(string) string
		isPost bool
		key    string
		want   string
	}{
		{"query first, POST, both", QueryFirst, true, "both", "q"},
		{"query first, POST, form only", QueryFirst, true, "onlyForm", "f"},
		{"query first, GET ignores the form", QueryFirst, false, "onlyForm", ""},
		{"form first, POST, both", FormFirst, true, "both", "f"},
		{"form first, POST, query only", FormFirst, true, "onlyQuery", "q"},
		{"form first, GET ignores the form", FormFirst, false, "both", "q"},
		{"form first, GET, form only", FormFirst, false, "onlyForm", ""},
	}
	for _, tt := range tests {
		if got := tt.read(q, f, tt.isPost)(tt.key); got != tt.want {
			t.Errorf("%s: %q = %q, want %q", tt.name, tt.key, got, tt.want)
		}
	}
}
