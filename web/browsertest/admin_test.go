package browsertest

import (
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/routes"
)

// adminPageList are the admin pages as the browser tests visit
// them: a name, the path and a hook to wait for.
func adminPageList(f *fixture) []struct{ name, path, hook string } {
	userPath := routes.AdminUser(f.Credited.UserID)
	return []struct{ name, path, hook string }{
		{"admin dashboard", routes.Admin, "admin-payments"},
		{"admin payment (credited)", routes.AdminTopUp(f.Credited.PublicID), "timeline"},
		{"admin payment (pending)", routes.AdminTopUp(f.Pending.PublicID), "admin-recheck"},
		{"admin payment (failed)", routes.AdminTopUp(f.Failed.PublicID), "timeline"},
		{"admin users", routes.AdminUsers, "user-row"},
		{"admin users (search)", routes.AdminUsers + "?q=sara", "user-row"},
		{"admin user", userPath, "user-detail"},
		{"admin audit", routes.AdminAudit, "audit-filter"},
		{"admin payments", routes.AdminTopUps, "payment-row"},
		{"admin payments (filtered)", routes.AdminTopUps + "?status=credited&status=failed&q=" + url.QueryEscape("sara") + "&min=1000", "payment-row"},
		{"admin payments (bad filter)", routes.AdminTopUps + "?from=yesterday", "filter-error"},
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
			for i, p := range adminPageList(f) {
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
