package web

import (
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/routes"
)

// switchLangURL builds what url.Values built before (the page's link to
// the other language), without the map.
func TestSwitchLangURLIsTheEncodedQuery(t *testing.T) {
	for _, raw := range []string{
		"",
		"lang=en",
		"Authority=A0000123&Status=OK",
		"b=2&a=1&b=1&lang=fa&a=0",
		"q=%D8%B3%D9%84%D8%A7%D9%85+x&z=%26%3D&empty=",
		"k",
		"Status=OK&Authority=x%2By&lang=en&lang=fa",
	} {
		t.Run(raw, func(t *testing.T) {
			q := url.Values{}
			var pairs [][2][]byte
			// The request's arguments in their order, as fasthttp gives them.
			for _, kv := range splitQuery(raw) {
				q.Add(kv[0], kv[1])
				pairs = append(pairs, [2][]byte{[]byte(kv[0]), []byte(kv[1])})
			}
			q.Set("lang", "en")
			page := routes.TopUpPage("x")
			want := page + "?" + q.Encode()
			got := switchLangURL(page, func(yield func([]byte, []byte) bool) {
				for _, p := range pairs {
					if !yield(p[0], p[1]) {
						return
					}
				}
			}, "en")
			if got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

// splitQuery is raw's key/value pairs in order, unescaped.
func splitQuery(raw string) [][2]string {
	var out [][2]string
	for raw != "" {
		var part string
		part, raw, _ = cutByte(raw, '&')
		k, v, _ := cutByte(part, '=')
		k, _ = url.QueryUnescape(k)
		v, _ = url.QueryUnescape(v)
		out = append(out, [2]string{k, v})
	}
	return out
}

func cutByte(s string, b byte) (string, string, bool) {
	return strings.Cut(s, string(b))
}
