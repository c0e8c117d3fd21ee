package wallet_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// / signed out is a landing page (issue 29, item 3): what Kifpool is,
// what a balance is for, no fees, the gateways offered, and sign up or
// sign in. Signed in, / goes to the wallet as before.
func TestLandingPage(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c := app.NewClient(t)
	for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
		c.Get(routes.SignIn + "?lang=" + string(l))
		r := c.Get(routes.Home)
		d := apptest.Parse(r.Body)
		if r.Status != http.StatusOK || d.TestID("landing") == nil {
			t.Fatalf("%s: GET / signed out: %d, no landing page", l, r.Status)
		}
		if got := d.TestID("landing-signup").Attr("href"); got != routes.SignUp {
			t.Errorf("%s: sign-up link %q", l, got)
		}
		if got := d.TestID("landing-signin").Attr("href"); got != routes.SignIn {
			t.Errorf("%s: sign-in link %q", l, got)
		}
		if got, want := d.TestID("landing-fees").Text(), i18n.T(l, "landing.fees_text", "amount", i18n.Tomans(l, 500_000)); got != want {
			t.Errorf("%s: fees %q, want %q", l, got, want)
		}
		gws := d.TestID("landing-gateways")
		if gws == nil {
			t.Fatalf("%s: no gateways listed", l)
		}
		for _, name := range []string{"zarinpal", "zibal", "sep", "mellat"} {
			if label := i18n.T(l, "gateway.name."+name); !strings.Contains(gws.Text(), label) {
				t.Errorf("%s: gateways %q lack %q", l, gws.Text(), label)
			}
		}
	}
	c.SignUp("landing@example.com")
	if r := c.Get(routes.Home); r.Status != http.StatusSeeOther || r.Location != routes.Wallet {
		t.Errorf("GET / signed in: %d → %q, want the wallet", r.Status, r.Location)
	}
}
