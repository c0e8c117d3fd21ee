package mellat

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// bpPayRequest takes the payer's local time as HHMMSS or unpadded, as
// mellat-checkout sends it (so its test passes at 09:05:03 too), and
// still refuses what is no time of day's digits.
func TestMellatPayLocalDateTime(t *testing.T) {
	for _, tt := range []struct {
		date, time string
		ok         bool
	}{
		{"20261201", "153000", true},
		{"20261201", "953", true}, // 09:05:03, mellat-checkout
		{"20261201", "000", true}, // midnight, mellat-checkout
		{"20261201", "", false},
		{"20261201", "1234567", false},
		{"20261201", "12:30", false},
		{"2026121", "153000", false},
		{"2026-12-", "153000", false},
	} {
		m := New(protocol.Env{Book: book.New(book.Options{TTL: time.Hour}), Log: slog.New(slog.DiscardHandler)}).(*Mellat)
		ret := m.pay(map[string]string{"terminalId": "5000", "userName": "u", "userPassword": "p", "orderId": "77",
			"amount": "120000", "localDate": tt.date, "localTime": tt.time, "callBackUrl": "https://merchant.example/pay/callback?attempt=7"})
		if got := strings.HasPrefix(ret, mlOK+","); got != tt.ok {
			t.Errorf("localDate %q localTime %q: bpPayRequest = %q, accepted %v, want %v", tt.date, tt.time, ret, got, tt.ok)
		}
	}
}
