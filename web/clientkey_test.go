package web

import (
	"net"
	"testing"
)

// Limits count a client as clientKey says: an IPv4 address as itself
// (also written IPv4-mapped), an IPv6 address as its /64.
func TestClientKey(t *testing.T) {
	for _, tt := range []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::1", "::/64"},
	} {
		if got := clientKey(net.ParseIP(tt.ip)); got != tt.want {
			t.Errorf("clientKey(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
	// As fasthttp hands it over: four bytes for an IPv4 client.
	if got := clientKey(net.IPv4(198, 51, 100, 9).To4()); got != "198.51.100.9" {
		t.Errorf("a 4-byte address: %q", got)
	}
}
