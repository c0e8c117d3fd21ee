package browsertest

import (
	"net/url"
	"testing"
)

// consolePages are the admin console's pages as the browser tests visit
// them: a name, the path and a hook to wait for.
func consolePages(f *fixture) []struct{ name, path, hook string } {
	return []struct{ name, path, hook string }{
		{"admin payments", "/admin/payments", "payment-row"},
		{"admin payments (filtered)", "/admin/payments?status=credited&status=failed&q=" + url.QueryEscape("sara") + "&min=1000", "payment-row"},
		{"admin payments (bad filter)", "/admin/payments?from=yesterday", "filter-error"},
	}
}

// TestAdminConsoleAccessibility runs axe-core on every page of the admin
// console, in both languages, and checks that the list's rows carry their
// hooks.
func TestAdminConsoleAccessibility(t *testing.T) {
	axeSource(t)
	f := newFixture(t)
	for _, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			b := f.Tab(t, lang, f.Admin)
			for _, p := range consolePages(f) {
				b.Go(p.path)
				b.Wait(p.hook)
				if l, _ := b.LangDir(); l != lang {
					t.Errorf("%s: page in %q", p.name, l)
				}
				b.Audit(p.name)
			}
			b.CheckNoProblems()
		})
	}
}
