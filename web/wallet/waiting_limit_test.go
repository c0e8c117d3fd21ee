package wallet_test

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// TOPUP_WAITING_MAX_COUNT: a payer may leave only so many top-ups at the
// bank's page at once. Past it a new one is refused with one sentence in
// the payer's language, before the bank is asked and writing nothing; a
// repeat of a submitted form is still answered as its first submit; and
// once one of them is paid or canceled at the bank, a new one starts.
// The form shows no "left today" box for this cap alone.
func TestWaitingTopUpsAreCapped(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"TOPUP_WAITING_MAX_COUNT": "2"}})
		for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
			c := app.NewClient(t)
			c.GetIn(string(l), routes.SignUp)
			email := "waiting-" + string(l) + "@example.com"
			c.SignUp(email)
			uid := authtest.UserID(t, db, email)
			payments := func() []topup.TopUp {
				return topuptest.Select(t, db, func(p topup.TopUp) bool { return p.UserID == uid })
			}
			if doc := apptest.Parse(c.Get(routes.TopUp).Body); doc.TestID("left-today") != nil || doc.TestID("left-count") != nil || doc.TestID("left-balance") != nil {
				t.Errorf("%s: the form shows a daily limit, and none is on", l)
			}
			var payURLs []string
			var first [2]string
			for i := range 2 {
				csrf, tok := c.TopUpForm()
				if i == 0 {
					first = [2]string{csrf, tok}
				}
				r := c.PostTopUp(csrf, tok, "10000")
				if r.Status != http.StatusSeeOther {
					t.Fatalf("%s: top-up %d within the cap: %d", l, i+1, r.Status)
				}
				payURLs = append(payURLs, r.Location)
			}
			refused := func(what string) {
				t.Helper()
				csrf, tok := c.TopUpForm()
				r := c.PostTopUp(csrf, tok, "10000")
				want := html.EscapeString(i18n.T(l, "limits.error_waiting", "limit", int64(2)))
				if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, want) {
					t.Fatalf("%s: %s: %d, want 422 with %q", l, what, r.Status, want)
				}
				// It links to the open top-ups, where each waits.
				link := apptest.Parse(r.Body).TestID("waiting-list")
				if link == nil {
					t.Fatalf("%s: %s: no link to the open top-ups", l, what)
				}
				if list := c.Get(link.Attr("href")); list.Status != http.StatusOK || len(apptest.Parse(list.Body).TestIDs("payment-row")) < 2 {
					t.Fatalf("%s: the open top-ups at %s: %d", l, link.Attr("href"), list.Status)
				}
			}
			refused("a third top-up while two wait at the bank")
			if n := len(payments()); n != 2 {
				t.Fatalf("%s: %d payments written, want the 2 within the cap", l, n)
			}
			if r := c.PostTopUp(first[0], first[1], "10000"); r.Status != http.StatusSeeOther || r.Location != payURLs[0] {
				t.Fatalf("%s: a repeat of a submitted form: %d %q, want its first answer", l, r.Status, r.Location)
			}
			// One canceled at the bank has ended: a new one starts.
			c.Get(c.PayAtBank(payURLs[0], "cancel"))
			csrf, tok := c.TopUpForm()
			r := c.PostTopUp(csrf, tok, "10000")
			if r.Status != http.StatusSeeOther {
				t.Fatalf("%s: a top-up after one was canceled: %d", l, r.Status)
			}
			refused("a top-up while two wait again")
			// One paid has ended too, and is credited.
			c.Get(c.PayAtBank(payURLs[1], "pay"))
			if got := c.Balance(); got != 100_000 {
				t.Fatalf("%s: balance %d rials after paying 10,000 tomans", l, got)
			}
			csrf, tok = c.TopUpForm()
			if r := c.PostTopUp(csrf, tok, "10000"); r.Status != http.StatusSeeOther {
				t.Fatalf("%s: a top-up after one was paid: %d", l, r.Status)
			}
			if n := len(payments()); n != 4 {
				t.Fatalf("%s: %d payments, want 4 (2, then one after each that ended)", l, n)
			}
		}
	})
}
