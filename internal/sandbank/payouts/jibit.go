package payouts

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// jibitAPI imitates Jibit's Transferor under /trf: tokens, transfers,
// their inquiry and filter, the balances. Any keys are taken (a sandbox);
// every call but the tokens' needs a token it issued.
type jibitAPI struct {
	b      *Book
	mu     sync.Mutex
	tokens map[string]bool
}

// jibitTransfer is a transfer as the Transferor shows it.
type jibitTransfer struct {
	TransferID     string  `json:"transferID"`
	BatchID        string  `json:"batchID"`
	State          State   `json:"state"`
	TransferMode   string  `json:"transferMode"`
	Destination    string  `json:"destination"`
	Amount         int64   `json:"amount"`
	Currency       string  `json:"currency"`
	BankTransferID *string `json:"bankTransferID"`
	CreatedAt      string  `json:"createdAt"`
}

func jibitView(p Payout) jibitTransfer {
	t := jibitTransfer{TransferID: p.ID, BatchID: p.ID, State: p.State, TransferMode: p.Mode, Destination: p.Sheba,
		Amount: p.AmountRials, Currency: "RIALS", CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339)}
	if p.BankRef != "" {
		ref := p.BankRef
		t.BankTransferID = &ref
	}
	return t
}

func jibitError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"fingerprint": "00000000-0000-4000-8000-000000000000",
		"errors": []map[string]string{{"code": code, "message": message}}})
}

func (a *jibitAPI) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /trf/v2/tokens/generate", a.faulted("token", a.generate))
	mux.HandleFunc("POST /trf/v2/tokens/refresh", a.faulted("token", a.generate))
	mux.HandleFunc("POST /trf/v2/transfers", a.faulted("submit", a.authed(a.submit)))
	mux.HandleFunc("GET /trf/v2/transfers", a.faulted("status", a.authed(a.inquiry)))
	mux.HandleFunc("GET /trf/v2/transfers/filter", a.faulted("list", a.authed(a.filter)))
	mux.HandleFunc("GET /trf/v2/balances", a.faulted("balance", a.authed(a.balances)))
}

// faulted applies the provider's faults that replace a call (maintenance,
// a 5xx) before it.
func (a *jibitAPI) faulted(op string, h func(http.ResponseWriter, *http.Request, plan)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := a.b.plan(Jibit, op)
		if p.maintenance || p.error5xx {
			unavailable(w, p.maintenance)
			return
		}
		h(w, r, p)
	}
}

func (a *jibitAPI) authed(h func(http.ResponseWriter, *http.Request, plan)) func(http.ResponseWriter, *http.Request, plan) {
	return func(w http.ResponseWriter, r *http.Request, p plan) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		a.mu.Lock()
		known := ok && a.tokens[tok]
		a.mu.Unlock()
		if !known {
			jibitError(w, http.StatusUnauthorized, "security.auth_required", "a valid access token is required")
			return
		}
		h(w, r, p)
	}
}

func (a *jibitAPI) generate(w http.ResponseWriter, r *http.Request, _ plan) {
	var in map[string]string
	if err := decode(w, r, &in); err != nil {
		jibitError(w, http.StatusBadRequest, "request.invalid", err.Error())
		return
	}
	if r.URL.Path == "/trf/v2/tokens/generate" && (len(in["apiKey"]) < 8 || len(in["secretKey"]) < 8) {
		jibitError(w, http.StatusUnauthorized, "security.auth_failed", "apiKey and secretKey are required")
		return
	}
	access, refresh := newToken(), newToken()
	a.mu.Lock()
	a.tokens[access] = true
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"accessToken": access, "refreshToken": refresh})
}

func (a *jibitAPI) submit(w http.ResponseWriter, r *http.Request, p plan) {
	var in struct {
		BatchID        string `json:"batchID"`
		SubmissionMode string `json:"submissionMode"`
		Transfers      []struct {
			TransferID   string          `json:"transferID"`
			TransferMode string          `json:"transferMode"`
			Destination  string          `json:"destination"`
			Amount       json.RawMessage `json:"amount"`
			Currency     string          `json:"currency"`
			Description  string          `json:"description"`
		} `json:"transfers"`
	}
	if err := decode(w, r, &in); err != nil || len(in.Transfers) != 1 || in.SubmissionMode != "TRANSFER" {
		jibitError(w, http.StatusBadRequest, "request.invalid", "one transfer in TRANSFER mode is what the sandbox takes")
		return
	}
	t := in.Transfers[0]
	amount, err := strconv.ParseInt(string(t.Amount), 10, 64)
	if t.Currency == "TOMAN" {
		amount *= 10
	}
	switch {
	case t.TransferID == "" || len(t.TransferID) > 64:
		jibitError(w, http.StatusBadRequest, "transfers.0.transferID.invalid", "transferID is required")
		return
	case err != nil || amount < 10_000:
		jibitError(w, http.StatusBadRequest, "transfers.0.amount.invalid", "amount is below the minimum")
		return
	case !validSheba(t.Destination):
		jibitError(w, http.StatusBadRequest, "transfers.0.destination.invalid", "destination is not a valid IBAN")
		return
	case t.TransferMode != "ACH" && t.TransferMode != "RTGS" && t.TransferMode != "NORMAL":
		jibitError(w, http.StatusBadRequest, "transfers.0.transferMode.invalid", "transferMode is ACH, RTGS or NORMAL")
		return
	case p.balanceShort:
		jibitError(w, http.StatusBadRequest, "balance.not_enough", "the settleable balance is not enough")
		return
	}
	po := Payout{Provider: Jibit, ID: t.TransferID, AmountRials: amount, Sheba: t.Destination, Mode: t.TransferMode, Description: t.Description}
	_, res := a.b.submit(po)
	if res == submitBalanceShort {
		jibitError(w, http.StatusBadRequest, "balance.not_enough", "the settleable balance is not enough")
		return
	}
	if p.duplicate && res == submitTaken {
		_, res = a.b.submit(po) // the resent request arrives too
	}
	switch {
	case p.hang:
		withhold(w, r, p.hangD)
	case res == submitDuplicate:
		jibitError(w, http.StatusBadRequest, "transfer.already_exists", "a transfer with this transferID exists")
	default:
		writeJSON(w, http.StatusOK, map[string]int{"submittedCount": 1})
	}
}

func (a *jibitAPI) inquiry(w http.ResponseWriter, r *http.Request, _ plan) {
	id := r.URL.Query().Get("transferID")
	out := []jibitTransfer{}
	if p, ok := a.b.inquire(Jibit, id); ok {
		out = append(out, jibitView(p))
	}
	writeJSON(w, http.StatusOK, map[string]any{"transfers": out})
}

func (a *jibitAPI) filter(w http.ResponseWriter, r *http.Request, _ plan) {
	q := r.URL.Query()
	from, err1 := time.Parse(time.RFC3339, q.Get("from"))
	to, err2 := time.Parse(time.RFC3339, q.Get("to"))
	page, err3 := strconv.Atoi(q.Get("page"))
	size, err4 := strconv.Atoi(q.Get("size"))
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || page < 0 || size < 1 || size > 500 {
		jibitError(w, http.StatusBadRequest, "request.invalid", "from, to (RFC 3339), page and size are required")
		return
	}
	var all []jibitTransfer
	for _, p := range a.b.Payouts() {
		if p.Provider != Jibit || p.CreatedAt.Before(from) || !p.CreatedAt.Before(to) {
			continue
		}
		if cur, ok := a.b.inquire(Jibit, p.ID); ok {
			p = cur
		}
		all = append(all, jibitView(p))
	}
	start := min(page*size, len(all))
	end := min(start+size, len(all))
	writeJSON(w, http.StatusOK, map[string]any{"elements": append([]jibitTransfer{}, all[start:end]...)})
}

func (a *jibitAPI) balances(w http.ResponseWriter, _ *http.Request, _ plan) {
	writeJSON(w, http.StatusOK, map[string]any{"balances": []map[string]any{
		{"balanceType": "STL", "amount": a.b.Balance(Jibit)}, {"balanceType": "WAGE", "amount": 0}}})
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
