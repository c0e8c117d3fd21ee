package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Charge is a charge as the API shows it; its webhook events carry the
// same view (charge.View, one type for both).
type Charge = charge.View

// ChargePage is a page of charges.
type ChargePage struct {
	Items      []Charge `json:"items"`
	NextCursor *string  `json:"next_cursor"`
}

// ChargeRefund is a refund as POST /api/v1/charges/{id}/refunds answers
// it: the refund, and the charge after it.
type ChargeRefund struct {
	charge.RefundView
	Charge Charge `json:"charge"`
}

// jsonFields is a strictly read JSON object: each name at most once, the
// integers written as integers, the strings as strings (null: absent).
type jsonFields struct {
	ints map[string]*int64
	strs map[string]*string
}

// parseFields reads body as one JSON object whose names are among ints
// (integers) and strs (strings); an empty body is an empty object when
// emptyOK.
func parseFields(body []byte, emptyOK bool, ints, strs []string) (jsonFields, error) {
	f := jsonFields{ints: map[string]*int64{}, strs: map[string]*string{}}
	if emptyOK && len(bytes.TrimSpace(body)) == 0 {
		return f, nil
	}
	kind := map[string]byte{}
	for _, n := range ints {
		kind[n] = 'i'
	}
	for _, n := range strs {
		kind[n] = 's'
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return f, errBody
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return f, errBody
		}
		name, _ := tok.(string)
		if seen[name] {
			return f, errBody
		}
		seen[name] = true
		switch kind[name] {
		case 'i':
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return f, errBody
			}
			if string(raw) != "null" {
				v, err := strconv.ParseInt(string(raw), 10, 64)
				if err != nil {
					return f, errBody
				}
				f.ints[name] = &v
			}
		case 's':
			var v *string
			if err := dec.Decode(&v); err != nil {
				return f, errBody
			}
			if v != nil {
				f.strs[name] = v
			}
		default:
			return f, errBody
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return f, errBody
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return f, errBody
	}
	return f, nil
}

func (f jsonFields) str(name string) string {
	if v := f.strs[name]; v != nil {
		return *v
	}
	return ""
}

// fingerprint is the request's identity for its Idempotency-Key: the
// method, the route, the charge's id and the fields.
func (f jsonFields) fingerprint(method, path, id string, ints, strs []string) string {
	fields := []idempotency.Field{idempotency.String("id", &id)}
	for _, n := range ints {
		fields = append(fields, idempotency.Int(n, f.ints[n]))
	}
	for _, n := range strs {
		fields = append(fields, idempotency.String(n, f.strs[n]))
	}
	return idempotency.Fingerprint(method, path, fields...)
}

// keyed runs a POST under its Idempotency-Key: the key's shape (required
// unless optional, then a request without one simply runs), its record
// (a replay answers with the first answer; in use, reused: refused), then
// run, whose answer is stored. run answers (status, body) for a result to
// store, or a problem to send whose key is forgotten (refused, nothing
// written: refused true), or an error (the key kept without an answer).
func (h *handler) keyed(c *fiber.Ctx, optional bool, fp string,
	run func(token string) (status int, body any, refused func() error, err error)) error {
	ctx := c.UserContext()
	key := c.Get(HeaderIdempotencyKey)
	if key == "" && optional {
		status, body, refused, err := run("")
		if err != nil {
			return err
		}
		if refused != nil {
			return refused()
		}
		return sendJSON(c, status, body)
	}
	switch err := idempotency.CheckKey(key); {
	case errors.Is(err, idempotency.ErrKeyMissing):
		return problem(c, CodeKeyMissing, "POST needs an Idempotency-Key header (e.g. a UUID); send the same key when you retry.")
	case err != nil:
		return problem(c, CodeKeyInvalid, "An Idempotency-Key is 1 to 255 visible ASCII characters.")
	}
	if len(c.Request().Header.PeekAll(HeaderIdempotencyKey)) > 1 {
		return problem(c, CodeKeyInvalid, "Send one Idempotency-Key header, not several.")
	}
	p := principal(c)
	out, rec, err := h.Keys.Begin(ctx, idempotency.Request{UserID: p.UserID, Key: key, Method: c.Method(), Path: c.Route().Path, Fingerprint: fp})
	if err != nil {
		return err
	}
	if answered, err := answerKey(c, out, rec); answered {
		return err
	}
	status, body, refused, err := run(h.Keys.FormToken(rec))
	if err != nil {
		h.release(ctx, rec)
		return err
	}
	if refused != nil {
		if derr := h.Keys.Discard(ctx, rec); derr != nil {
			h.Log.Error("discard idempotency key", "err", derr)
		}
		return refused()
	}
	b, err := json.Marshal(body)
	if err != nil {
		h.release(ctx, rec)
		return err
	}
	return h.finish(c, rec, status, fiber.MIMEApplicationJSON, b, nil)
}

// answerKey answers a request whose key's record decides it (Begin's or
// Lookup's outcome): the stored answer replayed, "in use" or "reused"
// (answered true); Acquired is the caller's to run.
func answerKey(c *fiber.Ctx, out idempotency.Outcome, rec idempotency.Record) (answered bool, err error) {
	switch out {
	case idempotency.Replay:
		c.Set(HeaderReplayed, "true")
		return true, send(c, *rec.ResponseStatus, rec.ResponseType, []byte(*rec.ResponseBody))
	case idempotency.InUse:
		c.Set(fiber.HeaderRetryAfter, "1")
		return true, problem(c, CodeKeyInUse, "The first request with this Idempotency-Key is still running; retry with the same key.")
	case idempotency.Mismatch:
		return true, problem(c, CodeKeyReused, "This Idempotency-Key was used for another request (method, path or body differ); use a new key for a new request.")
	}
	return false, nil
}

// unlessAnswered answers a request refused before its key is taken, by a
// rule that may have changed since the key's first request (a limit, a
// gateway switched off, a return origin removed, withdrawals turned off):
// a key that already holds an answer, or is in use or reused, is
// answered as Begin would (a retry of a request that was made gets its
// first answer, never a refusal that says nothing was made), and one
// whose first request died unanswered is "in use" (what it made cannot
// be told here); otherwise the refusal. The read is only on the way to a
// refusal.
func (h *handler) unlessAnswered(c *fiber.Ctx, fp string, refusal func() error) error {
	key := c.Get(HeaderIdempotencyKey)
	if idempotency.CheckKey(key) != nil || len(c.Request().Header.PeekAll(HeaderIdempotencyKey)) > 1 {
		return refusal()
	}
	out, rec, found, err := h.Keys.Lookup(c.UserContext(), idempotency.Request{UserID: principal(c).UserID, Key: key, Method: c.Method(), Path: c.Route().Path, Fingerprint: fp})
	if err != nil {
		return err
	}
	if found {
		if answered, err := answerKey(c, out, rec); answered {
			return err
		}
		// Its first request died, or failed, unanswered (Acquired): what
		// it asked for may exist, and only the use case, through the key's
		// form token, could say. A refusal now could make the client ask
		// again under a new key: "in use" (retry later) instead, until the
		// rule allows the request and Begin takes the key over, its use
		// case then answering with what the first one made.
		c.Set(fiber.HeaderRetryAfter, "60")
		return problem(c, CodeKeyInUse, "The first request with this Idempotency-Key did not finish, and what it asked for may exist; it cannot be settled now. Retry later with the same key.")
	}
	return refusal()
}

// merchant is the caller as a merchant, or a problem sent (ok false).
func (h *handler) merchant(c *fiber.Ctx) (charge.Merchant, bool, error) {
	m, err := h.Charges.Merchant(c.UserContext(), principal(c).UserID)
	if errors.Is(err, charge.ErrNotMerchant) {
		return m, false, problem(c, CodeNotMerchant, "Only a merchant takes charges; ask Kifpool to make your account a merchant.")
	}
	if err != nil {
		return m, false, err
	}
	return m, true, nil
}

var (
	createChargeInts = []string{"amount_rials"}
	createChargeStrs = []string{"description", "order_id", "return_url", "capture"}
	amountInts       = []string{"amount_rials"}
)

// createCharge is POST /api/v1/charges: the merchant's charge, waiting
// for its payer at checkout_url. The rules that need no database come
// first (a refusal stores nothing), then the key; the charge's token is
// derived from the key's record, so the charges' unique (merchant, token)
// guards the API too, and (merchant, order_id) refuses a second charge of
// one order.
func (h *handler) createCharge(c *fiber.Ctx) error {
	f, err := parseFields(c.Body(), false, createChargeInts, createChargeStrs)
	if err != nil {
		return problem(c, CodeInvalidBody, "The body must be one JSON object with amount_rials (an integer), order_id (a string), and optionally description, return_url and capture (\"automatic\" or \"manual\"), each once.")
	}
	m, ok, err := h.merchant(c)
	if !ok {
		return err
	}
	r := charge.CreateRequest{MerchantUserID: m.UserID, Description: f.str("description"), OrderID: f.str("order_id"),
		Capture: charge.CaptureMethod(f.str("capture"))}
	if r.Capture == "" {
		r.Capture = charge.CaptureAutomatic
	}
	if f.ints["amount_rials"] == nil {
		return problem(c, CodeAmountInvalid, "amount_rials must be a positive integer number of rials.")
	}
	r.AmountRials = *f.ints["amount_rials"]
	if err := r.Check(); err != nil {
		return h.chargeProblem(c, err)
	}
	fp := f.fingerprint(c.Method(), c.Route().Path, "", createChargeInts, createChargeStrs)
	if raw := f.str("return_url"); raw != "" {
		u, err := h.Webhooks.CheckReturnURL(c.UserContext(), m.UserID, raw)
		if errors.Is(err, webhook.ErrReturnURLNotAllowed) {
			// The origin may have been removed since this key's charge.
			return h.unlessAnswered(c, fp, func() error {
				return problem(c, CodeReturnURL, "return_url must be an absolute URL on one of your registered return origins (/account/webhooks).")
			})
		}
		if err != nil {
			return err
		}
		r.ReturnURL = u
	}
	return h.keyed(c, false, fp, func(token string) (int, any, func() error, error) {
		r.FormToken = token
		res, err := h.Charges.Create(c.UserContext(), r)
		switch {
		case errors.Is(err, charge.ErrOrderIDTaken):
			return h.chargeRefusal(c, err)
		case err != nil:
			return 0, nil, nil, err
		}
		return fiber.StatusCreated, h.Charges.View(res.Charge), nil, nil
	})
}

// getCharge is GET /api/v1/charges/{id}: one of the caller's charges
// (as merchant), with its refunds.
func (h *handler) getCharge(c *fiber.Ctx) error {
	ch, err := h.Charges.Get(c.UserContext(), principal(c).UserID, c.Params("id"))
	if errors.Is(err, charge.ErrNotFound) {
		return problem(c, CodeNotFound, "No charge of yours has this id.")
	}
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, h.Charges.View(ch))
}

// listCharges is GET /api/v1/charges: the caller's charges (as
// merchant), newest first, by ?status=, keyset paginated.
func (h *handler) listCharges(c *fiber.Ctx) error {
	before, limit, detail := cursorParams(c)
	if detail != "" {
		return problem(c, CodeInvalidParameter, detail)
	}
	st := charge.Status(c.Query("status"))
	if st != "" && !st.Valid() {
		return problem(c, CodeInvalidParameter, "status must be one of requires_confirmation, authorized, succeeded, canceled, expired.")
	}
	cs, next, err := h.Charges.List(c.UserContext(), charge.Filter{MerchantUserID: principal(c).UserID, Status: st, Before: before, Limit: limit})
	if err != nil {
		return err
	}
	page := ChargePage{Items: []Charge{}, NextCursor: cursorString(next)}
	for _, ch := range cs {
		page.Items = append(page.Items, h.Charges.View(ch))
	}
	return sendJSON(c, fiber.StatusOK, page)
}

// captureCharge is POST /api/v1/charges/{id}/capture {amount_rials}: an
// authorized charge captured once (amount_rials absent: all of it), the
// rest released; a second capture of the amount captured answers with the
// charge as captured, of another amount it is refused (409).
// An Idempotency-Key is optional.
func (h *handler) captureCharge(c *fiber.Ctx) error {
	f, err := parseFields(c.Body(), true, amountInts, nil)
	if err != nil {
		return problem(c, CodeInvalidBody, "The body must be empty or one JSON object with amount_rials (an integer).")
	}
	if _, ok, err := h.merchant(c); !ok {
		return err
	}
	id := c.Params("id")
	uid := principal(c).UserID
	fp := f.fingerprint(c.Method(), c.Route().Path, id, amountInts, nil)
	return h.keyed(c, true, fp, func(string) (int, any, func() error, error) {
		amount := int64(0)
		if v := f.ints["amount_rials"]; v != nil {
			amount = *v
		} else {
			ch, err := h.Charges.Get(c.UserContext(), uid, id)
			if err != nil {
				return h.chargeRefusal(c, err)
			}
			amount = ch.AmountRials
		}
		res, err := h.Charges.Capture(c.UserContext(), uid, id, amount)
		if err != nil {
			return h.chargeRefusal(c, err)
		}
		return fiber.StatusOK, h.Charges.View(res.Charge), nil, nil
	})
}

// cancelCharge is POST /api/v1/charges/{id}/cancel: a checkout or an
// authorization canceled once (its hold released); a second cancel
// answers with the charge as canceled. An Idempotency-Key is optional.
func (h *handler) cancelCharge(c *fiber.Ctx) error {
	f, err := parseFields(c.Body(), true, nil, nil)
	if err != nil {
		return problem(c, CodeInvalidBody, "The body must be empty or an empty JSON object.")
	}
	if _, ok, err := h.merchant(c); !ok {
		return err
	}
	id := c.Params("id")
	uid := principal(c).UserID
	fp := f.fingerprint(c.Method(), c.Route().Path, id, nil, nil)
	return h.keyed(c, true, fp, func(string) (int, any, func() error, error) {
		res, err := h.Charges.Cancel(c.UserContext(), uid, id)
		if err != nil {
			return h.chargeRefusal(c, err)
		}
		return fiber.StatusOK, h.Charges.View(res.Charge), nil, nil
	})
}

// refundCharge is POST /api/v1/charges/{id}/refunds {amount_rials}, with
// an Idempotency-Key: part or all of what is left of a succeeded charge
// given back to its payer's wallet from the merchant's balance.
func (h *handler) refundCharge(c *fiber.Ctx) error {
	f, err := parseFields(c.Body(), false, amountInts, nil)
	if err != nil {
		return problem(c, CodeInvalidBody, "The body must be one JSON object with amount_rials (an integer).")
	}
	if _, ok, err := h.merchant(c); !ok {
		return err
	}
	if v := f.ints["amount_rials"]; v == nil || *v <= 0 || *v > charge.MaxRials {
		return problem(c, CodeAmountInvalid, "amount_rials must be a positive integer number of rials.")
	}
	id := c.Params("id")
	uid := principal(c).UserID
	fp := f.fingerprint(c.Method(), c.Route().Path, id, amountInts, nil)
	return h.keyed(c, false, fp, func(token string) (int, any, func() error, error) {
		res, err := h.Charges.Refund(c.UserContext(), charge.RefundRequest{MerchantUserID: uid, ChargeID: id, FormToken: token,
			AmountRials: *f.ints["amount_rials"]})
		if err != nil {
			return h.chargeRefusal(c, err)
		}
		return fiber.StatusCreated, ChargeRefund{RefundView: charge.RefundViewOf(res.Refund, res.Charge.PublicID),
			Charge: h.Charges.View(res.Charge)}, nil, nil
	})
}

// chargeRefusal turns a use case's refusal into a problem to send (the
// key forgotten), or passes an error on.
func (h *handler) chargeRefusal(c *fiber.Ctx, err error) (int, any, func() error, error) {
	if chargeCode(err) == "" {
		return 0, nil, nil, err
	}
	return 0, nil, func() error { return h.chargeProblem(c, err) }, nil
}

// chargeCode is the problem code of a charge's refusal ("" for an error).
func chargeCode(err error) Code {
	for _, m := range []struct {
		err  error
		code Code
	}{
		{charge.ErrNotFound, CodeNotFound},
		{charge.ErrNotMerchant, CodeNotMerchant},
		{charge.ErrOrderIDTaken, CodeOrderIDTaken},
		{charge.ErrBadAmount, CodeAmountInvalid},
		{charge.ErrBadCapture, CodeCaptureInvalid},
		{charge.ErrBadOrderID, CodeOrderIDInvalid},
		{charge.ErrBadDescription, CodeDescriptionInvalid},
		{charge.ErrInsufficientFunds, CodeInsufficientFunds},
		{charge.ErrExpired, CodeChargeExpired},
		{charge.ErrCanceled, CodeChargeCanceled},
		{charge.ErrNotCapturable, CodeChargeNotCapturable},
		{charge.ErrNotCancelable, CodeChargeNotCancelable},
		{charge.ErrNotRefundable, CodeChargeNotRefundable},
		{charge.ErrRefundExceeds, CodeRefundExceeds},
		// The key's form token made another charge or refund: the key's
		// own fingerprint refuses that first, so this is a last guard.
		{charge.ErrTokenReused, CodeKeyReused},
	} {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return ""
}

// chargeProblem answers a charge's refusal.
func (h *handler) chargeProblem(c *fiber.Ctx, err error) error {
	detail := map[Code]string{
		CodeNotFound:            "No charge of yours has this id.",
		CodeNotMerchant:         "Only a merchant takes charges.",
		CodeOrderIDTaken:        "You have a charge with this order_id already; use a new order_id for a new order.",
		CodeAmountInvalid:       "amount_rials must be a positive integer number of rials, a capture at most the charge's amount.",
		CodeCaptureInvalid:      "capture must be \"automatic\" or \"manual\".",
		CodeOrderIDInvalid:      "order_id must be 1 to 100 characters, without control or invisible characters, and with no space at either end.",
		CodeDescriptionInvalid:  "description must be at most 500 characters, without control or invisible characters.",
		CodeInsufficientFunds:   "Your merchant balance is less than amount_rials; nothing was refunded.",
		CodeChargeExpired:       "The charge expired (its checkout was not confirmed in time, or its authorization was not captured in time).",
		CodeChargeCanceled:      "The charge was canceled.",
		CodeChargeNotCapturable: "Only an authorized charge (capture \"manual\", confirmed by its payer) is captured; a charge captured already answers only a capture of the amount it was captured for.",
		CodeChargeNotCancelable: "A charge that succeeded is refunded, not canceled.",
		CodeChargeNotRefundable: "Only a charge that succeeded is refunded.",
		CodeRefundExceeds:       "The refunds of a charge add up to at most what was captured (captured_rials − refunded_rials is left).",
		CodeKeyReused:           "This Idempotency-Key was used for another request; use a new key for a new one.",
	}
	code := chargeCode(err)
	if code == "" {
		return err
	}
	return problem(c, code, detail[code])
}
