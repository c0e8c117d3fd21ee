package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Headers of a delivery.
const (
	HeaderSignature = "Kifpool-Signature"
	HeaderEventID   = "Kifpool-Event-Id"
)

// Sign is the Kifpool-Signature header of body sent at t with secret:
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">" (Stripe's
// scheme: the timestamp is signed with the body, so a captured delivery
// cannot be replayed later as new).
func Sign(secret string, t time.Time, body []byte) string {
	return SignAll(t, body, secret)
}

// SignAll is Sign with one v1= per secret, in their order: the header of
// a delivery while its endpoint's secret is rotated ("t=…,v1=<new>,
// v1=<previous>"; Service.Rotate). A receiver accepts any v1 that
// matches its secret (Verify).
func SignAll(t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, secret := range secrets {
		b.WriteString(",v1=" + mac(secret, ts, body))
	}
	return b.String()
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("webhook: signature does not match")
	ErrStale        = errors.New("webhook: signature timestamp outside the tolerance")
)

// Verify checks a Kifpool-Signature header against body and secret, and
// that its timestamp is within tolerance of now (a receiver's check; the
// tests and docs/webhooks.md use it). Any v1 that matches is accepted
// (several appear while a secret is rotated).
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrBadSignature
	}
	want := mac(secret, ts, body)
	ok := false
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			ok = true
		}
	}
	if !ok {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	return nil
}
