package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/usertext"
	"github.com/kifpool/kifpool/internal/webhook"
)

// HeaderIdempotencyKey and HeaderReplayed are the idempotency headers.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
	maxDescriptionLen    = 255
	// gatewayRetryAfterSeconds is Retry-After on a gateway_unavailable
	// problem: the breaker lets a trial call through after its open
	// time-out (BREAKER_OPEN_TIMEOUT, 20 s by default).
	gatewayRetryAfterSeconds = 10
)

// TopUp is a top-up as the API shows it; webhook events carry the same
// view (topup.TopUpView, one type for both).
type TopUp = topup.TopUpView

func (h *handler) topUpView(it topupread.Item) TopUp {
	v := topup.ViewOf(it.TopUp, it.CreditedAt, func(string) string { return h.TopUps.PayURL(it.TopUp) })
	if v.PaymentURL == nil {
		return v
	}
	if f := h.TopUps.PayForm(it.TopUp); f != nil {
		// The bank page opens by POST only: the form to post; the URL
		// only where the gateway also has a link (SEP).
		v.PaymentForm = &topup.PaymentForm{Action: f.Action, Fields: map[string]string{}}
		for _, fl := range f.Fields {
			v.PaymentForm.Fields[fl.Name] = fl.Value
		}
		if *v.PaymentURL == "" {
			v.PaymentURL = nil
		}
	}
	return v
}

type topUpRequest struct {
	AmountRials *int64  `json:"amount_rials"`
	Description *string `json:"description"`
	// Gateway is the caller's choice of gateway (a driver's name); nil:
	// the first offered.
	Gateway   *string `json:"gateway"`
	ReturnURL *string `json:"return_url"`
}

// errBody is a body that is not one well-formed top-up request.
var errBody = errors.New("invalid top-up body")

// parseTopUpRequest reads a top-up body strictly: one JSON object, its
// names exactly amount_rials, description, gateway and return_url (Go's JSON reader would match
// "AMOUNT_RIALS" too, and keep the last of repeated names), each at most
// once, amount_rials an integer, description a string; nothing after the
// object. What it returns is the whole meaning of the body: the
// idempotency fingerprint is taken over it.
func parseTopUpRequest(body []byte) (topUpRequest, error) {
	var in topUpRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return in, errBody
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return in, errBody
		}
		name, _ := tok.(string)
		if seen[name] {
			return in, errBody
		}
		seen[name] = true
		switch name {
		case "amount_rials":
			// A JSON number written as a whole number, not a string
			// holding one (as json.Number would take); null: absent.
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return in, errBody
			}
			if string(raw) != "null" {
				v, err := strconv.ParseInt(string(raw), 10, 64)
				if err != nil {
					return in, errBody
				}
				in.AmountRials = &v
			}
		case "description":
			var d *string // null: absent
			if err := dec.Decode(&d); err != nil {
				return in, errBody
			}
			in.Description = d
		case "gateway":
			var g *string // null: absent
			if err := dec.Decode(&g); err != nil {
				return in, errBody
			}
			in.Gateway = g
		case "return_url":
			var u *string // null: absent
			if err := dec.Decode(&u); err != nil {
				return in, errBody
			}
			in.ReturnURL = u
		default:
			return in, errBody
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return in, errBody
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return in, errBody
	}
	return in, nil
}

// fingerprint identifies the request for its Idempotency-Key.
func (in topUpRequest) fingerprint(method, path string) string {
	parts := []idempotency.Field{idempotency.Int("amount_rials", in.AmountRials), idempotency.String("description", in.Description)}
	if in.Gateway != nil {
		// Only when given: a request without it keeps the fingerprint it
		// always had.
		parts = append(parts, idempotency.String("gateway", in.Gateway))
	}
	if in.ReturnURL != nil {
		parts = append(parts, idempotency.String("return_url", in.ReturnURL))
	}
	return idempotency.Fingerprint(method, path, parts...)
}

// createTopUp is POST /api/v1/topups. Order: authentication, scope and
// the rate limit (middleware), the key's shape, the body, the amount —
// none of which stores anything — then the key decides between running
// the request, replaying the stored answer, or refusing (in use,
// reused). Only answers given after the payment row may exist are stored.
func (h *handler) createTopUp(c *fiber.Ctx) error {
	ctx := topup.ReadSwitchesOnce(c.UserContext()) // the gateway check and Start: one read
	key := c.Get(HeaderIdempotencyKey)
	switch err := idempotency.CheckKey(key); {
	case errors.Is(err, idempotency.ErrKeyMissing):
		return problem(c, CodeKeyMissing, "POST needs an Idempotency-Key header (e.g. a UUID); send the same key when you retry.")
	case err != nil:
		return problem(c, CodeKeyInvalid, "An Idempotency-Key is 1 to 255 visible ASCII characters.")
	}
	if len(c.Request().Header.PeekAll(HeaderIdempotencyKey)) > 1 {
		// Which one would a proxy, a retry library, or we keep? Refuse.
		return problem(c, CodeKeyInvalid, "Send one Idempotency-Key header, not several.")
	}
	in, err := parseTopUpRequest(c.Body())
	if err != nil {
		return problem(c, CodeInvalidBody, "The body must be one JSON object with amount_rials (an integer) and optionally description, gateway and return_url (strings), each once, names in lower case.")
	}
	// The route's path, not the request's: "/api/v1/topups/" is the same
	// endpoint. The fingerprint is over the parsed request, not its bytes.
	path := c.Route().Path
	fp := in.fingerprint(c.Method(), path)
	if in.AmountRials == nil {
		return problem(c, CodeAmountInvalid, "amount_rials must be a positive integer number of rials.")
	}
	// The same rules as the form's, checked before the key is taken (a
	// refusal stores nothing); Start applies them again. Those that can
	// change (the limits, the gateways offered, the return origins) refuse
	// through unlessAnswered: the retry of a top-up made before the change
	// is answered with it.
	if _, err := h.TopUp.Amount(topup.Rials(*in.AmountRials)); err != nil {
		return h.unlessAnswered(c, fp, func() error { return amountProblem(c, err, h.TopUp.Limits()) })
	}
	if in.Description != nil && utf8.RuneCountInString(*in.Description) > maxDescriptionLen {
		return problem(c, CodeDescriptionTooLong, "description is at most 255 characters.")
	}
	if in.Description != nil && usertext.CheckName(*in.Description) != nil {
		return problem(c, CodeDescriptionInvalid, "description must not hold control characters or invisible formatting characters (bidi overrides and isolates, zero-width characters).")
	}
	gw := ""
	if in.Gateway != nil {
		gw = *in.Gateway
		offers, err := h.TopUps.Offered(ctx)
		if err != nil {
			return err
		}
		if _, err := topup.PickGateway(offers, gw); gw == "" || errors.Is(err, topup.ErrUnknownGateway) {
			return h.unlessAnswered(c, fp, func() error {
				return problem(c, CodeGatewayUnknown, "gateway must be one of the gateways offered: "+offeredNames(offers)+".")
			})
		}
	}

	p := principal(c)
	returnURL := ""
	if in.ReturnURL != nil {
		// Only an origin the token's owner registered at /account/webhooks:
		// never an open redirect. Checked before the key is taken.
		u, err := "", webhook.ErrReturnURLNotAllowed
		if h.Webhooks != nil {
			u, err = h.Webhooks.CheckReturnURL(ctx, p.UserID, *in.ReturnURL)
		}
		if errors.Is(err, webhook.ErrReturnURLNotAllowed) {
			return h.unlessAnswered(c, fp, func() error {
				return problem(c, CodeReturnURL, "return_url must be an absolute URL on an origin (scheme, host and port) registered at /account/webhooks.")
			})
		}
		if err != nil {
			return err
		}
		returnURL = u
	}
	out, rec, err := h.Keys.Begin(ctx, idempotency.Request{UserID: p.UserID, Key: key, Method: c.Method(), Path: path, Fingerprint: fp})
	if err != nil {
		return err
	}
	if answered, err := answerKey(c, out, rec); answered {
		return err
	}
	desc := ""
	if in.Description != nil {
		desc = *in.Description
	}
	return h.runTopUp(c, rec, p.UserID, p.Email, *in.AmountRials, desc, gw, returnURL)
}

func offeredNames(offers []topup.GatewayOffer) string {
	names := make([]string, len(offers))
	for i, o := range offers {
		names[i] = o.Name
	}
	return strings.Join(names, ", ")
}

// amountProblem answers a refusal by the amount rules.
func amountProblem(c *fiber.Ctx, err error, l money.Limits) error {
	switch {
	case errors.Is(err, money.ErrNotWholeTomans):
		return problem(c, CodeAmountInvalid, "amount_rials must be whole tomans (a multiple of 10 rials).")
	case errors.Is(err, money.ErrTooSmall):
		return problem(c, CodeAmountTooSmall, "amount_rials must be at least "+itoa(l.MinRials)+".")
	case errors.Is(err, money.ErrTooLarge):
		return problem(c, CodeAmountTooLarge, "amount_rials must be at most "+itoa(l.MaxRials)+".")
	}
	return problem(c, CodeAmountInvalid, "amount_rials must be a positive integer number of rials.")
}

// runTopUp creates the payment under an acquired key, through the same
// use case, limits and breaker as the form; the payment's form token is
// derived from the key's record, so the payments' unique (user_id,
// form_token) index guards the API too, and a retry that takes over a
// key whose request died finds the payment that request made.
func (h *handler) runTopUp(c *fiber.Ctx, rec idempotency.Record, userID int64, email string, amount int64, description, gw, returnURL string) error {
	ctx := c.UserContext()
	res, err := h.TopUp.Start(ctx, topup.Request{
		UserID: userID, Email: email, FormToken: h.Keys.FormToken(rec), Amount: topup.Rials(amount), Description: description,
		Gateway: gw, ReturnURL: returnURL,
	})
	var exceeded *limits.Exceeded
	switch {
	case errors.As(err, &exceeded):
		// Refused before anything was written: forget the key (the same
		// key works once the limit allows it).
		if derr := h.Keys.Discard(ctx, rec); derr != nil {
			h.Log.Error("discard idempotency key", "err", derr)
		}
		switch exceeded.Kind {
		case limits.KindDailyCount:
			return problem(c, CodeDailyLimit, "At most "+itoa(exceeded.Limit)+" top-ups a day (Tehran time); try again tomorrow.")
		case limits.KindDailyAmount:
			return problem(c, CodeDailyLimit, "At most "+itoa(exceeded.Limit)+" rials of top-ups a day (Tehran time); "+itoa(exceeded.Left)+" rials are left today.")
		case limits.KindWaiting:
			return problem(c, CodeWaitingLimit, "At most "+itoa(exceeded.Limit)+" top-ups may wait for payment at once; pay one, or try again when one has ended.")
		}
		return problem(c, CodeBalanceLimit, "A wallet may hold at most "+itoa(exceeded.Limit)+" rials (open payments included); at most "+itoa(exceeded.Left)+" rials more.")
	case errors.Is(err, topup.ErrNoWallet):
		// Nothing happened: forget the key, the client may retry.
		if derr := h.Keys.Discard(ctx, rec); derr != nil {
			h.Log.Error("discard idempotency key", "err", derr)
		}
		return err
	case errors.Is(err, topup.ErrGatewayFailed) && res.TopUp.ID != 0:
		// The payment row exists and failed: that is this key's answer,
		// stored and replayed (a new attempt needs a new key).
		pr := newProblem(CodeGatewayFailed, "The bank did not start the payment and no money was taken. Try again later with a new Idempotency-Key.")
		pr.TopUpID = res.TopUp.PublicID
		return h.finish(c, rec, pr.Status, MIMEProblem, pr.bytes(), &res.TopUp.ID)
	case errors.Is(err, topup.ErrUnknownGateway):
		// Switched off between the check and the start: nothing written.
		if derr := h.Keys.Discard(ctx, rec); derr != nil {
			h.Log.Error("discard idempotency key", "err", derr)
		}
		return problem(c, CodeGatewayUnknown, "gateway is not offered right now; choose another or leave it out.")
	case errors.Is(err, topup.ErrGatewayFailed):
		// Refused before anything was written (the gateway's breaker is
		// open): nothing happened under this key, so it is forgotten and
		// a retry with it after Retry-After starts the top-up.
		if derr := h.Keys.Discard(ctx, rec); derr != nil {
			h.Log.Error("discard idempotency key", "err", derr)
		}
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(gatewayRetryAfterSeconds))
		return problem(c, CodeGatewayUnavailable, "The bank is unavailable right now and no payment was started; retry after the Retry-After seconds with the same Idempotency-Key.")
	case errors.Is(err, topup.ErrStillProcessing):
		h.release(ctx, rec)
		c.Set(fiber.HeaderRetryAfter, "1")
		return problem(c, CodeKeyInUse, "The first request with this Idempotency-Key is still running; retry with the same key.")
	case err != nil:
		// The payment may exist: keep the key (without an answer) so that
		// a retry with it finds that payment instead of making another.
		h.release(ctx, rec)
		return err
	}
	it, err := h.Reads.TopUp(ctx, userID, res.TopUp.PublicID)
	if err != nil {
		h.release(ctx, rec)
		return err
	}
	body, err := json.Marshal(h.topUpView(it))
	if err != nil {
		h.release(ctx, rec)
		return err
	}
	return h.finish(c, rec, fiber.StatusCreated, fiber.MIMEApplicationJSON, body, &res.TopUp.ID)
}

// finish stores the answer under the key, then sends it. If storing
// fails, the answer is still sent; the key stays leased and unanswered,
// and a retry after the lease finds the payment through its form token.
func (h *handler) finish(c *fiber.Ctx, rec idempotency.Record, status int, contentType string, body []byte, topUpID *int64) error {
	if _, err := h.Keys.Finish(c.UserContext(), rec, status, contentType, body, topUpID); err != nil {
		h.Log.Error("store idempotent response", "err", err)
	}
	return send(c, status, contentType, body)
}

func (h *handler) release(ctx context.Context, rec idempotency.Record) {
	if err := h.Keys.Release(ctx, rec); err != nil {
		h.Log.Error("release idempotency key", "err", err)
	}
}

// getTopUp is GET /api/v1/topups/{id}: the owner's payment, else 404.
func (h *handler) getTopUp(c *fiber.Ctx) error {
	it, err := h.Reads.TopUp(c.UserContext(), principal(c).UserID, c.Params("id"))
	if errors.Is(err, topupread.ErrNotFound) {
		return problem(c, CodeNotFound, "No top-up with this id.")
	}
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, h.topUpView(it))
}

// TopUpPage is a page of top-ups.
type TopUpPage struct {
	Items      []TopUp `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// listTopUps is GET /api/v1/topups: newest first, keyset paginated.
func (h *handler) listTopUps(c *fiber.Ctx) error {
	before, limit, detail := cursorParams(c)
	if detail != "" {
		return problem(c, CodeInvalidParameter, detail)
	}
	items, next, err := h.Reads.TopUps(c.UserContext(), principal(c).UserID, before, limit)
	if err != nil {
		return err
	}
	page := TopUpPage{Items: []TopUp{}, NextCursor: cursorString(next)}
	for _, it := range items {
		page.Items = append(page.Items, h.topUpView(it))
	}
	return sendJSON(c, fiber.StatusOK, page)
}
