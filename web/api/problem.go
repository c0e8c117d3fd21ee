package api

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"
)

// Code is a stable, machine-readable cause of an error (the "code" member
// of every problem). Clients branch on it; titles and details may change.
type Code string

// The API's error codes. The OpenAPI document lists the same set.
const (
	CodeUnauthorized       Code = "unauthorized"
	CodeInsufficientScope  Code = "insufficient_scope"
	CodeNotFound           Code = "not_found"
	CodeRateLimited        Code = "rate_limited"
	CodeKeyMissing         Code = "idempotency_key_missing"
	CodeKeyInvalid         Code = "idempotency_key_invalid"
	CodeKeyReused          Code = "idempotency_key_reused"
	CodeKeyInUse           Code = "idempotency_key_in_use"
	CodeInvalidBody        Code = "invalid_body"
	CodeInvalidParameter   Code = "invalid_parameter"
	CodeAmountInvalid      Code = "amount_invalid"
	CodeAmountTooSmall     Code = "amount_too_small"
	CodeAmountTooLarge     Code = "amount_too_large"
	CodeDescriptionTooLong Code = "description_too_long"
	CodeDescriptionInvalid Code = "description_invalid"
	CodeGatewayUnavailable Code = "gateway_unavailable"
	CodeGatewayFailed      Code = "gateway_failed"
	CodeGatewayUnknown     Code = "gateway_unknown"
	CodeDailyLimit         Code = "daily_limit_exceeded"
	CodeBalanceLimit       Code = "balance_limit_exceeded"
	CodeWaitingLimit       Code = "waiting_limit_exceeded"
	CodeReturnURL          Code = "return_url_not_allowed"
	CodeInternal           Code = "internal_error"
	// A transfer's refusals.
	CodeInsufficientFunds Code = "insufficient_funds"
	CodeRecipientNotFound Code = "recipient_not_found"
	CodeTransferToSelf    Code = "transfer_to_self"
	// CodeAddressUnconfirmed: the caller has not confirmed their own
	// e-mail address, and sends nothing in its name until they do.
	CodeAddressUnconfirmed Code = "address_unconfirmed"
	CodeNoteInvalid        Code = "note_invalid"
	// Withdrawals and bank accounts.
	CodeBankAccountUnverified Code = "bank_account_unverified"
	CodeBankAccountMismatch   Code = "bank_account_mismatch"
	CodeIBANInvalid           Code = "iban_invalid"
	CodeNationalCodeInvalid   Code = "national_code_invalid"
	CodeNationalCodeDiffers   Code = "national_code_differs"
	CodeWithdrawalsOff        Code = "withdrawals_unavailable"
	// Merchants' charges.
	CodeNotMerchant         Code = "not_a_merchant"
	CodeOrderIDTaken        Code = "order_id_taken"
	CodeOrderIDInvalid      Code = "order_id_invalid"
	CodeCaptureInvalid      Code = "capture_invalid"
	CodeChargeExpired       Code = "charge_expired"
	CodeChargeCanceled      Code = "charge_canceled"
	CodeChargeNotCapturable Code = "charge_not_capturable"
	CodeChargeNotCancelable Code = "charge_not_cancelable"
	CodeChargeNotRefundable Code = "charge_not_refundable"
	CodeRefundExceeds       Code = "refund_exceeds_captured"

	// Refused before the API's own handlers ran (StatusProblem).
	CodeRequestTooLarge  Code = "request_too_large"
	CodeMethodNotAllowed Code = "method_not_allowed"
)

var codeInfo = map[Code]struct {
	status int
	title  string
}{
	CodeUnauthorized:          {fiber.StatusUnauthorized, "Authentication required"},
	CodeInsufficientScope:     {fiber.StatusForbidden, "The token's scope does not allow this"},
	CodeNotFound:              {fiber.StatusNotFound, "Not found"},
	CodeRateLimited:           {fiber.StatusTooManyRequests, "Too many requests"},
	CodeKeyMissing:            {fiber.StatusBadRequest, "Idempotency-Key header required"},
	CodeKeyInvalid:            {fiber.StatusBadRequest, "Idempotency-Key header invalid"},
	CodeKeyReused:             {fiber.StatusConflict, "Idempotency-Key reused for another request"},
	CodeKeyInUse:              {fiber.StatusConflict, "A request with this Idempotency-Key is in progress"},
	CodeInvalidBody:           {fiber.StatusBadRequest, "Request body invalid"},
	CodeInvalidParameter:      {fiber.StatusBadRequest, "Query parameter invalid"},
	CodeAmountInvalid:         {fiber.StatusUnprocessableEntity, "Amount invalid"},
	CodeAmountTooSmall:        {fiber.StatusUnprocessableEntity, "Amount below the minimum"},
	CodeAmountTooLarge:        {fiber.StatusUnprocessableEntity, "Amount above the maximum"},
	CodeDescriptionTooLong:    {fiber.StatusUnprocessableEntity, "Description too long"},
	CodeDescriptionInvalid:    {fiber.StatusUnprocessableEntity, "Description holds control or invisible characters"},
	CodeGatewayUnavailable:    {fiber.StatusServiceUnavailable, "The bank is unavailable right now"},
	CodeGatewayFailed:         {fiber.StatusBadGateway, "The bank did not start the payment"},
	CodeGatewayUnknown:        {fiber.StatusUnprocessableEntity, "No such gateway is offered"},
	CodeDailyLimit:            {fiber.StatusUnprocessableEntity, "Daily limit reached"},
	CodeBalanceLimit:          {fiber.StatusUnprocessableEntity, "Wallet balance limit reached"},
	CodeWaitingLimit:          {fiber.StatusUnprocessableEntity, "Too many top-ups waiting for payment"},
	CodeReturnURL:             {fiber.StatusUnprocessableEntity, "return_url is not on a registered origin"},
	CodeInternal:              {fiber.StatusInternalServerError, "Internal error"},
	CodeInsufficientFunds:     {fiber.StatusUnprocessableEntity, "Available balance too low"},
	CodeRecipientNotFound:     {fiber.StatusUnprocessableEntity, "No such recipient"},
	CodeTransferToSelf:        {fiber.StatusUnprocessableEntity, "A transfer goes to another person"},
	CodeAddressUnconfirmed:    {fiber.StatusForbidden, "Confirm your e-mail address first"},
	CodeNoteInvalid:           {fiber.StatusUnprocessableEntity, "Note invalid"},
	CodeBankAccountUnverified: {fiber.StatusUnprocessableEntity, "No verified bank account of yours has this id"},
	CodeBankAccountMismatch:   {fiber.StatusUnprocessableEntity, "The Sheba does not belong to this national code"},
	CodeIBANInvalid:           {fiber.StatusUnprocessableEntity, "Sheba (IBAN) invalid"},
	CodeNationalCodeInvalid:   {fiber.StatusUnprocessableEntity, "National code invalid"},
	CodeNationalCodeDiffers:   {fiber.StatusConflict, "Another national code is on file"},
	CodeWithdrawalsOff:        {fiber.StatusServiceUnavailable, "Withdrawals are unavailable"},
	CodeNotMerchant:           {fiber.StatusForbidden, "Not a merchant"},
	CodeOrderIDTaken:          {fiber.StatusConflict, "order_id already has a charge"},
	CodeOrderIDInvalid:        {fiber.StatusUnprocessableEntity, "order_id invalid"},
	CodeCaptureInvalid:        {fiber.StatusUnprocessableEntity, "capture must be automatic or manual"},
	CodeChargeExpired:         {fiber.StatusConflict, "The charge expired"},
	CodeChargeCanceled:        {fiber.StatusConflict, "The charge was canceled"},
	CodeChargeNotCapturable:   {fiber.StatusConflict, "The charge is not authorized"},
	CodeChargeNotCancelable:   {fiber.StatusConflict, "The charge cannot be canceled"},
	CodeChargeNotRefundable:   {fiber.StatusConflict, "The charge has not succeeded"},
	CodeRefundExceeds:         {fiber.StatusConflict, "Refunds would exceed the captured amount"},
	CodeRequestTooLarge:       {fiber.StatusRequestEntityTooLarge, "Request too large"},
	CodeMethodNotAllowed:      {fiber.StatusMethodNotAllowed, "Method not allowed"},
}

// StatusProblem answers an API request that failed with an HTTP status
// and no problem of its own, whether before the API's handlers ran (the
// framing and input checks, the body limit, a recovered panic: the app's
// error handler calls it for every path under the API) or in them: the
// problem nearest the status, never an HTML page. 404 not_found, 405
// method_not_allowed, 413, 414 and 431 request_too_large, 429
// rate_limited, any other 4xx invalid_body, anything else internal_error;
// the answer's status is the code's own (a 414 answers 413, a 415 400).
func StatusProblem(c *fiber.Ctx, status int) error {
	code := CodeInternal
	switch {
	case status == fiber.StatusNotFound:
		code = CodeNotFound
	case status == fiber.StatusMethodNotAllowed:
		code = CodeMethodNotAllowed
	case status == fiber.StatusRequestEntityTooLarge, status == fiber.StatusRequestURITooLong,
		status == fiber.StatusRequestHeaderFieldsTooLarge:
		code = CodeRequestTooLarge
	case status == fiber.StatusTooManyRequests:
		code = CodeRateLimited
	case status >= 400 && status < 500:
		code = CodeInvalidBody
	}
	c.Response().ResetBody()
	if code == CodeInternal {
		return problem(c, code, internalDetail)
	}
	return problem(c, code, "")
}

// internalDetail is what an internal error tells the caller.
const internalDetail = "Something went wrong on our side; retry later (with the same Idempotency-Key for a POST)."

// unconfirmedProblem answers a request refused because its caller has not
// confirmed their own address (owner.ErrUnconfirmed); nothing was done
// ("sent", "stored").
func unconfirmedProblem(c *fiber.Ctx, done string) error {
	return problem(c, CodeAddressUnconfirmed, "Confirm your own e-mail address first, by the link mailed at sign-up (your account page sends it again); nothing was "+done+".")
}

// Problem is an RFC 9457 problem details object with our code.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   Code   `json:"code"`
	// TopUpID names the payment a gateway_failed problem is about.
	TopUpID string `json:"topup_id,omitempty"`
}

// MIMEProblem is the media type of every error answer.
const MIMEProblem = "application/problem+json"

func newProblem(code Code, detail string) Problem {
	info, ok := codeInfo[code]
	if !ok {
		code, info = CodeInternal, codeInfo[CodeInternal]
	}
	return Problem{Type: "urn:kifpool:problem:" + string(code), Title: info.title, Status: info.status, Detail: detail, Code: code}
}

func (p Problem) bytes() []byte {
	b, _ := json.Marshal(p) // a struct of strings and an int: cannot fail
	return b
}

// problem answers with a problem+json.
func problem(c *fiber.Ctx, code Code, detail string) error {
	return sendProblem(c, newProblem(code, detail))
}

func sendProblem(c *fiber.Ctx, p Problem) error {
	return send(c, p.Status, MIMEProblem, p.bytes())
}

// send writes an API answer: never cached.
func send(c *fiber.Ctx, status int, contentType string, body []byte) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, contentType)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(body)
}

func sendJSON(c *fiber.Ctx, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return send(c, status, fiber.MIMEApplicationJSON, b)
}
