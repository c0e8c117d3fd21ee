// Package zarinpal is the Zarinpal REST v4 driver of gateway.Gateway.
//
// It speaks the JSON API under a configurable base URL (production, the
// Zarinpal sandbox or Kifpool's own offline simulator), decodes answers
// leniently (data/errors flip between object and array, numbers arrive as
// strings) and maps every answer onto the error contract of package gateway:
// a business answer about a payment is a result, a definite refusal is a
// *gateway.RejectedError, and everything whose outcome is unknown is a
// *gateway.TransientError.
package zarinpal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	_ "time/tzdata" // Asia/Tehran on hosts without a zoneinfo database

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Well-known API bases for Config.BaseURL.
const (
	ProductionBaseURL = "https://payment.zarinpal.com"
	SandboxBaseURL    = "https://sandbox.zarinpal.com"
)

// Operation names used in TransientError.Op and RejectedError.Op.
const (
	opRequest    = "request"
	opVerify     = "verify"
	opInquiry    = "inquiry"
	opUnverified = "unverified"
)

// API paths under the base URL.
const (
	pathRequest    = "/pg/v4/payment/request.json"
	pathVerify     = "/pg/v4/payment/verify.json"
	pathInquiry    = "/pg/v4/payment/inquiry.json"
	pathUnverified = "/pg/v4/payment/unVerified.json"
	pathStartPay   = "/pg/StartPay/"
)

const (
	maxBodyBytes     = 1 << 20 // answers are read up to 1 MiB
	maxDescription   = 500     // runes; longer descriptions are cut
	currencyRial     = "IRR"
	tehranOffsetSecs = 3*3600 + 30*60
)

// Config configures a Client.
type Config struct {
	// MerchantID is the terminal's merchant id, a UUID (any letter case;
	// it is sent in lower case). Required. It never appears in errors or logs.
	MerchantID string
	// BaseURL is the API base, such as ProductionBaseURL, SandboxBaseURL or
	// the simulator's "http://127.0.0.1:9999/sandbank". Required; http or
	// https; a trailing slash is ignored.
	BaseURL string
	// HTTPClient sends the calls. Nil means a client without a Timeout:
	// deadlines come from each call's context, so always pass one with a
	// deadline.
	HTTPClient *http.Client
	// Logger receives one debug record per call and warnings for answers
	// that cannot be classified. Nil discards.
	Logger *slog.Logger
	// PageLifetime is how long Zarinpal's StartPay page waits for the
	// payer. Zarinpal answers an expired page exactly as a cancel
	// (callback Status=NOK, verify -51, inquiry FAILED), so a "not paid"
	// about a payer who had the page at least this long
	// (gateway.VerifyInput.PageTime) is classified as expired
	// (gateway.NotPaidExpired), a shorter one as cancelled. Zero: the
	// driver does not tell them apart (gateway.NotPaidUnknown).
	PageLifetime time.Duration
	// Now is the clock (a Retry-After date is read against it); nil:
	// time.Now.
	Now func() time.Time
	// AccessToken and TerminalID, both or neither, let the driver refund
	// a payment to the card through Zarinpal's GraphQL API at GraphQLURL
	// (DefaultGraphQLURL when empty): Ops.Refund and Ops.RefundStatus.
	// Without them the driver offers no card refund.
	AccessToken, TerminalID, GraphQLURL string
}

// Client is a Zarinpal v4 driver. It is safe for concurrent use.
type Client struct {
	merchantID string
	baseURL    string
	hc         *http.Client
	log        *slog.Logger
	tehran     *time.Location
	pageLife   time.Duration
	now        func() time.Time
	refund     refunder
	ops        gateway.Ops
}

var _ gateway.Gateway = (*Client)(nil)

// Ops: the card refund (Refund, RefundStatus) when the client has an
// access token; nothing else (its payer is sent by a GET redirect, verify
// alone makes the money ours, and the driver does not implement
// Zarinpal's reverse.json).
func (c *Client) Ops() gateway.Ops { return c.ops }

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	mid := strings.ToLower(strings.TrimSpace(cfg.MerchantID))
	if !isUUID(mid) {
		return nil, errors.New("zarinpal: merchant id is not a UUID (8-4-4-4-12 hex digits)")
	}
	base, err := normalizeBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("zarinpal: base URL: %w", err)
	}
	if cfg.PageLifetime < 0 {
		return nil, errors.New("zarinpal: page lifetime must not be negative")
	}
	c := &Client{merchantID: mid, baseURL: base, hc: cfg.HTTPClient, log: cfg.Logger, tehran: tehranLocation(), pageLife: cfg.PageLifetime, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if (cfg.AccessToken == "") != (cfg.TerminalID == "") {
		return nil, errors.New("zarinpal: the access token and the terminal id go together (the card refund needs both)")
	}
	if cfg.AccessToken != "" {
		tok, err := checkAccessToken(cfg.AccessToken)
		if err != nil {
			return nil, fmt.Errorf("zarinpal: access token: %w", err)
		}
		term, err := wire.TerminalID(cfg.TerminalID)
		if err != nil {
			return nil, fmt.Errorf("zarinpal: terminal id: %w", err)
		}
		u := cfg.GraphQLURL
		if u == "" {
			u = DefaultGraphQLURL
		}
		if u, err = CheckGraphQLURL(u); err != nil {
			return nil, fmt.Errorf("zarinpal: GraphQL URL: %w", err)
		}
		c.refund = refunder{url: u, token: tok, terminal: term}
		c.ops = gateway.Ops{Refund: c.Refund, RefundStatus: c.RefundStatus}
	}
	return c, nil
}

// normalizeBaseURL checks an absolute http(s) URL without query or
// fragment and drops trailing slashes.
func normalizeBaseURL(raw string) (string, error) {
	s := strings.TrimRight(strings.TrimSpace(raw), "/")
	if s == "" {
		return "", errors.New("empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q must not carry a query, fragment or credentials", u.Redacted())
	}
	return s, nil
}

// tehranLocation is the zone of the gateway's wall-clock dates.
func tehranLocation() *time.Location {
	if loc, err := time.LoadLocation("Asia/Tehran"); err == nil {
		return loc
	}
	return time.FixedZone("+0330", tehranOffsetSecs)
}

// Name returns "zarinpal".
func (c *Client) Name() string { return "zarinpal" }

// PayURL is the StartPay page for an authority.
func (c *Client) PayURL(authority string) string {
	return c.baseURL + pathStartPay + url.PathEscape(authority)
}

// requestBody is request.json's body.
type requestBody struct {
	MerchantID  string    `json:"merchant_id"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	Description string    `json:"description"`
	CallbackURL string    `json:"callback_url"`
	Metadata    *metadata `json:"metadata,omitempty"`
}

type metadata struct {
	OrderID string `json:"order_id,omitempty"`
	Email   string `json:"email,omitempty"`
	Mobile  string `json:"mobile,omitempty"`
}

// verifyBody is verify.json's body.
type verifyBody struct {
	MerchantID string `json:"merchant_id"`
	Amount     int64  `json:"amount"`
	Authority  string `json:"authority"`
}

// authorityBody is inquiry.json's body.
type authorityBody struct {
	MerchantID string `json:"merchant_id"`
	Authority  string `json:"authority"`
}

// merchantBody is unVerified.json's body.
type merchantBody struct {
	MerchantID string `json:"merchant_id"`
}

// Request asks for a new authority. Input that the gateway would refuse
// anyway (amount <= 0, empty description, callback not an absolute http(s)
// URL) is refused locally with a *gateway.RejectedError of code 0, without
// a call. The description is cut to 500 runes.
func (c *Client) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	body, err := c.newRequestBody(in)
	if err != nil {
		return gateway.RequestResult{}, fmt.Errorf("zarinpal request: %w", err)
	}
	r, err := c.post(ctx, opRequest, pathRequest, body)
	if err == nil {
		var res gateway.RequestResult
		if res, err = requestResult(r); err == nil {
			return res, nil
		}
	}
	return gateway.RequestResult{}, fmt.Errorf("zarinpal request: %w", err)
}

func (c *Client) newRequestBody(in gateway.RequestInput) (requestBody, error) {
	desc := strings.TrimSpace(in.Description)
	switch {
	case in.AmountRials <= 0:
		return requestBody{}, localRefusal("amount must be positive")
	case desc == "":
		return requestBody{}, localRefusal("description is required")
	case !absoluteHTTPURL(in.CallbackURL):
		return requestBody{}, localRefusal("callback URL must be an absolute http(s) URL")
	}
	b := requestBody{
		MerchantID:  c.merchantID,
		Amount:      in.AmountRials,
		Currency:    currencyRial,
		Description: usertext.Cut(desc, maxDescription),
		CallbackURL: in.CallbackURL,
	}
	md := metadata{OrderID: in.OrderID, Email: strings.TrimSpace(in.Email), Mobile: strings.TrimSpace(in.Mobile)}
	if md != (metadata{}) {
		b.Metadata = &md
	}
	return b, nil
}

func localRefusal(msg string) error {
	return &gateway.RejectedError{Op: opRequest, Message: "invalid input, not sent: " + msg}
}

func absoluteHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Verify confirms a payment with the amount from our own records. Every
// definite answer is a VerifyResult (see gateway.VerifyOutcome); -12 and
// -52 are *gateway.TransientError (outcome unknown), -12 wrapping a
// *gateway.PerPaymentRefusal (gateway.IsPerPaymentRefusal): a refusal about
// this payment, not a sign of the bank's health. A success code alongside
// a non-empty errors is a *gateway.TransientError too.
func (c *Client) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	body := verifyBody{MerchantID: c.merchantID, Amount: in.AmountRials, Authority: in.Authority}
	r, err := c.post(ctx, opVerify, pathVerify, body)
	if err == nil {
		var res gateway.VerifyResult
		if res, err = verifyResult(r); err == nil {
			if res.Settled() {
				// Zarinpal's verify checks the amount it is sent and
				// answers -50 on a mismatch: 100/101 verified this one.
				res.AmountRials = in.AmountRials
			}
			if res.Outcome == gateway.VerifyNotPaid {
				res.NotPaid = notPaidCause(c.pageLife, in.PageTime)
			}
			return res, nil
		}
	}
	return gateway.VerifyResult{}, fmt.Errorf("zarinpal verify %s: %w", quoteID(in.Authority), err)
}

// Inquire reports the bank-side state of an authority. A status outside
// the gateway.Inquiry* constants is passed through upper-cased.
func (c *Client) Inquire(ctx context.Context, authority string) (gateway.InquiryResult, error) {
	body := authorityBody{MerchantID: c.merchantID, Authority: authority}
	r, err := c.post(ctx, opInquiry, pathInquiry, body)
	if err == nil {
		var res gateway.InquiryResult
		if res, err = inquiryResult(r); err == nil {
			return res, nil
		}
	}
	return gateway.InquiryResult{}, fmt.Errorf("zarinpal inquiry %s: %w", quoteID(authority), err)
}

// ListUnverified lists the (at most 100) payments the gateway holds as paid
// but not verified. Dates are Tehran wall-clock times.
func (c *Client) ListUnverified(ctx context.Context) ([]gateway.Unverified, error) {
	r, err := c.post(ctx, opUnverified, pathUnverified, merchantBody{MerchantID: c.merchantID})
	if err == nil {
		var res []gateway.Unverified
		if res, err = unverifiedResult(r, c.tehran); err == nil {
			return res, nil
		}
	}
	return nil, fmt.Errorf("zarinpal unverified: %w", err)
}

// quoteID quotes an authority for an error message, cut to a sane length
// (it may come from an untrusted callback).
func quoteID(s string) string {
	return fmt.Sprintf("%q", usertext.Cut(s, 40))
}

// post sends one JSON call and interprets the answer.
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
	status, header, raw, err := c.do(req)
	if err != nil {
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: withContextErr(ctx, err)}
		c.logCall(ctx, op, status, 0, start, err)
		return reply{}, err
	}
	r, err := interpret(op, status, header, raw, c.now())
	c.logCall(ctx, op, status, r.code, start, err)
	return r, err
}

// do sends req and reads at most maxBodyBytes of the answer. status is 0
// when no answer arrived.
func (c *Client) do(req *http.Request) (status int, h http.Header, body []byte, err error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return resp.StatusCode, resp.Header, nil, fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxBodyBytes {
		return resp.StatusCode, resp.Header, nil, errors.New("answer body larger than 1 MiB")
	}
	return resp.StatusCode, resp.Header, body, nil
}

// withContextErr makes sure errors.Is(err, ctx.Err()) holds when the
// context ended, whatever the transport reported.
func withContextErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// logCall records one call; the merchant id and bodies are never logged.
func (c *Client) logCall(ctx context.Context, op string, status, code int, start time.Time, err error) {
	attrs := []slog.Attr{
		slog.String("gateway", "zarinpal"),
		slog.String("op", op),
		slog.Int("http_status", status),
		slog.Duration("elapsed", time.Since(start)),
	}
	if code != 0 {
		attrs = append(attrs, slog.Int("code", code))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
		c.log.LogAttrs(ctx, slog.LevelWarn, "zarinpal call failed", attrs...)
		return
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "zarinpal call", attrs...)
}
