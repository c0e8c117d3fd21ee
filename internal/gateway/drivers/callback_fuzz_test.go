package drivers_test

import (
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
)

// FuzzEveryDriverCallback: the callback parser of every driver in the
// registry (a driver added later is fuzzed too, with no new target),
// given any query string and form a bank or a forger could send, never
// panics, and accepts only a short printable-ASCII token; a refusal
// carries nothing.
func FuzzEveryDriverCallback(f *testing.F) {
	for _, s := range [][2]string{
		{"Authority=S000000000000000000000000000000000001&Status=OK", ""},
		{"Authority=A%00B&Status=OK", ""},
		{"", "Authority=A00000000000000000000000000000000000&Status=NOK"},
		{"trackId=123&success=1&status=2&orderId=x", "RefNum=abc&State=OK&ResNum=x&SaleReferenceId=1&RefId=2&ResCode=0"},
		{"Authority=%E2%80%AEgnp.exe", ""},
		{"Authority=" + string(make([]byte, 70)), ""},
	} {
		f.Add(s[0], s[1], true)
		f.Add(s[0], s[1], false)
	}
	f.Fuzz(func(t *testing.T, query, form string, post bool) {
		q, _ := url.ParseQuery(query)
		fv, _ := url.ParseQuery(form)
		for _, d := range drivers.All() {
			got, ok := d.ParseCallback(q.Get, fv.Get, post)
			if !ok {
				if got != (callback.Params{}) {
					t.Fatalf("%s: refused with %+v", d.Name, got)
				}
				continue
			}
			if got.Authority == "" || len(got.Authority) > callback.MaxAuthorityLen {
				t.Fatalf("%s: a token of %d bytes accepted", d.Name, len(got.Authority))
			}
			for i := 0; i < len(got.Authority); i++ {
				if c := got.Authority[i]; c <= ' ' || c >= 0x7f {
					t.Fatalf("%s: token %q accepted", d.Name, got.Authority)
				}
			}
		}
	})
}
