package zarinpal

import (
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/gateway/callback"
)

func TestParseCallback(t *testing.T) {
	const auth = "S000000000000000000000000000000000001"
	for _, tc := range []struct {
		name        string
		query, form map[string]string
		post, ok    bool
		want        callback.Params
	}{
		{"GET paid", map[string]string{"Authority": auth, "Status": "OK"}, nil, false, true, callback.Params{Authority: auth, ClaimsPaid: true}},
		{"GET cancelled", map[string]string{"Authority": auth, "Status": "NOK"}, nil, false, true, callback.Params{Authority: auth, ClaimsPaid: false}},
		{"status in other case is no claim", map[string]string{"Authority": auth, "Status": "ok"}, nil, false, true, callback.Params{Authority: auth, ClaimsPaid: false}},
		{"POST form", nil, map[string]string{"Authority": auth, "Status": "OK"}, true, true, callback.Params{Authority: auth, ClaimsPaid: true}},
		{"GET ignores the body", nil, map[string]string{"Authority": auth}, false, false, callback.Params{}},
		{"query wins over form", map[string]string{"Authority": auth}, map[string]string{"Authority": "other", "Status": "OK"}, true, true, callback.Params{Authority: auth, ClaimsPaid: true}},
		{"missing", nil, nil, false, false, callback.Params{}},
		{"too long", map[string]string{"Authority": strings.Repeat("A", 65)}, nil, false, false, callback.Params{}},
		{"space", map[string]string{"Authority": "A 1"}, nil, false, false, callback.Params{}},
		{"newline", map[string]string{"Authority": "A\n1"}, nil, false, false, callback.Params{}},
		{"non-ASCII", map[string]string{"Authority": "Aé1"}, nil, false, false, callback.Params{}},
	} {
		got, ok := ParseCallback(lookup(tc.query), lookup(tc.form), tc.post)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func lookup(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// FuzzParseCallback: whatever the bank (or a forger) sends, the parser
// never panics, accepts only a short printable-ASCII authority, and reads
// a payment claim only from Status=OK.
func FuzzParseCallback(f *testing.F) {
	for _, s := range [][3]string{
		{"S000000000000000000000000000000000001", "OK", ""},
		{"A00000000000000000000000000000000000", "NOK", ""},
		{"", "OK", "A00000000000000000000000000000000000"},
		{strings.Repeat("A", 64), "OK", ""},
		{strings.Repeat("A", 65), "OK", ""},
		{"A\x00B", "OK", ""},
		{"<script>", "OK", ""},
		{"۱۲۳", "ok", ""},
		{"%00", " OK", ""},
	} {
		f.Add(s[0], s[1], s[2], true)
		f.Add(s[0], s[1], s[2], false)
	}
	f.Fuzz(func(t *testing.T, authority, status, formAuthority string, post bool) {
		q := map[string]string{"Authority": authority, "Status": status}
		form := map[string]string{"Authority": formAuthority, "Status": status}
		got, ok := ParseCallback(lookup(q), lookup(form), post)
		if !ok {
			if got != (callback.Params{}) {
				t.Fatalf("refused with %+v", got)
			}
			return
		}
		if got.Authority == "" || len(got.Authority) > callback.MaxAuthorityLen {
			t.Fatalf("authority of %d bytes accepted", len(got.Authority))
		}
		for i := 0; i < len(got.Authority); i++ {
			if c := got.Authority[i]; c <= ' ' || c >= 0x7f {
				t.Fatalf("authority %q accepted", got.Authority)
			}
		}
		if got.Authority != authority && !(post && authority == "" && got.Authority == formAuthority) {
			t.Fatalf("authority %q taken from nowhere", got.Authority)
		}
		if got.ClaimsPaid != (status == "OK") {
			t.Fatalf("status %q read as paid=%v", status, got.ClaimsPaid)
		}
	})
}
