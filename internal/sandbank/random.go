package sandbank

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

const (
	authorityAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	// authorityLen is the length of an authority: "S" + 35 alphanumerics.
	authorityLen = 36
	// Reference ids have 11 digits.
	refIDMin  = 10_000_000_000
	refIDSpan = 90_000_000_000
)

// cardBINs are issuer prefixes of Iranian banks (Melli, Mellat, Saman,
// Tejarat, Pasargad, Maskan), used for the fake cards.
func cardBINs() []string {
	return []string{"603799", "610433", "621986", "627353", "502229", "628023"}
}

// randomIndexesLocked reads n uniformly random values below limit (limit <= 256)
// from the bank's source, by rejection so there is no modulo bias.
func (b *Bank) randomIndexesLocked(n int, limit int) ([]int, error) {
	out := make([]int, 0, n)
	// The largest multiple of limit that fits a byte.
	ceil := 256 - 256%limit
	buf := make([]byte, n+n/2+8)
	for len(out) < n {
		if _, err := io.ReadFull(b.rand, buf); err != nil {
			return nil, fmt.Errorf("read random source: %w", err)
		}
		for _, c := range buf {
			if int(c) < ceil {
				out = append(out, int(c)%limit)
				if len(out) == n {
					break
				}
			}
		}
	}
	return out, nil
}

// newAuthorityLocked returns a fresh sandbox authority: "S" + 35
// alphanumerics, unique in this bank.
func (b *Bank) newAuthorityLocked() (string, error) {
	for {
		idx, err := b.randomIndexesLocked(authorityLen-1, len(authorityAlphabet))
		if err != nil {
			return "", fmt.Errorf("new authority: %w", err)
		}
		var sb strings.Builder
		sb.Grow(authorityLen)
		sb.WriteByte('S')
		for _, i := range idx {
			sb.WriteByte(authorityAlphabet[i])
		}
		a := sb.String()
		if _, taken := b.payments[a]; !taken {
			return a, nil
		}
	}
}

// newRefIDLocked returns a fresh 11-digit reference id, unique in this bank.
func (b *Bank) newRefIDLocked() (int64, error) {
	var buf [8]byte
	for {
		if _, err := io.ReadFull(b.rand, buf[:]); err != nil {
			return 0, fmt.Errorf("new ref id: read random source: %w", err)
		}
		id := refIDMin + int64(binary.LittleEndian.Uint64(buf[:])%refIDSpan)
		if _, taken := b.refIDs[id]; !taken {
			b.refIDs[id] = struct{}{}
			return id, nil
		}
	}
}

// newCardLocked returns a fake 16-digit card number with a valid Luhn check
// digit and a real Iranian issuer prefix.
func (b *Bank) newCardLocked() (string, error) {
	bins := cardBINs()
	idx, err := b.randomIndexesLocked(1, len(bins))
	if err != nil {
		return "", fmt.Errorf("new card: %w", err)
	}
	digits, err := b.randomIndexesLocked(9, 10)
	if err != nil {
		return "", fmt.Errorf("new card: %w", err)
	}
	var sb strings.Builder
	sb.WriteString(bins[idx[0]])
	for _, d := range digits {
		sb.WriteByte("0123456789"[d]) // d < 10 (randomIndexesLocked's limit); indexing, not a conversion
	}
	body := sb.String()
	return body + strconv.Itoa(luhnCheckDigit(body)), nil
}

// luhnCheckDigit is the digit that makes body+digit pass the Luhn check.
func luhnCheckDigit(body string) int {
	sum := 0
	double := true // the rightmost body digit is doubled once the check digit is appended
	for i := len(body) - 1; i >= 0; i-- {
		d := int(body[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return (10 - sum%10) % 10
}

// maskPAN masks a card number as Zarinpal does: first 6, "******", last 4.
func maskPAN(card string) string {
	if len(card) < 10 {
		return strings.Repeat("*", len(card))
	}
	return card[:6] + "******" + card[len(card)-4:]
}

// cardHash is the uppercase hex SHA-256 of the card number.
func cardHash(card string) string {
	sum := sha256.Sum256([]byte(card))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}
