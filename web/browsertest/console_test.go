package browsertest

import (
	"net/url"
	"strconv"
	"testing"
)

// consolePages are the admin console's pages as the browser tests visit
// them: a name, the path and a hook to wait for.
func consolePages(f *fixture) []struct{ name, path, hook string } {
	userPath := "/admin/users/" + strconv.FormatInt(f.Credited.UserID, 10)
	return []struct{ name, path, hook string }{
		{"admin dashboard", "/admin", "admin-payments"},
		{"admin payment (credited)", "/admin/payments/" + f.Credited.PublicID, "timeline"},
		{"admin payment (pending)", "/admin/payments/" + f.Pending.PublicID, "admin-recheck"},
		{"admin payment (failed)", "/admin/payments/" + f.Failed.PublicID, "timeline"},
		{"admin users", "/admin/users", "user-row"},
		{"admin users (search)", "/admin/users?q=sara", "user-row"},
		{"admin user", userPath, "user-detail"},
		{"admin audit", "/admin/audit", "audit-filter"},
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
			var b *Tab
			for i, p := range consolePages(f) {
				// A fresh tab every few pages: each tab has one test's time.
				if i%2 == 0 {
					if b != nil {
						b.CheckNoProblems()
					}
					b = f.Tab(t, lang, f.Admin)
				}
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
