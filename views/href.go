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
	if alreadyLocal(pathAndQuery) {
		return templ.SafeURL(pathAndQuery) // #nosec G203 -- checked to be what buildLocalHref would build
	}
	return buildLocalHref(pathAndQuery)
}

// buildLocalHref is LocalHref's slow path: it parses and rebuilds.
func buildLocalHref(pathAndQuery string) templ.SafeURL {
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

// alreadyLocal reports whether LocalHref's slow path would hand back
// pathAndQuery unchanged, without building anything: one leading slash,
// then path segments of unreserved characters (no empty segment, so no
// "//"), then at most a query of key=value pairs of unreserved characters
// whose keys are in the order url.Values.Encode writes them (sorted, a
// repeated key's values side by side). Every callback's other-language
// link passes through LocalHref; most are already in this form.
// FuzzLocalHref holds it to the slow path.
func alreadyLocal(s string) bool {
	path, query, hasQuery := strings.Cut(s, "?")
	if len(path) < 1 || path[0] != '/' {
		return false
	}
	prevSlash := true
	for i := 1; i < len(path); i++ {
		c := path[i]
		if c == '/' {
			if prevSlash {
				return false
			}
			prevSlash = true
			continue
		}
		if !unreserved(c) {
			return false
		}
		prevSlash = false
	}
	if !hasQuery {
		return true
	}
	if query == "" {
		return false // the slow path drops a lone "?"
	}
	prevKey := ""
	for i, pair := range strings.Split(query, "&") {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" || (i > 0 && key < prevKey) {
			return false
		}
		for j := 0; j < len(key); j++ {
			if !unreserved(key[j]) {
				return false
			}
		}
		for j := 0; j < len(value); j++ {
			if !unreserved(value[j]) {
				return false
			}
		}
		prevKey = key
	}
	return true
}

// unreserved reports whether c is left as it is by both path and query
// escaping (RFC 3986's unreserved characters).
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
