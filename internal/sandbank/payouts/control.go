package payouts

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/kifpool/kifpool/internal/iban"
)

// Routes adds the providers' paths to mux, and the control API when
// control is set:
//
//	GET  /_sandbank/payouts                             every payout (JSON)
//	POST /_sandbank/payouts/{provider}/{id}/settle      IN_PROGRESS → TRANSFERRED
//	POST /_sandbank/payouts/{provider}/{id}/fail        IN_PROGRESS → FAILED
//	POST /_sandbank/payouts/{provider}/{id}/return      TRANSFERRED → MANUALLY_FAILED (Jibit)
//	GET|POST|DELETE /_sandbank/payouts/faults           the payout faults
//	POST /_sandbank/payouts/owners                      {"iban", "national_code", "owned"}: the inquiry's answer
//
// {id} is the merchant's id of the payout (Kifpool's withdrawal's public
// id). Answers: 200 with the payout, 404 for an unknown one, 409 when its
// state does not allow the change. With loopbackOnly, the control API
// answers only calls made on this machine, not through a proxy (the bank
// inside serve: a demo's or a test's `curl`, never a visitor).
func (b *Book) Routes(mux *http.ServeMux, control, loopbackOnly bool) {
	(&jibitAPI{b: b, tokens: map[string]bool{}}).routes(mux)
	(&zibalAPI{b: b}).routes(mux)
	if !control {
		return
	}
	guard := func(h http.HandlerFunc) http.HandlerFunc {
		if !loopbackOnly {
			return h
		}
		return func(w http.ResponseWriter, r *http.Request) {
			if !fromLoopback(r) {
				http.NotFound(w, r)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /_sandbank/payouts", guard(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, b.Payouts())
	}))
	mux.HandleFunc("POST /_sandbank/payouts/{provider}/{id}/settle", guard(b.control(b.Settle)))
	mux.HandleFunc("POST /_sandbank/payouts/{provider}/{id}/fail", guard(b.control(b.Fail)))
	mux.HandleFunc("POST /_sandbank/payouts/{provider}/{id}/return", guard(b.control(b.Return)))
	mux.HandleFunc("GET /_sandbank/payouts/faults", guard(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, b.Faults())
	}))
	mux.HandleFunc("DELETE /_sandbank/payouts/faults", guard(func(w http.ResponseWriter, _ *http.Request) {
		_ = b.SetFaults(Faults{})
		writeJSON(w, http.StatusOK, b.Faults())
	}))
	mux.HandleFunc("POST /_sandbank/payouts/faults", guard(func(w http.ResponseWriter, r *http.Request) {
		var f Faults
		if err := decode(w, r, &f); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if err := b.SetFaults(f); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, b.Faults())
	}))
	mux.HandleFunc("POST /_sandbank/payouts/owners", guard(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			IBAN         string `json:"iban"`
			NationalCode string `json:"national_code"`
			Owned        bool   `json:"owned"`
		}
		if err := decode(w, r, &in); err != nil || in.IBAN == "" || in.NationalCode == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want {\"iban\", \"national_code\", \"owned\"}"})
			return
		}
		b.SetOwner(in.IBAN, in.NationalCode, in.Owned)
		writeJSON(w, http.StatusOK, in)
	}))
}

// control serves a state change of one payout.
func (b *Book) control(change func(provider, id string) (Payout, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := change(r.PathValue("provider"), r.PathValue("id"))
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, p)
		case errors.Is(err, ErrUnknownPayout):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		case errors.Is(err, ErrWrongState), errors.Is(err, ErrNoLateFailure):
			writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "state": p.State})
		default:
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		}
	}
}

// fromLoopback reports a call made on this machine, not through a proxy.
func fromLoopback(r *http.Request) bool {
	if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "" || r.Header.Get("X-Real-Ip") != "" {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// decode reads one JSON object body (at most 64 KiB) into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode request body: %w", err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// validSheba is a Sheba the bank takes: IR, 24 digits, a right mod-97
// and a known bank.
func validSheba(s string) bool {
	got, err := iban.Parse(s)
	return err == nil && string(got) == s
}

// ControlPath is the control API's path of an action on a payout
// ("settle", "fail", "return"), relative to the bank's root.
func ControlPath(provider, id, action string) string {
	return "/_sandbank/payouts/" + url.PathEscape(provider) + "/" + url.PathEscape(id) + "/" + action
}

// FaultsPath and OwnersPath are the control API's paths of the faults
// and of the ownership inquiry's answers.
const (
	FaultsPath = "/_sandbank/payouts/faults"
	OwnersPath = "/_sandbank/payouts/owners"
)
