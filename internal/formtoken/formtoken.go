// Package formtoken makes and checks the per-form idempotency token of the
// top-up form: 128 random bits, URL-safe. The payments' unique
// (user_id, form_token) index turns a second submit of one form into a
// replay of the first. It imports nothing of Kifpool's, so that the load
// generator and the pages can make tokens without linking the payment code.
package formtoken

import (
	"crypto/rand"
	"encoding/base64"
	"regexp"
)

// New returns a fresh token.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

var shape = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

// Valid reports whether s has the shape of a token.
func Valid(s string) bool { return shape.MatchString(s) }
