package zarinpal

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// Operation names: the bank's fault layer keys its rules on them (a
// page's buttons share the page's key, "startpay").
const (
	opRequest    = "request"    // POST /pg/v4/payment/request.json
	opVerify     = OpVerify     // POST /pg/v4/payment/verify.json
	opInquiry    = "inquiry"    // POST /pg/v4/payment/inquiry.json
	opUnverified = "unverified" // POST /pg/v4/payment/unVerified.json
	opStartPay   = "startpay"   // the page and its buttons (page.Link)
)

// OpVerify is verify's fault key, the one the -commit-then-hang flags
// set.
const OpVerify = "verify"

// Zarinpal result codes used by the simulator.
const (
	codeSuccess          = 100
	codeVerified         = 101
	codeValidation       = -9
	codeTerminalInactive = -11
	codeTooManyAttempts  = -12
	codeMaxAmount        = -41
	codeAmountMismatch   = -50
	codeNotPaid          = -51
	codeOtherMerchant    = -53
	codeInvalidAuthority = -54
)

// codeMessage is Zarinpal's (English) message for an error code.
func codeMessage(code int) string {
	switch code {
	case codeValidation:
		return "The input params invalid, validation error."
	case codeTerminalInactive:
		return "Terminal is not active, please contact our support team."
	case codeTooManyAttempts:
		return "Too many attempts, please try again later."
	case codeMaxAmount:
		return "Maximum amount is 100,000,000 tomans."
	case codeAmountMismatch:
		return "Session is not valid, amounts values is not the same."
	case codeNotPaid:
		return "Session is not valid, session is not active paid try."
	case codeOtherMerchant:
		return "Session is not this merchant_id session."
	case codeInvalidAuthority:
		return "Invalid authority."
	}
	return "Unexpected error."
}

const (
	// minAmountRials is the smallest payment Zarinpal accepts.
	minAmountRials = protocol.MinAmountRials
	// maxAmountRials is 100,000,000 tomans.
	maxAmountRials = protocol.MaxAmountRials
	// maxDescription is the longest description, in characters.
	maxDescription = 500
	// feePercent and feeCapRials: the merchant's fee is 1% capped.
	feePercent  = 1
	feeCapRials = 40_000
	// shaparakFee is the Shaparak fee reported by verify (a string there).
	shaparakFee = "1200"
	// zeroMerchant is a well-formed merchant id whose terminal is "not
	// active" (-11), so tests can reach that branch.
	zeroMerchant = "00000000-0000-0000-0000-000000000000"
	// maxUnverified is how many payments unVerified lists at most.
	maxUnverified = 100
	// tehranDateLayout is the date format of unVerified.
	tehranDateLayout = "2006-01-02 15:04:05"
)

// ---- envelopes ----

// envelope is Zarinpal's answer: data is an object and errors [] on
// success, data is [] and errors an object on failure.
type envelope struct {
	Data   any `json:"data"`
	Errors any `json:"errors"`
}

// apiError is the errors object of a failed call.
type apiError struct {
	Code        int                 `json:"code"`
	Message     string              `json:"message"`
	Validations []map[string]string `json:"validations"`
}

// validations collects field → message pairs, in order.
type validations []map[string]string

func (v *validations) add(field, msg string) { *v = append(*v, map[string]string{field: msg}) }

func validation(field, msg string) validations {
	return validations{{field: msg}}
}

func writeData(w http.ResponseWriter, data any) {
	protocol.WriteJSON(w, http.StatusOK, envelope{Data: data, Errors: []any{}})
}

func writeError(w http.ResponseWriter, status, code int, v validations) {
	if v == nil {
		v = validations{}
	}
	protocol.WriteJSON(w, status, envelope{
		Data:   []any{},
		Errors: apiError{Code: code, Message: codeMessage(code), Validations: v},
	})
}

// zeroMerchantWhy says why the all-zeros merchant id is refused: an
// operator who copied it as a placeholder learns from the log what to use.
const zeroMerchantWhy = "this sandbox bank refuses the all-zeros merchant_id on purpose (it is how tests reach -11, terminal not active); " +
	"give ZARINPAL_MERCHANT_ID any other well-formed id, e.g. 11111111-2222-3333-4444-555555555555"

// refuseZeroMerchant answers -11 for the all-zeros merchant id, with the
// reason in the message and as a validation of merchant_id.
func refuseZeroMerchant(w http.ResponseWriter) {
	protocol.WriteJSON(w, http.StatusBadRequest, envelope{
		Data: []any{},
		Errors: apiError{Code: codeTerminalInactive, Message: codeMessage(codeTerminalInactive) + " (" + zeroMerchantWhy + ")",
			Validations: validations{{"merchant_id": zeroMerchantWhy}}},
	})
}

// writeRefusal answers a refused call: validation errors, an inactive
// terminal, an amount above the maximum (HTTP 400).
func writeRefusal(w http.ResponseWriter, code int, v validations) {
	writeError(w, http.StatusBadRequest, code, v)
}

// writeAnswer answers with a business code about a payment (HTTP 200).
func writeAnswer(w http.ResponseWriter, code int) {
	writeError(w, http.StatusOK, code, nil)
}

// decodeBody reads a JSON object body into v, as validation messages on
// failure.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) validations {
	err := protocol.DecodeBody(w, r, v)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return validation(typeErr.Field, "The "+fieldName(typeErr.Field)+" field has an invalid type.")
	}
	return validation("body", fmt.Sprintf("The request body must be a JSON object: %v.", errors.Unwrap(err)))
}

// fieldName turns "callback_url" into "callback url" for messages.
func fieldName(f string) string { return strings.ReplaceAll(f, "_", " ") }

// admit decodes a call's body into in and checks it: its merchant_id
// (*merchantID once decoded), then what check adds. It answers the
// refusal itself (-9 with every validation, -11 for the all-zeros
// merchant) and then reports false; else it returns the merchant id.
func admit(w http.ResponseWriter, r *http.Request, in any, merchantID *string, check func(v *validations)) (string, bool) {
	if v := decodeBody(w, r, in); v != nil {
		writeRefusal(w, codeValidation, v)
		return "", false
	}
	var v validations
	merchant := checkMerchant(&v, *merchantID)
	if check != nil {
		check(&v)
	}
	if len(v) > 0 {
		writeRefusal(w, codeValidation, v)
		return "", false
	}
	if merchant == zeroMerchant {
		refuseZeroMerchant(w)
		return "", false
	}
	return merchant, true
}

// requireAuthority checks that a call names an authority.
func requireAuthority(v *validations, authority string) {
	if strings.TrimSpace(authority) == "" {
		v.add("authority", "The authority field is required.")
	}
}

// checkMerchant validates a merchant_id and returns it normalised.
func checkMerchant(v *validations, id string) string {
	id = strings.TrimSpace(id)
	switch {
	case id == "":
		v.add("merchant_id", "The merchant id field is required.")
	case !isUUID(id):
		v.add("merchant_id", "The merchant id must be a valid UUID.")
	}
	return strings.ToLower(id)
}

// checkAmount validates a required integer amount, given as a JSON number
// or a string of digits.
func checkAmount(v *validations, raw json.RawMessage) (int64, bool) {
	a, present, ok := protocol.Amount(raw)
	switch {
	case !present:
		v.add("amount", "The amount field is required.")
	case !ok:
		v.add("amount", "The amount must be an integer.")
	}
	return a, ok
}

// isUUID reports whether s is 8-4-4-4-12 hexadecimal digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// currencyFactor is how many rials one unit of the currency is.
func currencyFactor(currency string) int64 {
	if currency == "IRT" {
		return 10
	}
	return 1
}

// ---- request.json ----

type requestBody struct {
	MerchantID  string          `json:"merchant_id"`
	Amount      json.RawMessage `json:"amount"`
	Currency    string          `json:"currency"`
	Description string          `json:"description"`
	CallbackURL string          `json:"callback_url"`
	// Metadata is decoded leniently: PHP clients send [] when it is empty.
	Metadata json.RawMessage `json:"metadata"`
}

type requestData struct {
	Code      int    `json:"code"`
	Message   string `json:"message"`
	Authority string `json:"authority"`
	FeeType   string `json:"fee_type"`
	Fee       int64  `json:"fee"`
}

// requestFields are a request's fields as checked.
type requestFields struct {
	currency, callback string
	factor, amount     int64
	meta               map[string]json.RawMessage
}

// checkRequest checks a request's fields but its merchant_id.
func (z *Zarinpal) checkRequest(v *validations, in requestBody) requestFields {
	var f requestFields
	f.currency = strings.ToUpper(strings.TrimSpace(in.Currency))
	if f.currency == "" {
		f.currency = "IRR"
	}
	if f.currency != "IRR" && f.currency != "IRT" {
		v.add("currency", "The selected currency is invalid; use IRR or IRT.")
	}
	f.factor = currencyFactor(f.currency)
	var amountOK bool
	f.amount, amountOK = checkAmount(v, in.Amount)
	if amountOK && f.amount*f.factor < minAmountRials {
		v.add("amount", fmt.Sprintf("The amount must be at least %d %s.", minAmountRials/f.factor, f.currency))
	}

	desc := strings.TrimSpace(in.Description)
	switch {
	case desc == "":
		v.add("description", "The description field is required.")
	case utf8.RuneCountInString(in.Description) > maxDescription:
		v.add("description", fmt.Sprintf("The description may not be greater than %d characters.", maxDescription))
	}

	f.callback = strings.TrimSpace(in.CallbackURL)
	switch {
	case f.callback == "":
		v.add("callback_url", "The callback url field is required.")
	case !strings.HasPrefix(f.callback, "http://") && !strings.HasPrefix(f.callback, "https://"):
		v.add("callback_url", "The callback url must start with http:// or https://.")
	default:
		if u, err := url.Parse(f.callback); err != nil || u.Host == "" {
			v.add("callback_url", "The callback url format is invalid.")
		} else if !protocol.OnOrigin(z.env.CallbackOrigin, u, f.callback) {
			// Both as parsed and as written (the redirect uses the text as
			// written, and a browser must read the same host in it).
			v.add("callback_url", "The callback url must be on the merchant's registered site.")
		}
	}

	if len(in.Metadata) > 0 && in.Metadata[0] == '{' {
		if err := json.Unmarshal(in.Metadata, &f.meta); err != nil {
			v.add("metadata", "The metadata field must be an object.")
		}
	}
	return f
}

func (z *Zarinpal) apiRequest(w http.ResponseWriter, r *http.Request) {
	var in requestBody
	var f requestFields
	merchant, ok := admit(w, r, &in, &in.MerchantID, func(v *validations) { f = z.checkRequest(v, in) })
	if !ok {
		return
	}
	currency, callback, factor, amount, meta := f.currency, f.callback, f.factor, f.amount, f.meta
	if amount > maxAmountRials/factor {
		writeRefusal(w, codeMaxAmount, nil)
		return
	}

	rials := amount * factor
	fee := min(rials*feePercent/100, feeCapRials)
	rec, err := z.env.Book.Open(book.Payment{
		Gateway:     Gateway,
		MerchantID:  merchant,
		Amount:      rials,
		Currency:    currency,
		Fee:         fee,
		Description: in.Description,
		CallbackURL: callback,
		OrderID:     protocol.RawString(meta["order_id"]),
		Mobile:      protocol.RawString(meta["mobile"]),
		Email:       protocol.RawString(meta["email"]),
	}, amount, "S", authorityLen-1)
	if err != nil {
		z.env.Log.Error("sandbank: request", "err", err)
		http.Error(w, "sandbank: "+err.Error(), http.StatusInternalServerError)
		return
	}
	authority := rec.Authority
	z.env.Log.Info("sandbank: payment requested", "authority", authority, "amount", rials, "merchant", merchant)

	writeData(w, requestData{
		Code:      codeSuccess,
		Message:   "Success",
		Authority: authority,
		FeeType:   "Merchant",
		Fee:       fee,
	})
}

// ---- verify.json ----

type verifyBody struct {
	MerchantID string          `json:"merchant_id"`
	Amount     json.RawMessage `json:"amount"`
	Authority  string          `json:"authority"`
}

type verifyData struct {
	Code        int    `json:"code"`
	Message     string `json:"message"`
	CardHash    string `json:"card_hash"`
	CardPAN     string `json:"card_pan"`
	RefID       int64  `json:"ref_id"`
	FeeType     string `json:"fee_type"`
	Fee         int64  `json:"fee"`
	ShaparakFee string `json:"shaparak_fee"`
	OrderID     string `json:"order_id"`
	Wages       []any  `json:"wages"`
}

func (z *Zarinpal) apiVerify(w http.ResponseWriter, r *http.Request) {
	var in verifyBody
	var amount int64
	merchant, ok := admit(w, r, &in, &in.MerchantID, func(v *validations) {
		amount, _ = checkAmount(v, in.Amount)
		requireAuthority(v, in.Authority)
	})
	if !ok {
		return
	}

	data, code := z.verify(merchant, in.Authority, amount)
	if code != codeSuccess && code != codeVerified {
		writeAnswer(w, code)
		return
	}
	writeData(w, data)
}

// verify applies a verify call; the answer is data when code is 100 or 101.
func (z *Zarinpal) verify(merchant, authority string, amount int64) (verifyData, int) {
	bk := z.env.Book
	bk.Lock()
	defer bk.Unlock()
	rec, ok := bk.GetLocked(authority)
	if !ok {
		return verifyData{}, codeInvalidAuthority
	}
	if rec.MerchantID != merchant {
		return verifyData{}, codeOtherMerchant
	}
	now := bk.Now()
	bk.ExpireLocked(rec, now)
	rec.VerifyCount++
	if rec.State != book.StatePaid && rec.State != book.StateVerified {
		return verifyData{}, codeNotPaid
	}
	// The amount is compared in the unit of the request.
	if amount != rec.ReqAmount {
		return verifyData{}, codeAmountMismatch
	}
	data := verifyData{
		Code:        codeVerified,
		Message:     "Verified",
		CardHash:    rec.CardHash,
		CardPAN:     rec.CardPAN,
		RefID:       rec.RefID,
		FeeType:     "Merchant",
		Fee:         rec.Fee,
		ShaparakFee: shaparakFee,
		OrderID:     rec.OrderID,
		Wages:       []any{},
	}
	if rec.State == book.StatePaid {
		rec.State = book.StateVerified
		rec.VerifiedAt = now
		data.Code, data.Message = codeSuccess, "Paid"
		z.env.Log.Info("sandbank: payment verified", "authority", rec.Authority, "ref_id", rec.RefID)
	}
	return data, data.Code
}

// ---- inquiry.json ----

type inquiryBody struct {
	MerchantID string `json:"merchant_id"`
	Authority  string `json:"authority"`
}

type inquiryData struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Status  book.State `json:"status"`
	// Amount is in the unit of the request (as verify expects it).
	Amount int64 `json:"amount"`
}

func (z *Zarinpal) apiInquiry(w http.ResponseWriter, r *http.Request) {
	var in inquiryBody
	merchant, ok := admit(w, r, &in, &in.MerchantID, func(v *validations) { requireAuthority(v, in.Authority) })
	if !ok {
		return
	}

	bk := z.env.Book
	bk.Lock()
	rec, ok := bk.GetLocked(in.Authority)
	code := codeSuccess
	var data inquiryData
	switch {
	case !ok:
		code = codeInvalidAuthority
	case rec.MerchantID != merchant:
		code = codeOtherMerchant
	default:
		bk.ExpireLocked(rec, bk.Now())
		data = inquiryData{Code: codeSuccess, Message: "Success", Status: rec.State, Amount: rec.ReqAmount}
	}
	bk.Unlock()
	if code != codeSuccess {
		writeAnswer(w, code)
		return
	}
	writeData(w, data)
}

// ---- unVerified.json ----

type unverifiedBody struct {
	MerchantID string `json:"merchant_id"`
}

type unverifiedData struct {
	// Code is a string here, as in Zarinpal's documentation.
	Code        string           `json:"code"`
	Message     string           `json:"message"`
	Authorities []unverifiedItem `json:"authorities"`
}

type unverifiedItem struct {
	Authority string `json:"authority"`
	// Amount is in the unit of the request (as verify expects it).
	Amount      int64  `json:"amount"`
	CallbackURL string `json:"callback_url"`
	Referer     string `json:"referer"`
	Date        string `json:"date"`
}

func (z *Zarinpal) apiUnverified(w http.ResponseWriter, r *http.Request) {
	var in unverifiedBody
	merchant, ok := admit(w, r, &in, &in.MerchantID, nil)
	if !ok {
		return
	}

	bk := z.env.Book
	bk.Lock()
	var paid []*book.Record
	bk.EachLocked(func(rec *book.Record) {
		if rec.Gateway == Gateway && rec.MerchantID == merchant && rec.State == book.StatePaid {
			paid = append(paid, rec)
		}
	})
	sort.Slice(paid, func(i, j int) bool {
		if !paid[i].PaidAt.Equal(paid[j].PaidAt) {
			return paid[i].PaidAt.After(paid[j].PaidAt)
		}
		return paid[i].Seq > paid[j].Seq
	})
	if len(paid) > maxUnverified {
		paid = paid[:maxUnverified]
	}
	items := make([]unverifiedItem, 0, len(paid))
	for _, rec := range paid {
		items = append(items, unverifiedItem{
			Authority:   rec.Authority,
			Amount:      rec.ReqAmount,
			CallbackURL: rec.CallbackURL,
			Referer:     rec.Referer,
			Date:        rec.PaidAt.In(bk.Tehran()).Format(tehranDateLayout),
		})
	}
	bk.Unlock()
	writeData(w, unverifiedData{Code: strconv.Itoa(codeSuccess), Message: "Success", Authorities: items})
}
