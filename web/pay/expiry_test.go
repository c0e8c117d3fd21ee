package pay_test

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// expiryApp is the app with its built-in sandbox bank (default page
// lifetime, 15 minutes) on one fake clock, so that a test can let the
// bank's page run out.
func expiryApp(t *testing.T, db *store.DB, bankTTL time.Duration) (*apptest.App, *sandbank.Bank, *topuptest.Clock) {
	t.Helper()
	clock := topuptest.NewClock()
	bank := sandbank.New(sandbank.Options{Clock: clock.Now, AuthorityTTL: bankTTL, NoControlAPI: true})
	app := apptest.Start(t, db, apptest.Options{Server: server.Options{Now: clock.Now, Bank: bank}})
	return app, bank, clock
}

// failedPageSays checks that a failed payment's page says the sentence of
// cause, and not the sentence of the other cause, in lang.
func failedPageSays(t *testing.T, page apptest.Response, lang i18n.Lang, cause, notCause string) {
	t.Helper()
	if page.Status != http.StatusOK || apptest.TopUpStatus(page.Body) != "failed" {
		t.Fatalf("%s: page %d %q, want a failed payment", lang, page.Status, apptest.TopUpStatus(page.Body))
	}
	if got := apptest.Parse(page.Body).TestID("failure-cause").Attr("data-cause"); got != cause {
		t.Errorf("%s: cause %q, want %s", lang, got, cause)
	}
	if want := html.EscapeString(i18n.T(lang, "result.failed."+cause)); !strings.Contains(page.Body, want) {
		t.Errorf("%s: page lacks %q", lang, want)
	}
	if other := html.EscapeString(i18n.T(lang, "result.failed."+notCause)); strings.Contains(page.Body, other) {
		t.Errorf("%s: page also says %q", lang, other)
	}
}

func reasonOf(t *testing.T, db *store.DB, authority string) topup.TopUp {
	t.Helper()
	return topuptest.ByAuthority(t, db, authority)
}

// When the bank's page expired, the failure page says the time ran out,
// not that the payer cancelled (issue 18, item 5). Zarinpal answers both
// alike (Status=NOK, verify -51, inquiry FAILED); the driver tells them
// apart by how long the payer had the page, and the reason travels
// through the decision and its event to the page, in both languages.
func TestExpiredBankPageSaysTimeRanOut(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, bank, clock := expiryApp(t, db, sandbank.DefaultAuthorityTTL)
		for _, lang := range []i18n.Lang{i18n.FA, i18n.EN} {
			c := app.NewClient(t)
			c.SignUp("late-" + string(lang) + "@example.com")
			c.GetIn(string(lang), routes.Wallet)

			// Cancelled at once: "cancelled".
			csrf, tok := c.TopUpForm()
			r := c.PostTopUp(csrf, tok, "20000")
			cancelled := apptest.Authority(r.Location)
			back, err := bank.Cancel(cancelled)
			if err != nil {
				t.Fatal(err)
			}
			failedPageSays(t, c.Get(back), lang, "cancelled", "expired")
			if p := reasonOf(t, db, cancelled); p.StatusReason != string(topup.ReasonBankCancelled) {
				t.Errorf("%s: a cancel recorded as %q", lang, p.StatusReason)
			}

			// The payer stays on the bank's page until it expires, then
			// follows its link back to us.
			csrf, tok = c.TopUpForm()
			r = c.PostTopUp(csrf, tok, "30000")
			payURL, authority := r.Location, apptest.Authority(r.Location)
			clock.Advance(sandbank.DefaultAuthorityTTL + time.Second)
			bankPage := c.Get(payURL)
			doc := apptest.Parse(bankPage.Body)
			back = doc.TestID("bank-back").Attr("href")
			if bankPage.Status != http.StatusNotFound || doc.TestID("bank-expired") == nil || back == "" {
				t.Fatalf("%s: the bank's expired page: %d, link back %q", lang, bankPage.Status, back)
			}
			if !strings.Contains(back, "Status=NOK") {
				t.Fatalf("%s: the expired page sends the payer back with %q", lang, back)
			}
			failedPageSays(t, c.Get(back), lang, "expired", "cancelled")
			p := reasonOf(t, db, authority)
			if p.Status != topup.StatusFailed || p.StatusReason != string(topup.ReasonBankExpired) {
				t.Fatalf("%s: expired page recorded as %s %q", lang, p.Status, p.StatusReason)
			}
			if ev := topuptest.LastEvent(t, db, p.ID); ev.ToStatus != topup.StatusFailed || ev.Reason != topup.ReasonBankExpired {
				t.Errorf("%s: last event %+v, want failed for bank_expired", lang, ev)
			}
			// Its receipt says the same, and so does a reload of the return.
			failedPageSays(t, c.Get(routes.TopUpPage(p.PublicID)), lang, "expired", "cancelled")
			failedPageSays(t, c.Get(back), lang, "expired", "cancelled")
		}
		topuptest.CheckInvariants(t, db)
	})
}

// The worker ends an attempt the payer abandoned: when the bank's page
// expired meanwhile (verify -51, inquiry FAILED), and when the bank still
// holds its page open at the authority's lifetime (the worker's own
// deadline). Both pages say the time ran out.
func TestAbandonedAttemptExpiresAsTimeRanOut(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, tc := range []struct {
			name    string
			bankTTL time.Duration
			advance time.Duration
			reason  topup.Reason
		}{
			// The bank's page (15 minutes) expired before the worker looks.
			{"the bank's page expired", sandbank.DefaultAuthorityTTL, 16 * time.Minute, topup.ReasonBankExpired},
			// The bank keeps it open longer than WORKER_AUTHORITY_LIFETIME (20m).
			{"the worker's deadline", time.Hour, 21 * time.Minute, topup.ReasonNotPaidAfterLife},
		} {
			t.Run(tc.name, func(t *testing.T) {
				app, _, clock := expiryApp(t, db, tc.bankTTL)
				c := app.NewClient(t)
				c.SignUp("gone-" + string(tc.reason) + "@example.com")
				csrf, tok := c.TopUpForm()
				r := c.PostTopUp(csrf, tok, "40000")
				authority := apptest.Authority(r.Location)
				clock.Advance(tc.advance)
				if rr, err := app.Server.Worker.RunOnce(context.Background()); err != nil || rr.Claimed != 1 {
					t.Fatalf("worker: %+v %v", rr, err)
				}
				p := reasonOf(t, db, authority)
				if p.Status != topup.StatusFailed || p.StatusReason != string(tc.reason) {
					t.Fatalf("abandoned attempt: %s %q, want failed (%s)", p.Status, p.StatusReason, tc.reason)
				}
				for _, lang := range []i18n.Lang{i18n.FA, i18n.EN} {
					failedPageSays(t, c.GetIn(string(lang), routes.TopUpPage(p.PublicID)), lang, "expired", "cancelled")
				}
			})
		}
		topuptest.CheckInvariants(t, db)
	})
}
