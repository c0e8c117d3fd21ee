package book

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Alphanumerics is the alphabet of tokens: digits, then lower and upper
// case letters.
const Alphanumerics = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

const (
	// Reference ids have 11 digits.
	refIDMin  = 10_000_000_000
	refIDSpan = 90_000_000_000
)

// cardBINs are issuer prefixes of Iranian banks (Melli, Mellat, Saman,
// Tejarat, Pasargad, Maskan), used for the fake cards.
func cardBINs() []string {
	return []string{"603799", "610433", "621986", "627353", "502229", "628023"}
}

// RandomIndexesLocked reads n uniformly random values below limit (limit
// <= 256) from the bank's source, by rejection so there is no modulo bias.
func (b *Book) RandomIndexesLocked(n int, limit int) ([]int, error) {
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

// RandomTextLocked is n random characters of alphabet (at most 256).
func (b *Book) RandomTextLocked(alphabet string, n int) (string, error) {
	idx, err := b.RandomIndexesLocked(n, len(alphabet))
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, i := range idx {
		sb.WriteByte(alphabet[i])
	}
	return sb.String(), nil
}

// NewTokenLocked is a token that no payment has: prefix and n random
// alphanumerics.
func (b *Book) NewTokenLocked(prefix string, n int) (string, error) {
	for {
		s, err := b.RandomTextLocked(Alphanumerics, n)
		if err != nil {
			return "", fmt.Errorf("new token: %w", err)
		}
		if t := prefix + s; !b.TakenLocked(t) {
			return t, nil
		}
	}
}

// NewRefIDLocked returns a fresh 11-digit reference id, unique in this bank.
func (b *Book) NewRefIDLocked() (int64, error) {
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

// NewCardLocked returns a fake 16-digit card number with a valid Luhn check
// digit and a real Iranian issuer prefix.
func (b *Book) NewCardLocked() (string, error) {
	bins := cardBINs()
	idx, err := b.RandomIndexesLocked(1, len(bins))
	if err != nil {
		return "", fmt.Errorf("new card: %w", err)
	}
	digits, err := b.RandomIndexesLocked(9, 10)
	if err != nil {
		return "", fmt.Errorf("new card: %w", err)
	}
	var sb strings.Builder
	sb.WriteString(bins[idx[0]])
	for _, d := range digits {
		sb.WriteByte("0123456789"[d]) // d < 10 (RandomIndexesLocked's limit); indexing, not a conversion
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

// MaskPAN masks a card number as Zarinpal does: first 6, "******", last 4.
func MaskPAN(card string) string {
	if len(card) < 10 {
		return strings.Repeat("*", len(card))
	}
	return card[:6] + "******" + card[len(card)-4:]
}

// CardHash is the uppercase hex SHA-256 of the card number.
func CardHash(card string) string {
	sum := sha256.Sum256([]byte(card))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// Open registers a new IN_BANK payment p, made now, under a fresh token of
// prefix and n alphanumerics, with a fresh fake card; reqAmount is its
// amount in the request's unit.
func (b *Book) Open(p Payment, reqAmount int64, prefix string, n int) (*Record, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.OpenLocked(p, reqAmount, prefix, n)
}

// OpenLocked is Open for a caller that holds the book's lock (a check of
// the book and the opening in one critical section).
func (b *Book) OpenLocked(p Payment, reqAmount int64, prefix string, n int) (*Record, error) {
	token, err := b.NewTokenLocked(prefix, n)
	if err != nil {
		return nil, err
	}
	card, err := b.NewCardLocked()
	if err != nil {
		return nil, err
	}
	p.Authority, p.State, p.CreatedAt = token, StateInBank, b.clock()
	rec := &Record{Payment: p, ReqAmount: reqAmount, CardNumber: card}
	b.AddLocked(rec)
	return rec, nil
}
