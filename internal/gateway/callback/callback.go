// Package callback reads the parameters a bank's browser callback (the
// redirect back to /payments/{id}/return) carries. They are hints: the
// authority must match the payment's own, and the status only paces how
// soon the bank is asked; nothing else is ever read from the callback.
package callback

// MaxAuthorityLen bounds the Authority a callback may carry (Zarinpal's
// are 36 characters; other gateways' are shorter).
const MaxAuthorityLen = 64

// Params are the two things read from a callback.
type Params struct {
	Authority  string
	ClaimsPaid bool // Status=OK
}

// Parse reads Authority and Status from the query string, or for a POST
// from the form body when the query has none. ok is false when the
// authority is missing, too long, or not plain printable ASCII (no spaces,
// controls or non-ASCII: nothing a real authority contains).
func Parse(query, form func(key string) string, isPost bool) (Params, bool) {
	authority, status := query("Authority"), query("Status")
	if isPost {
		if authority == "" {
			authority = form("Authority")
		}
		if status == "" {
			status = form("Status")
		}
	}
	if authority == "" || len(authority) > MaxAuthorityLen {
		return Params{}, false
	}
	for i := 0; i < len(authority); i++ {
		if c := authority[i]; c <= ' ' || c >= 0x7f {
			return Params{}, false
		}
	}
	return Params{Authority: authority, ClaimsPaid: status == "OK"}, true
}
