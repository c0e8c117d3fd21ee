package browsertest

import (
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
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

// TestRefundToCardInABrowser: an admin gives part of a credited top-up
// back to the card from its page, as a person would: a wrong second
// factor is refused on the page (the error announced, the field marked),
// a fresh code refunds it; axe-core finds nothing on either state.
func TestRefundToCardInABrowser(t *testing.T) {
	axeSource(t)
	f := newFixture(t)
	b := f.Tab(t, "fa", f.Admin)
	page := routes.AdminTopUp(f.Credited.PublicID)
	b.Go(page)
	b.Wait("card-refund-form")
	if got := b.Attr(tid("card-refund-amount"), "value"); got != "۵۰۰۰۰" {
		t.Fatalf("the amount field holds %q, want the most that may go back (50000 tomans, in Persian digits)", got)
	}
	fill := func(code string) {
		b.Type("#card-refund-amount", "۱۰۰۰۰")
		//lint:ignore ST1018 Persian is written with the zero-width non-joiner (U+200C) inside words; escaped it would be unreadable
		b.Type("#card-refund-note", "درخواست پرداخت‌کننده")
		b.Type("#card-refund-code", code)
		b.Click("card-refund-submit")
	}
	fill("000000")
	b.Wait("card-refund-error")
	if inv := b.Attr("#card-refund-amount", "aria-invalid"); inv != "true" {
		t.Errorf("after a refused submit the amount is not marked invalid (%q)", inv)
	}
	b.Audit("refund to card, refused")
	fill(apptest.AdminTOTPCodeAt(t, f.App.DB, f.Admin, f.now))
	b.Wait("admin-notice")
	if st := b.Attr(tid("card-refund-row"), "data-status"); st != "refunded" {
		t.Fatalf("card refund %s after the submit", st)
	}
	if left := b.Attr(tid("card-refund-figures"), "data-left-rials"); left != "400000" {
		t.Fatalf("left to refund %s, want 400000", left)
	}
	b.Audit("refund to card, refunded")
	b.CheckNoProblems()
	if bp, _ := f.Bank.Payment(f.Credited.AuthorityString()); bp.RefundedAmount != 100_000 || len(bp.Refunds) != 1 {
		t.Fatalf("the bank refunded %d in %d refunds, want 100,000 rials once", bp.RefundedAmount, len(bp.Refunds))
	}
}
