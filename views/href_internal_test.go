package views

import (
	"testing"

	"github.com/kifpool/kifpool/internal/routes"
)

var hrefSeeds = []string{
	routes.TopUpReturn("abcdefghijklmnopqrstuvwx") + "?Authority=A000123&Status=OK&lang=en",
	routes.TopUpReturn("abcdefghijklmnopqrstuvwx") + "?lang=en&Status=OK", // keys out of order: sorted by the slow path
	routes.Wallet + "?lang=fa", "/", "/a/b", "//evil.example/x", "/\\evil.example", "/\\t/evil.example", "/\\\\x",
	"/a//b", "/a/", "/a?", "/a?x", "/a?=1", "/a?x=1&x=2", "/a?x=2&x=1", "/a?b=1&a=2", "/a?x=1&&y=2",
	"/a?x=%41", "/a%2Fb", "/a b", "/a#frag", "/a?x=1#f", "/\u0641\u0627", "evil.example", "",
}

func TestLocalHrefFastPathIsTheSlowPath(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, s := range hrefSeeds {
		if got, want := LocalHref(s), buildLocalHref(s); got != want {
			t.Errorf("LocalHref(%q) = %q, want %q", s, got, want)
		}
		if alreadyLocal(s) {
			fast++
		}
	}
	// The callback's own link must take the fast path, or it gains nothing.
	if !alreadyLocal(hrefSeeds[0]) || fast < 4 {
		t.Fatalf("fast path taken by %d seeds, the callback's link: %v", fast, alreadyLocal(hrefSeeds[0]))
	}
}

func FuzzLocalHref(f *testing.F) {
	for _, s := range hrefSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := LocalHref(s), buildLocalHref(s); got != want {
			t.Fatalf("LocalHref(%q) = %q, the slow path %q", s, got, want)
		}
	})
}
