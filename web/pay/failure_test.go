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

// A failed payment's page says one true sentence for its cause, never two
// that contradict each other, and offers to try again with the same amount
// (issue 10, point 4). An unknown or older reason gets the generic one.
func TestFailurePageSaysWhy(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c := app.NewClient(t)
	c.SignUp("why@example.com")
	csrf, token := c.TopUpForm()
	r := c.PostTopUp(csrf, token, "75000")
	if r.Status != http.StatusSeeOther {
		t.Fatalf("top-up: %d", r.Status)
	}
	p := topuptest.ByAuthority(t, app.DB, apptest.Authority(r.Location))
	for _, tc := range []struct {
		reason string
		cause  string
	}{
		{string(topup.ReasonBankCancelled), "cancelled"},
		{string(topup.ReasonRequestRefused), "refused"},
		{string(topup.ReasonRequestFailed), "unavailable"},
		{string(topup.ReasonGatewayUnavailable), "unavailable"},
		{string(topup.ReasonNotPaidAfterLife), "expired"},
		{string(topup.ReasonBankExpired), "expired"},
		{string(topup.ReasonBankReversed), "reversed"},
		{string(topup.ReasonReversedToCard), "reversed"},
		{string(topup.ReasonClosedByAdmin), "closed"},
		{string(topup.ReasonReverseRefused), "closed"},
		{string(topup.ReasonReverseClosed), "closed"},
		{string(topup.ReasonReverseDiffers), "closed"},
		{string(topup.ReasonSettleContradicted), "closed"},
		{string(topup.ReasonAmountMismatch), "generic"},
		{"not paid (code -51, bank state FAILED)", "generic"}, // an older free-text reason
		{"", "generic"},
	} {
		t.Run(tc.cause+"/"+tc.reason, func(t *testing.T) {
			// Page set-up only: the payment fails with this reason, as the
			// state machine would have (a failed one is reopened first).
			failWith(t, app.DB, p.ID, tc.reason)
			for _, lang := range []i18n.Lang{i18n.FA, i18n.EN} {
				c.Get(routes.Wallet + "?lang=" + string(lang))
				page := c.Get(routes.TopUpPage(p.PublicID))
				if page.Status != http.StatusOK {
					t.Fatalf("receipt: %d", page.Status)
				}
				doc := apptest.Parse(page.Body)
				if got := doc.TestID("failure-cause").Attr("data-cause"); got != tc.cause {
					t.Fatalf("%s: cause %q, want %s", lang, got, tc.cause)
				}
				if want := html.EscapeString(i18n.T(lang, "result.failed."+tc.cause)); !strings.Contains(page.Body, want) {
					t.Errorf("%s: page lacks %q", lang, want)
				}
				for _, other := range []string{"cancelled", "refused", "unavailable", "expired", "reversed", "closed", "generic"} {
					if other != tc.cause && strings.Contains(page.Body, html.EscapeString(i18n.T(lang, "result.failed."+other))) {
						t.Errorf("%s: page also says the %s sentence", lang, other)
					}
				}
				if got := doc.TestID("try-again").Attr("href"); got != routes.TopUp+"?amount=75000" {
					t.Errorf("%s: no try-again link with the same amount", lang)
				}
			}
		})
	}
	// "Try again" opens the form with the amount filled in.
	c.Get(routes.Wallet + "?lang=fa")
	form := c.Get(routes.TopUp + "?amount=75000")
	if got := apptest.Input(form.Body, "amount"); got != "۷۵٬۰۰۰" {
		t.Errorf("try again: the form's amount is %q", got)
	}
	// A payment under review offers no "try again".
	topuptest.ForceStatus(t, app.DB, p.ID, string(topup.StatusPendingVerification), string(topup.ReasonReopened))
	topuptest.ForceStatus(t, app.DB, p.ID, string(topup.StatusNeedsReview), string(topup.ReasonUnknownTooLong))
	doc := apptest.Parse(c.Get(routes.TopUpPage(p.PublicID)).Body)
	if doc.TestID("try-again") != nil || doc.TestID("failure-cause") != nil {
		t.Errorf("a payment under review offers to try again")
	}
	// Nor does it show a time of its outcome: it has none yet.
	if doc.TestID("receipt-resolved") != nil {
		t.Errorf("a payment under review shows a time of its outcome")
	}
	apptest.CheckInvariants(t, app.DB)
}

// failWith moves a payment to failed with reason through edges of the
// state machine (topuptest.ForceStatus writes each event): a payment
// already failed is reopened first.
func failWith(t *testing.T, db *store.DB, id int64, reason string) {
	t.Helper()
	if topuptest.Status(t, db, id) == topup.StatusFailed {
		topuptest.ForceStatus(t, db, id, string(topup.StatusPendingVerification), string(topup.ReasonReopened))
	}
	topuptest.ForceStatus(t, db, id, string(topup.StatusFailed), reason)
}
