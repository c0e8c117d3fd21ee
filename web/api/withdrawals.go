package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

// Bank is a bank as the API names it.
type Bank = withdrawal.Bank

func bankOf(code string) Bank { return withdrawal.BankOf(code) }

// BankAccount is a bank account as the API shows it.
type BankAccount struct {
	ID        int64     `json:"id"`
	IBAN      string    `json:"iban"`
	Bank      Bank      `json:"bank"`
	Last4     string    `json:"last4"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}

func bankAccountView(a bankaccount.Account) BankAccount {
	return BankAccount{ID: a.ID, IBAN: a.Sheba, Bank: bankOf(a.BankCode), Last4: a.Last4(), Status: string(a.Status), CreatedAt: a.CreatedAt.UTC()}
}

// BankAccountList is the token owner's accounts.
type BankAccountList struct {
	Items []BankAccount `json:"items"`
}

// Withdrawal is a withdrawal as the API shows it (and its webhooks'
// "withdrawal").
type Withdrawal = withdrawal.View

func withdrawalView(w withdrawal.Withdrawal) Withdrawal { return withdrawal.ViewOf(w) }

// WithdrawalPage is a page of withdrawals.
type WithdrawalPage struct {
	Items      []Withdrawal `json:"items"`
	NextCursor *string      `json:"next_cursor"`
}

// errObject is a body that is not one well-formed object of the names
// asked for.
var errObject = errors.New("invalid body")

// parseObject reads one JSON object whose names are exactly among
// fields (lower case, each once), giving each value to its field's
// function; nothing may follow the object.
func parseObject(body []byte, fields map[string]func(raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errObject
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errObject
		}
		name, _ := tok.(string)
		f, ok := fields[name]
		if !ok || seen[name] {
			return errObject
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil || f(raw) != nil {
			return errObject
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return errObject
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errObject
	}
	return nil
}

// intField reads a JSON whole number into *dst (null: absent).
func intField(dst **int64) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		if string(raw) == "null" {
			return nil
		}
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return err
		}
		*dst = &v
		return nil
	}
}

// stringField reads a JSON string into *dst (null: absent).
func stringField(dst **string) func(json.RawMessage) error {
	return func(raw json.RawMessage) error { return json.Unmarshal(raw, dst) }
}

// listBankAccounts is GET /api/v1/bank-accounts.
func (h *handler) listBankAccounts(c *fiber.Ctx) error {
	accts, err := h.BankAccounts.List(c.UserContext(), principal(c).UserID)
	if err != nil {
		return err
	}
	out := BankAccountList{Items: []BankAccount{}}
	for _, a := range accts {
		out.Items = append(out.Items, bankAccountView(a))
	}
	return sendJSON(c, fiber.StatusOK, out)
}

// addBankAccount is POST /api/v1/bank-accounts {iban, national_code}:
// the page's rules (the Sheba and national code checked, the national
// code given once, ownership by the provider's inquiry). 201 for a new
// account (verified, or pending_review when the inquiry could not
// answer), 200 for one the user has already; a mismatch is 422
// bank_account_mismatch and stores nothing. Adding an account twice is
// one account, so no Idempotency-Key is needed.
func (h *handler) addBankAccount(c *fiber.Ctx) error {
	var ib, nc *string
	if err := parseObject(c.Body(), map[string]func(json.RawMessage) error{"iban": stringField(&ib), "national_code": stringField(&nc)}); err != nil || ib == nil {
		return problem(c, CodeInvalidBody, "The body must be one JSON object with iban and, the first time, national_code (strings), each once, names in lower case.")
	}
	p := principal(c)
	typedNC := ""
	if nc != nil {
		typedNC = *nc
	} else if onFile, ok, err := h.BankAccounts.NationalCode(c.UserContext(), p.UserID); err != nil {
		return err
	} else if ok {
		typedNC = string(onFile)
	}
	added, err := h.BankAccounts.Add(c.UserContext(), p.UserID, *ib, typedNC)
	switch {
	case errors.Is(err, owner.ErrUnconfirmed):
		return unconfirmedProblem(c, "stored")
	case errors.Is(err, iban.ErrEmpty), errors.Is(err, iban.ErrFormat), errors.Is(err, iban.ErrChecksum), errors.Is(err, iban.ErrUnknownBank):
		return problem(c, CodeIBANInvalid, "iban must be an Iranian Sheba: IR and 24 digits with matching check digits and a known bank ("+err.Error()+").")
	case errors.Is(err, iban.ErrNationalCodeFormat), errors.Is(err, iban.ErrNationalCodeCheck):
		return problem(c, CodeNationalCodeInvalid, "national_code must be 10 digits with a matching check digit.")
	case errors.Is(err, bankaccount.ErrNationalCodeDiffers):
		return problem(c, CodeNationalCodeDiffers, "Another national code is on file for this user; it is given once.")
	case errors.Is(err, bankaccount.ErrMismatch):
		return problem(c, CodeBankAccountMismatch, "The payout provider says this Sheba does not belong to this national code. Nothing was stored.")
	case errors.Is(err, bankaccount.ErrRejected):
		return problem(c, CodeBankAccountMismatch, "Support rejected this account.")
	case errors.Is(err, bankaccount.ErrTooMany):
		return problem(c, CodeInvalidBody, "No more accounts may be added.")
	case errors.Is(err, bankaccount.ErrTooManyInquiries):
		c.Set(fiber.HeaderRetryAfter, "86400")
		return problem(c, CodeRateLimited, fmt.Sprintf("This user's new accounts were checked with the payout provider %d times in the last 24 hours, the most allowed; nothing was asked or stored. Try again tomorrow.", bankaccount.InquiriesPerDay))
	case err != nil:
		return err
	}
	status := fiber.StatusCreated
	if added.Existed {
		status = fiber.StatusOK
	}
	return sendJSON(c, status, bankAccountView(added.Account))
}

// createWithdrawal is POST /api/v1/withdrawals {bank_account_id,
// amount_rials} with a required Idempotency-Key, in the order of
// createTopUp: the key's shape, the body, the amount (none of which
// stores anything), then the key decides; the withdrawal's form token is
// derived from the key's record, so the withdrawals' unique (user,
// form_token) guards the API too. A refusal before anything was written
// forgets the key.
func (h *handler) createWithdrawal(c *fiber.Ctx) error {
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
	var account, amount *int64
	if err := parseObject(c.Body(), map[string]func(json.RawMessage) error{"bank_account_id": intField(&account), "amount_rials": intField(&amount)}); err != nil ||
		account == nil || amount == nil {
		return problem(c, CodeInvalidBody, "The body must be one JSON object with bank_account_id and amount_rials (integers), each once, names in lower case.")
	}
	path := c.Route().Path
	fp := idempotency.Fingerprint(c.Method(), path, idempotency.Int("bank_account_id", account), idempotency.Int("amount_rials", amount))
	// Withdrawals turned off, or the limits changed, since this key's
	// withdrawal: its retry is answered with it (unlessAnswered).
	if !h.Withdrawals.On() {
		return h.unlessAnswered(c, fp, func() error { return problem(c, CodeWithdrawalsOff, "Withdrawals are not offered right now.") })
	}
	cfg := h.Withdrawals.Config()
	if err := cfg.Limits().Check(*amount); err != nil {
		return h.unlessAnswered(c, fp, func() error {
			return amountProblem(c, err, money.Limits{MinRials: cfg.MinRials, MaxRials: cfg.Limits().MaxRials})
		})
	}
	p := principal(c)
	out, rec, err := h.Keys.Begin(ctx, idempotency.Request{UserID: p.UserID, Key: key, Method: c.Method(), Path: path, Fingerprint: fp})
	if err != nil {
		return err
	}
	if answered, err := answerKey(c, out, rec); answered {
		return err
	}
	res, err := h.Withdrawals.Request(ctx, withdrawal.Request{UserID: p.UserID, FormToken: h.Keys.FormToken(rec), BankAccountID: *account, AmountRials: *amount})
	discard := func() {
		if derr := h.Keys.Discard(ctx, rec); derr != nil {
			h.Log.Error("discard idempotency key", "err", derr)
		}
	}
	var daily *withdrawal.DailyLimitError
	switch {
	case errors.As(err, &daily):
		discard()
		return problem(c, CodeDailyLimit, "At most "+itoa(daily.Limit)+" rials of withdrawals a day (Tehran time); "+itoa(daily.Left)+" rials are left today.")
	case errors.Is(err, withdrawal.ErrInsufficientFunds):
		discard()
		return problem(c, CodeInsufficientFunds, "The wallet's available balance (its balance less what is held) is below amount_rials.")
	case errors.Is(err, withdrawal.ErrBankAccountMissing), errors.Is(err, withdrawal.ErrBankAccountUnchecked):
		discard()
		return problem(c, CodeBankAccountUnverified, "bank_account_id must name a verified bank account of yours (GET /api/v1/bank-accounts).")
	case errors.Is(err, withdrawal.ErrNoProvider), errors.Is(err, withdrawal.ErrOff):
		discard()
		return problem(c, CodeWithdrawalsOff, "No payout provider takes this amount right now.")
	case err != nil:
		// The withdrawal may exist: keep the key (unanswered) so that a
		// retry with it finds that withdrawal through its form token.
		h.release(ctx, rec)
		return err
	}
	body, err := json.Marshal(withdrawalView(res.Withdrawal))
	if err != nil {
		h.release(ctx, rec)
		return err
	}
	return h.finish(c, rec, fiber.StatusCreated, fiber.MIMEApplicationJSON, body, nil)
}

// getWithdrawal is GET /api/v1/withdrawals/{id}: the owner's, else 404.
func (h *handler) getWithdrawal(c *fiber.Ctx) error {
	w, err := h.Withdrawals.Get(c.UserContext(), principal(c).UserID, c.Params("id"))
	if errors.Is(err, withdrawal.ErrNotFound) {
		return problem(c, CodeNotFound, "No withdrawal with this id.")
	}
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, withdrawalView(w))
}

// listWithdrawals is GET /api/v1/withdrawals: newest first, keyset
// paginated.
func (h *handler) listWithdrawals(c *fiber.Ctx) error {
	before, limit, detail := cursorParams(c)
	if detail != "" {
		return problem(c, CodeInvalidParameter, detail)
	}
	ws, next, err := h.Withdrawals.List(c.UserContext(), principal(c).UserID, before, limit)
	if err != nil {
		return err
	}
	page := WithdrawalPage{Items: []Withdrawal{}, NextCursor: cursorString(next)}
	for _, w := range ws {
		page.Items = append(page.Items, withdrawalView(w))
	}
	return sendJSON(c, fiber.StatusOK, page)
}
