// Package zibal is the Zibal IPG v1 driver of gateway.Gateway: REST
// request, verify and inquiry in rials, the payer sent to /start/{trackId}
// and back with a GET (trackId, success, status, orderId).
//
// Zibal answers with HTTP 200 and decides in the body's `result`: 100
// success, 201 "already verified" (then without the payment's details,
// which an inquiry gives), 202 not paid, 203 an unknown trackId, 102-106
// and 113 a refused call. Verify 201 is never a failure: the driver asks
// the inquiry for the reference and the amount and answers "already
// verified" with them, or "outcome unknown" when the inquiry cannot tell.
package zibal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/usertext"
)

// ProductionBaseURL is Zibal's API and payment page host.
const ProductionBaseURL = "https://gateway.zibal.ir"

// SandboxMerchant is Zibal's sandbox merchant (on its own host, too).
const SandboxMerchant = "zibal"

// Operations (gateway_calls, logs).
const (
	opRequest = "request"
	opVerify  = "verify"
	opInquiry = "inquiry"
)

// Result codes.
const (
	resultOK              = 100
	resultAlreadyVerified = 201
	resultNotPaid         = 202
	resultBadTrackID      = 203
)

// Statuses of a payment (inquiry, callback).
const (
	statusWaiting  = -1
	statusVerified = 1
	statusPaid     = 2
)

// Config configures a Client.
type Config struct {
	Merchant   string
	BaseURL    string
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock (a Retry-After date is read against it); nil:
	// time.Now.
	Now func() time.Time
}

// Client talks to Zibal.
type Client struct {
	merchant string
	baseURL  string
	hc       *http.Client
	log      *slog.Logger
	now      func() time.Time
}

var _ gateway.Gateway = (*Client)(nil)

// Ops: none (its payer is sent by a GET redirect, verify alone makes the
// money ours, and Zibal cannot reverse).
func (c *Client) Ops() gateway.Ops { return gateway.Ops{} }

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	m, err := checkMerchant(cfg.Merchant)
	if err != nil {
		return nil, fmt.Errorf("zibal: merchant: %w", err)
	}
	base, err := wire.BaseURL(cfg.BaseURL, "the merchant")
	if err != nil {
		return nil, fmt.Errorf("zibal: base URL: %w", err)
	}
	c := &Client{merchant: m, baseURL: base, hc: cfg.HTTPClient, log: cfg.Logger, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Name returns "zibal".
func (c *Client) Name() string { return "zibal" }

// PayURL is the payer's page of a trackId.
func (c *Client) PayURL(trackID string) string {
	return c.baseURL + "/start/" + url.PathEscape(trackID)
}

// reply is a decoded Zibal answer: every field it may carry.
type reply struct {
	Result      json.RawMessage `json:"result"`
	Message     json.RawMessage `json:"message"`
	TrackID     json.RawMessage `json:"trackId"`
	Status      json.RawMessage `json:"status"`
	Amount      json.RawMessage `json:"amount"`
	RefNumber   json.RawMessage `json:"refNumber"`
	CardNumber  json.RawMessage `json:"cardNumber"`
	PaidAt      json.RawMessage `json:"paidAt"`
	VerifiedAt  json.RawMessage `json:"verifiedAt"`
	OrderID     json.RawMessage `json:"orderId"`
	result      int
	message     string
	httpStatus  int
	resultKnown bool
}

func (r reply) int(raw json.RawMessage) (int64, bool) { return wire.FlexInt(raw) }

// Request asks for a new trackId.
func (c *Client) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	if in.AmountRials <= 1_000 {
		return gateway.RequestResult{}, &gateway.RejectedError{Op: opRequest, Message: "amount must be above 1,000 rials"}
	}
	if u, err := url.Parse(in.CallbackURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return gateway.RequestResult{}, &gateway.RejectedError{Op: opRequest, Message: "callback URL must be an absolute http(s) URL"}
	}
	body := map[string]any{
		"merchant": c.merchant, "amount": in.AmountRials, "callbackUrl": in.CallbackURL,
		"description": usertext.Cut(strings.TrimSpace(in.Description), 500), "orderId": in.OrderID,
	}
	if m := strings.TrimSpace(in.Mobile); m != "" {
		body["mobile"] = m
	}
	r, err := c.post(ctx, opRequest, "/v1/request", body)
	if err != nil {
		return gateway.RequestResult{}, fmt.Errorf("zibal request: %w", err)
	}
	if r.result != resultOK {
		return gateway.RequestResult{}, fmt.Errorf("zibal request: %w", c.refusal(opRequest, r))
	}
	id, ok := r.int(r.TrackID)
	if !ok || id <= 0 {
		return gateway.RequestResult{}, &gateway.TransientError{Op: opRequest, HTTPStatus: r.httpStatus,
			Err: fmt.Errorf("result 100 without a trackId (%s)", wire.Clean(string(r.TrackID), 40))}
	}
	return gateway.RequestResult{Authority: strconv.FormatInt(id, 10), Code: resultOK}, nil
}

// refusal is the error of a definite refusal (request's codes), or a
// transient error for a code the driver does not know.
func (c *Client) refusal(op string, r reply) error {
	switch r.result {
	case 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, resultBadTrackID:
		return &gateway.RejectedError{Op: op, Code: r.result, Message: r.message}
	}
	return &gateway.TransientError{Op: op, HTTPStatus: r.httpStatus, Err: fmt.Errorf("result %d: %s", r.result, r.message)}
}

// Verify confirms a payment. 100: paid now, with the amount Zibal
// verified; 201: verified before, and the details come from an inquiry
// (an inquiry that cannot give them leaves the outcome unknown, never
// failed); 202: not paid; 203 or a refused merchant: the verify itself
// refused.
func (c *Client) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	id, err := trackID(in.Authority)
	if err != nil {
		return gateway.VerifyResult{}, &gateway.RejectedError{Op: opVerify, Message: err.Error()}
	}
	r, err := c.post(ctx, opVerify, "/v1/verify", map[string]any{"merchant": c.merchant, "trackId": id})
	if err != nil {
		return gateway.VerifyResult{}, fmt.Errorf("zibal verify %d: %w", id, err)
	}
	res := gateway.VerifyResult{Code: r.result, Message: r.message}
	switch r.result {
	case resultOK:
		res.Outcome = gateway.VerifyPaid
		c.details(&res, r)
		return res, nil
	case resultAlreadyVerified:
		// Verified before: the answer carries no details; the inquiry does.
		q, err := c.inquiry(ctx, id)
		if err != nil {
			return gateway.VerifyResult{}, fmt.Errorf("zibal verify %d answered 201; its inquiry: %w", id, err)
		}
		if st, _ := q.int(q.Status); st != statusVerified {
			return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: q.httpStatus,
				Err: fmt.Errorf("verify answered 201 (already verified) but the inquiry says status %d", st)}
		}
		res.Outcome = gateway.VerifyAlreadyVerified
		c.details(&res, q)
		return res, nil
	case resultNotPaid:
		res.Outcome = gateway.VerifyNotPaid
		return res, nil
	case resultBadTrackID, 102, 103, 104:
		res.Outcome = gateway.VerifyInvalid
		return res, nil
	}
	return gateway.VerifyResult{}, &gateway.TransientError{Op: opVerify, HTTPStatus: r.httpStatus,
		Err: fmt.Errorf("verify %d: result %d: %s", id, r.result, r.message)}
}

// details copies the reference, amount and card of a verify or inquiry
// answer.
func (c *Client) details(res *gateway.VerifyResult, r reply) {
	if ref, ok := r.int(r.RefNumber); ok && ref > 0 {
		res.RefID = ref
	}
	if a, ok := r.int(r.Amount); ok && a > 0 {
		res.AmountRials = a
	}
	res.CardPANMasked = usertext.Cut(wire.MaskPAN(wire.FlexString(r.CardNumber)), 32)
}

// Inquire reports a trackId's state: -1 waiting for the payer (IN_BANK),
// 2 paid not verified (PAID), 1 verified (VERIFIED), 15/16/18 refunded or
// reversed (REVERSED), any other a definite not-paid (FAILED).
func (c *Client) Inquire(ctx context.Context, authority string) (gateway.InquiryResult, error) {
	id, err := trackID(authority)
	if err != nil {
		return gateway.InquiryResult{}, &gateway.RejectedError{Op: opInquiry, Message: err.Error()}
	}
	r, err := c.inquiry(ctx, id)
	if err != nil {
		return gateway.InquiryResult{}, fmt.Errorf("zibal inquiry %d: %w", id, err)
	}
	st, _ := r.int(r.Status)
	return gateway.InquiryResult{Code: r.result, Status: inquiryStatus(st)}, nil
}

func inquiryStatus(st int64) gateway.InquiryStatus {
	switch st {
	case statusWaiting:
		return gateway.InquiryInBank
	case statusPaid:
		return gateway.InquiryPaid
	case statusVerified:
		return gateway.InquiryVerified
	case 15, 16, 18:
		return gateway.InquiryReversed
	case 3, 4, 5, 6, 7, 8, 9, 10, 11, 12:
		return gateway.InquiryFailed
	}
	// -2 (an internal error at Zibal) and codes we do not know: not a
	// definite word.
	return gateway.InquiryStatus("ZIBAL_" + strconv.FormatInt(st, 10))
}

// inquiry asks for a trackId's state and details (result 100 only).
func (c *Client) inquiry(ctx context.Context, id int64) (reply, error) {
	r, err := c.post(ctx, opInquiry, "/v1/inquiry", map[string]any{"merchant": c.merchant, "trackId": id})
	if err != nil {
		return reply{}, err
	}
	if r.result != resultOK {
		return reply{}, c.refusal(opInquiry, r)
	}
	if _, ok := r.int(r.Status); !ok {
		return reply{}, &gateway.TransientError{Op: opInquiry, HTTPStatus: r.httpStatus, Err: fmt.Errorf("result 100 without a status")}
	}
	return r, nil
}

// ListUnverified: Zibal has no list of paid-but-unverified payments;
// reconciliation inquires per payment (Capabilities.Reconcile).
func (c *Client) ListUnverified(context.Context) ([]gateway.Unverified, error) {
	return nil, nil
}

// post sends one call and decodes the answer. Transport errors, 408, 429
// and 5xx, and an answer without a result are *gateway.TransientError.
func (c *Client) post(ctx context.Context, op, path string, body any) (reply, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return reply{}, fmt.Errorf("encode body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, bytes.NewReader(payload))
	if err != nil {
		return reply{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	status, header, raw, err := wire.Do(c.hc, req)
	if err != nil {
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: wire.WithContextErr(ctx, err)}
		c.logCall(ctx, op, status, 0, start, err)
		return reply{}, err
	}
	var r reply
	r.httpStatus = status
	derr := json.Unmarshal(raw, &r)
	code, known := wire.FlexInt(r.Result)
	switch {
	case wire.Retryable(status):
		err = &gateway.TransientError{Op: op, HTTPStatus: status, RetryAfter: wire.RetryAfter(header.Get("Retry-After"), c.now()),
			Err: fmt.Errorf("HTTP %d", status)}
	case derr != nil || !known:
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("undecodable answer: %s", wire.Clean(string(raw), 120))}
	}
	r.result, r.resultKnown, r.message = int(code), known, wire.Clean(wire.FlexString(r.Message), 200)
	c.logCall(ctx, op, status, r.result, start, err)
	return r, err
}

// logCall records one call; the merchant and bodies are never logged.
func (c *Client) logCall(ctx context.Context, op string, status, result int, start time.Time, err error) {
	attrs := []slog.Attr{slog.String("gateway", "zibal"), slog.String("op", op), slog.Int("http_status", status),
		slog.Int("result", result), slog.Duration("elapsed", time.Since(start))}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
		c.log.LogAttrs(ctx, slog.LevelWarn, "zibal call", attrs...)
		return
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "zibal call", attrs...)
}

// trackID reads a stored trackId (our authority): a positive number.
func trackID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("trackId %q is not a positive number", wire.Clean(s, 40))
	}
	return id, nil
}
