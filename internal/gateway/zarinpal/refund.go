package zarinpal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Zarinpal's card refund: its GraphQL API at next.zarinpal.com, with an
// OAuth access token (Bearer) rather than the merchant id.
//
//	mutation AddRefund(session_id, amount, description, method, reason)
//	  → {terminal_id, id, amount, timeline{refund_amount, refund_time, refund_status}}
//	query Session(terminal_id, reference_id, …) → [{id, status, amount, …}]
//
// What Zarinpal documents: AddRefund's inputs and answer (amount in rials,
// at least 20,000; method CARD, instant, or PAYA, the next Paya cycle;
// reason CUSTOMER_REQUEST, DUPLICATE_TRANSACTION, SUSPICIOUS_TRANSACTION
// or OTHER), and the Session list with its filters (terminal_id, id,
// reference_id, filter PAID|VERIFIED|TRASH|ACTIVE|REFUNDED, limit, offset).
// It has no idempotency key: a repeat refunds again, so the driver sends
// AddRefund once and never again for the same refund.
//
// What the driver infers (not documented where we could read it):
//   - a payment's session_id is the id of the Session whose reference_id
//     is the payment's ref_id (the driver asks, rather than deriving it
//     from the authority);
//   - AddRefund answers with the session itself (its id and paid amount,
//     as the documentation's field list says), so the Session query takes
//     the same timeline, and its refund_amount is the session's refunded
//     total: the status of a refund whose answer was lost is read there;
//   - a GraphQL error whose extensions' category is "validation", or an
//     HTTP 4xx, refused the call; any other error leaves it unknown.
const (
	// DefaultGraphQLURL is Zarinpal's GraphQL endpoint.
	DefaultGraphQLURL = "https://next.zarinpal.com/api/v4/graphql/"
	// MinRefundRials is the smallest refund AddRefund takes.
	MinRefundRials = 20_000
	// SandboxAccessToken and SandboxTerminalID are what the driver sends
	// the built-in sandbox bank (which takes any token).
	SandboxAccessToken = "sandbox-access-token"
	SandboxTerminalID  = "1"

	opRefund        = "refund"
	opRefundStatus  = "refund_status"
	refundMethod    = "CARD"             // instant, to the card that paid
	refundReason    = "CUSTOMER_REQUEST" // an admin refunds at the payer's request
	maxRefundReason = 200
)

// sandboxGraphQLPath is the sandbox bank's GraphQL endpoint under its
// base: Zarinpal's own path (taken from its URL, not written out: its
// first segment is also the app's /api).
var sandboxGraphQLPath = func() string {
	u, err := url.Parse(DefaultGraphQLURL)
	if err != nil {
		panic(err)
	}
	return u.Path
}()

const addRefundMutation = `mutation AddRefund($session_id: ID!, $amount: BigInteger!, $description: String, $method: InstantPayoutActionTypeEnum, $reason: RefundReasonEnum) {
  resource: AddRefund(session_id: $session_id, amount: $amount, description: $description, method: $method, reason: $reason) {
    terminal_id, id, amount, timeline { refund_amount, refund_time, refund_status }
  }
}`

const sessionQuery = `query Sessions($terminal_id: ID!, $reference_id: String, $limit: Int, $offset: Int) {
  Session(terminal_id: $terminal_id, reference_id: $reference_id, limit: $limit, offset: $offset) {
    id, status, amount, timeline { refund_amount, refund_time, refund_status }
  }
}`

// refunder is the client of Zarinpal's GraphQL API (nil without an
// access token).
type refunder struct {
	url      string
	token    string
	terminal string
}

// CheckGraphQLURL checks ZARINPAL_GRAPHQL_URL: an absolute http(s) URL
// without query, fragment or credentials, https unless it is this machine
// (the access token travels in every call). Its path is kept as written.
func CheckGraphQLURL(v string) (string, error) {
	v = strings.TrimSpace(v)
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want an absolute http(s) URL, got %q", v)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q must not carry a query, fragment or credentials", u.Redacted())
	}
	if u.Scheme != "https" && !wire.Loopback(u.Hostname()) {
		return "", fmt.Errorf("must be https:// (the access token travels in every call) unless it is a loopback address, got %q", v)
	}
	return v, nil
}

// checkAccessToken accepts a token as Zarinpal's panel gives it (no
// "Bearer ", no spaces).
func checkAccessToken(v string) (string, error) {
	v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "Bearer "))
	if v == "" || len(v) > 4096 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", errors.New("want the access token from Zarinpal's panel (printable characters, no spaces)")
	}
	return v, nil
}

// graphQLBody is a GraphQL call.
type graphQLBody struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables"`
}

// graphQLAnswer is a GraphQL answer: data, and errors when something was
// refused.
type graphQLAnswer struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []graphQLError             `json:"errors"`
}

type graphQLError struct {
	Message    string `json:"message"`
	Extensions struct {
		Category string          `json:"category"`
		Code     json.RawMessage `json:"code"`
	} `json:"extensions"`
}

// session is a Session (or AddRefund's resource).
type session struct {
	ID       json.RawMessage `json:"id"`
	Status   json.RawMessage `json:"status"`
	Amount   json.RawMessage `json:"amount"`
	Timeline json.RawMessage `json:"timeline"`
}

type timeline struct {
	RefundAmount json.RawMessage `json:"refund_amount"`
	RefundStatus json.RawMessage `json:"refund_status"`
}

// refunded is the session's refunded total (0 without a timeline).
func (s session) refunded() (int64, bool) {
	raw := bytes.TrimSpace(s.Timeline)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, true
	}
	var tl timeline
	if raw[0] == '[' {
		// A list of entries: the last one is the latest total.
		var tls []timeline
		if json.Unmarshal(raw, &tls) != nil {
			return 0, false
		}
		if len(tls) == 0 {
			return 0, true
		}
		tl = tls[len(tls)-1]
	} else if json.Unmarshal(raw, &tl) != nil {
		return 0, false
	}
	if v := strings.TrimSpace(string(tl.RefundAmount)); v == "" || v == "null" {
		return 0, true
	}
	return wire.FlexInt(tl.RefundAmount)
}

func (s session) refundStatus() string {
	var tl timeline
	if json.Unmarshal(s.Timeline, &tl) != nil {
		return ""
	}
	return wire.Clean(wire.FlexString(tl.RefundStatus), 40)
}

// Refund asks AddRefund for in.AmountRials of the payment in.RefID
// (found as its Session), once: gateway.Ops.Refund. A failed lookup
// sends nothing (gateway.ErrRefundNotSent).
func (c *Client) Refund(ctx context.Context, in gateway.RefundInput) (gateway.RefundResult, error) {
	if err := c.checkRefund(in); err != nil {
		return gateway.RefundResult{}, err
	}
	s, err := c.session(ctx, in.RefID)
	if err != nil {
		return gateway.RefundResult{}, fmt.Errorf("zarinpal refund of %d: %w: %w", in.RefID, gateway.ErrRefundNotSent, err)
	}
	id := wire.FlexString(s.ID)
	if id == "" {
		return gateway.RefundResult{}, fmt.Errorf("zarinpal refund of %d: %w: the session has no id", in.RefID, gateway.ErrRefundNotSent)
	}
	vars := map[string]any{"session_id": id, "amount": in.AmountRials, "method": refundMethod, "reason": refundReason,
		"description": usertext.Cut("Kifpool card refund "+in.Reference, maxRefundReason)}
	status, a, err := c.graphQL(ctx, opRefund, addRefundMutation, vars)
	if err != nil {
		return gateway.RefundResult{}, fmt.Errorf("zarinpal refund of %d: %w", in.RefID, err)
	}
	if len(a.Errors) > 0 {
		return gateway.RefundResult{}, fmt.Errorf("zarinpal refund of %d: %w", in.RefID, graphQLRefusal(opRefund, status, a.Errors))
	}
	var res session
	if raw := a.Data["resource"]; len(raw) == 0 || json.Unmarshal(raw, &res) != nil || wire.FlexString(res.ID) == "" {
		return gateway.RefundResult{}, fmt.Errorf("zarinpal refund of %d: %w", in.RefID,
			&gateway.TransientError{Op: opRefund, HTTPStatus: status, Err: errors.New("an answer without the refunded session")})
	}
	return gateway.RefundResult{BankReference: wire.Clean(wire.FlexString(res.ID), 64), Status: res.refundStatus()}, nil
}

// RefundStatus reads the payment's Session: its refunded total says
// whether the refund in was made (RefundedRials + AmountRials), not made
// (RefundedRials), or neither: gateway.Ops.RefundStatus.
func (c *Client) RefundStatus(ctx context.Context, in gateway.RefundInput) (gateway.RefundState, error) {
	s, err := c.session(ctx, in.RefID)
	if err != nil {
		return gateway.RefundState{}, fmt.Errorf("zarinpal refund status of %d: %w", in.RefID, err)
	}
	total, ok := s.refunded()
	if !ok {
		return gateway.RefundState{}, fmt.Errorf("zarinpal refund status of %d: %w", in.RefID,
			&gateway.TransientError{Op: opRefundStatus, Err: errors.New("refund_amount is not a number")})
	}
	return gateway.RefundState{Outcome: RefundOutcome(total, in), RefundedRials: total}, nil
}

// RefundOutcome reads a session's refunded total against the refund in
// (pure): made when it is what we had refunded plus this refund, not made
// when it is what we had refunded, else it differs.
func RefundOutcome(total int64, in gateway.RefundInput) gateway.RefundOutcome {
	switch total {
	case in.RefundedRials + in.AmountRials:
		return gateway.RefundDone
	case in.RefundedRials:
		return gateway.RefundNotDone
	}
	return gateway.RefundDiffers
}

// checkRefund refuses, without a call, a refund the API would refuse.
func (c *Client) checkRefund(in gateway.RefundInput) error {
	switch {
	case in.AmountRials < MinRefundRials:
		return &gateway.RejectedError{Op: opRefund, Message: fmt.Sprintf("invalid input, not sent: a refund is at least %d rials", MinRefundRials)}
	case in.RefID <= 0:
		return &gateway.RejectedError{Op: opRefund, Message: "invalid input, not sent: the payment has no reference"}
	}
	return nil
}

// session finds the Session of the payment whose reference is refID.
func (c *Client) session(ctx context.Context, refID int64) (session, error) {
	vars := map[string]any{"terminal_id": c.refund.terminal, "reference_id": strconv.FormatInt(refID, 10), "limit": 2, "offset": 0}
	status, a, err := c.graphQL(ctx, opRefundStatus, sessionQuery, vars)
	if err != nil {
		return session{}, err
	}
	if len(a.Errors) > 0 {
		return session{}, graphQLRefusal(opRefundStatus, status, a.Errors)
	}
	var list []session
	raw := bytes.TrimSpace(a.Data["Session"])
	if len(raw) > 0 && raw[0] == '{' {
		var one session
		if json.Unmarshal(raw, &one) != nil {
			return session{}, &gateway.TransientError{Op: opRefundStatus, HTTPStatus: status, Err: errors.New("the Session field is not a list")}
		}
		list = []session{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return session{}, &gateway.TransientError{Op: opRefundStatus, HTTPStatus: status, Err: errors.New("the Session field is not a list")}
	}
	if len(list) != 1 {
		return session{}, &gateway.TransientError{Op: opRefundStatus, HTTPStatus: status,
			Err: fmt.Errorf("%d sessions with the reference %d", len(list), refID)}
	}
	return list[0], nil
}

// graphQL sends one GraphQL call with the access token. A status that
// says nothing about the call (408, 429, 5xx), no answer, or an answer
// that is not GraphQL's is a *gateway.TransientError.
func (c *Client) graphQL(ctx context.Context, op, query string, vars map[string]any) (int, graphQLAnswer, error) {
	payload, err := json.Marshal(graphQLBody{Query: query, Variables: vars})
	if err != nil {
		return 0, graphQLAnswer{}, fmt.Errorf("encode body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.refund.url, bytes.NewReader(payload))
	if err != nil {
		return 0, graphQLAnswer{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.refund.token)
	start := time.Now()
	status, header, raw, err := wire.Do(c.hc, req)
	if err != nil {
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: err}
		c.logCall(ctx, op, status, 0, start, err)
		return status, graphQLAnswer{}, err
	}
	var a graphQLAnswer
	switch {
	case wire.Retryable(status):
		err = &gateway.TransientError{Op: op, HTTPStatus: status, RetryAfter: wire.RetryAfter(header.Get("Retry-After"), c.now()),
			Err: fmt.Errorf("HTTP %d", status)}
	case json.Unmarshal(raw, &a) != nil || (a.Data == nil && len(a.Errors) == 0):
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: errors.New("the answer is not GraphQL's")}
	case status >= 400 && len(a.Errors) == 0:
		err = &gateway.RejectedError{Op: op, Code: status, Message: fmt.Sprintf("HTTP %d", status)}
	}
	c.logCall(ctx, op, status, 0, start, err)
	return status, a, err
}

// graphQLRefusal reads GraphQL errors: a refusal when the call was
// refused before anything was done (HTTP 4xx, or a validation error),
// else an unknown outcome.
func graphQLRefusal(op string, status int, errs []graphQLError) error {
	msgs := make([]string, 0, len(errs))
	validation := true
	for _, e := range errs {
		msgs = append(msgs, e.Message)
		if !strings.EqualFold(e.Extensions.Category, "validation") {
			validation = false
		}
	}
	msg := wire.Clean(strings.Join(msgs, "; "), 300)
	if status >= 400 || validation {
		return &gateway.RejectedError{Op: op, Code: status, Message: msg}
	}
	return &gateway.TransientError{Op: op, HTTPStatus: status, Err: errors.New(msg)}
}
