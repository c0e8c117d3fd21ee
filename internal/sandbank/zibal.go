package sandbank

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Zibal's IPG v1, at Zibal's own paths (https://gateway.zibal.ir):
//
//	POST /v1/request              a new payment: {"trackId", "result", "message"}
//	POST /v1/verify               verify a paid one (201: verified before, no details)
//	POST /v1/inquiry              a payment's state and details, read-only
//	GET  /start/{trackId}         payer's bank page (HTML)
//	POST /start/{trackId}/pay     Pay button
//	POST /start/{trackId}/cancel  Cancel button
//	POST /start/{trackId}/pay-close  "Pay and close the window" button
//
// Every answer is HTTP 200 with a JSON body whose `result` decides (100
// success; 102 merchant not found; 103 merchant inactive; 104 merchant
// invalid; 105 amount not above 1,000 rials; 106 bad callbackUrl; 113 over
// the limit; 201 already verified; 202 not paid or failed; 203 invalid
// trackId). The payer returns with a GET to the callback URL plus
// ?trackId=&success=&status=&orderId= (success 1 and status 2 when paid;
// 0 and 3 when cancelled). The merchant `zibal` is Zibal's sandbox
// merchant; any merchant of letters and digits is accepted here. Amounts
// are rials. Zibal documents no verify deadline and no reversal: a paid
// payment stays verifiable.

// ProtocolZibal is Zibal's IPG v1 (gateway "zibal").
const ProtocolZibal = "zibal-v1"

const gatewayZibal = "zibal"

// The Zibal operations (fault keys: FaultOps).
const (
	opZibalRequest    = "zibal-request"
	opZibalVerify     = "zibal-verify"
	opZibalInquiry    = "zibal-inquiry"
	opZibalStart      = "zibal-startpay"
	opZibalPagePay    = "zibal-startpay.pay"
	opZibalPageCancel = "zibal-startpay.cancel"
	opZibalPayClose   = "zibal-startpay.pay_close"
)

// Zibal's result codes.
const (
	zbSuccess          = 100
	zbMerchantNotFound = 102
	zbMerchantInvalid  = 104
	zbAmountTooSmall   = 105
	zbBadCallback      = 106
	zbOverLimit        = 113
	zbAlreadyVerified  = 201
	zbNotPaid          = 202
	zbBadTrackID       = 203
	zbMinAmountRials   = 1_000 // the amount must be above it
)

// Zibal's payment statuses (callback and inquiry).
const (
	zbStatusWaiting   = -1
	zbStatusVerified  = 1
	zbStatusPaid      = 2
	zbStatusCancelled = 3
)

func zibalMessage(result int) string {
	switch result {
	case zbSuccess:
		return "success"
	case zbMerchantNotFound:
		return "merchant یافت نشد."
	case zbMerchantInvalid:
		return "merchant نامعتبر است."
	case zbAmountTooSmall:
		return "amount بایستی بزرگتر از 1,000 ریال باشد."
	case zbBadCallback:
		return "callbackUrl نامعتبر می\u200cباشد. (شروع با http و یا https)"
	case zbOverLimit:
		return "amount مبلغ تراکنش از سقف میزان تراکنش بیشتر است."
	case zbAlreadyVerified:
		return "previously verifed"
	case zbNotPaid:
		return "سفارش پرداخت نشده یا ناموفق بوده است."
	case zbBadTrackID:
		return "trackId نامعتبر می\u200cباشد."
	}
	return "error"
}

func (b *Bank) zibalRoutes(mux *http.ServeMux, op func(string) http.HandlerFunc) {
	mux.Handle("/v1/request", op(opZibalRequest))
	mux.Handle("/v1/verify", op(opZibalVerify))
	mux.Handle("/v1/inquiry", op(opZibalInquiry))
	mux.Handle("GET /start/{authority}", op(opZibalStart))
	mux.Handle("POST /start/{authority}/pay", op(opZibalPagePay))
	mux.Handle("POST /start/{authority}/cancel", op(opZibalPageCancel))
	mux.Handle("POST /start/{authority}/pay-close", op(opZibalPayClose))
}

// serveZibal performs one Zibal operation (through the fault layer).
func (b *Bank) serveZibal(op string, w http.ResponseWriter, r *http.Request) bool {
	switch op {
	case opZibalRequest, opZibalVerify, opZibalInquiry:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"result": -1, "message": "use POST"})
			return true
		}
	}
	switch op {
	case opZibalRequest:
		b.zibalRequest(w, r)
	case opZibalVerify:
		b.zibalVerify(w, r)
	case opZibalInquiry:
		b.zibalInquiry(w, r)
	case opZibalStart:
		b.pageStart(w, r, gatewayZibal, "../pg/assets/bank")
	case opZibalPagePay:
		b.pageButton(w, r, StatePaid, false, gatewayZibal, "../../pg/assets/bank")
	case opZibalPageCancel:
		b.pageButton(w, r, StateFailed, false, gatewayZibal, "../../pg/assets/bank")
	case opZibalPayClose:
		b.pageButton(w, r, StatePaid, true, gatewayZibal, "../../pg/assets/bank")
	default:
		return false
	}
	return true
}

func zibalAnswer(w http.ResponseWriter, result int, extra map[string]any) {
	out := map[string]any{"result": result, "message": zibalMessage(result)}
	for k, v := range extra {
		out[k] = v
	}
	writeJSON(w, http.StatusOK, out)
}

// zibalMerchant reports whether a merchant name is one the bank knows:
// the sandbox merchant `zibal`, or 1 to 64 letters and digits.
func zibalMerchant(m string) bool {
	if m == "" || len(m) > 64 {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

type zibalRequestBody struct {
	Merchant    string          `json:"merchant"`
	Amount      json.RawMessage `json:"amount"`
	CallbackURL string          `json:"callbackUrl"`
	Description string          `json:"description"`
	OrderID     string          `json:"orderId"`
	Mobile      string          `json:"mobile"`
}

func (b *Bank) zibalRequest(w http.ResponseWriter, r *http.Request) {
	var in zibalRequestBody
	if v := decodeBody(w, r, &in); v != nil {
		zibalAnswer(w, zbMerchantInvalid, nil)
		return
	}
	amount, amountOK := checkAmount(&validations{}, in.Amount)
	switch {
	case in.Merchant == "":
		zibalAnswer(w, zbMerchantNotFound, nil)
		return
	case !zibalMerchant(in.Merchant):
		zibalAnswer(w, zbMerchantInvalid, nil)
		return
	case !amountOK || amount <= zbMinAmountRials:
		zibalAnswer(w, zbAmountTooSmall, nil)
		return
	case amount > maxAmountRials:
		zibalAnswer(w, zbOverLimit, nil)
		return
	case len(in.OrderID) > 100:
		zibalAnswer(w, zbMerchantInvalid, nil)
		return
	}
	if msg := b.checkCallback(in.CallbackURL); msg != "" {
		zibalAnswer(w, zbBadCallback, nil)
		return
	}
	rec, err := b.newZibalRecord(in, amount)
	if err != nil {
		b.log.Error("sandbank: zibal request", "err", err)
		http.Error(w, "sandbank: "+err.Error(), http.StatusInternalServerError)
		return
	}
	b.log.Info("sandbank: zibal request", "track_id", rec.Authority, "amount", amount)
	id, _ := strconv.ParseInt(rec.Authority, 10, 64)
	zibalAnswer(w, zbSuccess, map[string]any{"trackId": id})
}

// newZibalRecord registers a new IN_BANK Zibal payment with a fresh
// numeric trackId (10 digits).
func (b *Bank) newZibalRecord(in zibalRequestBody, amount int64) (*record, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var token string
	for {
		idx, err := b.randomIndexesLocked(9, 10)
		if err != nil {
			return nil, fmt.Errorf("new trackId: %w", err)
		}
		var sb strings.Builder
		sb.WriteByte("123456789"[idx[0]%9]) // no leading zero
		for _, i := range idx {
			sb.WriteByte("0123456789"[i])
		}
		token = sb.String()
		if _, taken := b.payments[token]; !taken {
			break
		}
	}
	card, err := b.newCardLocked()
	if err != nil {
		return nil, err
	}
	b.seq++
	rec := &record{
		Payment: Payment{Gateway: gatewayZibal, Authority: token, MerchantID: in.Merchant, Amount: amount, Currency: "IRR",
			State: StateInBank, CallbackURL: strings.TrimSpace(in.CallbackURL), OrderID: in.OrderID, Description: in.Description,
			Mobile: in.Mobile, CreatedAt: b.clock()},
		seq: b.seq, reqAmount: amount, cardNumber: card,
	}
	b.payments[token] = rec
	return rec, nil
}

type zibalTrackBody struct {
	Merchant string          `json:"merchant"`
	TrackID  json.RawMessage `json:"trackId"`
}

// zibalRecordLocked finds the merchant's payment of a verify or inquiry
// body, or answers the refusal and returns nil.
func (b *Bank) zibalRecordLocked(w http.ResponseWriter, in zibalTrackBody) *record {
	if !zibalMerchant(in.Merchant) {
		zibalAnswer(w, zbMerchantNotFound, nil)
		return nil
	}
	rec, ok := b.payments[rawString(in.TrackID)]
	if !ok || rec.Gateway != gatewayZibal || rec.MerchantID != in.Merchant {
		zibalAnswer(w, zbBadTrackID, nil)
		return nil
	}
	b.expireLocked(rec, b.clock())
	return rec
}

func (b *Bank) zibalVerify(w http.ResponseWriter, r *http.Request) {
	var in zibalTrackBody
	if v := decodeBody(w, r, &in); v != nil {
		zibalAnswer(w, zbBadTrackID, nil)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := b.zibalRecordLocked(w, in)
	if rec == nil {
		return
	}
	rec.VerifyCount++
	switch rec.State {
	case StatePaid:
		rec.State, rec.VerifiedAt = StateVerified, b.clock()
		b.log.Info("sandbank: zibal verified", "track_id", rec.Authority, "ref_number", rec.RefID)
		zibalAnswer(w, zbSuccess, b.zibalDetails(rec, false))
	case StateVerified:
		// Zibal answers a repeated verify without the payment's details.
		zibalAnswer(w, zbAlreadyVerified, nil)
	default:
		zibalAnswer(w, zbNotPaid, nil)
	}
}

func (b *Bank) zibalInquiry(w http.ResponseWriter, r *http.Request) {
	var in zibalTrackBody
	if v := decodeBody(w, r, &in); v != nil {
		zibalAnswer(w, zbBadTrackID, nil)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := b.zibalRecordLocked(w, in)
	if rec == nil {
		return
	}
	zibalAnswer(w, zbSuccess, b.zibalDetails(rec, true))
}

// zibalStatus is a payment's state as Zibal numbers it.
func zibalStatus(rec *record) int {
	switch rec.State {
	case StateInBank:
		return zbStatusWaiting
	case StatePaid:
		return zbStatusPaid
	case StateVerified:
		return zbStatusVerified
	}
	return zbStatusCancelled
}

// zibalDetails are the fields a verify (or, with inquiry, an inquiry)
// answers with.
func (b *Bank) zibalDetails(rec *record, inquiry bool) map[string]any {
	out := map[string]any{"status": zibalStatus(rec), "amount": rec.Amount, "orderId": rec.OrderID, "description": rec.Description}
	if !rec.PaidAt.IsZero() {
		out["paidAt"] = rec.PaidAt.In(b.tehran).Format("2006-01-02T15:04:05.000")
		out["refNumber"] = rec.RefID
		out["cardNumber"] = rec.CardPAN
	}
	if inquiry {
		out["createdAt"] = rec.CreatedAt.In(b.tehran).Format("2006-01-02T15:04:05.000")
		out["wage"] = 0
		if !rec.VerifiedAt.IsZero() {
			out["verifiedAt"] = rec.VerifiedAt.In(b.tehran).Format("2006-01-02T15:04:05.000")
		}
	}
	return out
}

// zibalCallback is the payer's GET back to the merchant.
func zibalCallback(rec *record) CallbackRequest {
	success, status := "0", strconv.Itoa(zibalStatus(rec))
	if rec.State == StatePaid || rec.State == StateVerified {
		success = "1"
	}
	q := url.Values{}
	q.Set("trackId", rec.Authority)
	q.Set("success", success)
	q.Set("status", status)
	q.Set("orderId", rec.OrderID)
	base, frag, hasFrag := strings.Cut(rec.CallbackURL, "#")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	u := base + sep + q.Encode()
	if hasFrag {
		u += "#" + frag
	}
	return CallbackRequest{URL: u, Method: http.MethodGet, Form: map[string]string{}}
}
