package payouts

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DuplicateMessage is the answer to a second payout of one uniqueCode.
const DuplicateMessage = "این درخواست تسویه قبلا ثبت شده است"

// zibalAPI imitates Zibal's platform: the wallet checkout, its inquiry,
// the balance and the ownership inquiry. Any Bearer token is taken, and
// any wallet of digits.
type zibalAPI struct{ b *Book }

func zibalAnswer(w http.ResponseWriter, result int, message string, data any) {
	body := map[string]any{"result": result, "message": message}
	if data != nil {
		body["data"] = data
	}
	writeJSON(w, http.StatusOK, body)
}

func (a *zibalAPI) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/wallet/checkout/plus", a.faulted("submit", a.checkout))
	mux.HandleFunc("POST /v1/report/checkout/inquire", a.faulted("status", a.inquire))
	mux.HandleFunc("POST /v1/wallet/balance", a.faulted("balance", a.balance))
	mux.HandleFunc("POST /v1/facility/checkIbanWithNationalCode", a.faulted("owner", a.owner))
}

func (a *zibalAPI) faulted(op string, h func(http.ResponseWriter, *http.Request, plan)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := a.b.plan(Zibal, op)
		if p.maintenance || p.error5xx {
			unavailable(w, p.maintenance)
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") || len(r.Header.Get("Authorization")) < len("Bearer ")+8 {
			zibalAnswer(w, 2, "API Key به درستی ارسال نشده است.", nil)
			return
		}
		h(w, r, p)
	}
}

func wallet(raw any) bool {
	switch v := raw.(type) {
	case float64:
		return v > 0
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return err == nil && n > 0
	}
	return false
}

func (a *zibalAPI) checkout(w http.ResponseWriter, r *http.Request, p plan) {
	var in map[string]any
	if err := decode(w, r, &in); err != nil {
		zibalAnswer(w, 6, "یکی از فیلدهای اجباری ارسال نشده\u200cاست.", nil)
		return
	}
	amount, _ := in["amount"].(float64)
	iban, _ := in["bankAccount"].(string)
	code, _ := in["uniqueCode"].(string)
	desc, _ := in["description"].(string)
	switch {
	case !wallet(in["id"]):
		zibalAnswer(w, 10, "کیف پول انتخاب شده وجود ندارد.", nil)
		return
	case code == "" || iban == "" || in["amount"] == nil:
		zibalAnswer(w, 6, "یکی از فیلدهای اجباری ارسال نشده\u200cاست.", nil)
		return
	case amount < 10_000 || amount != float64(int64(amount)):
		zibalAnswer(w, 12, "حداقل مبلغ تسویه 10000 ریال است.", nil)
		return
	case !validSheba(iban):
		zibalAnswer(w, 21, "شماره شبای وارد شده نامعتبر است (شروع با IR و 26 کاراکتر)", nil)
		return
	case p.balanceShort:
		zibalAnswer(w, 11, "مبلغ درخواستی از موجودی کیف پول بیشتر است.", nil)
		return
	}
	po := Payout{Provider: Zibal, ID: code, AmountRials: int64(amount), Sheba: iban, Mode: "PAYA", Description: desc}
	taken, res := a.b.submit(po)
	if res == submitBalanceShort {
		zibalAnswer(w, 11, "مبلغ درخواستی از موجودی کیف پول بیشتر است.", nil)
		return
	}
	if p.duplicate && res == submitTaken {
		_, res = a.b.submit(po)
	}
	switch {
	case p.hang:
		withhold(w, r, p.hangD)
	case res == submitDuplicate:
		// The code of this answer is not known; its message is.
		zibalAnswer(w, 0, DuplicateMessage, nil)
	default:
		next := a.b.clock().Add(time.Hour).In(tehran()).Format("2006/01/02-15:04:05")
		zibalAnswer(w, 1, "success", map[string]any{"id": taken.Ref, "predictedCheckoutDate": next})
	}
}

func (a *zibalAPI) inquire(w http.ResponseWriter, r *http.Request, _ plan) {
	var in map[string]any
	if err := decode(w, r, &in); err != nil {
		zibalAnswer(w, 6, "یکی از فیلدهای اجباری ارسال نشده\u200cاست.", nil)
		return
	}
	code, _ := in["uniqueCode"].(string)
	if !wallet(in["walletId"]) {
		zibalAnswer(w, 10, "کیف پول انتخاب شده وجود ندارد.", nil)
		return
	}
	p, ok := a.b.inquire(Zibal, code)
	if !ok {
		zibalAnswer(w, 14, "درخواست تسویه مورد نظر وجود ندارد.", nil)
		return
	}
	data := map[string]any{}
	switch p.State {
	case StateInProgress:
		data["type"] = "checkoutQueue"
	case StateFailed:
		data["type"] = "canceledCheckout"
	default:
		data["type"] = "checkout"
		data["details"] = []map[string]any{{"checkoutStatus": 0, "refCode": p.BankRef, "amount": p.AmountRials}}
	}
	zibalAnswer(w, 1, "success", data)
}

func (a *zibalAPI) balance(w http.ResponseWriter, r *http.Request, _ plan) {
	var in map[string]any
	if err := decode(w, r, &in); err != nil || !wallet(in["id"]) {
		zibalAnswer(w, 10, "کیف پول انتخاب شده وجود ندارد.", nil)
		return
	}
	b := a.b.Balance(Zibal)
	zibalAnswer(w, 1, "success", map[string]any{"balance": b, "withdrawableBalance": b})
}

func (a *zibalAPI) owner(w http.ResponseWriter, r *http.Request, p plan) {
	var in map[string]any
	if err := decode(w, r, &in); err != nil {
		zibalAnswer(w, 6, "یکی از فیلدهای اجباری ارسال نشده\u200cاست.", nil)
		return
	}
	iban, _ := in["IBAN"].(string)
	nc, _ := in["nationalCode"].(string)
	switch {
	case p.noUpstream:
		zibalAnswer(w, 45, "سرویس\u200cدهنده بالادستی در دسترس نیست.", nil)
	case iban == "" || nc == "":
		zibalAnswer(w, 6, "یکی از فیلدهای اجباری ارسال نشده\u200cاست.", nil)
	case !validSheba(iban):
		zibalAnswer(w, 21, "شماره شبای وارد شده نامعتبر است.", nil)
	default:
		zibalAnswer(w, 1, "success", map[string]any{"matched": a.b.owned(iban, nc)})
	}
}

func tehran() *time.Location { return time.FixedZone("Asia/Tehran", 3*3600+1800) }
