// Package gateway defines what the payment code needs from a bank gateway:
// the operations of a Shaparak-style redirect flow and their typed outcomes.
// Drivers (zarinpal, ...) implement Gateway; the resilient caller wraps one.
// What only some gateways can do (settle, a sale's inquiry, the POST form,
// reverse) is not a further interface to assert but Ops, one value of
// nil-able operations each driver resolves once.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Gateway is one payment gateway driver. Amounts are integer rials.
//
// Error contract: a returned error means the outcome is NOT known from the
// bank's side (network error, time-out, HTTP 5xx, undecodable answer) unless
// it is a *RejectedError, which is a definite refusal by the gateway (a
// validation error, a wrong merchant, ...). A definite business answer about a
// payment (paid, already verified, not paid, amount mismatch) is never an
// error: it is a VerifyResult.
type Gateway interface {
	// Name is the stable identifier stored with each payment ("zarinpal").
	Name() string
	// Request asks for a new transaction id (authority). Not idempotent:
	// never retried.
	Request(ctx context.Context, in RequestInput) (RequestResult, error)
	// PayURL is where the payer's browser is sent for an authority.
	PayURL(authority string) string
	// Verify confirms a payment with the amount from our own records.
	// Idempotent at the bank (a second verify answers "already verified").
	Verify(ctx context.Context, in VerifyInput) (VerifyResult, error)
	// Inquire reports the bank-side state of an authority. Read-only.
	Inquire(ctx context.Context, authority string) (InquiryResult, error)
	// ListUnverified lists payments the bank holds as paid but not verified.
	ListUnverified(ctx context.Context) ([]Unverified, error)
	// Ops are its optional operations (see Ops), resolved once when it
	// was built: the same value on every call.
	Ops() Ops
}

// RequestInput is what a new transaction is asked for with.
type RequestInput struct {
	AmountRials int64
	CallbackURL string
	Description string
	OrderID     string // our payment's public id, echoed back by some gateways
	Email       string
	Mobile      string
}

// RequestResult is the gateway's answer to a successful request.
type RequestResult struct {
	Authority string
	Code      int
	FeeRials  int64
}

// VerifyInput is what a payment is verified with.
type VerifyInput struct {
	Authority   string
	AmountRials int64
	// Callback holds the callback's fields that verify needs, for the
	// gateways whose verify cannot work from our row alone
	// (Capabilities.VerifyData == VerifyNeedsCallback: SEP's RefNum,
	// Mellat's SaleReferenceId); nil for the others.
	Callback map[string]string
	// PageTime is how long the payer had the bank's page when the outcome
	// was settled: from the authority's issue to the payer's return, or
	// to now when they never came back (0: unknown). A gateway whose "not
	// paid" does not say why (Zarinpal answers an expired page and a
	// cancel alike) tells the two apart by it (VerifyResult.NotPaid).
	PageTime time.Duration
	// OrderID is our payment's public id (as RequestInput.OrderID sent it).
	OrderID string
	// Receipt is what the payer's callback carried that verify needs
	// (SEP's RefNum, Mellat's SaleReferenceId), as the payment keeps it;
	// "" when none came (or the gateway needs none).
	Receipt string
	// ReceiptFromBank: Receipt is what the bank's own inquiry of our
	// token named just now (InquiryResult.Receipt), not a callback's
	// claim: a driver that would otherwise ask the bank which receipt is
	// ours (SEP) need not ask again.
	ReceiptFromBank bool
	// ReceiptConfirmed: the bank tied Receipt to this payment before (its
	// record of our token named it, or a verify for this payment
	// confirmed it); false for a callback's word alone. A driver whose
	// verify of a receipt names no token (SEP) verifies a receipt on its
	// own only when it is confirmed, and then takes from that verify only
	// "already verified", "too late" or "reversed", never a fresh success
	// (VerifyResult.ReceiptAlone); an unconfirmed one it does not verify
	// (VerifyReceiptUnconfirmed).
	ReceiptConfirmed bool
}

// VerifyOutcome classifies a definite verify answer.
type VerifyOutcome string

const (
	// VerifyPaid: the bank verified the payment just now (Zarinpal 100).
	VerifyPaid VerifyOutcome = "paid"
	// VerifyAlreadyVerified: verified before (Zarinpal 101). The payment is
	// good; whether to credit depends on our own records, never on this.
	VerifyAlreadyVerified VerifyOutcome = "already_verified"
	// VerifyNotPaid: the payer did not pay or cancelled (Zarinpal -51).
	VerifyNotPaid VerifyOutcome = "not_paid"
	// VerifyAmountMismatch: the amount we sent differs from what was paid (-50).
	VerifyAmountMismatch VerifyOutcome = "amount_mismatch"
	// VerifyInvalid: the gateway refused the verify itself (invalid
	// authority, wrong merchant, validation error): -9, -10, -11, -53, -54 ...
	VerifyInvalid VerifyOutcome = "invalid"
	// VerifyNoSale: the bank holds no paid sale it could verify for this
	// payment, and no inquiry can say more (Mellat: no SaleReferenceId
	// came back, or the bank answered cancelled, not found, reversed). A
	// payer who came back without one did not pay (any money the bank
	// took it returns itself, unverified); before the payer came back,
	// the payer may still be on the bank's page.
	VerifyNoSale VerifyOutcome = "no_sale"
	// VerifyReceiptUnconfirmed: nothing the bank keeps ties the payment's
	// receipt to it (SEP: the token's receipt is gone, an hour after the
	// token or once verified, and the kept RefNum is a callback's word
	// only), and its verify would name no token: it was not called. Not
	// the bank's word that the payment was not paid; a person looks.
	VerifyReceiptUnconfirmed VerifyOutcome = "receipt_unconfirmed"
)

// NotPaidCause is why a payment was not paid, as far as the driver can
// tell (VerifyResult.NotPaid, with VerifyNotPaid).
type NotPaidCause string

const (
	// NotPaidUnknown: the driver cannot tell (no PageTime given).
	NotPaidUnknown NotPaidCause = ""
	// NotPaidCancelled: the payer left the bank's page (cancel, a refused
	// card) while it was still open.
	NotPaidCancelled NotPaidCause = "cancelled"
	// NotPaidExpired: the bank's page expired before the payer paid.
	NotPaidExpired NotPaidCause = "expired"
	// NotPaidReversed: the payer paid, and the bank returned the money
	// itself before it was verified (Mellat's 48 to a verify, with
	// VerifyNoSale): the payer's card was charged, then given back.
	NotPaidReversed NotPaidCause = "reversed"
)

// VerifyResult is a definite verify answer.
type VerifyResult struct {
	Outcome VerifyOutcome
	Code    int    // the gateway's own code (100, 101, -51, ...)
	Message string // the gateway's message, for logs only
	RefID   int64  // bank reference, set for paid / already verified
	// AmountRials is the amount the bank verified, in rials, set for paid
	// and already verified: as the bank reports it (Zibal), or the amount
	// verify was called with when the bank's verify itself checks it and
	// answers a mismatch otherwise (Zarinpal -50). A payment is credited
	// only when it equals the payment's own amount (0, "not said",
	// never does): anything else goes to review.
	AmountRials   int64
	CardPANMasked string // e.g. 628023******8998; never a full card number
	CardHash      string
	FeeRials      int64
	// NotPaid: with VerifyNotPaid, why (the page expired, or the payer
	// left it); NotPaidUnknown when the driver cannot tell. With
	// VerifyNoSale, NotPaidReversed when the sale was reversed.
	NotPaid NotPaidCause
	// ReceiptAlone: the answer is a verify of the payment's kept receipt
	// on its own (VerifyInput.ReceiptConfirmed), the bank's record of the
	// token no longer naming it: only "already verified", "too late" or
	// "reversed" count from it; a fresh success does not say the sale is
	// this payment's.
	ReceiptAlone bool
	// NoCall: the driver asked the bank nothing (it had nothing to ask
	// with: Mellat without a SaleReferenceId). A check that made no call
	// counts no attempt and records no time of asking.
	NoCall bool
}

// Settled reports whether the bank says the money is ours.
func (r VerifyResult) Settled() bool {
	return r.Outcome == VerifyPaid || r.Outcome == VerifyAlreadyVerified
}

// InquiryStatus is the bank-side state of an authority.
type InquiryStatus string

const (
	InquiryInBank   InquiryStatus = "IN_BANK"
	InquiryPaid     InquiryStatus = "PAID"
	InquiryVerified InquiryStatus = "VERIFIED"
	InquiryFailed   InquiryStatus = "FAILED"
	InquiryReversed InquiryStatus = "REVERSED"
	// InquiryGone: the bank no longer keeps the authority's state (SEP's
	// receipt, an hour after the token or once verified or reversed): no
	// word either way.
	InquiryGone InquiryStatus = "GONE"
)

// InquiryResult is the answer to an inquiry.
type InquiryResult struct {
	Code   int
	Status InquiryStatus
	// Receipt: for a paid token, the callback data its verify takes, as
	// the bank's inquiry names it (SEP's RefNum); "" when it names none.
	Receipt string
}

// Unverified is one paid-but-unverified payment as the gateway lists it.
type Unverified struct {
	Authority   string
	AmountRials int64
	CallbackURL string
	Date        time.Time
}

// RejectedError is a definite refusal by the gateway (its code is < 0 and
// not a statement about the payment). Retrying it cannot help.
type RejectedError struct {
	Op      string
	Code    int
	Message string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%s rejected by gateway: code %d: %s", e.Op, e.Code, e.Message)
}

// TransientError is a failure whose outcome is unknown (network error,
// time-out, 408/429/5xx, an answer that cannot be decoded). Safe operations
// may be retried.
type TransientError struct {
	Op         string
	HTTPStatus int           // 0 when no answer arrived
	RetryAfter time.Duration // from a Retry-After header, 0 if none
	Err        error
}

func (e *TransientError) Error() string {
	if e.HTTPStatus != 0 {
		return fmt.Sprintf("%s: transient failure (HTTP %d): %v", e.Op, e.HTTPStatus, e.Err)
	}
	return fmt.Sprintf("%s: transient failure: %v", e.Op, e.Err)
}

func (e *TransientError) Unwrap() error { return e.Err }

// PerPaymentRefusal is the gateway refusing one call about one payment for
// now, such as Zarinpal's -12 "too many attempts in a short period" for an
// authority that was asked about too often. The bank is up and answering,
// so a refusal never counts toward the circuit breaker (one person flooding
// one payment's callback must not open the breaker for everyone); but it
// says nothing about the payment itself, so the outcome stays unknown: the
// payment stays open and is checked again later, never failed for it.
//
// Drivers return it as the Err of a *TransientError, so code that only
// knows the error contract above treats it as "outcome unknown"; use
// IsPerPaymentRefusal to tell it apart.
type PerPaymentRefusal struct {
	Code    int    // the gateway's code (-12)
	Message string // the gateway's message, sanitized, for logs only
}

func (e *PerPaymentRefusal) Error() string {
	return fmt.Sprintf("gateway code %d: %s (refused for this payment for now)", e.Code, e.Message)
}

// IsPerPaymentRefusal reports whether err is (or wraps) a refusal of one
// call about one payment: the bank is healthy, the outcome is unknown.
func IsPerPaymentRefusal(err error) bool {
	var r *PerPaymentRefusal
	return errors.As(err, &r)
}

// ErrUnavailable is returned without calling the bank when the gateway is
// known to be down (an open circuit breaker).
var ErrUnavailable = errors.New("gateway unavailable")

// IsRejected reports whether err is a definite refusal by the gateway.
func IsRejected(err error) bool {
	var r *RejectedError
	return errors.As(err, &r)
}

// SettleOutcome classifies a definite settle answer.
type SettleOutcome string

const (
	// SettleDone: the bank settled the payment just now (Mellat 0).
	SettleDone SettleOutcome = "settled"
	// SettleAlready: settled before (Mellat 45): the money is ours.
	SettleAlready SettleOutcome = "already_settled"
	// SettleReversed: the payment was reversed (Mellat 48): not ours.
	SettleReversed SettleOutcome = "reversed"
	// SettleRefused: any other definite refusal of the settle.
	SettleRefused SettleOutcome = "refused"
)

// SettleResult is a definite settle answer. Errors follow Gateway's
// contract (a *TransientError: outcome unknown).
type SettleResult struct {
	Outcome SettleOutcome
	Code    int
	Message string // the gateway's message, for logs only
}

// Done reports whether the bank says the payment is settled.
func (r SettleResult) Done() bool { return r.Outcome == SettleDone || r.Outcome == SettleAlready }

// FormField is one field of a form.
type FormField struct{ Name, Value string }

// PayForm is the form that sends the payer to the bank by POST
// (RedirectPOSTForm gateways): its action and hidden fields, in order.
type PayForm struct {
	Action string
	Fields []FormField
}
