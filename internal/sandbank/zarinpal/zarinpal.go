// Package zarinpal is the sandbox bank's Zarinpal v4: the JSON API
// (request, verify, inquiry, unVerified) and the payer's StartPay page
// with Pay, Cancel and "Pay and close" buttons.
//
//	POST /pg/v4/payment/request.json     request
//	POST /pg/v4/payment/verify.json      verify
//	POST /pg/v4/payment/inquiry.json     inquiry
//	POST /pg/v4/payment/unVerified.json  unVerified
//	GET  /pg/StartPay/{authority}        payer's bank page (HTML)
//	POST /pg/StartPay/{authority}/pay        Pay button
//	POST /pg/StartPay/{authority}/cancel     Cancel button
//	POST /pg/StartPay/{authority}/pay-close  "Pay and close the window" button
//	POST /api/v4/graphql/                the GraphQL API: AddRefund, Session (graphql.go)
//
// The payer returns with a GET of the callback URL plus
// ?Authority=&Status=OK|NOK. Its operations are the bare fault keys
// (request, verify, inquiry, unverified, startpay, refund, sessions).
//
// # HTTP statuses
//
// Zarinpal's HTTP status on errors is not documented (clients must decide on
// data.code / errors.code, never on the status), so the simulator picks:
//
//   - 200 with the data envelope for success (100, 101);
//   - 400 with the errors envelope when the call itself is refused: -9
//     (malformed JSON, validation), -11 (terminal not active), -41 (amount
//     above the maximum);
//   - 200 with the errors envelope for answers about a payment: -50, -51,
//     -53, -54;
//   - 405 (errors envelope, code -9) for a method other than POST, 404 for an
//     unknown path.
//
// This mix makes a client handle both an errors body on 200 and on 4xx.
package zarinpal

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// Protocol is the name gateway drivers give this imitation.
const Protocol = "zarinpal-v4"

// Gateway is the gateway of its payments.
const Gateway = "zarinpal"

// authorityLen is the length of an authority: "S" + 35 alphanumerics.
const authorityLen = 36

// Zarinpal is the protocol.
type Zarinpal struct {
	env  protocol.Env
	link page.Link
}

// New returns the protocol served with env.
func New(env protocol.Env) protocol.Protocol {
	return &Zarinpal{env: env, link: page.Link{Gateway: Gateway, Path: "/pg/StartPay/", Op: opStartPay, Assets: "../assets/bank"}}
}

// Name is "zarinpal-v4".
func (z *Zarinpal) Name() string { return Protocol }

// Gateway is "zarinpal".
func (z *Zarinpal) Gateway() string { return Gateway }

// Rules: no verify deadline (Zarinpal keeps a paid payment verifiable),
// the callback a GET with Authority and Status.
func (z *Zarinpal) Rules() book.Rules {
	return book.Rules{Callback: func(rec *book.Record) book.CallbackRequest {
		return book.GetCallback(CallbackURL(rec.CallbackURL, rec.Authority, rec.State))
	}}
}

// Ops are request, verify, inquiry, unverified and startpay.
func (z *Zarinpal) Ops() []string {
	return []string{opRequest, opVerify, opInquiry, opUnverified, opStartPay, opRefund, opSessions}
}

// CommitOps: verify, and a refund (AddRefund).
func (z *Zarinpal) CommitOps() []string { return []string{opVerify, opRefund} }

// Routes registers Zarinpal's paths.
func (z *Zarinpal) Routes(mux *http.ServeMux, op func(string) http.Handler) {
	mux.Handle("/pg/v4/payment/request.json", op(opRequest))
	mux.Handle("/pg/v4/payment/verify.json", op(opVerify))
	mux.Handle("/pg/v4/payment/inquiry.json", op(opInquiry))
	mux.Handle("/pg/v4/payment/unVerified.json", op(opUnverified))
	mux.HandleFunc("/pg/v4/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, codeValidation, validation("path", "Unknown API path."))
	})
	z.link.Routes(mux, op)
	z.graphQLRoutes(mux, op)
}

// Serve performs one operation. Nothing here depends on being called
// exactly once per HTTP request.
func (z *Zarinpal) Serve(op string, w http.ResponseWriter, r *http.Request) {
	switch op {
	case opRequest, opVerify, opInquiry, opUnverified:
		if protocol.AllowPOST(w, r, func(w http.ResponseWriter) {
			writeError(w, http.StatusMethodNotAllowed, codeValidation,
				validation("method", "The "+r.Method+" method is not supported; use POST."))
		}) {
			return
		}
	}
	switch op {
	case opRequest:
		z.apiRequest(w, r)
	case opVerify:
		z.apiVerify(w, r)
	case opInquiry:
		z.apiInquiry(w, r)
	case opUnverified:
		z.apiUnverified(w, r)
	case opRefund:
		z.apiRefund(w, r)
	case opSessions:
		z.apiSessions(w, r)
	default:
		if !z.env.Pages.ServeLink(w, r, z.link, op) {
			http.NotFound(w, r)
		}
	}
}

// Committed: a verify's code 100 (data.code; 101 is an earlier commit),
// a refund's refunded session.
func (z *Zarinpal) Committed(op string, body []byte) bool {
	if op == opRefund {
		return refundCommitted(body)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(body, &env) != nil || !bytes.HasPrefix(env.Data, []byte("{")) {
		return false
	}
	var data struct {
		Code int `json:"code"`
	}
	return json.Unmarshal(env.Data, &data) == nil && data.Code == codeSuccess
}

// Refuse answers the API's code -12 (too many attempts); the pages and
// the GraphQL API a proxy's 429 page.
func (z *Zarinpal) Refuse(op string, w http.ResponseWriter) {
	if op == opStartPay || op == opRefund || op == opSessions {
		protocol.FaultPage(w, http.StatusTooManyRequests)
		return
	}
	writeError(w, http.StatusTooManyRequests, codeTooManyAttempts, nil)
}

// CallbackURL is where the payer returns: the merchant's callback with
// Authority and Status appended to its query (before any fragment).
func CallbackURL(callback, authority string, s book.State) string {
	status := "NOK"
	if s == book.StatePaid || s == book.StateVerified {
		status = "OK"
	}
	return book.AppendQuery(callback, "Authority="+authority+"&Status="+status)
}
