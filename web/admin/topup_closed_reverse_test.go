package admin_test

import (
	"net/url"
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

// TestClosedReverseEndSaysClosed: a top-up whose reverse ended (refused,
// its window closed, the bank's record differs) is under review, and its
// page says staff are looking into it. Once an admin closes it, it keeps
// its reverse's reason (so that nothing reopens it), and its page says the
// close, with the reverse's end as history: never that staff are still
// looking into it — in the status line or in the timeline, in either
// language. The payer's page says it was closed too. Neither page of the
// admin offers to ask the bank again: its reverse is the answer.
func TestClosedReverseEndSaysClosed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		admin := app.NewAdmin(t, "boss@example.com")
		lookingInto := map[i18n.Lang]string{i18n.EN: "our staff are looking into it", i18n.FA: "همکاران ما بررسی می\u200cکنند"}
		closed := map[i18n.Lang]string{i18n.EN: "closed as failed by an admin after review", i18n.FA: "مدیر پس از بررسی آن را ناموفق بست"}
		for i, reason := range []topup.Reason{topup.ReasonReverseRefused, topup.ReasonReverseClosed, topup.ReasonReverseDiffers, topup.ReasonSettleContradicted} {
			payer, _ := app.StartTopUp(t, "payer"+string(rune('a'+i))+"@example.com", "20000")
			p := topuptest.Last(t, db)
			// Its reverse ended, as the state machine would have it.
			topuptest.ForceStatus(t, db, p.ID, "reversing", string(topup.ReasonAmountMismatch))
			topuptest.ForceStatus(t, db, p.ID, "needs_review", string(reason))
			topuptest.ReleaseLease(t, db, p.ID)
			page := admin.GetIn("en", routes.AdminTopUp(p.PublicID))
			if !strings.Contains(page.Body, lookingInto[i18n.EN]) {
				t.Fatalf("%s under review: the page does not say staff are looking into it", reason)
			}
			// Its reverse is the answer: the page offers no recheck, which
			// could only be refused (nothing to ask).
			if strings.Contains(page.Body, routes.AdminTopUpRecheck(p.PublicID)) {
				t.Errorf("%s under review: the page offers to ask the bank again", reason)
			}
			form := url.Values{"_csrf": {apptest.Input(page.Body, "_csrf")}, "back": {"payment"},
				"note": {"bank statement shows the money stayed with the bank"}, "code": {admin.LastRecoveryCodes[i]}}
			if r := admin.Post(routes.AdminTopUpClose(p.PublicID), form); r.Location != routes.AdminTopUp(p.PublicID)+"?done=done_closed" {
				t.Fatalf("%s: close: %d %q", reason, r.Status, r.Location)
			}
			if got := topuptest.ByPublicID(t, db, p.PublicID); got.Status != topup.StatusFailed || topup.Reason(got.StatusReason) != reason {
				t.Fatalf("%s: closed as %s %q, want failed keeping the reverse's reason", reason, got.Status, got.StatusReason)
			}
			for _, lang := range []i18n.Lang{i18n.EN, i18n.FA} {
				page := admin.GetIn(string(lang), routes.AdminTopUp(p.PublicID))
				doc := apptest.Parse(page.Body)
				detail, timeline := doc.TestID("payment-detail"), doc.TestID("timeline")
				if detail == nil || timeline == nil {
					t.Fatalf("%s %s: no detail or timeline", reason, lang)
				}
				if strings.Contains(page.Body, routes.AdminTopUpRecheck(p.PublicID)) {
					t.Errorf("%s %s: a closed top-up's page offers to ask the bank again", reason, lang)
				}
				if strings.Contains(page.Body, lookingInto[lang]) {
					t.Errorf("%s %s: a closed top-up's page still says staff are looking into it", reason, lang)
				}
				if got := detail.Attr("data-status"); got != string(topup.StatusFailed) {
					t.Errorf("%s %s: status %q", reason, lang, got)
				}
				history := i18n.T(lang, "admin.topup.reverse_ended."+string(reason))
				for what, text := range map[string]string{"status line": detail.Text(), "timeline": timeline.Text()} {
					if !strings.Contains(text, closed[lang]) {
						t.Errorf("%s %s: the %s does not say it was closed: %q", reason, lang, what, text)
					}
					if !strings.Contains(text, history) {
						t.Errorf("%s %s: the %s does not keep the reverse's end as history", reason, lang, what)
					}
				}
			}
			// The payer's page says the same: closed by an admin.
			if got := apptest.Parse(payer.Get(routes.TopUpPage(p.PublicID)).Body).TestID("failure-cause"); got == nil || got.Attr("data-cause") != "closed" {
				t.Errorf("%s: the payer's page does not say it was closed", reason)
			}
		}
	})
}
