package zarinpal

import (
	"testing"

	"github.com/kifpool/kifpool/internal/sandbank/book"
)

func TestCallbackURLKeepsQuery(t *testing.T) {
	tests := []struct{ callback, want string }{
		{"http://a.example/cb", "http://a.example/cb?Authority=S1&Status=OK"},
		{"http://a.example/cb?x=1", "http://a.example/cb?x=1&Authority=S1&Status=OK"},
		{"http://a.example/cb?", "http://a.example/cb?Authority=S1&Status=OK"},
		{"https://a.example/cb?x=1#top", "https://a.example/cb?x=1&Authority=S1&Status=OK#top"},
	}
	for _, tc := range tests {
		if got := CallbackURL(tc.callback, "S1", book.StatePaid); got != tc.want {
			t.Errorf("CallbackURL(%q) = %q, want %q", tc.callback, got, tc.want)
		}
	}
}
