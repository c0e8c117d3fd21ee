package transfer_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/email"
	"github.com/kifpool/kifpool/internal/transfer"
)

// A form sent again asks for the transfer its token made when it names
// the same amount, note and recipient, the address compared as the
// transfer stored it (normalised): the page's answer to a Back-then-
// Continue or a double click is then the receipt, not "already used".
func TestSameRequest(t *testing.T) {
	stored := func(addr string) string {
		t.Helper()
		n, err := email.Normalize(addr)
		if err != nil {
			t.Fatalf("normalise %q: %v", addr, err)
		}
		return n
	}
	first := transfer.Transfer{RecipientEmail: stored("ali@مثال.ایران"), AmountRials: 150_000, Note: "rent"}
	plain := transfer.Transfer{RecipientEmail: stored("sara@example.com"), AmountRials: 150_000, Note: ""}
	for _, tc := range []struct {
		name  string
		r     transfer.Request
		first transfer.Transfer
		want  bool
	}{
		{"the IDN address as typed", transfer.Request{ToEmail: "ali@مثال.ایران", AmountRials: 150_000, Note: "rent"}, first, true},
		{"the IDN address in its stored form", transfer.Request{ToEmail: first.RecipientEmail, AmountRials: 150_000, Note: "rent"}, first, true},
		{"another case, spaces around", transfer.Request{ToEmail: "  Sara@EXAMPLE.com ", AmountRials: 150_000}, plain, true},
		{"full-width letters", transfer.Request{ToEmail: "ｓａｒａ@example.com", AmountRials: 150_000}, plain, true},
		{"another amount", transfer.Request{ToEmail: "sara@example.com", AmountRials: 150_010}, plain, false},
		{"another note", transfer.Request{ToEmail: "sara@example.com", AmountRials: 150_000, Note: "x"}, plain, false},
		{"another recipient", transfer.Request{ToEmail: "sarah@example.com", AmountRials: 150_000}, plain, false},
		{"no address", transfer.Request{AmountRials: 150_000}, plain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := transfer.SameRequest(tc.r, tc.first); got != tc.want {
				t.Fatalf("SameRequest(%+v, %+v) = %v, want %v", tc.r, tc.first, got, tc.want)
			}
		})
	}
}
