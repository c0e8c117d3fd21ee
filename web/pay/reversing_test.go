package pay_test

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// A payment the bank verified but that could not be credited, while the
// bank is asked to reverse it, tells its payer the truth in both
// languages: the money goes back to the card within the bank's time, and
// there is nothing to pay again; no "try again", no "under review", and
// the page keeps refreshing until the reverse ends it.
func TestReversingPageSaysTheMoneyGoesBack(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c := app.NewClient(t)
	c.SignUp("reversing@example.com")
	csrf, token := c.TopUpForm()
	r := c.PostTopUp(csrf, token, "75000")
	if r.Status != http.StatusSeeOther {
		t.Fatalf("top-up: %d", r.Status)
	}
	p := topuptest.ByAuthority(t, app.DB, apptest.Authority(r.Location))
	topuptest.ForceStatus(t, app.DB, p.ID, string(topup.StatusReversing), string(topup.ReasonAmountMismatch))
	for _, lang := range []i18n.Lang{i18n.FA, i18n.EN} {
		c.Get(routes.Wallet + "?lang=" + string(lang))
		page := c.Get(routes.TopUpPage(p.PublicID))
		if page.Status != http.StatusOK {
			t.Fatalf("receipt: %d", page.Status)
		}
		doc := apptest.Parse(page.Body)
		if doc.TestID("reversing") == nil {
			t.Fatalf("%s: no reversing sentence", lang)
		}
		for _, key := range []string{"result.reversing_title", "result.reversing_text", "status.reversing"} {
			if want := html.EscapeString(i18n.T(lang, key)); !strings.Contains(page.Body, want) {
				t.Errorf("%s: page lacks %s %q", lang, key, want)
			}
		}
		for _, key := range []string{"result.review_text", "result.pending_text", "result.failed.generic"} {
			if strings.Contains(page.Body, html.EscapeString(i18n.T(lang, key))) {
				t.Errorf("%s: page also says %s", lang, key)
			}
		}
		if doc.TestID("try-again") != nil {
			t.Errorf("%s: a reversing payment offers to try again", lang)
		}
		if got := doc.TestID("payment-status").Attr("data-status"); got != string(topup.StatusPendingVerification) {
			t.Errorf("%s: public status %q, want pending_verification", lang, got)
		}
	}
	// Reversed: failed, on its way back to the card.
	topuptest.ForceStatus(t, app.DB, p.ID, string(topup.StatusFailed), string(topup.ReasonReversedToCard))
	doc := apptest.Parse(c.Get(routes.TopUpPage(p.PublicID)).Body)
	if got := doc.TestID("failure-cause").Attr("data-cause"); got != "reversed" {
		t.Errorf("reversed to the card: cause %q, want reversed", got)
	}
}
