package webhook

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// Signing secrets are needed in the clear to sign, so they cannot be
// hashed like API tokens. They are stored encrypted: AES-256-GCM under a
// key derived from SESSION_SECRET (HMAC-SHA256 with a label of its own),
// the owner's user id as additional data (a row's secret cannot be pasted
// into another user's row). A database dump alone does not reveal them;
// SECURITY.md says what changing SESSION_SECRET does to them.

// sealer encrypts and decrypts signing secrets.
type sealer struct{ aead cipher.AEAD }

// #nosec G101 -- a public domain-separation label for the key derivation, not a credential
const secretKeyLabel = "kifpool webhook signing secrets v1"

func newSealer(sessionSecret []byte) (sealer, error) {
	if len(sessionSecret) == 0 {
		return sealer{}, errors.New("webhook: no key for signing secrets (SESSION_SECRET)")
	}
	m := hmac.New(sha256.New, sessionSecret)
	m.Write([]byte(secretKeyLabel))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return sealer{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, err
	}
	return sealer{aead: aead}, nil
}

func (s sealer) seal(userID int64, secret string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, []byte(secret), []byte(strconv.FormatInt(userID, 10)))
	return "v1:" + base64.RawStdEncoding.EncodeToString(out), nil
}

// ErrSecretUnreadable: the stored secret does not open with this key
// (SESSION_SECRET changed since it was made).
var ErrSecretUnreadable = errors.New("webhook: signing secret cannot be decrypted (SESSION_SECRET changed?)")

func (s sealer) open(userID int64, stored string) (string, error) {
	if len(stored) < 3 || stored[:3] != "v1:" {
		return "", ErrSecretUnreadable
	}
	raw, err := base64.RawStdEncoding.DecodeString(stored[3:])
	if err != nil || len(raw) < s.aead.NonceSize() {
		return "", ErrSecretUnreadable
	}
	n := s.aead.NonceSize()
	pt, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(strconv.FormatInt(userID, 10)))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrSecretUnreadable, err)
	}
	return string(pt), nil
}

// newSigningSecret is "whsec_" and 32 random bytes, base64url.
func newSigningSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:])
}
