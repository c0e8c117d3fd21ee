package scenario_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// legacyCallback is the bank's return URL back as a top-up started before
// the rename gave it to the bank: the same query at the old path.
func legacyCallback(t *testing.T, app *apptest.App, back string) (legacy, publicID string) {
	t.Helper()
	u, err := url.Parse(back)
	if err != nil {
		t.Fatal(err)
	}
	args, ok := routes.MatchEnd(routes.TopUpReturnPattern, u.Path)
	if !ok {
		t.Fatalf("bank return %q is not our callback", back)
	}
	return app.URL + routes.LegacyTopUpReturn(args[0]) + "?" + u.RawQuery, args[0]
}

// Banks hold the callback URLs of top-ups in flight: one started before
// the rename comes back to /payments/{id}/return, by GET or POST, and is
// credited exactly as at the new address — once, however many times and
// at whichever address the bank and the payer's browsers come back.
func TestOldCallbackAddressCreditsOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		credited := func(t *testing.T, r apptest.Response) {
			t.Helper()
			if r.Status != http.StatusOK || apptest.TopUpStatus(r.Body) != "credited" || apptest.Parse(r.Body).TestID("result-received") == nil {
				t.Fatalf("return page: %d status=%q", r.Status, apptest.TopUpStatus(r.Body))
			}
		}

		// GET at the old address, then the new one.
		c, payURL := app.StartTopUp(t, "old-get@example.com", "50000")
		old, _ := legacyCallback(t, app, c.PayAtBank(payURL, "pay"))
		credited(t, app.NewClient(t).Get(old))
		credited(t, c.Get(old))
		if got := c.Balance(); got != 500_000 {
			t.Fatalf("GET at the old address: balance %d, want 500000", got)
		}

		// POST at the old address: Post/Redirect/Get to the new one.
		c2, payURL2 := app.StartTopUp(t, "old-post@example.com", "20000")
		old2, id2 := legacyCallback(t, app, c2.PayAtBank(payURL2, "pay"))
		r := app.NewClient(t).Post(old2, url.Values{})
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.TopUpReturn(id2)+"?") {
			t.Fatalf("POST at the old address: %d %q", r.Status, r.Location)
		}
		credited(t, c2.Get(r.Location))
		if got := c2.Balance(); got != 200_000 {
			t.Fatalf("POST at the old address: balance %d, want 200000", got)
		}

		// Both addresses, both methods, at once: credited once.
		c3, payURL3 := app.StartTopUp(t, "both@example.com", "100000")
		back3, err := app.Server.Bank.Pay(apptest.Authority(payURL3))
		if err != nil {
			t.Fatal(err)
		}
		old3, _ := legacyCallback(t, app, back3)
		const n = 16
		var wg sync.WaitGroup
		results := make([]apptest.Response, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := app.NewClient(t)
				target := back3
				if i%4 >= 2 {
					target = old3
				}
				if i%2 == 0 {
					results[i] = cl.Get(target)
					return
				}
				r := cl.Post(target, url.Values{})
				if r.Status != http.StatusSeeOther {
					results[i] = r
					return
				}
				results[i] = cl.Get(r.Location)
			}()
		}
		wg.Wait()
		for i, r := range results {
			if r.Status != http.StatusOK || apptest.TopUpStatus(r.Body) != "credited" {
				t.Errorf("callback %d: %d status=%q", i, r.Status, apptest.TopUpStatus(r.Body))
			}
		}
		if got := c3.Balance(); got != 1_000_000 {
			t.Fatalf("both addresses: balance %d, want 1000000", got)
		}
		if n := ledgertest.Credits(t, db); n != 3 {
			t.Fatalf("%d credits, want 3", n)
		}
		apptest.CheckInvariants(t, db)
	})
}

// The old addresses of the top-ups' pages and lists (bookmarks, old mails,
// the addresses issues and runbooks name) answer 301 to the new ones with
// the query kept, and the new ones serve the page.
func TestOldTopUpAddressesRedirect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c, payURL := app.StartTopUp(t, "moved@example.com", "30000")
		_, id := legacyCallback(t, app, c.PayAtBank(payURL, "pay"))
		admin := app.NewAdmin(t, "moved-admin@example.com")
		for _, tc := range []struct {
			who       *apptest.Client
			old, want string
		}{
			{c, routes.LegacyTopUpPage(id), routes.TopUpPage(id)},
			{c, routes.LegacyWalletTopUps, routes.WalletTopUps},
			{c, routes.LegacyWalletTopUps + "?status=credited&status=failed", routes.WalletTopUps + "?status=credited&status=failed"},
			{c, routes.LegacyWalletTopUpsCSV + "?status=failed", routes.WalletTopUpsCSV + "?status=failed"},
			{admin, routes.LegacyAdminTopUps + "?status=needs_review", routes.AdminTopUps + "?status=needs_review"},
			{admin, routes.LegacyAdminTopUpsCSV, routes.AdminTopUpsCSV},
			{admin, routes.LegacyAdminTopUp(id), routes.AdminTopUp(id)},
			{admin, routes.LegacyAdminTopUp(id) + "?done=done_recheck_unchanged", routes.AdminTopUp(id) + "?done=done_recheck_unchanged"},
		} {
			r := tc.who.Get(tc.old)
			if r.Status != http.StatusMovedPermanently || r.Location != tc.want {
				t.Errorf("GET %s: %d %q, want 301 %q", tc.old, r.Status, r.Location, tc.want)
				continue
			}
			if page := tc.who.Get(r.Location); page.Status != http.StatusOK {
				t.Errorf("GET %s (from %s): %d", r.Location, tc.old, page.Status)
			}
		}
		// Signed out: moved all the same, then the new address asks to
		// sign in.
		anon := app.NewClient(t)
		if r := anon.Get(routes.LegacyAdminTopUp(id)); r.Status != http.StatusMovedPermanently || r.Location != routes.AdminTopUp(id) {
			t.Errorf("signed out: %d %q", r.Status, r.Location)
		}
		if r := anon.Get(routes.AdminTopUp(id)); r.Status != http.StatusSeeOther {
			t.Errorf("signed out, new address: %d", r.Status)
		}
	})
}
