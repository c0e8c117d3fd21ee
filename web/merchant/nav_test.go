package merchant_test

import (
	"slices"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The site header links to /merchant for a merchant, in both languages,
// inside the labelled site navigation; a plain user's header has no such
// link.
func TestMerchantNavLink(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		shop(t, app, "shop@example.com", "Book Shop")
		signUpFunded(t, app, "payer@example.com", 0)

		m := app.NewClient(t)
		m.SignIn("shop@example.com", pw)
		for _, l := range []struct{ lang, want string }{{"fa", "فروشگاه من"}, {"en", "My shop"}} {
			lang, want := l.lang, l.want
			m.Get(routes.Wallet + "?lang=" + lang) // remembered in a cookie
			for _, page := range []string{routes.Wallet, routes.Account} {
				doc := apptest.Parse(m.Get(page).Body)
				link := doc.TestID("nav-merchant")
				if link == nil {
					t.Fatalf("%s (%s): no link to the shop's page in the header: %v", page, lang, doc.ByID("site-nav").Attrs("data-testid"))
				}
				if link.Attr("href") != routes.Merchant || link.Text() != want {
					t.Errorf("%s (%s): link %q %q, want %q", page, lang, link.Attr("href"), link.Text(), want)
				}
				nav := doc.ByID("site-nav")
				if nav == nil || nav.Attr("aria-label") == "" || !slices.Contains(nav.Attrs("data-testid"), "nav-merchant") {
					t.Errorf("%s (%s): the link is not in the labelled site navigation", page, lang)
				}
			}
		}

		p := app.NewClient(t)
		p.SignIn("payer@example.com", pw)
		for _, page := range []string{routes.Wallet, routes.Account} {
			if apptest.Parse(p.Get(page).Body).TestID("nav-merchant") != nil {
				t.Errorf("%s: a plain user's header links to the shop's page", page)
			}
		}
		if apptest.Parse(app.NewClient(t).Get(routes.SignIn).Body).TestID("nav-merchant") != nil {
			t.Error("a signed-out header links to the shop's page")
		}
	})
}
