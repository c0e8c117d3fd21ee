package views

import (
	"net/url"
	"strings"

	"github.com/a-h/templ"
)

// LocalHref turns a path (and query) taken from a request into a link
// that stays on this site: "//evil.example/x" is another site to a
// browser, and so are "/\evil.example" and "/\t/evil.example", so every
// leading slash or backslash collapses into one and whatever is not a
// plain path character is percent-encoded. Links built from request
// input go through here, never straight into templ.SafeURL.
func LocalHref(pathAndQuery string) templ.SafeURL {
	path, query, _ := strings.Cut(pathAndQuery, "?")
	path, _, _ = strings.Cut(path, "#")
	path = strings.TrimLeft(path, "/\\")
	out := (&url.URL{Path: "/" + path}).EscapedPath()
	// EscapedPath keeps the escaping of a path that arrived escaped; a
	// path that still starts with two slashes after it would be
	// protocol-relative, so it is refused outright.
	if strings.HasPrefix(out, "//") || strings.HasPrefix(out, "/\\") {
		out = "/"
	}
	if query != "" {
		if q, err := url.ParseQuery(query); err == nil && len(q) > 0 {
			out += "?" + q.Encode()
		}
	}
	return templ.SafeURL(out) // #nosec G203 -- built above as a same-site path
}
