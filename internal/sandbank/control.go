package sandbank

import (
	"errors"
	"net/http"
)

// controlAnswer is the control API's answer to pay and cancel.
type controlAnswer struct {
	Redirect string `json:"redirect,omitempty"`
	Error    string `json:"error,omitempty"`
	State    State  `json:"state,omitempty"`
}

// controlList serves GET /_sandbank/payments: every payment, oldest first.
func (b *Bank) controlList(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, b.Payments())
}

// controlFinish serves POST /_sandbank/payments/{authority}/pay|cancel: the
// same state change as the page's buttons, answered with the callback URL
// the payer would be sent to. 404 for an unknown authority, 409 when the
// payment is not IN_BANK (paid, cancelled or expired).
func (b *Bank) controlFinish(to State) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		authority := r.PathValue("authority")
		redirect, err := b.finish(authority, to)
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, controlAnswer{Redirect: redirect})
		case errors.Is(err, ErrUnknownAuthority):
			writeJSON(w, http.StatusNotFound, controlAnswer{Error: err.Error()})
		case errors.Is(err, ErrNotInBank):
			p, _ := b.Payment(authority)
			writeJSON(w, http.StatusConflict, controlAnswer{Error: err.Error(), State: p.State})
		default:
			b.log.Error("sandbank: control", "authority", authority, "err", err)
			writeJSON(w, http.StatusInternalServerError, controlAnswer{Error: err.Error()})
		}
	}
}
