package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/notify"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// TestRefundToCardFromTheTopUpPage: issue 30 §3 through the admin's page.
// The top-up's page offers "refund to card" with its limits; a wrong
// second factor, an amount beyond what may go back, or no note is a clear
// 4xx that changes nothing; with a fresh code the amount leaves the
// wallet and goes back to the card (the built-in bank's AddRefund), once,
// audited, in the payer's history and mail. A payer cannot reach it.
func TestRefundToCardFromTheTopUpPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, clock, code := refundDesk(t, db)
		ctx := context.Background()
		payer, payURL := app.StartTopUp(t, "payer@example.com", "50000")
		payer.Get(payer.PayAtBank(payURL, "pay"))
		tu := topuptest.Last(t, db)
		if tu.Status != "credited" || payer.Balance() != 500_000 {
			t.Fatalf("top-up %s, balance %d", tu.Status, payer.Balance())
		}
		page := routes.AdminTopUp(tu.PublicID)
		action := routes.AdminTopUpCardRefund(tu.PublicID)
		// The payer's receipt, read (and kept) before any refund, says
		// nothing went back to the card.
		if d := apptest.Parse(payer.Get(routes.TopUpPage(tu.PublicID)).Body); d.TestID("to-card") != nil || d.TestID("to-card-pending") != nil {
			t.Fatal("the receipt names a refund to the card before any")
		}
		doc := apptest.Parse(admin.Get(page).Body)
		if doc.TestID("card-refund-form") == nil || doc.TestID("card-refund-figures").Attr("data-left-rials") != "500000" ||
			doc.TestID("card-refund-amount").Attr("value") != "50000" { // the admin reads English
			t.Fatalf("the top-up's page offers no refund to card as expected")
		}
		refunds := func() []cardrefund.CardRefund {
			st, err := app.Server.CardRefunds.Offer(ctx, tu.PublicID)
			if err != nil {
				t.Fatal(err)
			}
			return st.Refunds
		}
		for _, tc := range []struct {
			name   string
			form   url.Values
			status int
		}{
			{"a wrong code", url.Values{"amount": {"20000"}, "note": {"asked"}, "code": {"000000"}}, http.StatusUnprocessableEntity},
			{"no code", url.Values{"amount": {"20000"}, "note": {"asked"}}, http.StatusUnprocessableEntity},
			{"more than the top-up", url.Values{"amount": {"50001"}, "note": {"asked"}, "code": {"123456"}}, http.StatusUnprocessableEntity},
			{"below Zarinpal's smallest refund", url.Values{"amount": {"1999"}, "note": {"asked"}, "code": {"123456"}}, http.StatusUnprocessableEntity},
			{"not a number", url.Values{"amount": {"many"}, "note": {"asked"}, "code": {"123456"}}, http.StatusUnprocessableEntity},
			{"no note", url.Values{"amount": {"20000"}, "note": {"  "}, "code": {"123456"}}, http.StatusUnprocessableEntity},
			{"a note with a bidi override", url.Values{"amount": {"20000"}, "note": {"asked\u202e"}, "code": {"123456"}}, http.StatusUnprocessableEntity},
		} {
			r := admin.Submit(page, action, tc.form)
			if r.Status != tc.status || apptest.Parse(r.Body).TestID("card-refund-error") == nil {
				t.Fatalf("%s: %d", tc.name, r.Status)
			}
		}
		if n := len(refunds()); n != 0 || payer.Balance() != 500_000 || app.CountAudit(t, audit.ActionCardRefund) != 0 {
			t.Fatalf("refused submits left %d card refunds", n)
		}

		// In Persian digits, with a fresh code: refunded.
		r := admin.Submit(page, action, url.Values{"amount": {"۲۰۰۰۰"}, "note": {"the payer asked"}, "code": {code()}})
		if r.Status != http.StatusSeeOther || r.Location != page+"?done=cardrefund_refunded" {
			t.Fatalf("refund: %d %q %s", r.Status, r.Location, apptest.Parse(r.Body).TestID("card-refund-error").Text())
		}
		got := refunds()
		if len(got) != 1 || got[0].Status != cardrefund.StatusRefunded || got[0].AmountRials != 200_000 {
			t.Fatalf("card refunds %+v", got)
		}
		doc = apptest.Parse(admin.Get(r.Location).Body)
		if n := doc.TestID("admin-notice"); n == nil || doc.TestID("card-refund-row").Attr("data-status") != "refunded" ||
			doc.TestID("card-refund-figures").Attr("data-left-rials") != "300000" {
			t.Fatalf("after the refund the page shows no notice or row")
		}
		if payer.Balance() != 300_000 || app.CountAudit(t, audit.ActionCardRefund) != 1 {
			t.Fatalf("balance %d, audited %d", payer.Balance(), app.CountAudit(t, audit.ActionCardRefund))
		}
		// The payer's receipt says what went back to the card.
		if d := apptest.Parse(payer.Get(routes.TopUpPage(tu.PublicID)).Body); d.TestID("to-card").Attr("data-rials") != "200000" || d.TestID("to-card-pending") != nil {
			t.Fatal("the payer's receipt does not say 20,000 tomans went back to the card")
		}
		history := apptest.Parse(payer.Get(routes.Wallet).Body).TestID("history-row")
		if history.Attr("data-kind") != "card_refund" || history.Attr("data-rials") != "-200000" {
			t.Fatalf("the payer's history shows %s %s first", history.Attr("data-kind"), history.Attr("data-rials"))
		}
		// Its line leads to the top-up it went back from, whose page says
		// what of it went to the card.
		if !slices.Contains(history.Attrs("href"), routes.TopUpPage(tu.PublicID)) {
			t.Fatalf("the card refund's line links %q, not its top-up's page", history.Attrs("href"))
		}
		if bp, _ := app.Server.Bank.Payment(tu.AuthorityString()); bp.RefundedAmount != 200_000 || len(bp.Refunds) != 1 {
			t.Fatalf("the bank refunded %d in %d refunds", bp.RefundedAmount, len(bp.Refunds))
		}
		// The same code again is spent; a payer reaches nothing.
		if r := payer.Post(action, url.Values{"amount": {"1000"}, "note": {"x"}}); r.Status != http.StatusNotFound && r.Status != http.StatusForbidden {
			t.Fatalf("a payer's post: %d", r.Status)
		}
		// The payer's mail.
		clock.Advance(time.Minute)
		if _, err := app.Server.Notifier.Scan(ctx); err != nil { // the top-up's receipt, and the card refund's mail
			t.Fatal(err)
		}
		if n, err := app.Server.Notifier.Scan(ctx); err != nil || n != 0 {
			t.Fatalf("a second scan queued %d: %v", n, err)
		}
		uid := authtest.UserID(t, db, "payer@example.com")
		mails := 0
		for _, m := range mailtest.Rows(t, db) {
			if m.Kind == notify.KindCardRefund && m.UserID != nil && *m.UserID == uid {
				mails++
			}
		}
		if mails != 1 {
			t.Fatalf("%d card refund mails for the payer, want 1", mails)
		}
		apptest.CheckBankAgrees(t, db, app.Server.Bank)
	})
}

// TestCardRefundUnderReviewFromThePage: a refund whose answer was lost
// and whose figures at the bank differ goes to review; the page asks the
// bank again (nothing changes), then closes it from the bank's panel with
// a note and the second factor: the money back to the wallet.
func TestCardRefundUnderReviewFromThePage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, clock, code := refundDesk(t, db)
		ctx := context.Background()
		payer, tu, page, r := faultedRefund(t, db, app, admin, code(), "refund")
		bank := app.Server.Bank
		if r.Location != page+"?done=cardrefund_submitted" {
			t.Fatalf("refund with the answer lost: %d %q", r.Status, r.Location)
		}
		held := func() string { return apptest.Parse(payer.Get(routes.Wallet).Body).TestID("held").Attr("data-rials") }
		if payer.Balance() != 200_000 || held() != "100000" {
			t.Fatalf("balance %d, held %s: the amount is held, not gone", payer.Balance(), held())
		}
		// Someone refunds 50,000 rials in the bank's own panel: the bank's
		// total is neither ours before nor after.
		if err := bank.SetFaults(sandbank.Faults{}); err != nil {
			t.Fatal(err)
		}
		zp, _ := app.Server.Gateways.Get("zarinpal")
		if _, err := zp.Ops().Refund(ctx, gatewayRefund(tu.RefIDValue(), 50_000)); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		if _, err := app.Server.CardRefunds.Worker().Round(ctx); err != nil {
			t.Fatal(err)
		}
		doc := apptest.Parse(admin.Get(page).Body)
		row := doc.TestID("card-refund-row")
		if row.Attr("data-status") != "needs_review" || doc.TestID("card-refund-recheck") == nil ||
			doc.TestID("card-refund-unavailable").Attr("data-why") != "in_progress" {
			t.Fatalf("under review the page shows %s", row.Attr("data-status"))
		}
		id := row.Attr("data-public-id")
		// The dashboard lists it, linked to its top-up's page.
		dash := apptest.Parse(admin.Get(routes.Admin).Body)
		if item := dash.TestID("card-refund-review-item"); item == nil || item.Attr("data-public-id") != id ||
			!slices.Contains(item.Attrs("href"), routes.AdminTopUp(tu.PublicID)) {
			t.Fatalf("the dashboard does not list the card refund under review")
		}
		if k := dash.TestIDs("admin-waiting-kind"); len(k) != 1 || k[0].Attr("data-kind") != "card_refunds" || k[0].Attr("data-count") != "1" {
			t.Fatalf("the dashboard's count of what waits for an admin: %d kinds", len(k))
		}
		if r := admin.Submit(page, routes.AdminTopUpCardRefundRecheck(tu.PublicID, id), nil); r.Location != page+"?done=cardrefund_recheck" {
			t.Fatalf("recheck: %d %q", r.Status, r.Location)
		}
		closeAt := routes.AdminTopUpCardRefundClose(tu.PublicID, id)
		if r := admin.Submit(page, closeAt, url.Values{"made": {"no"}, "note": {"only the panel's 50,000"}, "code": {"000000"}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("close with a wrong code: %d", r.Status)
		}
		// A note the use case would refuse is refused before the code: the
		// same code closes it after.
		// The bank's figures fall short of ours, but the refund may still
		// be on its way to the card: "not made" is refused until the
		// worker itself would believe it (CARD_REFUND's not-done window
		// after the call), and nothing moves.
		if r := admin.Submit(page, closeAt, url.Values{"made": {"no"}, "note": {"only the panel's 50,000"}, "code": {code()}}); r.Status != http.StatusConflict {
			t.Fatalf("close as not made minutes after the call: %d %q", r.Status, r.Location)
		}
		if st := apptest.Parse(admin.Get(page).Body).TestID("card-refund-row").Attr("data-status"); st != "needs_review" || payer.Balance() != 200_000 || held() != "100000" {
			t.Fatalf("after a refused close: %s, balance %d, held %s", st, payer.Balance(), held())
		}
		clock.Advance(24 * time.Hour)
		closeCode := code()
		if r := admin.Submit(page, closeAt, url.Values{"made": {"no"}, "note": {"only the panel\u202e"}, "code": {closeCode}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("close with a note holding a bidi override: %d", r.Status)
		}
		if r := admin.Submit(page, closeAt, url.Values{"made": {"no"}, "note": {"only the panel's 50,000"}, "code": {closeCode}}); r.Location != page+"?done=cardrefund_closed" {
			t.Fatalf("close: %d %q", r.Status, r.Location)
		}
		if st := apptest.Parse(admin.Get(page).Body).TestID("card-refund-row").Attr("data-status"); st != "failed" || payer.Balance() != 300_000 {
			t.Fatalf("after the close: %s, balance %d", st, payer.Balance())
		}
		if d := apptest.Parse(admin.Get(routes.Admin).Body); d.TestID("card-refunds-review") != nil || d.TestID("admin-waiting") != nil {
			t.Fatalf("the dashboard still lists a card refund under review after its close")
		}
		if n := app.CountAudit(t, audit.ActionCardRefundRecheck, audit.ActionCardRefundClose); n != 2 {
			t.Fatalf("%d audit rows of the review", n)
		}
		// Another card refund's path on this top-up, or this one's on
		// another top-up: not found.
		if r := admin.Post(routes.AdminTopUpCardRefundRecheck(tu.PublicID, cardrefund.NewPublicID()), url.Values{"_csrf": {apptest.Input(admin.Get(page).Body, "_csrf")}}); r.Status != http.StatusNotFound {
			t.Fatalf("an unknown card refund: %d", r.Status)
		}
	})
}

// gatewayRefund is a refund of rials of the payment ref, as the bank's
// panel would make it.
func gatewayRefund(ref, rials int64) gateway.RefundInput {
	return gateway.RefundInput{RefID: ref, AmountRials: rials}
}

// An admin's own top-up is another admin's to refund to the card: the
// page refuses it (403) before the code is spent, and nothing is held.
func TestOwnTopUpIsAnotherAdminsToRefund(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := topuptest.NewClock()
		app := apptest.Start(t, db, apptest.Options{Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		const boss = "boss@example.com"
		admin := app.NewAdmin(t, boss)
		csrf, token := admin.TopUpForm()
		r := admin.PostTopUp(csrf, token, "50000")
		admin.Get(admin.PayAtBank(r.Location, "pay"))
		tu := topuptest.Last(t, db)
		if tu.Status != "credited" {
			t.Fatalf("the admin's own top-up is %s", tu.Status)
		}
		clock.Advance(30 * time.Second)
		unspent := apptest.AdminTOTPCodeAt(t, db, boss, app.Server.Clock.Now)
		resp := admin.Submit(routes.AdminTopUp(tu.PublicID), routes.AdminTopUpCardRefund(tu.PublicID),
			url.Values{"amount": {"20000"}, "note": {"mine"}, "code": {unspent}})
		if resp.Status != http.StatusForbidden || apptest.Parse(resp.Body).TestID("card-refund-error") == nil {
			t.Fatalf("a refund of the admin's own top-up: %d", resp.Status)
		}
		if st, err := app.Server.CardRefunds.Offer(ctx, tu.PublicID); err != nil || len(st.Refunds) != 0 {
			t.Fatalf("card refunds %+v %v", st.Refunds, err)
		}
		if err := app.Server.Auth.ConfirmSecondFactor(ctx, authtest.UserID(t, db, boss), unspent); err != nil {
			t.Fatalf("the code the refusal did not spend: %v", err)
		}
	})
}

// TestCardRefundOfOddRials: a top-up's amount need not be whole tomans
// (the API takes rials), and a whole refund must be its exact amount: the
// page writes odd rials after a decimal mark, reads them back, and a
// refund of what its field offers leaves nothing behind.
func TestCardRefundOfOddRials(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, _, code := refundDesk(t, db)
		payer, payURL := app.StartTopUp(t, "payer@example.com", "50000")
		payer.Get(payer.PayAtBank(payURL, "pay"))
		tu := topuptest.Last(t, db)
		page, action := routes.AdminTopUp(tu.PublicID), routes.AdminTopUpCardRefund(tu.PublicID)

		// 10,000.5 tomans: 100,005 rials, in Persian digits and mark too.
		r := admin.Submit(page, action, url.Values{"amount": {"۱۰٬۰۰۰٫۵"}, "note": {"asked"}, "code": {code()}})
		if r.Status != http.StatusSeeOther || r.Location != page+"?done=cardrefund_refunded" {
			t.Fatalf("refund of 10,000.5 tomans: %d %q %s", r.Status, r.Location, apptest.Parse(r.Body).TestID("card-refund-error").Text())
		}
		if payer.Balance() != 399_995 {
			t.Fatalf("balance %d, want 399995", payer.Balance())
		}
		doc := apptest.Parse(admin.Get(page).Body)
		offered := doc.TestID("card-refund-amount").Attr("value")
		if offered != "39999.5" || doc.TestID("card-refund-figures").Attr("data-left-rials") != "399995" {
			t.Fatalf("the field offers %q (left %s), want 39999.5", offered, doc.TestID("card-refund-figures").Attr("data-left-rials"))
		}
		if r := admin.Submit(page, action, url.Values{"amount": {offered}, "note": {"the rest"}, "code": {code()}}); r.Location != page+"?done=cardrefund_refunded" {
			t.Fatalf("refund of what the field offers: %d %q", r.Status, r.Location)
		}
		if payer.Balance() != 0 {
			t.Fatalf("balance %d after refunding the rest, want 0", payer.Balance())
		}
		if bp, _ := app.Server.Bank.Payment(tu.AuthorityString()); bp.RefundedAmount != 500_000 || len(bp.Refunds) != 2 {
			t.Fatalf("the bank refunded %d in %d refunds, want 500000 in 2", bp.RefundedAmount, len(bp.Refunds))
		}
		apptest.CheckBankAgrees(t, db, app.Server.Bank)
	})
}

// TestCardRefundNotSentSaysSo: the bank out of reach before the refund
// could be sent (Zarinpal's session lookup failing): nothing went, the
// amount is held for the worker, and the page says so, not "sent".
func TestCardRefundNotSentSaysSo(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, _, code := refundDesk(t, db)
		ctx := context.Background()
		payer, tu, page, r := faultedRefund(t, db, app, admin, code(), "sessions")
		bank := app.Server.Bank
		if r.Location != page+"?done=cardrefund_queued" {
			t.Fatalf("refund with the bank out of reach: %d %q", r.Status, r.Location)
		}
		st, err := app.Server.CardRefunds.Offer(ctx, tu.PublicID)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Refunds) != 1 || st.Refunds[0].Status != cardrefund.StatusHeld || st.Refunds[0].Attempts != 0 {
			t.Fatalf("card refunds %+v, want one held, never sent", st.Refunds)
		}
		if bp, _ := bank.Payment(tu.AuthorityString()); len(bp.Refunds) != 0 {
			t.Fatalf("the bank has %d refunds, want none", len(bp.Refunds))
		}
		doc := apptest.Parse(admin.Get(r.Location).Body)
		if n := doc.TestID("admin-notice"); n == nil || n.Text() != i18n.T(i18n.EN, "admin.cardrefund.done.cardrefund_queued") {
			t.Fatalf("the notice says %v", n)
		}
		if payer.Balance() != 200_000 {
			t.Fatalf("balance %d: the amount is held", payer.Balance())
		}
	})
}

// refundDesk is an app on a frozen clock with an admin signed in past the
// second factor, and code, which moves the clock to the next step and
// gives the admin's fresh second-factor code.
func refundDesk(t *testing.T, db *store.DB) (*apptest.App, *apptest.Client, *topuptest.Clock, func() string) {
	t.Helper()
	clock := topuptest.NewFrozenClock()
	app := apptest.Start(t, db, apptest.Options{Server: server.Options{Now: clock.Now}})
	const boss = "boss@example.com"
	if _, err := app.Server.Auth.SignUp(context.Background(), boss, "correct horse battery", "admin", "en"); err != nil {
		t.Fatal(err)
	}
	admin := app.NewClient(t)
	admin.SignIn(boss, "correct horse battery")
	admin.PassAdminChecks(boss)
	return app, admin, clock, func() string {
		clock.Advance(30 * time.Second)
		return apptest.AdminTOTPCodeAt(t, db, boss, app.Server.Clock.Now)
	}
}

// faultedRefund pays a top-up of 30,000 tomans as payer@example.com, has
// the built-in bank drop every call of op, and has admin refund 10,000
// tomans of it to the card with code: the payer, the top-up, its admin
// page and the refund's answer.
func faultedRefund(t *testing.T, db *store.DB, app *apptest.App, admin *apptest.Client, code, op string) (*apptest.Client, topup.TopUp, string, apptest.Response) {
	t.Helper()
	payer, payURL := app.StartTopUp(t, "payer@example.com", "30000")
	payer.Get(payer.PayAtBank(payURL, "pay"))
	tu := topuptest.Last(t, db)
	page := routes.AdminTopUp(tu.PublicID)
	if err := app.Server.Bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{op: {DropRate: 1}}}); err != nil {
		t.Fatal(err)
	}
	r := admin.Submit(page, routes.AdminTopUpCardRefund(tu.PublicID), url.Values{"amount": {"10000"}, "note": {"asked"}, "code": {code}})
	return payer, tu, page, r
}
