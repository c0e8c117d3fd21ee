package sandbank

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SEP (Saman) token flow, at SEP's own paths:
//
//	POST /onlinepg/onlinepg                                    token (JSON, action "token")
//	POST /OnlinePG/OnlinePG                                    payer's page (form field Token)
//	GET  /OnlinePG/SendToken?token=                            the same page by link
//	POST /OnlinePG/OnlinePG/pay | /cancel                      its buttons (form field Token)
//	POST /verifyTxnRandomSessionkey/ipg/VerifyTransaction      verify (RefNum, TerminalNumber)
//	POST /verifyTxnRandomSessionkey/ipg/ReverseTransaction     reverse (within 50 minutes)
//	POST /verifyTxnRandomSessionkey/api/v2/ipg/payment/receipt receipt of a Token or RefNum (≤ 1 h, before verify)
//
// The payer is posted back with MID, TerminalId, State, Status, RRN,
// RefNum, ResNum, TraceNo, Amount, Wage, SecurePan, Token,
// HashedCardNumber. A payment not verified within 30 minutes of being
// paid is reversed (the payer gets the money back).

// Gateways (Payment.Gateway) and their protocols.
const (
	gatewayZarinpal = "zarinpal"
	gatewaySEP      = "sep"
	gatewayMellat   = "mellat"

	// ProtocolSEP is SEP's token flow (gateway "sep").
	ProtocolSEP = "sep-token"
	// ProtocolMellat is Mellat's SOAP service (gateway "mellat").
	ProtocolMellat = "mellat-soap"
)

// The SEP operations (fault keys: FaultOps).
const (
	opSEPRequest   = "sep-request"
	opSEPVerify    = "sep-verify"
	opSEPReverse   = "sep-reverse"
	opSEPReceipt   = "sep-inquiry"
	opSEPStart     = "sep-startpay"
	opSEPPagePay   = "sep-startpay.pay"
	opSEPPageCanc  = "sep-startpay.cancel"
	sepVerifyLimit = 30 * time.Minute
	sepReverseLim  = 50 * time.Minute
	sepReceiptLife = time.Hour
)

// SEP verify/reverse ResultCodes.
const (
	sepOK        = 0
	sepDuplicate = 2
	sepReversed  = 5
	sepNotFound  = -2
	sepTooLate   = -6
	sepBadInput  = -1
)

// verifyDeadline is how long a paid payment of gateway waits for verify
// before the bank returns the money (0: forever).
func verifyDeadline(gateway string) time.Duration {
	switch gateway {
	case gatewaySEP:
		return sepVerifyLimit
	case gatewayMellat:
		return mellatVerifyLimit
	}
	return 0
}

func (b *Bank) sepRoutes(mux *http.ServeMux, op func(string) http.HandlerFunc) {
	mux.Handle("/onlinepg/onlinepg", op(opSEPRequest))
	mux.Handle("POST /OnlinePG/OnlinePG", op(opSEPStart))
	mux.Handle("GET /OnlinePG/SendToken", op(opSEPStart))
	mux.Handle("POST /OnlinePG/OnlinePG/pay", op(opSEPPagePay))
	mux.Handle("POST /OnlinePG/OnlinePG/cancel", op(opSEPPageCanc))
	mux.Handle("/verifyTxnRandomSessionkey/ipg/VerifyTransaction", op(opSEPVerify))
	mux.Handle("/verifyTxnRandomSessionkey/ipg/ReverseTransaction", op(opSEPReverse))
	mux.Handle("/verifyTxnRandomSessionkey/api/v2/ipg/payment/receipt", op(opSEPReceipt))
}

// serveSEP performs one SEP operation (through the fault layer).
func (b *Bank) serveSEP(op string, w http.ResponseWriter, r *http.Request) bool {
	switch op {
	case opSEPRequest, opSEPVerify, opSEPReverse, opSEPReceipt:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"status": -1, "errorCode": "405", "errorDesc": "use POST"})
			return true
		}
	}
	switch op {
	case opSEPRequest:
		b.sepToken(w, r)
	case opSEPVerify:
		b.sepVerify(w, r, false)
	case opSEPReverse:
		b.sepVerify(w, r, true)
	case opSEPReceipt:
		b.sepReceipt(w, r)
	case opSEPStart:
		token := r.URL.Query().Get("token")
		if r.Method == http.MethodPost {
			token = r.PostFormValue("Token")
		}
		b.pageFormStart(w, r, gatewaySEP, token, "Token", "OnlinePG/")
	case opSEPPagePay:
		b.pageFormAction(w, r, "Token", StatePaid)
	case opSEPPageCanc:
		b.pageFormAction(w, r, "Token", StateFailed)
	default:
		return false
	}
	return true
}

type sepTokenBody struct {
	Action      string          `json:"action"`
	TerminalID  json.RawMessage `json:"TerminalId"`
	Amount      json.RawMessage `json:"Amount"`
	ResNum      string          `json:"ResNum"`
	RedirectURL string          `json:"RedirectUrl"`
	CellNumber  string          `json:"CellNumber"`
}

// sepRefuse answers a refused token request.
func sepRefuse(w http.ResponseWriter, code, desc string) {
	writeJSON(w, http.StatusOK, map[string]any{"status": -1, "errorCode": code, "errorDesc": desc})
}

func (b *Bank) sepToken(w http.ResponseWriter, r *http.Request) {
	var in sepTokenBody
	if v := decodeBody(w, r, &in); v != nil {
		sepRefuse(w, "5", "invalid request body")
		return
	}
	terminal := rawString(in.TerminalID)
	amount, amountOK := checkAmount(&validations{}, in.Amount)
	switch {
	case !strings.EqualFold(in.Action, "token"):
		sepRefuse(w, "5", "action must be token")
		return
	case !digits(terminal) || terminal == "0":
		sepRefuse(w, "2", "terminal not found")
		return
	case !amountOK || amount < minAmountRials || amount > maxAmountRials:
		sepRefuse(w, "5", "invalid amount")
		return
	case strings.TrimSpace(in.ResNum) == "" || len(in.ResNum) > 50:
		sepRefuse(w, "5", "ResNum is required (at most 50 characters)")
		return
	}
	if msg := b.checkCallback(in.RedirectURL); msg != "" {
		sepRefuse(w, "5", "RedirectUrl: "+msg)
		return
	}
	rec, err := b.newRecord(gatewaySEP, terminal, amount, in.RedirectURL, in.ResNum, 32)
	if err != nil {
		b.log.Error("sandbank: sep token", "err", err)
		http.Error(w, "sandbank: "+err.Error(), http.StatusInternalServerError)
		return
	}
	b.log.Info("sandbank: sep token", "token", rec.Authority, "amount", amount, "terminal", terminal)
	writeJSON(w, http.StatusOK, map[string]any{"status": 1, "token": rec.Authority})
}

type sepVerifyBody struct {
	RefNum         string          `json:"RefNum"`
	TerminalNumber json.RawMessage `json:"TerminalNumber"`
}

// sepVerify serves VerifyTransaction, or ReverseTransaction when reverse.
func (b *Bank) sepVerify(w http.ResponseWriter, r *http.Request, reverse bool) {
	var in sepVerifyBody
	if v := decodeBody(w, r, &in); v != nil || in.RefNum == "" {
		writeJSON(w, http.StatusOK, sepAnswer{ResultCode: sepBadInput, ResultDescription: "invalid request", Success: false})
		return
	}
	terminal := rawString(in.TerminalNumber)
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.receipts[in.RefNum]
	if !ok || rec.Gateway != gatewaySEP || rec.MerchantID != terminal {
		writeJSON(w, http.StatusOK, sepAnswer{ResultCode: sepNotFound, ResultDescription: "تراکنش یافت نشد (transaction not found)"})
		return
	}
	now := b.clock()
	b.expireLocked(rec, now)
	code, desc := sepOK, "عملیات با موفقیت انجام شد"
	switch {
	case reverse && rec.State == StateVerified && now.Sub(rec.PaidAt) < sepReverseLim:
		rec.State, rec.ReversedAt = StateReversed, now
		b.log.Info("sandbank: sep reversed", "token", rec.Authority)
	case reverse:
		code, desc = sepTooLate, "reverse not possible (not verified, reversed, or more than 50 minutes)"
	case rec.State == StatePaid:
		rec.VerifyCount++
		rec.State, rec.VerifiedAt = StateVerified, now
		b.log.Info("sandbank: sep verified", "token", rec.Authority, "ref_num", rec.Receipt)
	case rec.State == StateVerified:
		rec.VerifyCount++
		code, desc = sepDuplicate, "درخواست تکراری می باشد (duplicate request)"
	case rec.State == StateReversed && rec.VerifiedAt.IsZero():
		rec.VerifyCount++
		code, desc = sepTooLate, "more than 30 minutes since the transaction: reversed"
	default:
		rec.VerifyCount++
		code, desc = sepReversed, "transaction reversed"
	}
	a := sepAnswer{ResultCode: code, ResultDescription: desc, Success: code == sepOK}
	if code == sepOK || code == sepDuplicate {
		a.TransactionDetail = &sepDetail{
			RRN: strconv.FormatInt(rec.RefID, 10), RefNum: rec.Receipt, MaskedPan: rec.CardPAN, HashedPan: rec.CardHash,
			TerminalNumber: rec.MerchantID, OrginalAmount: rec.Amount, AffectiveAmount: rec.Amount,
			StraceDate: rec.PaidAt.In(b.tehran).Format("2006-01-02 15:04:05"), StraceNo: rec.traceNo,
		}
	}
	writeJSON(w, http.StatusOK, a)
}

type sepAnswer struct {
	TransactionDetail *sepDetail `json:"TransactionDetail"`
	ResultCode        int        `json:"ResultCode"`
	ResultDescription string     `json:"ResultDescription"`
	Success           bool       `json:"Success"`
}

type sepDetail struct {
	RRN             string `json:"RRN"`
	RefNum          string `json:"RefNum"`
	MaskedPan       string `json:"MaskedPan"`
	HashedPan       string `json:"HashedPan"`
	TerminalNumber  string `json:"TerminalNumber"`
	OrginalAmount   int64  `json:"OrginalAmount"`
	AffectiveAmount int64  `json:"AffectiveAmount"`
	StraceDate      string `json:"StraceDate"`
	StraceNo        string `json:"StraceNo"`
}

// sepReceipt serves the receipt API: a token's (or RefNum's) state for an
// hour after the token was made, and only until it is verified or
// reversed (404 otherwise).
func (b *Bank) sepReceipt(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token          string          `json:"Token"`
		RefNum         string          `json:"RefNum"`
		TerminalNumber json.RawMessage `json:"TerminalNumber"`
	}
	if v := decodeBody(w, r, &in); v != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid request"})
		return
	}
	terminal := rawString(in.TerminalNumber)
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := b.payments[in.Token]
	if in.Token == "" {
		rec = b.receipts[in.RefNum]
	}
	now := b.clock()
	if rec != nil {
		b.expireLocked(rec, now)
	}
	if rec == nil || rec.Gateway != gatewaySEP || rec.MerchantID != terminal || now.Sub(rec.CreatedAt) > sepReceiptLife ||
		rec.State == StateVerified || rec.State == StateReversed {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "receipt not found"})
		return
	}
	state := 0 // InProgress
	switch {
	case rec.State == StatePaid:
		state = 2 // OK
	case rec.State == StateFailed && rec.FailReason == FailCancelled:
		state = 1 // CanceledByUser
	case rec.State == StateFailed:
		state = 3 // Failed
	}
	writeJSON(w, http.StatusOK, map[string]any{"State": state, "Status": state, "RefNum": rec.Receipt, "ResNum": rec.OrderID,
		"Amount": rec.Amount, "TerminalId": rec.MerchantID, "TraceNo": rec.traceNo})
}

// sepCallback is the POST back to the merchant of a finished SEP payment.
func sepCallback(rec *record) CallbackRequest {
	state, status := "CanceledByUser", "1"
	refNum, rrn, trace, pan := "", "", "", ""
	if rec.State == StatePaid || rec.State == StateVerified {
		state, status = "OK", "2"
		refNum, rrn, trace, pan = rec.Receipt, strconv.FormatInt(rec.RefID, 10), rec.traceNo, rec.CardPAN
	}
	return postCallback(rec.CallbackURL,
		"MID", rec.MerchantID, "TerminalId", rec.MerchantID, "State", state, "Status", status,
		"RRN", rrn, "RefNum", refNum, "ResNum", rec.OrderID, "TraceNo", trace,
		"Amount", strconv.FormatInt(rec.Amount, 10), "Wage", "0", "SecurePan", pan,
		"Token", rec.Authority, "HashedCardNumber", rec.CardHash)
}

// newRefNumLocked is a fresh SEP RefNum: 40 letters and digits, unique.
func (b *Bank) newRefNumLocked() (string, error) {
	for {
		idx, err := b.randomIndexesLocked(40, len(authorityAlphabet))
		if err != nil {
			return "", fmt.Errorf("new RefNum: %w", err)
		}
		var sb strings.Builder
		for _, i := range idx {
			sb.WriteByte(authorityAlphabet[i])
		}
		if _, taken := b.receipts[sb.String()]; !taken {
			return sb.String(), nil
		}
	}
}

// newRecord registers a new IN_BANK payment of a token-flow gateway with a
// fresh token of n letters and digits.
func (b *Bank) newRecord(gateway, terminal string, amount int64, callback, orderID string, n int) (*record, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var token string
	for {
		idx, err := b.randomIndexesLocked(n, len(authorityAlphabet))
		if err != nil {
			return nil, fmt.Errorf("new token: %w", err)
		}
		var sb strings.Builder
		for _, i := range idx {
			sb.WriteByte(authorityAlphabet[i])
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
		Payment: Payment{Gateway: gateway, Authority: token, MerchantID: terminal, Amount: amount, Currency: "IRR",
			State: StateInBank, CallbackURL: callback, OrderID: orderID, Description: "", CreatedAt: b.clock()},
		seq: b.seq, reqAmount: amount, cardNumber: card,
	}
	b.payments[token] = rec
	return rec, nil
}

// checkCallback checks a merchant's callback URL as the Zarinpal request
// does: absolute http(s), and on the registered origin when the bank has
// one. It returns what is wrong, or "".
func (b *Bank) checkCallback(callback string) string {
	callback = strings.TrimSpace(callback)
	u, err := url.Parse(callback)
	switch {
	case callback == "":
		return "required"
	case !strings.HasPrefix(callback, "http://") && !strings.HasPrefix(callback, "https://"):
		return "must start with http:// or https://"
	case err != nil || u.Host == "":
		return "invalid URL"
	}
	if o := b.callbackOrigin; o != "" && (strings.ToLower(u.Scheme+"://"+u.Host) != o || !strings.HasPrefix(strings.ToLower(callback), o+"/")) {
		return "must be on the merchant's registered site"
	}
	return ""
}

// digits reports whether s is 1 to 18 ASCII digits.
func digits(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
