package zarinpal

import "github.com/kifpool/kifpool/internal/gateway/callback"

// ParseCallback reads Zarinpal's callback: Authority and Status from the
// query string, or for a POST from the form body when the query has none.
// ok is false when the authority is missing or malformed (callback.Token).
// Only Status=OK (exactly) claims a payment.
func ParseCallback(query, form func(key string) string, isPost bool) (callback.Params, bool) {
	get := callback.QueryFirst(query, form, isPost)
	authority, status := get("Authority"), get("Status")
	authority, ok := callback.Token(authority)
	if !ok {
		return callback.Params{}, false
	}
	return callback.Params{Authority: authority, ClaimsPaid: status == "OK"}, true
}
