// Package sep is the sandbox bank's Saman (SEP) token flow, at SEP's own
// paths:
//
//	POST /onlinepg/onlinepg                                    token (JSON, action "token")
//	POST /OnlinePG/OnlinePG                                    payer's page (form field Token)
//	GET  /OnlinePG/SendToken?token=                            the same page by link (its history entry)
//	POST /OnlinePG/OnlinePG/pay | /cancel                      its buttons (form field Token)
//	POST /verifyTxnRandomSessionkey/ipg/VerifyTransaction      verify (RefNum, TerminalNumber)
//	POST /verifyTxnRandomSessionkey/ipg/ReverseTransaction     reverse (within 50 minutes)
//	POST /verifyTxnRandomSessionkey/api/v2/ipg/payment/receipt receipt of a Token or RefNum (≤ 1 h, before verify)
//
// The payer is posted back with MID, TerminalId, State, Status, RRN,
// RefNum, ResNum, TraceNo, Amount, Wage, SecurePan, Token,
// HashedCardNumber. A payment not verified within 30 minutes of being
// paid is reversed (the payer gets the money back).
//
// SEP's token request carries no description (its fields: TerminalId,
// Amount, ResNum, RedirectUrl, CellNumber, and optional Wage,
// TokenExpiryInMin, HashedCardNumber, ResNum1..4), so the payer's page
// says what is paid to which terminal instead (page.description).
package sep

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// Protocol is the name gateway drivers give this imitation.
const Protocol = "sep-token"

// Gateway is the gateway of its payments.
const Gateway = "sep"

// The SEP operations (fault keys).
const (
	opSEPRequest   = "sep-request"
	opSEPVerify    = "sep-verify"
	opSEPReverse   = "sep-reverse"
	opSEPReceipt   = "sep-inquiry"
	opSEPStart     = "sep-startpay"   // the pages (page.Form)
	sepTokenLife   = 20 * time.Minute // the page takes a token this long (no TokenExpiryInMin)
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

// SEP is the protocol.
type SEP struct {
	env  protocol.Env
	form page.Form
}

// New returns the protocol served with env.
func New(env protocol.Env) protocol.Protocol {
	return &SEP{env: env, form: page.Form{Gateway: Gateway, Field: "Token", Dir: "/OnlinePG/", Start: "OnlinePG",
		Page: "SendToken", Key: "token", Op: opSEPStart}}
}

// Name is "sep-token".
func (s *SEP) Name() string { return Protocol }

// Gateway is "sep".
func (s *SEP) Gateway() string { return Gateway }

// Rules: the page takes the token for 20 minutes (SEP's default, no
// TokenExpiryInMin); a paid payment is reversed 30 minutes on without
// verify; paying gives it a RefNum and a TraceNo; the callback is a POST.
func (s *SEP) Rules() book.Rules {
	return book.Rules{PageTTL: sepTokenLife, VerifyDeadline: sepVerifyLimit, Paid: paid, Callback: sepCallback}
}

// paid gives a paid payment its RefNum (40 letters and digits, unique) and
// TraceNo.
func paid(b *book.Book, rec *book.Record, refID int64) error {
	for {
		refNum, err := b.RandomTextLocked(book.Alphanumerics, 40)
		if err != nil {
			return fmt.Errorf("new RefNum: %w", err)
		}
		if b.ReceiptLocked(refNum) == nil {
			rec.Receipt = refNum
			break
		}
	}
	rec.TraceNo = strconv.FormatInt(100000+refID%900000, 10)
	return nil
}

// Ops are SEP's operations, prefixed "sep-".
func (s *SEP) Ops() []string {
	return []string{opSEPRequest, opSEPVerify, opSEPReceipt, opSEPReverse, opSEPStart}
}

// CommitOps: verify, and reverse (a card refund).
func (s *SEP) CommitOps() []string { return []string{opSEPVerify, opSEPReverse} }

// Committed: a verify's or reverse's ResultCode 0.
func (s *SEP) Committed(_ string, body []byte) bool {
	var a struct{ ResultCode *int }
	return json.Unmarshal(body, &a) == nil && a.ResultCode != nil && *a.ResultCode == sepOK
}

// Refuse answers a proxy's 429 page.
func (s *SEP) Refuse(_ string, w http.ResponseWriter) {
	protocol.FaultPage(w, http.StatusTooManyRequests)
}

// Routes registers SEP's paths.
func (s *SEP) Routes(mux *http.ServeMux, op func(string) http.Handler) {
	mux.Handle("/onlinepg/onlinepg", op(opSEPRequest))
	s.form.Routes(mux, op)
	mux.Handle("/verifyTxnRandomSessionkey/ipg/VerifyTransaction", op(opSEPVerify))
	mux.Handle("/verifyTxnRandomSessionkey/ipg/ReverseTransaction", op(opSEPReverse))
	mux.Handle("/verifyTxnRandomSessionkey/api/v2/ipg/payment/receipt", op(opSEPReceipt))
}

// Serve performs one SEP operation.
func (s *SEP) Serve(op string, w http.ResponseWriter, r *http.Request) {
	switch op {
	case opSEPRequest, opSEPVerify, opSEPReverse, opSEPReceipt:
		if protocol.AllowPOST(w, r, func(w http.ResponseWriter) {
			protocol.WriteJSON(w, http.StatusMethodNotAllowed, map[string]any{"status": -1, "errorCode": "405", "errorDesc": "use POST"})
		}) {
			return
		}
	}
	switch op {
	case opSEPRequest:
		s.token(w, r)
	case opSEPVerify:
		s.verify(w, r, false)
	case opSEPReverse:
		s.verify(w, r, true)
	case opSEPReceipt:
		s.receipt(w, r)
	default:
		if !s.env.Pages.ServeForm(w, r, s.form, op) {
			http.NotFound(w, r)
		}
	}
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
	protocol.WriteJSON(w, http.StatusOK, map[string]any{"status": -1, "errorCode": code, "errorDesc": desc})
}

func (s *SEP) token(w http.ResponseWriter, r *http.Request) {
	var in sepTokenBody
	if err := protocol.DecodeBody(w, r, &in); err != nil {
		sepRefuse(w, "5", "invalid request body")
		return
	}
	terminal := protocol.RawString(in.TerminalID)
	amount, _, amountOK := protocol.Amount(in.Amount)
	switch {
	case !strings.EqualFold(in.Action, "token"):
		sepRefuse(w, "5", "action must be token")
		return
	case !protocol.Digits(terminal) || terminal == "0":
		sepRefuse(w, "2", "terminal not found")
		return
	case !amountOK || amount < protocol.MinAmountRials || amount > protocol.MaxAmountRials:
		sepRefuse(w, "5", "invalid amount")
		return
	case strings.TrimSpace(in.ResNum) == "" || len(in.ResNum) > 50:
		sepRefuse(w, "5", "ResNum is required (at most 50 characters)")
		return
	}
	if msg := protocol.CheckCallback(s.env.CallbackOrigin, in.RedirectURL); msg != "" {
		sepRefuse(w, "5", "RedirectUrl: "+msg)
		return
	}
	rec, err := s.env.Book.Open(book.Payment{Gateway: Gateway, MerchantID: terminal, Amount: amount, Currency: "IRR",
		CallbackURL: in.RedirectURL, OrderID: in.ResNum}, amount, "", 32)
	if err != nil {
		s.env.Log.Error("sandbank: sep token", "err", err)
		http.Error(w, "sandbank: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s.env.Log.Info("sandbank: sep token", "token", rec.Authority, "amount", amount, "terminal", terminal)
	protocol.WriteJSON(w, http.StatusOK, map[string]any{"status": 1, "token": rec.Authority})
}

type sepVerifyBody struct {
	RefNum         string          `json:"RefNum"`
	TerminalNumber json.RawMessage `json:"TerminalNumber"`
}

// verify serves VerifyTransaction, or ReverseTransaction when reverse.
func (s *SEP) verify(w http.ResponseWriter, r *http.Request, reverse bool) {
	var in sepVerifyBody
	if err := protocol.DecodeBody(w, r, &in); err != nil || in.RefNum == "" {
		protocol.WriteJSON(w, http.StatusOK, sepAnswer{ResultCode: sepBadInput, ResultDescription: "invalid request", Success: false})
		return
	}
	terminal := protocol.RawString(in.TerminalNumber)
	bk := s.env.Book
	bk.Lock()
	defer bk.Unlock()
	rec := bk.ReceiptLocked(in.RefNum)
	if rec == nil || rec.Gateway != Gateway || rec.MerchantID != terminal {
		protocol.WriteJSON(w, http.StatusOK, sepAnswer{ResultCode: sepNotFound, ResultDescription: "تراکنش یافت نشد (transaction not found)"})
		return
	}
	now := bk.Now()
	bk.ExpireLocked(rec, now)
	code, desc := sepOK, "عملیات با موفقیت انجام شد"
	switch {
	case reverse && rec.State == book.StateVerified && now.Sub(rec.PaidAt) < sepReverseLim:
		rec.State, rec.ReversedAt = book.StateReversed, now
		s.env.Log.Info("sandbank: sep reversed", "token", rec.Authority)
	case reverse && rec.State == book.StateReversed && !rec.VerifiedAt.IsZero():
		// A verified sale reversed before (a lost answer's twin, or by
		// another hand): 5, as verify says of it.
		code, desc = sepReversed, "transaction reversed"
	case reverse:
		code, desc = sepTooLate, "reverse not possible (not verified, or more than 50 minutes)"
	case rec.State == book.StatePaid:
		rec.VerifyCount++
		rec.State, rec.VerifiedAt = book.StateVerified, now
		s.env.Log.Info("sandbank: sep verified", "token", rec.Authority, "ref_num", rec.Receipt)
	case rec.State == book.StateVerified:
		rec.VerifyCount++
		code, desc = sepDuplicate, "درخواست تکراری می باشد (duplicate request)"
	case rec.State == book.StateReversed && rec.VerifiedAt.IsZero():
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
			StraceDate: rec.PaidAt.In(bk.Tehran()).Format("2006-01-02 15:04:05"), StraceNo: rec.TraceNo,
		}
	}
	protocol.WriteJSON(w, http.StatusOK, a)
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

// receipt serves the receipt API: a token's (or RefNum's) state for an
// hour after the token was made, and only until it is verified or
// reversed (404 otherwise).
func (s *SEP) receipt(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token          string          `json:"Token"`
		RefNum         string          `json:"RefNum"`
		TerminalNumber json.RawMessage `json:"TerminalNumber"`
	}
	if err := protocol.DecodeBody(w, r, &in); err != nil {
		protocol.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid request"})
		return
	}
	terminal := protocol.RawString(in.TerminalNumber)
	bk := s.env.Book
	bk.Lock()
	defer bk.Unlock()
	rec, _ := bk.GetLocked(in.Token)
	if in.Token == "" {
		rec = bk.ReceiptLocked(in.RefNum)
	}
	now := bk.Now()
	if rec != nil {
		bk.ExpireLocked(rec, now)
	}
	if rec == nil || rec.Gateway != Gateway || rec.MerchantID != terminal || now.Sub(rec.CreatedAt) > sepReceiptLife ||
		rec.State == book.StateVerified || rec.State == book.StateReversed {
		protocol.WriteJSON(w, http.StatusNotFound, map[string]any{"error": "receipt not found"})
		return
	}
	state := 0 // InProgress
	switch {
	case rec.State == book.StatePaid:
		state = 2 // OK
	case rec.State == book.StateFailed && rec.FailReason == book.FailCancelled:
		state = 1 // CanceledByUser
	case rec.State == book.StateFailed:
		state = 3 // Failed
	}
	protocol.WriteJSON(w, http.StatusOK, map[string]any{"State": state, "Status": state, "RefNum": rec.Receipt, "ResNum": rec.OrderID,
		"Amount": rec.Amount, "TerminalId": rec.MerchantID, "TraceNo": rec.TraceNo})
}

// sepCallback is the POST back to the merchant of a finished SEP payment.
func sepCallback(rec *book.Record) book.CallbackRequest {
	state, status := "CanceledByUser", "1"
	refNum, rrn, trace, pan := "", "", "", ""
	if rec.State == book.StatePaid || rec.State == book.StateVerified {
		state, status = "OK", "2"
		refNum, rrn, trace, pan = rec.Receipt, strconv.FormatInt(rec.RefID, 10), rec.TraceNo, rec.CardPAN
	}
	return book.PostCallback(rec.CallbackURL,
		"MID", rec.MerchantID, "TerminalId", rec.MerchantID, "State", state, "Status", status,
		"RRN", rrn, "RefNum", refNum, "ResNum", rec.OrderID, "TraceNo", trace,
		"Amount", strconv.FormatInt(rec.Amount, 10), "Wage", "0", "SecurePan", pan,
		"Token", rec.Authority, "HashedCardNumber", rec.CardHash)
}
