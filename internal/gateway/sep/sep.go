// Package sep is the Saman (SEP, sep.shaparak.ir) driver of
// gateway.Gateway: the token flow of SEP's IPG documents 3.x/4.1.
//
//	POST {base}/onlinepg/onlinepg                                   token (JSON, action "token")
//	POST {base}/OnlinePG/OnlinePG                                   the payer's page (form field Token)
//	POST {base}/verifyTxnRandomSessionkey/ipg/VerifyTransaction     verify (RefNum, TerminalNumber)
//	POST {base}/verifyTxnRandomSessionkey/ipg/ReverseTransaction    reverse (within 50 minutes)
//	POST {base}/verifyTxnRandomSessionkey/api/v2/ipg/payment/receipt the receipt of a token (inquiry, ≤ 1 h, before verify)
//
// The payer comes back by POST with State, Status, RefNum, ResNum,
// TraceNo, RRN, Token (ParseCallback). RefNum, SEP's "digital receipt", is
// what verify needs; SEP verifies a RefNum again and again, so refusing a
// RefNum used before is the merchant's job (Kifpool: unique (gateway,
// receipt)). Answers are decoded leniently (numbers as strings, either
// letter case) and mapped onto package gateway's error contract.
package sep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Name is the driver's stable name.
const Name = "sep"

// ProductionBaseURL is SEP's host.
const ProductionBaseURL = "https://sep.shaparak.ir"

// Paths under the base URL.
const (
	PathToken   = "/onlinepg/onlinepg"
	PathPay     = "/OnlinePG/OnlinePG"
	PathSend    = "/OnlinePG/SendToken" // GET ?token=: the same page, for links
	PathVerify  = "/verifyTxnRandomSessionkey/ipg/VerifyTransaction"
	PathReverse = "/verifyTxnRandomSessionkey/ipg/ReverseTransaction"
	PathReceipt = "/verifyTxnRandomSessionkey/api/v2/ipg/payment/receipt"
)

// Operation names (TransientError.Op, RejectedError.Op).
const (
	opRequest = "request"
	opVerify  = "verify"
	opInquiry = "inquiry"
	opReverse = "reverse"
)

// Verify's ResultCode values the driver branches on (SEP IPG 4.1 §8).
const (
	resultOK            = 0
	resultDuplicate     = 2  // already verified ("درخواست تکراری")
	resultReversed      = 5  // the transaction was reversed
	resultNotFound      = -2 // no such transaction
	resultTooLate       = -6 // more than 30 minutes: the bank returned the money
	resultNoTransaction = -14
	resultTimeout       = -9998 // SEP's own 65-second time-out
	resultException     = -9999
	resultEmptyReceipt  = -7
	resultReceiptNotB64 = -10
	receiptInProgress   = 0
	receiptCanceled     = 1
	receiptOK           = 2
	receiptFailed       = 3
	maxMessage          = 200
	// tokenLifetime is how long SEP's page takes a token: 20 minutes
	// unless the token request's TokenExpiryInMin says otherwise (SEP IPG
	// 4.1; Kifpool sends none). After it the page times out (the callback's
	// Status 4, "session timeout").
	tokenLifetime = 20 * time.Minute
	maxReceiptLen = 64 // RefNum is at most 50 characters
	maxTokenLen   = 64
)

// Config configures a Client.
type Config struct {
	// TerminalID is the terminal's number (digits). Required.
	TerminalID string
	// BaseURL is SEP's host (ProductionBaseURL) or a sandbox bank's base.
	BaseURL string
	// HTTPClient sends the calls; each call's context carries its deadline.
	HTTPClient *http.Client
	// Logger receives one record per call. Nil discards.
	Logger *slog.Logger
	// Now is the clock (a Retry-After date is read against it); nil:
	// time.Now.
	Now func() time.Time
}

// Client is the SEP driver. It is safe for concurrent use.
type Client struct {
	terminal    string
	terminalNum int64
	base        string
	hc          *http.Client
	log         *slog.Logger
	now         func() time.Time
	ops         gateway.Ops
}

var _ gateway.Gateway = (*Client)(nil)

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	tid, err := wire.TerminalID(cfg.TerminalID)
	if err != nil {
		return nil, fmt.Errorf("sep: terminal id: %w", err)
	}
	base, err := wire.BaseURL(cfg.BaseURL, "the terminal id")
	if err != nil {
		return nil, fmt.Errorf("sep: base URL: %w", err)
	}
	n, _ := strconv.ParseInt(tid, 10, 64)
	c := &Client{terminal: tid, terminalNum: n, base: base, hc: cfg.HTTPClient, log: cfg.Logger, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.ops = gateway.Ops{PayForm: c.PayForm, Reverse: c.Reverse, Refund: c.Refund, RefundStatus: c.RefundStatus}
	return c, nil
}

// Ops are SEP's optional operations: the POST form, reversal, and the
// card refund (a reversal of the whole sale, and its status).
func (c *Client) Ops() gateway.Ops { return c.ops }

// Name returns "sep".
func (c *Client) Name() string { return Name }

// PayURL is the payer's page as a link (GET SendToken?token=): what a
// payer who left the bank's page follows to go back. The top-up sends the
// payer by PayForm.
func (c *Client) PayURL(token string) string {
	return c.base + PathSend + "?token=" + url.QueryEscape(token)
}

// PayForm is the POST form to the payer's page: its one field Token.
func (c *Client) PayForm(token string) gateway.PayForm {
	return gateway.PayForm{Action: c.base + PathPay, Fields: []gateway.FormField{{Name: "Token", Value: token}}}
}

type tokenBody struct {
	Action      string `json:"action"`
	TerminalID  string `json:"TerminalId"`
	Amount      int64  `json:"Amount"`
	ResNum      string `json:"ResNum"`
	RedirectURL string `json:"RedirectUrl"`
	CellNumber  string `json:"CellNumber,omitempty"`
}

// tokenAnswer is the token call's answer: {"status":1,"token":"…"} or
// {"status":-1,"errorCode":"5","errorDesc":"…"}.
type tokenAnswer struct {
	Status    json.RawMessage `json:"status"`
	Token     json.RawMessage `json:"token"`
	ErrorCode json.RawMessage `json:"errorCode"`
	ErrorDesc json.RawMessage `json:"errorDesc"`
}

// Request asks SEP for a token. Input SEP would refuse anyway is refused
// here (a *gateway.RejectedError of code 0, nothing sent).
func (c *Client) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	switch {
	case in.AmountRials <= 0:
		return gateway.RequestResult{}, localRefusal("amount must be positive")
	case !absoluteHTTPURL(in.CallbackURL):
		return gateway.RequestResult{}, localRefusal("callback URL must be an absolute http(s) URL")
	case in.OrderID == "" || len(in.OrderID) > 50:
		return gateway.RequestResult{}, localRefusal("ResNum (the order id) must be 1 to 50 characters")
	}
	body := tokenBody{Action: "token", TerminalID: c.terminal, Amount: in.AmountRials, ResNum: in.OrderID,
		RedirectURL: in.CallbackURL, CellNumber: mobileDigits(in.Mobile)}
	status, raw, err := c.post(ctx, opRequest, PathToken, body)
	if err != nil {
		return gateway.RequestResult{}, fmt.Errorf("sep token: %w", err)
	}
	var a tokenAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return gateway.RequestResult{}, fmt.Errorf("sep token: %w", undecided(opRequest, status, err))
	}
	st, ok := wire.FlexInt(a.Status)
	if !ok {
		return gateway.RequestResult{}, fmt.Errorf("sep token: %w", undecided(opRequest, status, errors.New("no status")))
	}
	if st != 1 {
		code, _ := wire.FlexInt(a.ErrorCode)
		return gateway.RequestResult{}, fmt.Errorf("sep token: %w", &gateway.RejectedError{Op: opRequest, Code: int(code),
			Message: wire.Clean(wire.FlexString(a.ErrorDesc), maxMessage)})
	}
	tok := wire.FlexString(a.Token)
	if !validToken(tok) {
		return gateway.RequestResult{}, fmt.Errorf("sep token: %w", &gateway.TransientError{Op: opRequest, HTTPStatus: status,
			Err: fmt.Errorf("status 1 with a missing or malformed token %q", usertext.Cut(tok, 40))})
	}
	return gateway.RequestResult{Authority: tok, Code: int(st)}, nil
}

type refNumBody struct {
	RefNum         string `json:"RefNum"`
	TerminalNumber int64  `json:"TerminalNumber"`
}

// verifyAnswer is VerifyTransaction's (and ReverseTransaction's) answer.
type verifyAnswer struct {
	TransactionDetail *struct {
		RRN             json.RawMessage `json:"RRN"`
		RefNum          json.RawMessage `json:"RefNum"`
		MaskedPan       json.RawMessage `json:"MaskedPan"`
		HashedPan       json.RawMessage `json:"HashedPan"`
		TerminalNumber  json.RawMessage `json:"TerminalNumber"`
		OrginalAmount   json.RawMessage `json:"OrginalAmount"` // sic, as SEP spells it
		OriginalAmount  json.RawMessage `json:"OriginalAmount"`
		AffectiveAmount json.RawMessage `json:"AffectiveAmount"`
		StraceNo        json.RawMessage `json:"StraceNo"`
	} `json:"TransactionDetail"`
	ResultCode        json.RawMessage `json:"ResultCode"`
	ResultDescription json.RawMessage `json:"ResultDescription"`
	Success           json.RawMessage `json:"Success"`
}

// Verify confirms the payment of our token. VerifyTransaction takes a
// RefNum alone and names no token, so a RefNum is verified only when SEP's
// receipt of our token names it: the callback's RefNum (in.Receipt) is
// the payer's word, and another payment's RefNum would otherwise verify
// that payment's sale for this one. So verify first asks the receipt of
// the token: paid (OK) with a RefNum, that RefNum is verified (the bank's
// own word for our token, whatever the callback said, so the worker can
// also verify without the browser); in progress, cancelled or failed, it
// is "not paid" without a verify (the inquiry then says which; a failed
// token whose payer had the page for its 20 minutes is NotPaidExpired, a
// cancelled one NotPaidCancelled). A receipt SEP no longer has (after an
// hour, or after verify or reversal: HTTP 404 with SEP's JSON answer;
// any other 404 is outcome unknown) leaves the kept RefNum, whose
// verify says "already verified", "too late" or "reversed"; without one
// it is outcome unknown. A kept RefNum is verified on its own only
// when the bank confirmed it for our token before (in.ReceiptConfirmed;
// the answer is then ReceiptAlone); otherwise VerifyReceiptUnconfirmed,
// and VerifyTransaction is not called. The amount SEP reports is compared with ours:
// another amount is VerifyAmountMismatch. A RefNum the receipt of the
// token named just now (in.ReceiptFromBank: the payment code asked it
// first, to keep it before the verify) is verified without asking again.
func (c *Client) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	if in.ReceiptFromBank && in.Receipt != "" {
		return c.verifyRefNum(ctx, in)
	}
	a, status, err := c.receipt(ctx, in.Authority)
	gone := isReceiptGone(err)
	switch {
	case gone && in.Receipt == "":
		// SEP no longer keeps the token's receipt (an hour on, or after a
		// verify or reversal) and we keep no RefNum: nothing to verify.
		// The outcome is unknown, but the bank is up and answered about
		// this payment alone: a refusal for this payment, neither retried
		// nor counted for the breaker (anyone holding old return links
		// could otherwise keep SEP's breaker open for every payer).
		return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: status,
			Err: &gateway.PerPaymentRefusal{Code: status, Message: "the token's receipt is gone and no RefNum is kept"}}
	case err != nil && !gone:
		// No answer from SEP about the receipt (a time-out, a 5xx, or a
		// 404 that is not SEP's own, such as a proxy's page): unknown.
		return gateway.VerifyResult{}, fmt.Errorf("sep verify %s: the token's receipt: %w", quote(in.Authority), err)
	case gone && !in.ReceiptConfirmed:
		// SEP no longer keeps the token's receipt, and nothing the bank
		// said ties the kept RefNum to our token: it is a callback's word,
		// maybe another payment's sale. VerifyTransaction names no token,
		// so it is not called.
		return gateway.VerifyResult{Outcome: gateway.VerifyReceiptUnconfirmed, Code: status,
			Message: "the token's receipt is gone and the RefNum was never confirmed for it"}, nil
	case gone:
		// The RefNum the bank confirmed for our token before, verified on
		// its own: only "already verified", "too late" or "reversed"
		// count (ReceiptAlone).
		res, err := c.verifyRefNum(ctx, in)
		res.ReceiptAlone = err == nil
		return res, err
	case err == nil:
		st, _ := wire.FlexInt(a.State)
		ref := callbackReceipt(wire.FlexString(a.RefNum))
		if st != receiptOK || ref == "" {
			return gateway.VerifyResult{Outcome: gateway.VerifyNotPaid, Code: int(st), NotPaid: notPaidCause(st, in.PageTime),
				Message: "the token's receipt says it was not paid"}, nil
		}
		if in.Receipt != "" && in.Receipt != ref {
			c.log.WarnContext(ctx, "sep: the callback's RefNum is not the token's; verifying the token's",
				"token", quote(in.Authority))
		}
		in.Receipt = ref
	}
	return c.verifyRefNum(ctx, in)
}

// verifyRefNum is VerifyTransaction of in.Receipt.
func (c *Client) verifyRefNum(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	status, raw, err := c.post(ctx, opVerify, PathVerify, refNumBody{RefNum: in.Receipt, TerminalNumber: c.terminalNum})
	if err == nil {
		var res gateway.VerifyResult
		if res, err = verifyResult(status, raw, in); err == nil {
			return res, nil
		}
	}
	return gateway.VerifyResult{}, fmt.Errorf("sep verify %s: %w", quote(in.Receipt), err)
}

// notPaidCause tells why the token's receipt says not paid: the payer
// cancelled (CanceledByUser), or, for a failed token whose payer had the
// page for its whole lifetime (gateway.VerifyInput.PageTime), the page
// timed out; otherwise the receipt does not say.
func notPaidCause(state int64, page time.Duration) gateway.NotPaidCause {
	switch {
	case state == receiptCanceled:
		return gateway.NotPaidCancelled
	case state == receiptFailed && page >= tokenLifetime:
		return gateway.NotPaidExpired
	}
	return gateway.NotPaidUnknown
}

// verifyResult classifies a VerifyTransaction answer (pure, fuzzable).
func verifyResult(status int, raw []byte, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	var a verifyAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return gateway.VerifyResult{}, undecided(opVerify, status, err)
	}
	code64, ok := wire.FlexInt(a.ResultCode)
	if !ok {
		return gateway.VerifyResult{}, undecided(opVerify, status, errors.New("no ResultCode"))
	}
	code := int(code64)
	res := gateway.VerifyResult{Code: code, Message: wire.Clean(wire.FlexString(a.ResultDescription), maxMessage)}
	switch code {
	case resultOK, resultDuplicate:
		if code == resultOK && strings.EqualFold(strings.Trim(strings.TrimSpace(string(a.Success)), `"`), "false") {
			return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: status,
				Err: errors.New("ResultCode 0 with Success false")}
		}
		res.Outcome = gateway.VerifyPaid
		if code == resultDuplicate {
			res.Outcome = gateway.VerifyAlreadyVerified
		}
		if d := a.TransactionDetail; d != nil {
			if ref := wire.FlexString(d.RefNum); ref != "" && ref != in.Receipt {
				// The bank answered about another receipt: nothing is known
				// of ours.
				return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: status,
					Err: errors.New("the answer names another RefNum")}
			}
			res.RefID = reference(d.RRN)
			res.CardPANMasked = wire.MaskPAN(wire.FlexString(d.MaskedPan))
			res.CardHash = usertext.Cut(wire.FlexString(d.HashedPan), 128)
			amount, ok := wire.FlexInt(d.OrginalAmount)
			if !ok {
				amount, ok = wire.FlexInt(d.OriginalAmount)
			}
			if ok {
				res.AmountRials = amount
			}
			if ok && amount != in.AmountRials {
				// SEP verified another amount than ours: never credited.
				// The verify made it the merchant's: the payment code
				// reverses it (topup.StatusReversing) within the window.
				res.Outcome, res.RefID, res.AmountRials = gateway.VerifyAmountMismatch, 0, 0
			}
			if paid, ok := wire.FlexInt(d.AffectiveAmount); ok && paid > 0 && paid < in.AmountRials {
				// The card paid less than our amount (an online discount):
				// crediting ours would credit money the bank never took.
				// Never credited; the payment code reverses it within the
				// window (topup.StatusReversing), else a person looks.
				// (More than ours is a fee the terminal charges the payer:
				// ours is credited.)
				res.Outcome, res.RefID, res.AmountRials = gateway.VerifyAmountMismatch, 0, 0
			}
		}
	case resultNotFound, resultNoTransaction, resultEmptyReceipt, resultReceiptNotB64:
		// No transaction behind this receipt: the inquiry (the token's
		// receipt) says what the payer did.
		res.Outcome = gateway.VerifyNotPaid
	case resultTimeout, resultException:
		return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: status,
			Err: fmt.Errorf("SEP ResultCode %d: %s", code, res.Message)}
	case resultReversed, resultTooLate:
		// Reversed, or too late (SEP returned the money): definite, and
		// not a payment of ours to credit; an operator reads the code.
		res.Outcome = gateway.VerifyInvalid
	case -104, -105, -106, -18:
		// Our terminal or address refused, not the sale: nothing is known
		// of it, so it is asked again (an operator fixes the terminal
		// meanwhile, within the bank's window); never a credit.
		return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: status,
			Err: fmt.Errorf("SEP ResultCode %d (our terminal refused): %s", code, res.Message)}
	default:
		// A code SEP's table does not have says nothing definite of the
		// sale: asked again (reconciliation and the deadline end it).
		return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: status,
			Err: fmt.Errorf("SEP ResultCode %d (%s): outcome unknown", code, res.Message)}
	}
	return res, nil
}

// reference is the bank reference of a payment: the RRN; 0 when it is
// not a positive number. The trace number (StraceNo) is never used on its
// own: six digits that cycle, it is no unique reference (unique (gateway,
// ref_id) would refuse a later payment's credit as a reused reference, or
// tie two payments to one number); without an RRN the payment goes to
// review (no_ref_id).
func reference(rrn json.RawMessage) int64 {
	if n, ok := wire.FlexInt(rrn); ok && n > 0 {
		return n
	}
	return 0
}

// receiptAnswer is the receipt API's answer about a token.
type receiptAnswer struct {
	State  json.RawMessage `json:"State"`
	Status json.RawMessage `json:"Status"`
	RefNum json.RawMessage `json:"RefNum"`
}

// receipt asks SEP's receipt API about a token. SEP's own 404 (it no
// longer keeps the receipt: an hour passed, or it was verified or
// reversed) is a *gateway.TransientError with HTTPStatus 404 wrapping
// receiptGone (isReceiptGone); any other 404 is outcome unknown.
func (c *Client) receipt(ctx context.Context, token string) (receiptAnswer, int, error) {
	body := struct {
		Token          string `json:"Token"`
		TerminalNumber int64  `json:"TerminalNumber"`
	}{token, c.terminalNum}
	status, raw, err := c.post(ctx, opInquiry, PathReceipt, body)
	if err != nil {
		return receiptAnswer{}, status, err
	}
	var a receiptAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return receiptAnswer{}, status, undecided(opInquiry, status, err)
	}
	if _, ok := wire.FlexInt(a.State); !ok {
		if _, ok := wire.FlexInt(a.Status); !ok {
			return receiptAnswer{}, status, undecided(opInquiry, status, errors.New("no State"))
		}
		a.State = a.Status
	}
	return a, status, nil
}

// callbackReceipt is a RefNum as a callback would carry it ("" if it is
// not one).
func callbackReceipt(s string) string {
	if !validToken(s) {
		return ""
	}
	return s
}

// Inquire asks SEP's receipt of a token: InProgress → IN_BANK,
// CanceledByUser and Failed → FAILED, OK → PAID. SEP keeps the receipt one
// hour and only until the payment is verified or reversed; after that
// (HTTP 404 with SEP's JSON answer) the state is unknown to it
// (InquiryGone, which the payment code reads as no definite word). A 404
// without SEP's answer (a proxy's or load balancer's page, an empty body)
// is no word from SEP: outcome unknown, asked again.
func (c *Client) Inquire(ctx context.Context, token string) (gateway.InquiryResult, error) {
	a, status, err := c.receipt(ctx, token)
	if err != nil {
		if isReceiptGone(err) {
			return gateway.InquiryResult{Code: status, Status: gateway.InquiryGone}, nil
		}
		return gateway.InquiryResult{}, fmt.Errorf("sep receipt %s: %w", quote(token), err)
	}
	st, _ := wire.FlexInt(a.State)
	out := gateway.InquiryResult{Code: int(st)}
	switch st {
	case receiptInProgress:
		out.Status = gateway.InquiryInBank
	case receiptCanceled, receiptFailed:
		out.Status = gateway.InquiryFailed
	case receiptOK:
		out.Status, out.Receipt = gateway.InquiryPaid, callbackReceipt(wire.FlexString(a.RefNum))
	default:
		out.Status = gateway.InquiryStatus("STATE_" + strconv.FormatInt(st, 10))
	}
	return out, nil
}

// ListUnverified: SEP has no list of unverified payments (its receipt is
// asked per token); the list is always empty.
func (c *Client) ListUnverified(context.Context) ([]gateway.Unverified, error) { return nil, nil }

// Reverse returns a verified payment's money to the payer (within 50
// minutes of the payment): the RefNum in.Receipt, as gateway.Ops.Reverse.
// Called by the card refund (Refund) and by the top-up worker for a
// verified payment it cannot credit (topup.StatusReversing), each once.
func (c *Client) Reverse(ctx context.Context, in gateway.VerifyInput) error {
	refNum := in.Receipt
	status, raw, err := c.post(ctx, opReverse, PathReverse, refNumBody{RefNum: refNum, TerminalNumber: c.terminalNum})
	if err != nil {
		return fmt.Errorf("sep reverse %s: %w", quote(refNum), err)
	}
	var a verifyAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("sep reverse %s: %w", quote(refNum), undecided(opReverse, status, err))
	}
	code, ok := wire.FlexInt(a.ResultCode)
	if !ok {
		return fmt.Errorf("sep reverse %s: %w", quote(refNum), undecided(opReverse, status, errors.New("no ResultCode")))
	}
	switch code {
	case resultOK:
		return nil
	case resultTimeout, resultException, resultReversed:
		// -9998 (SEP's own time-out) and -9999 (an exception) say nothing
		// of whether the sale was reversed; 5 says it is reversed, by this
		// call's lost twin or by another hand. None is a refusal: taken as
		// one, a card refund would fail and give the money back to the
		// wallet while the card has it too. Unknown: the reversal's status
		// (RefundStatus) decides.
		return fmt.Errorf("sep reverse %s: %w", quote(refNum), &gateway.TransientError{Op: opReverse, HTTPStatus: status,
			Err: fmt.Errorf("SEP ResultCode %d: outcome unknown", code)})
	case resultNotFound, resultTooLate, resultNoTransaction, resultEmptyReceipt, resultReceiptNotB64, -104, -105, -106, -18:
		// The table's refusals: nothing reversed.
		return &gateway.RejectedError{Op: opReverse, Code: int(code), Message: wire.Clean(wire.FlexString(a.ResultDescription), maxMessage)}
	}
	// A code the table does not have says nothing of the reversal.
	return fmt.Errorf("sep reverse %s: %w", quote(refNum), &gateway.TransientError{Op: opReverse, HTTPStatus: status,
		Err: fmt.Errorf("SEP ResultCode %d (%s): outcome unknown", code, wire.Clean(wire.FlexString(a.ResultDescription), maxMessage))})
}

// post sends one JSON call: the answer's body when it arrived with a
// status that is about the call (not 408/429/5xx), else a
// *gateway.TransientError. The receipt API's 404 is an error with its
// status: wrapping receiptGone when it is SEP's own answer (sepJSON),
// else undecided (outcome unknown).
func (c *Client) post(ctx context.Context, op, path string, body any) (int, []byte, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return 0, nil, fmt.Errorf("encode body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	status, h, raw, err := wire.Do(c.hc, req)
	switch {
	case err != nil:
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: err}
	case wire.Retryable(status):
		err = &gateway.TransientError{Op: op, HTTPStatus: status, RetryAfter: wire.RetryAfter(h.Get("Retry-After"), c.now()),
			Err: fmt.Errorf("HTTP %d %s", status, http.StatusText(status))}
	case status == http.StatusNotFound && op == opInquiry && sepJSON(h, raw):
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: receiptGone{}}
	case status == http.StatusNotFound && op == opInquiry:
		// Not SEP's answer: a proxy's, load balancer's or web server's
		// page (HTML, empty, not JSON) says nothing about the receipt.
		err = undecided(op, status, errors.New("HTTP 404 without SEP's JSON answer"))
	case status >= 300 && !json.Valid(raw):
		err = undecided(op, status, fmt.Errorf("HTTP %d without a JSON answer", status))
	}
	c.logCall(ctx, op, status, start, err)
	return status, raw, err
}

// receiptGone is SEP's own "no receipt" (HTTP 404 with its JSON answer)
// from the receipt API: an hour has passed since the token, or the
// payment was verified or reversed.
type receiptGone struct{}

func (receiptGone) Error() string { return "HTTP 404: SEP keeps no receipt of the token" }

// isReceiptGone reports whether err is SEP's own 404 from the receipt API.
func isReceiptGone(err error) bool {
	var g receiptGone
	return errors.As(err, &g)
}

// sepJSON reports whether an answer is in SEP's form: a JSON content type
// (application/json, or a +json type such as application/problem+json)
// and a body that is one JSON object. Proxies, load balancers and web
// servers answer their own 404s as HTML, plain text or nothing.
func sepJSON(h http.Header, raw []byte) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return false
	}
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil
}

// undecided classifies an answer without a usable code: a token request
// refused by a plain 4xx started nothing (a refusal); anything else says
// nothing about the payment (outcome unknown).
func undecided(op string, status int, err error) error {
	if op == opRequest && status >= 400 && status < 500 {
		return &gateway.RejectedError{Op: op, Message: fmt.Sprintf("HTTP %d %s without a SEP answer", status, http.StatusText(status))}
	}
	return &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("undecodable answer: %w", err)}
}

func (c *Client) logCall(ctx context.Context, op string, status int, start time.Time, err error) {
	attrs := []slog.Attr{slog.String("gateway", Name), slog.String("op", op), slog.Int("http_status", status),
		slog.Duration("elapsed", time.Since(start))}
	if err != nil {
		c.log.LogAttrs(ctx, slog.LevelWarn, "sep call failed", append(attrs, slog.String("error", err.Error()))...)
		return
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "sep call", attrs...)
}

func localRefusal(msg string) error {
	return &gateway.RejectedError{Op: opRequest, Message: "invalid input, not sent: " + msg}
}

func absoluteHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// mobileDigits is a mobile number as SEP's CellNumber takes it (digits
// only, 09…), or "" when it is not one.
func mobileDigits(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return ""
		}
	}
	if len(s) != 11 {
		return ""
	}
	return s
}

// validToken reports whether s can be a SEP token: printable ASCII
// without spaces, at most 64 characters.
func validToken(s string) bool {
	if s == "" || len(s) > maxTokenLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func quote(s string) string { return strconv.Quote(usertext.Cut(s, 40)) }

// Refund is the card refund of a SEP payment: a reversal of the whole
// sale (ReverseTransaction of its RefNum), gateway.Ops.Refund. SEP takes no
// amount: anything but the whole payment is refused without a call.
func (c *Client) Refund(ctx context.Context, in gateway.RefundInput) (gateway.RefundResult, error) {
	if in.AmountRials != in.Payment.AmountRials || in.RefundedRials != 0 {
		return gateway.RefundResult{}, &gateway.RejectedError{Op: opReverse, Message: "invalid input, not sent: SEP reverses the whole payment only"}
	}
	if !validToken(in.Payment.Receipt) {
		return gateway.RefundResult{}, &gateway.RejectedError{Op: opReverse, Message: "invalid input, not sent: no RefNum to reverse"}
	}
	if err := c.Reverse(ctx, in.Payment); err != nil {
		return gateway.RefundResult{}, err
	}
	return gateway.RefundResult{BankReference: in.Payment.Receipt}, nil
}

// RefundStatus asks what became of a reversal whose answer was lost: SEP
// keeps no receipt of a verified payment, but its verify of the RefNum
// says (ResultCode 5: reversed; 2: verified, standing, so not reversed).
// Verify of a verified RefNum changes nothing (it answers 2 again).
// gateway.Ops.RefundStatus.
func (c *Client) RefundStatus(ctx context.Context, in gateway.RefundInput) (gateway.RefundState, error) {
	status, raw, err := c.post(ctx, opVerify, PathVerify, refNumBody{RefNum: in.Payment.Receipt, TerminalNumber: c.terminalNum})
	if err != nil {
		return gateway.RefundState{}, fmt.Errorf("sep reverse status %s: %w", quote(in.Payment.Receipt), err)
	}
	var a verifyAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return gateway.RefundState{}, fmt.Errorf("sep reverse status %s: %w", quote(in.Payment.Receipt), undecided(opVerify, status, err))
	}
	code, ok := wire.FlexInt(a.ResultCode)
	if !ok {
		return gateway.RefundState{}, fmt.Errorf("sep reverse status %s: %w", quote(in.Payment.Receipt), undecided(opVerify, status, errors.New("no ResultCode")))
	}
	out := gateway.RefundState{Code: int(code), RefundedRials: -1}
	switch code {
	case resultReversed:
		out.Outcome = gateway.RefundDone
	case resultDuplicate:
		if d := a.TransactionDetail; d != nil {
			if ref := wire.FlexString(d.RefNum); ref != "" && ref != in.Payment.Receipt {
				return gateway.RefundState{}, fmt.Errorf("sep reverse status: %w", &gateway.TransientError{Op: opVerify, HTTPStatus: status,
					Err: errors.New("the answer names another RefNum")})
			}
		}
		out.Outcome = gateway.RefundNotDone
	case resultOK, resultTooLate:
		// 0: verified just now, never verified before (not our credited
		// payment's story); -6: reversed unverified. Neither is an answer
		// about our reversal: a person looks.
		out.Outcome = gateway.RefundDiffers
	default:
		return gateway.RefundState{}, fmt.Errorf("sep reverse status %s: %w", quote(in.Payment.Receipt),
			&gateway.TransientError{Op: opVerify, HTTPStatus: status, Err: fmt.Errorf("SEP ResultCode %d", code)})
	}
	return out, nil
}
