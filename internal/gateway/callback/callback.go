// Package callback holds what every gateway's browser callback (the
// redirect back to /payments/{id}/return) comes down to, whatever its
// field names: the bank's token for the payment and whether it claims the
// payer paid. Each driver parses its own callback (gateway.Driver's
// ParseCallback) into Params. They are hints: the token must match the
// payment's own, and the claim only paces how soon the bank is asked;
// nothing else is ever trusted from a callback (an order or amount it
// names can only refuse it).
package callback

// MaxAuthorityLen bounds the token a callback may carry (Zarinpal's
// authorities are 36 characters; other gateways' tokens are shorter).
const MaxAuthorityLen = 64

// OwnTokenParam is the query parameter our own result page's refresh URL
// carries the token in, whatever the gateway (a GET to the callback
// route with it is read like the gateway's own callback).
const OwnTokenParam = "Authority"

// Params are what is read from a callback.
type Params struct {
	Authority  string // the gateway's token for the payment
	ClaimsPaid bool   // the callback says the payer paid (Zarinpal: Status=OK)
	// Receipt is what verify needs from the callback (SEP's RefNum,
	// Mellat's SaleReferenceId); "" when the gateway needs none or the
	// payer did not pay. The payment keeps the first one (unique per
	// gateway: a receipt another payment holds is a replay, refused).
	Receipt string
	// Order and PaidRials are what the callback says of the sale, where
	// the gateway names them (Mellat's SaleOrderId and FinalAmount, the
	// amount after an online discount): "" and 0 when it does not. The
	// gateway's check (gateway.Ops.MatchCallback) refuses a callback
	// whose order is not the payment's, or whose amount is not ours,
	// before anything of it is kept.
	Order     string
	PaidRials int64
}

// Token checks a token taken from a callback: present, at most
// MaxAuthorityLen bytes, plain printable ASCII (no spaces, controls or
// non-ASCII: nothing a real token contains).
func Token(s string) (string, bool) {
	if s == "" || len(s) > MaxAuthorityLen {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return "", false
		}
	}
	return s, true
}

// Receipt checks a receipt taken from a callback, as Token does; "" when
// absent or malformed (a malformed receipt is no receipt).
func Receipt(s string) string {
	r, ok := Token(s)
	if !ok {
		return ""
	}
	return r
}

// QueryFirst reads a callback field from the query string, or for a POST
// from the form body when the query has none (gateways that call back by
// GET and may also POST: Zarinpal, Zibal).
func QueryFirst(query, form func(key string) string, isPost bool) func(key string) string {
	return func(k string) string {
		if v := query(k); v != "" || !isPost {
			return v
		}
		return form(k)
	}
}

// FormFirst reads a callback field from a POST's form body, or from the
// query string when the body has none or the request is a GET (gateways
// that call back by POST: SEP, Mellat; our own Post/Redirect/Get page
// names its fields in the query).
func FormFirst(query, form func(key string) string, isPost bool) func(key string) string {
	return func(k string) string {
		if isPost {
			if v := form(k); v != "" {
				return v
			}
		}
		return query(k)
	}
}
