package book

import (
	"net/http"
	"strings"
)

// CallbackRequest is the request the payer's browser makes to the
// merchant after the bank's page: a GET of URL (Zarinpal, Zibal: the
// fields are in its query) or a POST of Form to URL (SEP, Mellat).
type CallbackRequest struct {
	URL    string            `json:"redirect"`
	Method string            `json:"method"`
	Form   map[string]string `json:"form"`
	// order is Form's field order (the page posts them in this order).
	order []string
}

// Field is one form field of a callback.
type Field struct{ Name, Value string }

// GetCallback is a GET callback to url (its fields in its query).
func GetCallback(url string) CallbackRequest {
	return CallbackRequest{URL: url, Method: http.MethodGet, Form: map[string]string{}}
}

// PostCallback is a POST callback with fields (name, value, ...) in order.
func PostCallback(url string, fields ...string) CallbackRequest {
	cb := CallbackRequest{URL: url, Method: http.MethodPost, Form: map[string]string{}}
	for i := 0; i+1 < len(fields); i += 2 {
		cb.Form[fields[i]] = fields[i+1]
		cb.order = append(cb.order, fields[i])
	}
	return cb
}

// Fields are the callback's form fields in their order.
func (cb CallbackRequest) Fields() []Field {
	out := make([]Field, 0, len(cb.order))
	for _, k := range cb.order {
		out = append(out, Field{Name: k, Value: cb.Form[k]})
	}
	return out
}

// AppendQuery is url with query (already encoded) appended to its query,
// before any fragment.
func AppendQuery(url, query string) string {
	base, frag, hasFrag := strings.Cut(url, "#")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
		if strings.HasSuffix(base, "?") || strings.HasSuffix(base, "&") {
			sep = ""
		}
	}
	u := base + sep + query
	if hasFrag {
		u += "#" + frag
	}
	return u
}
