package admin_test

import (
	"context"
	"html"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// TestAdminPagesPolish: with the built-in sandbox bank each breaker is
// named as its payments are (the gateway's label, marked sandbox); an open payment has an action
// (its page); a reconciliation's audit note is in the page's language;
// /admin/tokens with no token does not say "you have not made one"; the
// bank's description follows the payer's language (issue 23).
func TestAdminPagesPolish(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		if _, err := app.Server.Auth.SignUp(context.Background(), "boss@example.com", "correct horse battery", "admin", "fa"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		user, _ := app.StartTopUp(t, "payer@example.com", "20000")
		user.Get(routes.Wallet + "?lang=en")
		csrf, token := user.TopUpForm()
		user.PostTopUp(csrf, token, "30000")
		descs := map[string]bool{}
		for _, p := range app.Server.Bank.Payments() {
			descs[p.Description] = true
		}
		//lint:ignore ST1018 Persian is written with the zero-width non-joiner (U+200C) inside words; escaped it would be unreadable
		if !descs["افزایش موجودی کیف‌پول"] || !descs["Kifpool wallet top-up"] || len(descs) != 2 {
			t.Errorf("the bank's descriptions: %v, want one in Persian and one in English", descs)
		}

		admin.Get(routes.Admin + "?lang=fa")
		page := admin.Get(routes.Admin)
		sandboxZarinpal := i18n.T(i18n.FA, "admin.gateway_sandbox", "name", i18n.T(i18n.FA, "gateway.name.zarinpal"))
		if !strings.Contains(page.Body, `data-gateway="`+sandboxZarinpal+`"`) || strings.Contains(page.Body, `data-gateway="zarinpal"`) {
			t.Errorf("the breaker is not named as the payments are, in Persian (%s)", sandboxZarinpal)
		}
		if n := len(apptest.Parse(page.Body).TestIDs("admin-details")); n != 2 {
			t.Errorf("%d open payments with a link to their page, want 2", n)
		}
		r := admin.Post(routes.AdminReconcile, url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}})
		if r.Status >= 400 {
			t.Fatalf("reconcile: %d", r.Status)
		}
		audit := html.UnescapeString(admin.Get(routes.AdminAudit).Body)
		if strings.Contains(audit, "listed ") || !strings.Contains(audit, i18n.T(i18n.FA, "admin.audit.reconcile_note", "listed", int64(0), "credited", int64(0), "mismatches", int64(0))[:20]) {
			t.Errorf("the reconciliation's audit note is not in Persian")
		}
		tokens := html.UnescapeString(admin.Get(routes.AdminTokens).Body)
		if !strings.Contains(tokens, i18n.T(i18n.FA, "tokens.admin_none")) || strings.Contains(tokens, i18n.T(i18n.FA, "tokens.none")) {
			t.Errorf("%s with no token does not say no user made one", routes.AdminTokens)
		}
	})
}
