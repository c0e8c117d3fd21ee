package sandbank

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// controlAnswer is the control API's answer to pay, cancel and expire.
type controlAnswer struct {
	Redirect string `json:"redirect,omitempty"`
	Error    string `json:"error,omitempty"`
	State    State  `json:"state,omitempty"`
}

// controlList serves GET /_sandbank/payments: every payment, oldest first.
func (b *Bank) controlList(w http.ResponseWriter, _ *http.Request) {
	protocol.WriteJSON(w, http.StatusOK, b.Payments())
}

// controlFinish serves POST /_sandbank/payments/{authority}/pay|cancel (and
// controlEnd .../expire): the
// same state change as the page's buttons, answered with the callback URL
// the payer would be sent to. 404 for an unknown authority, 409 when the
// payment is not IN_BANK (paid, cancelled or expired).
func (b *Bank) controlFinish(to State) http.HandlerFunc {
	return b.controlEnd(func(authority string) (string, error) {
		cb, err := b.finish(authority, to)
		return cb.URL, err
	})
}

// controlEnd serves a control API call that ends an IN_BANK payment (pay,
// cancel, expire) with end, answered as controlFinish says.
func (b *Bank) controlEnd(end func(authority string) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		authority := r.PathValue("authority")
		redirect, err := end(authority)
		switch {
		case err == nil:
			protocol.WriteJSON(w, http.StatusOK, controlAnswer{Redirect: redirect})
		case errors.Is(err, ErrUnknownAuthority):
			protocol.WriteJSON(w, http.StatusNotFound, controlAnswer{Error: err.Error()})
		case errors.Is(err, ErrNotInBank):
			p, _ := b.Payment(authority)
			protocol.WriteJSON(w, http.StatusConflict, controlAnswer{Error: err.Error(), State: p.State})
		default:
			b.log.Error("sandbank: control", "authority", authority, "err", err)
			protocol.WriteJSON(w, http.StatusInternalServerError, controlAnswer{Error: err.Error()})
		}
	}
}

// controlGatewayFinish serves POST /_sandbank/{gateway}/payments/{token}/pay|cancel:
// the same state change as the page's buttons, for a payment of that
// gateway, answered with the request the payer's browser then makes to
// the merchant: {"redirect": URL, "method": "GET"|"POST", "form": {...}}.
// 404 for an unknown token or another gateway's, 409 when the payment is
// not IN_BANK.
func (b *Bank) controlGatewayFinish(to State) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		gw, token := r.PathValue("gateway"), r.PathValue("token")
		if p, ok := b.Payment(token); !ok || p.Gateway != gw {
			protocol.WriteJSON(w, http.StatusNotFound, controlAnswer{Error: fmt.Sprintf("no %s payment %q", gw, token)})
			return
		}
		cb, err := b.finish(token, to)
		switch {
		case err == nil:
			protocol.WriteJSON(w, http.StatusOK, cb)
		case errors.Is(err, ErrNotInBank):
			p, _ := b.Payment(token)
			protocol.WriteJSON(w, http.StatusConflict, controlAnswer{Error: err.Error(), State: p.State})
		default:
			b.log.Error("sandbank: control", "token", token, "err", err)
			protocol.WriteJSON(w, http.StatusInternalServerError, controlAnswer{Error: err.Error()})
		}
	}
}
