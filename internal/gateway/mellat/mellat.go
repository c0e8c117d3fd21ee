// Package mellat is the Behpardakht Mellat (bpm.shaparak.ir) driver of
// gateway.Gateway: the SOAP service of Mellat's IPG document 1.29.
//
//	POST {base}/pgwchannel/services/pgw      SOAP: bpPayRequest, bpVerifyRequest, bpSettleRequest,
//	                                         bpInquiryRequest, bpReversalRequest
//	POST {base}/pgwchannel/startpay.mellat   the payer's page (form field RefId)
//
// The payer comes back by POST with RefId, ResCode, SaleOrderId and
// SaleReferenceId (ParseCallback). Verify and settle need the callback's
// SaleReferenceId; a verified payment is the merchant's only once settled
// (Settle). 43 (verified before) and 45 (settled before) are successes.
// Answers are read leniently (any namespace prefix, spaces, a SOAP fault)
// and mapped onto package gateway's error contract.
package mellat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // Asia/Tehran on hosts without a zoneinfo database

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Name is the driver's stable name.
const Name = "mellat"

// ProductionBaseURL is Behpardakht's host.
const ProductionBaseURL = "https://bpm.shaparak.ir"

// Paths under the base URL, and the service's namespace.
const (
	PathService  = "/pgwchannel/services/pgw"
	PathStartPay = "/pgwchannel/startpay.mellat"
	Namespace    = "http://interfaces.core.sw.bps.com/"
)

// Operation names (TransientError.Op, RejectedError.Op).
const (
	opRequest  = "request"
	opVerify   = "verify"
	opSettle   = "settle"
	opInquiry  = "inquiry"
	opReversal = "reversal"
)

// Result codes the driver branches on (Mellat 1.29; gateways-more.md §0-2).
const (
	codeOK              = 0
	codeCancelled       = 17 // the payer cancelled
	codeSaleNotFound    = 42
	codeAlreadyVerified = 43
	codeAlreadySettled  = 45
	codeReversed        = 48
	codeSystemError     = 34 // the bank's own error: nothing definite
	maxMessage          = 200
)

// Config configures a Client.
type Config struct {
	TerminalID string // digits; required
	Username   string // required
	Password   string // required; never logged
	BaseURL    string // ProductionBaseURL or a sandbox bank's base
	// HTTPClient sends the calls; each call's context carries its deadline.
	HTTPClient *http.Client
	Logger     *slog.Logger // nil discards
	// Now is the clock (the request's Tehran date and time, a Retry-After
	// date); nil: time.Now.
	Now func() time.Time
}

// Client is the Mellat driver. It is safe for concurrent use.
type Client struct {
	terminal, user, pass string
	base                 string
	hc                   *http.Client
	log                  *slog.Logger
	tehran               *time.Location
	now                  func() time.Time
	ops                  gateway.Ops
}

var _ gateway.Gateway = (*Client)(nil)

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	tid, err := wire.TerminalID(cfg.TerminalID)
	if err != nil {
		return nil, fmt.Errorf("mellat: terminal id: %w", err)
	}
	if strings.TrimSpace(cfg.Username) == "" || cfg.Password == "" {
		return nil, errors.New("mellat: user name and password are required")
	}
	base, err := wire.BaseURL(cfg.BaseURL, "the password")
	if err != nil {
		return nil, fmt.Errorf("mellat: base URL: %w", err)
	}
	c := &Client{terminal: tid, user: strings.TrimSpace(cfg.Username), pass: cfg.Password, base: base,
		hc: cfg.HTTPClient, log: cfg.Logger, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if loc, err := time.LoadLocation("Asia/Tehran"); err == nil {
		c.tehran = loc
	} else {
		c.tehran = time.FixedZone("+0330", 3*3600+30*60)
	}
	c.ops = gateway.Ops{PayForm: c.PayForm, Settle: c.Settle, InquireSale: c.InquireSale, Reverse: c.Reverse,
		Refund: c.Refund, RefundStatus: c.RefundStatus, MatchCallback: matchCallback}
	return c, nil
}

// Ops are Mellat's optional operations: the POST form, settle, the
// inquiry of a sale, reversal.
func (c *Client) Ops() gateway.Ops { return c.ops }

// Name returns "mellat".
func (c *Client) Name() string { return Name }

// PayURL is "": Mellat takes the RefId only by POST (PayForm), so there
// is no link to the payer's page.
func (c *Client) PayURL(string) string { return "" }

// PayForm is the POST form to the payer's page: its one field RefId.
func (c *Client) PayForm(refID string) gateway.PayForm {
	return gateway.PayForm{Action: c.base + PathStartPay, Fields: []gateway.FormField{{Name: "RefId", Value: refID}}}
}

// OrderNumber is the numeric orderId Mellat is given for a payment: a
// stable 62-bit number derived from our public id, so that verify, settle
// and a check of the callback's SaleOrderId need nothing but the row.
func OrderNumber(publicID string) int64 {
	sum := sha256.Sum256([]byte("kifpool-mellat-order:" + publicID))
	n := int64(binary.BigEndian.Uint64(sum[:8]) >> 2)
	if n == 0 {
		n = 1
	}
	return n
}

// Request asks for a RefId (bpPayRequest). Input Mellat would refuse is
// refused here (a *gateway.RejectedError of code 0, nothing sent).
func (c *Client) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	switch {
	case in.AmountRials <= 0:
		return gateway.RequestResult{}, localRefusal("amount must be positive")
	case !absoluteHTTPURL(in.CallbackURL):
		return gateway.RequestResult{}, localRefusal("callback URL must be an absolute http(s) URL")
	case in.OrderID == "":
		return gateway.RequestResult{}, localRefusal("an order id is required")
	}
	now := c.now().In(c.tehran)
	ret, status, err := c.call(ctx, opRequest, "bpPayRequest", [][2]string{
		{"terminalId", c.terminal}, {"userName", c.user}, {"userPassword", c.pass},
		{"orderId", strconv.FormatInt(OrderNumber(in.OrderID), 10)},
		{"amount", strconv.FormatInt(in.AmountRials, 10)},
		{"localDate", now.Format("20060102")}, {"localTime", now.Format("150405")},
		{"additionalData", usertext.Cut(strings.TrimSpace(in.Description), 100)},
		{"callBackUrl", in.CallbackURL}, {"payerId", "0"},
	})
	if err != nil {
		return gateway.RequestResult{}, fmt.Errorf("mellat bpPayRequest: %w", err)
	}
	codeText, refID, _ := strings.Cut(ret, ",")
	code, err := strconv.Atoi(strings.TrimSpace(codeText))
	if err != nil {
		return gateway.RequestResult{}, fmt.Errorf("mellat bpPayRequest: %w", &gateway.TransientError{Op: opRequest, HTTPStatus: status,
			Err: fmt.Errorf("answer %q is not a result code", wire.Clean(ret, 40))})
	}
	if code != codeOK {
		return gateway.RequestResult{}, fmt.Errorf("mellat bpPayRequest: %w", &gateway.RejectedError{Op: opRequest, Code: code, Message: describe(code)})
	}
	refID = strings.TrimSpace(refID)
	if !validRefID(refID) {
		return gateway.RequestResult{}, fmt.Errorf("mellat bpPayRequest: %w", &gateway.TransientError{Op: opRequest, HTTPStatus: status,
			Err: fmt.Errorf("code 0 with a missing or malformed RefId %q", usertext.Cut(refID, 40))})
	}
	return gateway.RequestResult{Authority: refID, Code: code}, nil
}

// saleFields are the fields of verify, settle, inquiry and reversal.
func (c *Client) saleFields(in gateway.VerifyInput) [][2]string {
	order := strconv.FormatInt(OrderNumber(in.OrderID), 10)
	return [][2]string{{"terminalId", c.terminal}, {"userName", c.user}, {"userPassword", c.pass},
		{"orderId", order}, {"saleOrderId", order}, {"saleReferenceId", in.Receipt}}
}

// Verify confirms the sale of in.Receipt (the callback's SaleReferenceId)
// with bpVerifyRequest: 0 paid, 43 verified before. Without a
// SaleReferenceId there is no sale Mellat could verify or be asked about
// (VerifyNoSale, no call); the same for the bank's definite "no paid sale"
// codes (cancelled, card refusals, sale not found, reversed). Anything
// else definite is VerifyInvalid. The verified amount is ours: Mellat
// verifies the order it was given (it answers no amount).
func (c *Client) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	ref, ok := saleReference(in.Receipt)
	if !ok {
		return gateway.VerifyResult{Outcome: gateway.VerifyNoSale, Code: codeSaleNotFound, NoCall: true,
			Message: "no SaleReferenceId: the payer's callback carried no sale"}, nil
	}
	code, err := c.codeCall(ctx, opVerify, "bpVerifyRequest", c.saleFields(in))
	if err != nil {
		return gateway.VerifyResult{}, fmt.Errorf("mellat bpVerifyRequest %s: %w", quote(in.Receipt), err)
	}
	res := gateway.VerifyResult{Code: code, Message: describe(code)}
	switch {
	case code == codeOK:
		res.Outcome, res.RefID, res.AmountRials = gateway.VerifyPaid, ref, in.AmountRials
	case code == codeAlreadyVerified:
		res.Outcome, res.RefID, res.AmountRials = gateway.VerifyAlreadyVerified, ref, in.AmountRials
	case code == codeReversed:
		// Paid, then returned by the bank (not verified in time): the
		// payer's card was charged and given back.
		res.Outcome, res.NotPaid = gateway.VerifyNoSale, gateway.NotPaidReversed
	case noSale(code):
		res.Outcome = gateway.VerifyNoSale
	case !definite(code) || terminalRefusal(code):
		// 34 (the bank's system error), a code its table does not have,
		// or our terminal refused (its merchant, credentials or address,
		// not the sale): nothing is known of the sale; asked again, so
		// that a verify refused while an operator fixes the terminal is
		// still made within the bank's window.
		return gateway.VerifyResult{}, fmt.Errorf("mellat bpVerifyRequest %s: %w", quote(in.Receipt), unknownCode(opVerify, code))
	default:
		res.Outcome = gateway.VerifyInvalid
	}
	return res, nil
}

// definite reports whether code is one of the bank's table whose meaning
// is a definite answer (34, its system error, is not; nor is a code the
// table does not have).
func definite(code int) bool {
	return code != codeSystemError && describe(code) != "code "+strconv.Itoa(code)
}

// terminalRefusal reports the codes refusing our terminal, not the sale:
// 21 invalid merchant, 24 invalid credentials, 421 our address not
// allowed. The bank checks these before it looks at the sale, so a
// verify or settle refused so says nothing of it (an operator fixes the
// terminal meanwhile); a reversal refused so reversed nothing.
func terminalRefusal(code int) bool { return code == 21 || code == 24 || code == 421 }

// unknownCode is the error of an answer whose code says nothing definite.
func unknownCode(op string, code int) error {
	return &gateway.TransientError{Op: op, Err: fmt.Errorf("result code %d (%s): outcome unknown", code, describe(code))}
}

// noSale reports the codes saying the bank holds no paid sale: card and
// payer refusals (11-19, 17 cancelled), sale not found (42), reversed (48).
func noSale(code int) bool {
	return (code >= 11 && code <= 19) || code == codeSaleNotFound || code == codeReversed
}

// Settle asks Mellat to settle a verified sale (bpSettleRequest): 0
// settled, 45 settled before, 48 reversed; any other definite code is
// SettleRefused.
func (c *Client) Settle(ctx context.Context, in gateway.VerifyInput) (gateway.SettleResult, error) {
	if _, ok := saleReference(in.Receipt); !ok {
		return gateway.SettleResult{Outcome: gateway.SettleRefused, Code: codeSaleNotFound, Message: "no SaleReferenceId"}, nil
	}
	code, err := c.codeCall(ctx, opSettle, "bpSettleRequest", c.saleFields(in))
	if err != nil {
		return gateway.SettleResult{}, fmt.Errorf("mellat bpSettleRequest %s: %w", quote(in.Receipt), err)
	}
	res := gateway.SettleResult{Code: code, Message: describe(code)}
	switch code {
	case codeOK:
		res.Outcome = gateway.SettleDone
	case codeAlreadySettled:
		res.Outcome = gateway.SettleAlready
	case codeReversed:
		res.Outcome = gateway.SettleReversed
	default:
		if !definite(code) || terminalRefusal(code) {
			return gateway.SettleResult{}, fmt.Errorf("mellat bpSettleRequest %s: %w", quote(in.Receipt), unknownCode(opSettle, code))
		}
		res.Outcome = gateway.SettleRefused
	}
	return res, nil
}

// Inquire: Mellat's bpInquiryRequest needs the SaleReferenceId, which the
// token alone does not give; the payment flow never asks it of Mellat
// (Verify answers VerifyNoSale instead of "not paid"). An inquiry by token
// is therefore an error whose outcome is unknown.
func (c *Client) Inquire(context.Context, string) (gateway.InquiryResult, error) {
	return gateway.InquiryResult{}, &gateway.TransientError{Op: opInquiry,
		Err: errors.New("mellat: an inquiry needs the sale's SaleReferenceId (InquireSale)")}
}

// InquireSale asks bpInquiryRequest about a sale: 0 → VERIFIED, 43 →
// VERIFIED (verified before), 48 → REVERSED, other "no sale" codes →
// FAILED; anything else is passed on as "CODE_n".
func (c *Client) InquireSale(ctx context.Context, in gateway.VerifyInput) (gateway.InquiryResult, error) {
	if _, ok := saleReference(in.Receipt); !ok {
		return gateway.InquiryResult{Code: codeSaleNotFound, Status: gateway.InquiryFailed}, nil
	}
	code, err := c.codeCall(ctx, opInquiry, "bpInquiryRequest", c.saleFields(in))
	if err != nil {
		return gateway.InquiryResult{}, fmt.Errorf("mellat bpInquiryRequest %s: %w", quote(in.Receipt), err)
	}
	out := gateway.InquiryResult{Code: code}
	switch {
	case code == codeOK || code == codeAlreadyVerified:
		out.Status = gateway.InquiryVerified
	case code == codeReversed:
		out.Status = gateway.InquiryReversed
	case noSale(code):
		out.Status = gateway.InquiryFailed
	default:
		out.Status = gateway.InquiryStatus("CODE_" + strconv.Itoa(code))
	}
	return out, nil
}

// Reverse asks bpReversalRequest to return a verified, unsettled sale's
// money (within 3 hours of verify), as gateway.Ops.Reverse. Called by the
// top-up worker, once, for a verified sale it cannot credit (its settle
// refused: topup.StatusReversing). 0 reversed; 45 (settled before) is a
// refusal that says the sale is settled (settledRefusal); any other
// definite code a refusal; 48 and the codes that say nothing, unknown.
func (c *Client) Reverse(ctx context.Context, in gateway.VerifyInput) error {
	code, err := c.codeCall(ctx, opReversal, "bpReversalRequest", c.saleFields(in))
	if err != nil {
		return fmt.Errorf("mellat bpReversalRequest %s: %w", quote(in.Receipt), err)
	}
	switch {
	case code == codeOK:
		return nil
	case code == codeReversed || !definite(code):
		// 48 says the sale is reversed, by this call's lost twin or by
		// another hand; 34 (the bank's system error) and a code the table
		// does not have say nothing. None is a refusal: taken as one, a
		// card refund would give the money back to the wallet while the
		// card has it too. Unknown: the sale's inquiry (RefundStatus)
		// decides.
		return fmt.Errorf("mellat bpReversalRequest %s: %w", quote(in.Receipt), unknownCode(opReversal, code))
	}
	rej := &gateway.RejectedError{Op: opReversal, Code: code, Message: describe(code)}
	if code == codeAlreadySettled {
		// 45: refused because the sale is settled (two settles raced, or
		// one answered refused after its twin settled it): the merchant
		// has the money. Still a refusal; it also says why (SaleSettled).
		return &settledRefusal{rej}
	}
	return rej
}

// settledRefusal is bpReversalRequest's 45: the reversal refused because
// the sale is settled. It is a *gateway.RejectedError to errors.As (a
// card refund is refused by it as by any other code), and tells code that
// asks for the behaviour — as net.Error tells Timeout — that the bank
// holds the sale as settled (SaleSettled): the top-up whose settle was
// refused is then settled again (45) and credited, not left uncredited.
type settledRefusal struct{ rej *gateway.RejectedError }

func (e *settledRefusal) Error() string { return e.rej.Error() }
func (e *settledRefusal) Unwrap() error { return e.rej }

// SaleSettled reports that the bank refused the reversal because the
// sale is settled: the money is the merchant's.
func (e *settledRefusal) SaleSettled() bool { return true }

// ListUnverified: Mellat has no list of payments; always empty.
func (c *Client) ListUnverified(context.Context) ([]gateway.Unverified, error) { return nil, nil }

// codeCall is a call whose answer is one result code.
func (c *Client) codeCall(ctx context.Context, op, method string, fields [][2]string) (int, error) {
	ret, status, err := c.call(ctx, op, method, fields)
	if err != nil {
		return 0, err
	}
	code, err := strconv.Atoi(strings.TrimSpace(ret))
	if err != nil {
		return 0, &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("answer %q is not a result code", wire.Clean(ret, 40))}
	}
	return code, nil
}

// call sends one SOAP call and returns the text of its <return>.
func (c *Client) call(ctx context.Context, op, method string, fields [][2]string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PathService, bytes.NewReader(Envelope(method, fields)))
	if err != nil {
		return "", 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	start := time.Now()
	status, h, raw, err := wire.Do(c.hc, req)
	var ret string
	switch {
	case err != nil:
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: err}
	default:
		var fault string
		ret, fault, err = ReadReturn(raw)
		switch {
		case wire.Retryable(status) && fault == "" && err != nil:
			err = &gateway.TransientError{Op: op, HTTPStatus: status, RetryAfter: wire.RetryAfter(h.Get("Retry-After"), c.now()),
				Err: fmt.Errorf("HTTP %d %s", status, http.StatusText(status))}
		case fault != "" && op == opRequest && (clientFault(raw) || !wire.Retryable(status)):
			// A fault on bpPayRequest started nothing the payer can pay.
			// One of ours (faultcode Client) is a refusal; any other comes
			// with 500 as SOAP 1.1 sends every fault, and is the bank's
			// trouble: counted as a failure by the breaker (below), so
			// that top-ups fail over.
			err = &gateway.RejectedError{Op: op, Message: "SOAP fault: " + wire.Clean(fault, maxMessage)}
		case fault != "":
			// A fault says nothing definite about the sale.
			err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("SOAP fault: %s", wire.Clean(fault, maxMessage))}
		case err != nil && op == opRequest && status >= 400 && status < 500:
			err = &gateway.RejectedError{Op: op, Message: fmt.Sprintf("HTTP %d %s without a SOAP answer", status, http.StatusText(status))}
		case err != nil:
			err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("undecodable answer: %w", err)}
		case wire.Retryable(status):
			err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("HTTP %d with an answer", status)}
		}
	}
	c.logCall(ctx, op, status, start, err)
	return ret, status, err
}

// Envelope is a SOAP 1.1 request for method with its (unqualified) fields,
// as Mellat's WSDL (RPC style, namespace Namespace) describes it.
func Envelope(method string, fields [][2]string) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` +
		`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="` + Namespace + `">` +
		`<soapenv:Body><ns1:` + method + `>`)
	for _, f := range fields {
		b.WriteString("<" + f[0] + ">")
		_ = xml.EscapeText(&b, []byte(f[1]))
		b.WriteString("</" + f[0] + ">")
	}
	b.WriteString(`</ns1:` + method + `></soapenv:Body></soapenv:Envelope>`)
	return b.Bytes()
}

// ReadReturn finds the text of the first <return> element of a SOAP
// answer (any prefix), or the faultstring of a SOAP fault.
func ReadReturn(raw []byte) (ret, fault string, err error) {
	dec := xml.NewDecoder(bytes.NewReader(raw))
	dec.Strict = false
	inFault := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", "", fmt.Errorf("read SOAP answer: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "Fault":
			inFault = true
		case "faultstring":
			if inFault {
				var s string
				if err := dec.DecodeElement(&s, &se); err != nil {
					return "", "", fmt.Errorf("read SOAP fault: %w", err)
				}
				return "", strings.TrimSpace(s) + " ", nil
			}
		case "return":
			var s string
			if err := dec.DecodeElement(&s, &se); err != nil {
				return "", "", fmt.Errorf("read SOAP return: %w", err)
			}
			return strings.TrimSpace(s), "", nil
		}
	}
	if inFault {
		return "", "SOAP fault without a faultstring", nil
	}
	return "", "", errors.New("no <return> in the SOAP answer")
}

// clientFault reports whether a SOAP answer is a fault whose faultcode
// blames the caller (SOAP 1.1 "Client", SOAP 1.2 "Sender"), as opposed
// to the server ("Server", "Receiver", or none said).
func clientFault(raw []byte) bool {
	dec := xml.NewDecoder(bytes.NewReader(raw))
	dec.Strict = false
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		se, ok := tok.(xml.StartElement)
		if !ok || (se.Name.Local != "faultcode" && se.Name.Local != "Value") {
			continue
		}
		var code string
		if dec.DecodeElement(&code, &se) != nil {
			return false
		}
		_, local, _ := strings.Cut(strings.TrimSpace(code), ":")
		if local == "" {
			local = strings.TrimSpace(code)
		}
		return strings.HasPrefix(local, "Client") || strings.HasPrefix(local, "Sender")
	}
}

func (c *Client) logCall(ctx context.Context, op string, status int, start time.Time, err error) {
	attrs := []slog.Attr{slog.String("gateway", Name), slog.String("op", op), slog.Int("http_status", status),
		slog.Duration("elapsed", time.Since(start))}
	if err != nil {
		c.log.LogAttrs(ctx, slog.LevelWarn, "mellat call failed", append(attrs, slog.String("error", err.Error()))...)
		return
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "mellat call", attrs...)
}

// describe names a result code for logs (from the bank's table).
func describe(code int) string {
	switch code {
	case 0:
		return "OK"
	case 11, 12, 13, 14, 15, 16, 18, 19:
		return "refused by the card or its bank"
	case codeCancelled:
		return "the payer cancelled"
	case 21:
		return "invalid merchant"
	case 24:
		return "invalid merchant credentials"
	case 25:
		return "invalid amount"
	case codeSystemError:
		return "system error"
	case 41:
		return "duplicate order id"
	case codeSaleNotFound:
		return "sale not found"
	case codeAlreadyVerified:
		return "already verified"
	case 44:
		return "verify request not found"
	case codeAlreadySettled:
		return "already settled"
	case 46:
		return "not settled"
	case 47:
		return "settle request not found"
	case codeReversed:
		return "reversed"
	case 421:
		return "address not allowed"
	}
	return "code " + strconv.Itoa(code)
}

func localRefusal(msg string) error {
	return &gateway.RejectedError{Op: opRequest, Message: "invalid input, not sent: " + msg}
}

func absoluteHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// saleReference reads a SaleReferenceId: a positive number.
func saleReference(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil && n > 0
}

// validRefID reports whether s can be a RefId: 1 to 64 letters and digits.
func validRefID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func quote(s string) string { return strconv.Quote(usertext.Cut(s, 40)) }

// Refund is the card refund of a Mellat sale: bpReversalRequest of the
// whole sale, which the bank takes within 3 hours of verify and only
// before settle (so never for a credited top-up, which is settled: the
// card refund's decision refuses it first). gateway.Ops.Refund.
func (c *Client) Refund(ctx context.Context, in gateway.RefundInput) (gateway.RefundResult, error) {
	if in.AmountRials != in.Payment.AmountRials || in.RefundedRials != 0 {
		return gateway.RefundResult{}, &gateway.RejectedError{Op: opReversal, Message: "invalid input, not sent: Mellat reverses the whole sale only"}
	}
	if _, ok := saleReference(in.Payment.Receipt); !ok {
		return gateway.RefundResult{}, &gateway.RejectedError{Op: opReversal, Message: "invalid input, not sent: no SaleReferenceId"}
	}
	if err := c.Reverse(ctx, in.Payment); err != nil {
		return gateway.RefundResult{}, err
	}
	return gateway.RefundResult{BankReference: in.Payment.Receipt}, nil
}

// RefundStatus asks bpInquiryRequest what became of a reversal whose
// answer was lost: 48 reversed; 0 or 43, verified and standing (not
// reversed). gateway.Ops.RefundStatus.
func (c *Client) RefundStatus(ctx context.Context, in gateway.RefundInput) (gateway.RefundState, error) {
	r, err := c.InquireSale(ctx, in.Payment)
	if err != nil {
		return gateway.RefundState{}, err
	}
	out := gateway.RefundState{Code: r.Code, RefundedRials: -1}
	switch r.Status {
	case gateway.InquiryReversed:
		out.Outcome = gateway.RefundDone
	case gateway.InquiryVerified:
		out.Outcome = gateway.RefundNotDone
	default:
		out.Outcome = gateway.RefundDiffers
	}
	return out, nil
}
