package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/transfer"
)

// Transfer is a transfer as the API shows it; its webhook events carry
// the same view (transfer.View, one type for both).
type Transfer = transfer.View

// TransferPage is a page of transfers.
type TransferPage struct {
	Items      []Transfer `json:"items"`
	NextCursor *string    `json:"next_cursor"`
}

type transferRequest struct {
	ToEmail     *string
	AmountRials *int64
	Note        *string
}

// parseTransferRequest reads a transfer body strictly, as
// parseTopUpRequest reads a top-up's: one JSON object, its names exactly
// to_email, amount_rials and note, each at most once, amount_rials an
// integer written as one, the others strings (null: absent).
func parseTransferRequest(body []byte) (transferRequest, error) {
	var in transferRequest
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
		case "to_email":
			if err := dec.Decode(&in.ToEmail); err != nil {
				return in, errBody
			}
		case "note":
			if err := dec.Decode(&in.Note); err != nil {
				return in, errBody
			}
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

func (in transferRequest) fingerprint(method, path string) string {
	return idempotency.Fingerprint(method, path, idempotency.String("to_email", in.ToEmail),
		idempotency.Int("amount_rials", in.AmountRials), idempotency.String("note", in.Note))
}

// createTransfer is POST /api/v1/transfers, in the order of createTopUp:
// the key's shape, the body and its rules (nothing stored), then the use
// case (transfer.Service.SendKeyed) decides between replaying, refusing
// (in use, reused) and running, where the key's record, the transfer and
// the stored answer are one database transaction. The transfer's form
// token is derived from the key's record, so the transfers' unique
// (sender, form token) index guards the API too.
func (h *handler) createTransfer(c *fiber.Ctx) error {
	ctx := c.UserContext()
	key := c.Get(HeaderIdempotencyKey)
	switch err := idempotency.CheckKey(key); {
	case errors.Is(err, idempotency.ErrKeyMissing):
		return problem(c, CodeKeyMissing, "POST needs an Idempotency-Key header (e.g. a UUID); send the same key when you retry.")
	case err != nil:
		return problem(c, CodeKeyInvalid, "An Idempotency-Key is 1 to 255 visible ASCII characters.")
	}
	if len(c.Request().Header.PeekAll(HeaderIdempotencyKey)) > 1 {
		return problem(c, CodeKeyInvalid, "Send one Idempotency-Key header, not several.")
	}
	in, err := parseTransferRequest(c.Body())
	if err != nil {
		return problem(c, CodeInvalidBody, "The body must be one JSON object with to_email (a string), amount_rials (an integer) and optionally note (a string), each once, names in lower case.")
	}
	path := c.Route().Path
	fp := in.fingerprint(c.Method(), path)
	if in.ToEmail == nil {
		return problem(c, CodeRecipientNotFound, "to_email must be the e-mail address of a Kifpool user.")
	}
	if in.AmountRials == nil {
		return problem(c, CodeAmountInvalid, "amount_rials must be a positive integer number of rials.")
	}
	note := ""
	if in.Note != nil {
		note = *in.Note
	}
	p := principal(c)
	r := transfer.Request{SenderUserID: p.UserID, ToEmail: *in.ToEmail, AmountRials: *in.AmountRials, Note: note}
	// The amount's and the note's rules are SendKeyed's, after the key's
	// lookup: a retry of a transfer made before the operator raised
	// TRANSFER_MIN_RIALS is answered with that transfer, not refused (a
	// refusal says nothing was sent, and the client would pay again).
	// Whether an address has an account must not be asked without end:
	// every transfer reserves a place in the user's allowance of unknown
	// addresses (shared with the page) before any address is looked up, so
	// that requests at once cannot all pass, counted only if its address
	// turned out unknown.
	unknown := false
	if h.UnknownRecipients != nil {
		place, wait, ok := h.UnknownRecipients.Reserve("u" + strconv.FormatInt(p.UserID, 10))
		if !ok {
			// A retry of a transfer made is replayed all the same.
			return h.unlessAnswered(c, fp, func() error {
				return rateLimited(c, h.UnknownRecipients, wait, " transfers an hour to addresses with no account, through the site and every token together; this request made no transfer: retry after the Retry-After seconds with the same Idempotency-Key (an earlier request with it may still be in flight).")
			})
		}
		// Ended however the request ends (a panic too): counted when the
		// address was unknown, given back otherwise.
		defer func() {
			if unknown {
				place.Count()
			} else {
				place.Release()
			}
		}()
	}
	res, err := h.Transfers.SendKeyed(ctx, r, idempotency.Request{UserID: p.UserID, Key: key, Method: c.Method(), Path: path, Fingerprint: fp})
	unknown = errors.Is(err, transfer.ErrRecipientNotFound)
	switch {
	case errors.Is(err, transfer.ErrInsufficientFunds), errors.Is(err, transfer.ErrRecipientNotFound),
		errors.Is(err, transfer.ErrToSelf), errors.Is(err, transfer.ErrDailyLimit), isAmountRule(err),
		errors.Is(err, transfer.ErrSenderUnconfirmed),
		errors.Is(err, transfer.ErrNoteTooLong), errors.Is(err, transfer.ErrNoteInvalid), isPace(err):
		// Refused, nothing written, the key not kept (the same key works
		// once the balance or the limit allows it).
		return h.transferProblem(c, err)
	case err != nil:
		return err
	}
	switch res.Outcome {
	case idempotency.Replay:
		c.Set(HeaderReplayed, "true")
	case idempotency.InUse:
		c.Set(fiber.HeaderRetryAfter, "1")
		return problem(c, CodeKeyInUse, "The first request with this Idempotency-Key is still running; retry with the same key.")
	case idempotency.Mismatch:
		return problem(c, CodeKeyReused, "This Idempotency-Key was used for another request (method, path or body differ); use a new key for a new request.")
	}
	return send(c, res.Answer.Status, res.Answer.ContentType, res.Answer.Body)
}

func isAmountRule(err error) bool {
	for _, e := range []error{money.ErrNotPositive, money.ErrNotWholeTomans, money.ErrTooSmall, money.ErrTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// transferProblem answers a transfer's refusal.
func (h *handler) transferProblem(c *fiber.Ctx, err error) error {
	cfg := h.Transfers.Config()
	switch {
	case errors.Is(err, transfer.ErrInsufficientFunds):
		return problem(c, CodeInsufficientFunds, "The wallet's available balance is less than amount_rials; nothing was sent.")
	case errors.Is(err, transfer.ErrRecipientNotFound):
		return problem(c, CodeRecipientNotFound, "No Kifpool user has the address to_email, or its owner has not confirmed it yet; nothing was sent.")
	case errors.Is(err, transfer.ErrSenderUnconfirmed):
		return unconfirmedProblem(c, "sent")
	case errors.Is(err, transfer.ErrToSelf):
		return problem(c, CodeTransferToSelf, "to_email is your own address: a transfer goes to another person.")
	case errors.Is(err, transfer.ErrDailyLimit):
		return problem(c, CodeDailyLimit, "At most "+itoa(cfg.DailyMaxRials)+" rials of transfers a day (Tehran time); try a smaller amount or tomorrow.")
	case errors.Is(err, transfer.ErrNoteTooLong):
		return problem(c, CodeNoteInvalid, "note is at most 140 characters.")
	case errors.Is(err, transfer.ErrNoteInvalid):
		return problem(c, CodeNoteInvalid, "note is one line: it must not hold line breaks (\\n, \\r, U+2028, U+2029), tabs or other control characters, or invisible formatting characters (bidi overrides and isolates, zero-width characters).")
	}
	var pace *transfer.PaceError
	if errors.As(err, &pace) {
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(max(int64((pace.Wait+time.Second-1)/time.Second), 1), 10))
		// The pace is taken only once the key is this request's (claimed
		// in the transfer's transaction): this request made no transfer.
		// Another with the same key may run after it, so the text asks
		// for the same key, never a new one.
		return problem(c, CodeRateLimited, "At most "+strconv.Itoa(pace.Max)+" transfers a minute, through the site and every token together; this request made no transfer. Retry with the same Idempotency-Key after the Retry-After seconds: if a request with this key is still running or has made its transfer, the retry is answered with it.")
	}
	return amountProblem(c, err, cfg.Limits())
}

// isPace: a transfer refused by the sender's RATE_LIMIT_TRANSFERS.
func isPace(err error) bool {
	var pace *transfer.PaceError
	return errors.As(err, &pace)
}

// getTransfer is GET /api/v1/transfers/{id}: one the caller sent or
// received, else 404.
func (h *handler) getTransfer(c *fiber.Ctx) error {
	uid := principal(c).UserID
	t, err := h.Transfers.Get(c.UserContext(), uid, c.Params("id"))
	if errors.Is(err, transfer.ErrNotFound) {
		return problem(c, CodeNotFound, "No transfer with this id.")
	}
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, transfer.EventView(t, uid))
}

// listTransfers is GET /api/v1/transfers: sent and received, newest
// first, keyset paginated.
func (h *handler) listTransfers(c *fiber.Ctx) error {
	before, limit, detail := cursorParams(c)
	if detail != "" {
		return problem(c, CodeInvalidParameter, detail)
	}
	uid := principal(c).UserID
	ts, next, err := h.Transfers.List(c.UserContext(), uid, before, limit)
	if err != nil {
		return err
	}
	page := TransferPage{Items: []Transfer{}, NextCursor: cursorString(next)}
	for _, t := range ts {
		page.Items = append(page.Items, transfer.EventView(t, uid))
	}
	return sendJSON(c, fiber.StatusOK, page)
}
