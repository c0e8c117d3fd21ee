// Package zibal is the sandbox bank's Zibal IPG v1, at Zibal's own paths
// (https://gateway.zibal.ir):
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
package zibal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// Protocol is the name gateway drivers give this imitation.
const Protocol = "zibal-v1"

// Gateway is the gateway of its payments.
const Gateway = "zibal"

// Zibal is the protocol.
type Zibal struct {
	env  protocol.Env
	link page.Link
}

// New returns the protocol served with env.
func New(env protocol.Env) protocol.Protocol {
	return &Zibal{env: env, link: page.Link{Gateway: Gateway, Path: "/start/", Op: opZibalStart, Assets: "../pg/assets/bank"}}
}

// Name is "zibal-v1".
func (z *Zibal) Name() string { return Protocol }

// Gateway is "zibal".
func (z *Zibal) Gateway() string { return Gateway }

// Rules: no verify deadline (Zibal documents none), the callback a GET
// with trackId, success, status and orderId.
func (z *Zibal) Rules() book.Rules { return book.Rules{Callback: zibalCallback} }

// Ops are Zibal's operations, prefixed "zibal-".
func (z *Zibal) Ops() []string {
	return []string{opZibalRequest, opZibalVerify, opZibalInquiry, opZibalStart}
}

// CommitOps: verify.
func (z *Zibal) CommitOps() []string { return []string{opZibalVerify} }

// Committed: a verify's result 100.
func (z *Zibal) Committed(_ string, body []byte) bool {
	var a struct{ Result *int }
	return json.Unmarshal(body, &a) == nil && a.Result != nil && *a.Result == zbSuccess
}

// Refuse answers a proxy's 429 page.
func (z *Zibal) Refuse(_ string, w http.ResponseWriter) {
	protocol.FaultPage(w, http.StatusTooManyRequests)
}

// The Zibal operations (fault keys: FaultOps).
const (
	opZibalRequest = "zibal-request"
	opZibalVerify  = "zibal-verify"
	opZibalInquiry = "zibal-inquiry"
	opZibalStart   = "zibal-startpay" // the page and its buttons (page.Link)
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

// Routes registers Zibal's paths.
func (z *Zibal) Routes(mux *http.ServeMux, op func(string) http.Handler) {
	mux.Handle("/v1/request", op(opZibalRequest))
	mux.Handle("/v1/verify", op(opZibalVerify))
	mux.Handle("/v1/inquiry", op(opZibalInquiry))
	z.link.Routes(mux, op)
}

// Serve performs one Zibal operation.
func (z *Zibal) Serve(op string, w http.ResponseWriter, r *http.Request) {
	switch op {
	case opZibalRequest, opZibalVerify, opZibalInquiry:
		if protocol.AllowPOST(w, r, func(w http.ResponseWriter) {
			protocol.WriteJSON(w, http.StatusMethodNotAllowed, map[string]any{"result": -1, "message": "use POST"})
		}) {
			return
		}
	}
	switch op {
	case opZibalRequest:
		z.zibalRequest(w, r)
	case opZibalVerify:
		z.zibalVerify(w, r)
	case opZibalInquiry:
		z.zibalInquiry(w, r)
	default:
		if !z.env.Pages.ServeLink(w, r, z.link, op) {
			http.NotFound(w, r)
		}
	}
}

func zibalAnswer(w http.ResponseWriter, result int, extra map[string]any) {
	out := map[string]any{"result": result, "message": zibalMessage(result)}
	for k, v := range extra {
		out[k] = v
	}
	protocol.WriteJSON(w, http.StatusOK, out)
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

func (z *Zibal) zibalRequest(w http.ResponseWriter, r *http.Request) {
	var in zibalRequestBody
	if err := protocol.DecodeBody(w, r, &in); err != nil {
		zibalAnswer(w, zbMerchantInvalid, nil)
		return
	}
	amount, _, amountOK := protocol.Amount(in.Amount)
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
	case amount > protocol.MaxAmountRials:
		zibalAnswer(w, zbOverLimit, nil)
		return
	case len(in.OrderID) > 100:
		zibalAnswer(w, zbMerchantInvalid, nil)
		return
	}
	if msg := protocol.CheckCallback(z.env.CallbackOrigin, in.CallbackURL); msg != "" {
		zibalAnswer(w, zbBadCallback, nil)
		return
	}
	rec, err := z.newRecord(in, amount)
	if err != nil {
		z.env.Log.Error("sandbank: zibal request", "err", err)
		http.Error(w, "sandbank: "+err.Error(), http.StatusInternalServerError)
		return
	}
	z.env.Log.Info("sandbank: zibal request", "track_id", rec.Authority, "amount", amount)
	id, _ := strconv.ParseInt(rec.Authority, 10, 64)
	zibalAnswer(w, zbSuccess, map[string]any{"trackId": id})
}

// newRecord registers a new IN_BANK Zibal payment with a fresh numeric
// trackId (10 digits).
func (z *Zibal) newRecord(in zibalRequestBody, amount int64) (*book.Record, error) {
	bk := z.env.Book
	bk.Lock()
	defer bk.Unlock()
	var token string
	for {
		idx, err := bk.RandomIndexesLocked(9, 10)
		if err != nil {
			return nil, fmt.Errorf("new trackId: %w", err)
		}
		var sb strings.Builder
		sb.WriteByte("123456789"[idx[0]%9]) // no leading zero
		for _, i := range idx {
			sb.WriteByte("0123456789"[i])
		}
		token = sb.String()
		if !bk.TakenLocked(token) {
			break
		}
	}
	card, err := bk.NewCardLocked()
	if err != nil {
		return nil, err
	}
	rec := &book.Record{
		Payment: book.Payment{Gateway: Gateway, Authority: token, MerchantID: in.Merchant, Amount: amount, Currency: "IRR",
			State: book.StateInBank, CallbackURL: strings.TrimSpace(in.CallbackURL), OrderID: in.OrderID, Description: in.Description,
			Mobile: in.Mobile, CreatedAt: bk.Now()},
		ReqAmount: amount, CardNumber: card,
	}
	bk.AddLocked(rec)
	return rec, nil
}

type zibalTrackBody struct {
	Merchant string          `json:"merchant"`
	TrackID  json.RawMessage `json:"trackId"`
}

// withRecord decodes a verify or inquiry body and runs f on the
// merchant's payment it names, under the book's lock; it answers the
// refusal itself when there is none.
func (z *Zibal) withRecord(w http.ResponseWriter, r *http.Request, f func(rec *book.Record)) {
	var in zibalTrackBody
	if err := protocol.DecodeBody(w, r, &in); err != nil {
		zibalAnswer(w, zbBadTrackID, nil)
		return
	}
	if !zibalMerchant(in.Merchant) {
		zibalAnswer(w, zbMerchantNotFound, nil)
		return
	}
	bk := z.env.Book
	bk.Lock()
	defer bk.Unlock()
	rec, ok := bk.GetLocked(protocol.RawString(in.TrackID))
	if !ok || rec.Gateway != Gateway || rec.MerchantID != in.Merchant {
		zibalAnswer(w, zbBadTrackID, nil)
		return
	}
	bk.ExpireLocked(rec, bk.Now())
	f(rec)
}

func (z *Zibal) zibalVerify(w http.ResponseWriter, r *http.Request) {
	z.withRecord(w, r, func(rec *book.Record) {
		rec.VerifyCount++
		switch rec.State {
		case book.StatePaid:
			rec.State, rec.VerifiedAt = book.StateVerified, z.env.Book.Now()
			z.env.Log.Info("sandbank: zibal verified", "track_id", rec.Authority, "ref_number", rec.RefID)
			zibalAnswer(w, zbSuccess, z.details(rec, false))
		case book.StateVerified:
			// Zibal answers a repeated verify without the payment's details.
			zibalAnswer(w, zbAlreadyVerified, nil)
		default:
			zibalAnswer(w, zbNotPaid, nil)
		}
	})
}

func (z *Zibal) zibalInquiry(w http.ResponseWriter, r *http.Request) {
	z.withRecord(w, r, func(rec *book.Record) { zibalAnswer(w, zbSuccess, z.details(rec, true)) })
}

// zibalStatus is a payment's state as Zibal numbers it.
func zibalStatus(rec *book.Record) int {
	switch rec.State {
	case book.StateInBank:
		return zbStatusWaiting
	case book.StatePaid:
		return zbStatusPaid
	case book.StateVerified:
		return zbStatusVerified
	}
	return zbStatusCancelled
}

// details are the fields a verify (or, with inquiry, an inquiry) answers
// with.
func (z *Zibal) details(rec *book.Record, inquiry bool) map[string]any {
	tehran := z.env.Book.Tehran()
	out := map[string]any{"status": zibalStatus(rec), "amount": rec.Amount, "orderId": rec.OrderID, "description": rec.Description}
	if !rec.PaidAt.IsZero() {
		out["paidAt"] = rec.PaidAt.In(tehran).Format("2006-01-02T15:04:05.000")
		out["refNumber"] = rec.RefID
		out["cardNumber"] = rec.CardPAN
	}
	if inquiry {
		out["createdAt"] = rec.CreatedAt.In(tehran).Format("2006-01-02T15:04:05.000")
		out["wage"] = 0
		if !rec.VerifiedAt.IsZero() {
			out["verifiedAt"] = rec.VerifiedAt.In(tehran).Format("2006-01-02T15:04:05.000")
		}
	}
	return out
}

// zibalCallback is the payer's GET back to the merchant.
func zibalCallback(rec *book.Record) book.CallbackRequest {
	success, status := "0", strconv.Itoa(zibalStatus(rec))
	if rec.State == book.StatePaid || rec.State == book.StateVerified {
		success = "1"
	}
	q := url.Values{}
	q.Set("trackId", rec.Authority)
	q.Set("success", success)
	q.Set("status", status)
	q.Set("orderId", rec.OrderID)
	return book.GetCallback(book.AppendQuery(rec.CallbackURL, q.Encode()))
}
