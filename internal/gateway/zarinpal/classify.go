package zarinpal

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Gateway codes the driver branches on (see the reference, §1.8).
const (
	codeOK              = 100 // success
	codeAlreadyVerified = 101 // verify: verified before
	codeTooManyAttempts = -12 // too many attempts in a short period
	codeAmountMismatch  = -50 // verify: amount differs from the paid one
	codeNotPaid         = -51 // verify: no successful payment (cancelled, failed)
	codeUnexpected      = -52 // unexpected error at the gateway
)

// reply is an answer that carries a usable gateway code.
type reply struct {
	status  int // HTTP status
	code    int
	message string // sanitized
	data    dataFields
}

// interpret turns an HTTP answer into a reply, or into a typed error when
// the answer says nothing definite. It is pure, so it can be fuzzed.
func interpret(op string, status int, h http.Header, body []byte, now time.Time) (reply, error) {
	if wire.Retryable(status) {
		return reply{}, &gateway.TransientError{
			Op:         op,
			HTTPStatus: status,
			RetryAfter: wire.RetryAfter(h.Get("Retry-After"), now),
			Err:        fmt.Errorf("HTTP %d %s", status, http.StatusText(status)),
		}
	}
	ans, err := decodeAnswer(body)
	code, msg := 0, ""
	if err == nil {
		code, msg, err = ans.decide()
	}
	if err != nil {
		return reply{}, undecided(op, status, err)
	}
	return reply{status: status, code: code, message: sanitize(msg), data: ans.data}, nil
}

// undecided classifies an answer without a usable gateway code. For a
// request, a plain 4xx is a refusal (wrong path, method, ...): no payment
// was started, so failing it is safe. For verify, inquiry and the
// unverified list a 4xx without a code says nothing about the payment (a
// CDN or firewall in front of the bank can answer 403): the outcome stays
// unknown, the call may be retried, and the breaker counts it.
func undecided(op string, status int, err error) error {
	if op == opRequest && status >= 400 && status < 500 && !errors.Is(err, errConflict) {
		return &gateway.RejectedError{
			Op:      op,
			Message: fmt.Sprintf("HTTP %d %s without a gateway code", status, http.StatusText(status)),
		}
	}
	return &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("undecodable answer: %w", err)}
}

// codeClass is what a code that is not a success of the operation says.
type codeClass int

const (
	// classRefused: a definite refusal of the call (-9 validation, -10
	// wrong merchant, -54 invalid authority, ...): a *gateway.RejectedError,
	// or for verify a VerifyResult. The bank is healthy; retrying is useless.
	classRefused codeClass = iota
	// classPerPayment: this call about this payment is refused for now
	// (-12 too many attempts). The bank is healthy (the breaker counts it
	// as a success) but nothing is known about the payment: a
	// *gateway.TransientError wrapping a *gateway.PerPaymentRefusal, which
	// the resilient caller does not retry either.
	classPerPayment
	// classBankTrouble: the gateway could not decide (-52 unexpected error,
	// an unknown positive code): a *gateway.TransientError that counts
	// against the bank's health and may be retried.
	classBankTrouble
)

// classifyCode says what a code other than the operation's success means.
// Codes about the payment itself (-50, -51 on verify) are handled by
// verifyResult before it asks.
func classifyCode(code int) codeClass {
	switch {
	case code == codeTooManyAttempts:
		return classPerPayment
	case code == codeUnexpected || code >= 0:
		return classBankTrouble
	default:
		return classRefused
	}
}

// terminalRefusal reports the codes refusing our terminal rather than a
// payment (-10 wrong merchant or server address, -11 terminal not active,
// -15 suspended, -16 and -17 the merchant's level): a verify refused so
// says nothing of the payment.
func terminalRefusal(code int) bool {
	switch code {
	case -10, -11, -15, -16, -17:
		return true
	}
	return false
}

// codeFailure is the error for a code that is not a success of op (see
// codeClass).
func codeFailure(op string, r reply) error {
	switch classifyCode(r.code) {
	case classRefused:
		return &gateway.RejectedError{Op: op, Code: r.code, Message: r.message}
	case classPerPayment:
		return &gateway.TransientError{
			Op:         op,
			HTTPStatus: r.status,
			Err:        &gateway.PerPaymentRefusal{Code: r.code, Message: r.message},
		}
	default:
		return &gateway.TransientError{
			Op:         op,
			HTTPStatus: r.status,
			Err:        fmt.Errorf("gateway code %d: %s", r.code, r.message),
		}
	}
}

// requestResult classifies a request.json reply.
func requestResult(r reply) (gateway.RequestResult, error) {
	if r.code != codeOK {
		return gateway.RequestResult{}, codeFailure(opRequest, r)
	}
	auth := r.data.Authority.s
	if !ValidAuthority(auth) {
		return gateway.RequestResult{}, &gateway.TransientError{
			Op:         opRequest,
			HTTPStatus: r.status,
			Err:        fmt.Errorf("code %d with a missing or malformed authority %q", r.code, usertext.Cut(auth, 40)),
		}
	}
	return gateway.RequestResult{Authority: auth, Code: r.code, FeeRials: r.data.Fee.nonNegative()}, nil
}

// verifyResult classifies a verify.json reply. Definite answers about the
// payment, including refusals of the verify itself, are results.
func verifyResult(r reply) (gateway.VerifyResult, error) {
	res := gateway.VerifyResult{Code: r.code, Message: r.message}
	switch {
	case r.code == codeOK || r.code == codeAlreadyVerified:
		res.Outcome = gateway.VerifyPaid
		if r.code == codeAlreadyVerified {
			res.Outcome = gateway.VerifyAlreadyVerified
		}
		res.RefID = r.data.RefID.nonNegative()
		res.CardPANMasked = usertext.Cut(maskPAN(r.data.CardPAN.s), maxPANLen)
		res.CardHash = usertext.Cut(r.data.CardHash.s, maxHashLen)
		res.FeeRials = r.data.Fee.nonNegative()
	case r.code == codeNotPaid:
		res.Outcome = gateway.VerifyNotPaid
	case r.code == codeAmountMismatch:
		res.Outcome = gateway.VerifyAmountMismatch
	case terminalRefusal(r.code):
		// Our terminal refused, not the payment: nothing is known of it;
		// asked again while an operator fixes the terminal.
		return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: r.status,
			Err: fmt.Errorf("gateway code %d (our terminal refused): %s", r.code, r.message)}
	case classifyCode(r.code) == classRefused:
		res.Outcome = gateway.VerifyInvalid
	default:
		return gateway.VerifyResult{}, codeFailure(opVerify, r)
	}
	return res, nil
}

// notPaidCause tells why a -51 "not paid" answer was given: Zarinpal
// says the same for a page that expired and for a payer who cancelled
// (the callback's Status=NOK, verify -51, inquiry FAILED), so the time the
// payer had the page decides. A payer back before the page's lifetime
// left it (cancel, a refused card); one who had it for the whole lifetime,
// or never came back, ran out of time.
func notPaidCause(lifetime, pageTime time.Duration) gateway.NotPaidCause {
	switch {
	case lifetime <= 0 || pageTime <= 0:
		return gateway.NotPaidUnknown
	case pageTime >= lifetime:
		return gateway.NotPaidExpired
	}
	return gateway.NotPaidCancelled
}

// inquiryResult classifies an inquiry.json reply.
func inquiryResult(r reply) (gateway.InquiryResult, error) {
	if r.code != codeOK {
		return gateway.InquiryResult{}, codeFailure(opInquiry, r)
	}
	st := strings.ToUpper(r.data.Status.s)
	if st == "" {
		return gateway.InquiryResult{}, &gateway.TransientError{
			Op: opInquiry, HTTPStatus: r.status, Err: fmt.Errorf("code %d without a status", r.code),
		}
	}
	return gateway.InquiryResult{Code: r.code, Status: gateway.InquiryStatus(usertext.Cut(st, 32))}, nil
}

// unverifiedResult classifies an unVerified.json reply. Entries without an
// authority are dropped; an unparsable date is left zero.
func unverifiedResult(r reply, loc *time.Location) ([]gateway.Unverified, error) {
	if r.code != codeOK {
		return nil, codeFailure(opUnverified, r)
	}
	out := make([]gateway.Unverified, 0, len(r.data.Authorities.items))
	for _, it := range r.data.Authorities.items {
		if it.Authority.s == "" {
			continue
		}
		out = append(out, gateway.Unverified{
			Authority:   it.Authority.s,
			AmountRials: it.Amount.nonNegative(),
			CallbackURL: it.CallbackURL.s,
			Date:        parseDate(it.Date.s, loc),
		})
	}
	return out, nil
}

// parseDate reads the gateway's local (Tehran) wall-clock date, with an
// RFC 3339 fallback; the zero time when it cannot be read.
func parseDate(s string, loc *time.Location) time.Time {
	for _, layout := range []string{time.DateTime, "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t
		}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t
	}
	return time.Time{}
}
