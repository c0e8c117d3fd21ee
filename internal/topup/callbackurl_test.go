package topup_test

import (
	"testing"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
)

// Reconciliation finds a top-up by the public id in the callback URL the
// bank lists: the new address, and the old one that top-ups started
// before the rename gave the bank; under a BASE_URL prefix too.
func TestPublicIDFromCallbackURL(t *testing.T) {
	const id = "abcdefghijklmnopqrstuvwx"
	for _, tc := range []struct {
		raw, want string
	}{
		{"https://pay.example.com" + routes.TopUpReturn(id), id},
		{"https://pay.example.com" + routes.LegacyTopUpReturn(id), id},
		{"https://example.com/shop" + routes.LegacyTopUpReturn(id) + "?x=1", id},
		{"https://pay.example.com" + routes.TopUpPage(id), ""},
		{"https://pay.example.com" + routes.TopUpReturn("not-an-id"), ""},
		{"https://pay.example.com" + routes.LegacyTopUpReturn("not-an-id"), ""},
		{"https://elsewhere.test/cb?id=1", ""},
		{"%zz", ""},
	} {
		if got := topup.PublicIDFromCallbackURL(tc.raw); got != tc.want {
			t.Errorf("PublicIDFromCallbackURL(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}
