package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// TestWithdrawalDetail: /admin/withdrawals/{id} shows a withdrawal's
// status, amount, masked Sheba, provider, status changes (actor, reason)
// and ledger transactions, in both languages; it is linked from the queue
// and the user's page; the actions its status allows post to the queue's
// use cases (approve, reject, close as failed) with a note and a fresh
// second factor; nobody but an admin sees it.
func TestWithdrawalDetail(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, code, payee, uid, clock := withdrawalAdminSetupClock(t, db)
		ctx := context.Background()
		sheba := withdrawaltest.Sheba("017", 42)
		acct := withdrawaltest.VerifiedAccount(t, db, uid, sheba)
		request := func(rials int64) withdrawal.Withdrawal {
			r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: rials})
			if err != nil {
				t.Fatal(err)
			}
			return r.Withdrawal
		}
		big, paid, unclear := request(600_000_000), request(2_500_000), request(1_000_000)
		if _, err := app.Server.PayoutWorker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		w := withdrawaltest.Get(t, db, paid.PublicID)
		if _, err := app.Server.Bank.Payouts().Settle(w.Provider, w.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.Withdrawals.Resolve(ctx, w.ID, withdrawal.ActorWorker); err != nil {
			t.Fatal(err)
		}
		if w = withdrawaltest.Get(t, db, paid.PublicID); w.Status != withdrawal.StatusPaid {
			t.Fatalf("paid one is %s", w.Status)
		}
		withdrawaltest.ForceNeedsReview(t, db, unclear.PublicID)
		app.Server.Bank.Payouts().Forget(unclear.Provider, unclear.PublicID) // not in the provider's panel

		// The paid one: figures, events, its ledger transaction; no action.
		r := admin.Get(routes.AdminWithdrawal(paid.PublicID))
		d := apptest.Parse(r.Body)
		page := d.TestID("admin-withdrawal")
		if r.Status != http.StatusOK || page == nil || page.Attr("data-status") != "paid" {
			t.Fatalf("the paid withdrawal's page: %d %.400s", r.Status, r.Body)
		}
		if a := d.TestID("admin-withdrawal-amount"); a.Attr("data-rials") != "2500000" || !strings.Contains(a.Text(), "250,000") && !strings.Contains(a.Text(), "۲۵۰٬۰۰۰") {
			t.Errorf("amount %q %q", a.Attr("data-rials"), a.Text())
		}
		if s := d.TestID("admin-withdrawal-sheba").Text(); s != iban.Sheba(sheba).Masked() || strings.Contains(r.Body, sheba) {
			t.Errorf("the Sheba shown %q (want it masked)", s)
		}
		if p := d.TestID("admin-withdrawal-provider").Text(); !strings.Contains(p, w.Provider) {
			t.Errorf("provider %q, want %q", p, w.Provider)
		}
		evs := d.TestIDs("admin-withdrawal-event")
		if len(evs) < 3 || evs[0].Attr("data-to") != "requested" || evs[0].Attr("data-actor") != "user" ||
			evs[len(evs)-1].Attr("data-to") != "paid" || evs[len(evs)-1].Attr("data-reason") != "transferred" {
			t.Fatalf("events: %d", len(evs))
		}
		if lt := d.TestIDs("admin-ledger-transaction"); len(lt) != 1 || lt[0].Attr("data-kind") != "withdrawal" || lt[0].Attr("data-reference") != "hold:"+strconv.FormatInt(w.HoldID, 10) {
			t.Fatalf("ledger transactions: %d", len(lt))
		}
		if d.TestID("form-approve-"+paid.PublicID) != nil || d.TestID("form-fail-"+paid.PublicID) != nil {
			t.Error("a paid withdrawal offers an action")
		}
		enBody := admin.GetIn("en", routes.AdminWithdrawal(paid.PublicID)).Body
		if en := apptest.Parse(enBody); !strings.Contains(enBody, "Status changes") || !strings.Contains(en.TestID("admin-withdrawal-status").Text(), "Paid") ||
			!strings.Contains(enBody, "the payout provider paid it") {
			t.Errorf("the English page: %.300s", en.TestID("admin-withdrawal").Text())
		}

		// Linked from the queue and from the user's page.
		links := map[string]bool{}
		for _, a := range apptest.Parse(admin.Get(routes.AdminWithdrawals).Body).TestIDs("wd-link") {
			links[a.Attr("href")] = true
		}
		if !links[routes.AdminWithdrawal(big.PublicID)] || !links[routes.AdminWithdrawal(unclear.PublicID)] {
			t.Errorf("the queue's links: %v", links)
		}
		user := apptest.Parse(admin.Get(routes.AdminUser(uid)).Body)
		if items := user.TestIDs("user-withdrawal"); len(items) != 3 {
			t.Errorf("the user's page lists %d withdrawals", len(items))
		}
		found := false
		for _, a := range user.TestIDs("wd-link") {
			found = found || a.Attr("href") == routes.AdminWithdrawal(paid.PublicID)
		}
		if !found {
			t.Error("the user's page does not link to the withdrawal")
		}

		// Waiting for approval: approve from its page (the queue's use
		// case: a wrong code changes nothing).
		detail := routes.AdminWithdrawal(big.PublicID)
		d = apptest.Parse(admin.Get(detail).Body)
		if d.TestID("form-approve-"+big.PublicID) == nil || d.TestID("form-reject-"+big.PublicID) == nil {
			t.Fatal("no approve or reject form")
		}
		if r := admin.Submit(detail, routes.AdminWithdrawalApprove(big.PublicID), url.Values{"note": {"called"}, "code": {"000000"}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("a wrong code: %d", r.Status)
		}
		if s := withdrawaltest.Get(t, db, big.PublicID).Status; s != withdrawal.StatusRequested {
			t.Fatalf("changed by a wrong code: %s", s)
		}
		if r := admin.Submit(detail, routes.AdminWithdrawalApprove(big.PublicID), url.Values{"note": {"called the payee"}, "code": {code()}}); r.Status != http.StatusSeeOther {
			t.Fatalf("approve: %d", r.Status)
		}
		d = apptest.Parse(admin.Get(detail).Body)
		last := d.TestIDs("admin-withdrawal-event")
		if s := d.TestID("admin-withdrawal").Attr("data-status"); s != "approved" || len(last) < 2 ||
			last[len(last)-1].Attr("data-actor") != "admin" || !strings.Contains(last[len(last)-1].Text(), "called the payee") {
			t.Fatalf("after approving: %s", s)
		}
		if d.TestID("form-approve-"+big.PublicID) != nil {
			t.Error("an approved withdrawal still offers approval")
		}

		// Under review: close as failed from its page.
		detail = routes.AdminWithdrawal(unclear.PublicID)
		if apptest.Parse(admin.Get(detail).Body).TestID("form-fail-"+unclear.PublicID) == nil {
			t.Fatal("no close-as-failed form")
		}
		// The provider had it and does not know it now: refused until it
		// has not known it for WITHDRAWAL_UNKNOWN_REVIEW_AFTER.
		if r := admin.Submit(detail, routes.AdminWithdrawalFail(unclear.PublicID), url.Values{"note": {"not in the provider's panel"}, "code": {code()}}); r.Status != http.StatusConflict {
			t.Fatalf("fail at once: %d", r.Status)
		}
		clock.Advance(24*time.Hour + time.Minute)
		if r := admin.Submit(detail, routes.AdminWithdrawalFail(unclear.PublicID), url.Values{"note": {"not in the provider's panel"}, "code": {code()}}); r.Status != http.StatusSeeOther {
			t.Fatalf("fail: %d", r.Status)
		}
		if s := withdrawaltest.Get(t, db, unclear.PublicID).Status; s != withdrawal.StatusFailed {
			t.Fatalf("closed: %s", s)
		}
		for _, a := range []string{"withdrawal_approve", "withdrawal_fail"} {
			if n := withdrawaltest.AuditActions(t, db, a); n != 1 {
				t.Errorf("%s: %d audit rows", a, n)
			}
		}

		// Unknown, malformed, and a payer: 404.
		for _, p := range []string{routes.AdminWithdrawal("wd_aaaaaaaaaaaaaaaaaaaaaaaa"), routes.AdminWithdrawal("nope")} {
			if r := admin.Get(p); r.Status != http.StatusNotFound {
				t.Errorf("%s: %d", p, r.Status)
			}
		}
		if r := payee.Get(routes.AdminWithdrawal(paid.PublicID)); r.Status != http.StatusNotFound {
			t.Errorf("a payer: %d", r.Status)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// TestWithdrawalClosedAsPaid: a withdrawal under review that the provider
// said it transferred (for another amount) shows the provider's word and
// offers only "close as paid", in the queue and on its page; posted with a
// note and a fresh code it is paid, its hold captured (the wallet keeps
// nothing back); "close as failed" posted anyway is refused and changes
// nothing.
func TestWithdrawalClosedAsPaid(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, code, _, uid := withdrawalAdminSetup(t, db)
		ctx := context.Background()
		acct := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 42))
		r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: 2_500_000})
		if err != nil {
			t.Fatal(err)
		}
		w := r.Withdrawal
		if _, err := app.Server.PayoutWorker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		// The provider transferred it (another amount, say): asked before
		// the close as paid, it still says so.
		if _, err := app.Server.Bank.Payouts().Settle(w.Provider, w.PublicID); err != nil {
			t.Fatal(err)
		}
		withdrawaltest.ForceProviderPaid(t, db, w.PublicID, "PROV-9")
		w = withdrawaltest.Get(t, db, w.PublicID)
		held := withdrawaltest.Wallet(t, db, w.WalletID)

		queue := apptest.Parse(admin.Get(routes.AdminWithdrawals).Body)
		if queue.TestID("form-paid-"+w.PublicID) == nil || queue.TestID("form-fail-"+w.PublicID) != nil {
			t.Fatal("the queue does not offer close as paid, only")
		}
		detail := routes.AdminWithdrawal(w.PublicID)
		d := apptest.Parse(admin.Get(detail).Body)
		if s := d.TestID("admin-withdrawal-provider-state"); s == nil || s.Attr("data-state") != "transferred" || !strings.Contains(s.Text(), "PROV-9") {
			t.Fatalf("the provider's word: %v", s)
		}
		if d.TestID("form-paid-"+w.PublicID) == nil || d.TestID("form-fail-"+w.PublicID) != nil {
			t.Fatal("the page does not offer close as paid, only")
		}
		// Once the provider has contradicted its "transferred" since,
		// close as failed is offered too (the use case asks it again).
		withdrawaltest.ForceContradicted(t, db, w.PublicID, time.Now())
		if d := apptest.Parse(admin.Get(detail).Body); d.TestID("form-fail-"+w.PublicID) == nil || d.TestID("form-paid-"+w.PublicID) == nil {
			t.Fatal("a contradicted transfer's page does not offer both closes")
		}
		// Asked first, the provider says it transferred it: the close as
		// paid goes on.
		if r := admin.Submit(detail, routes.AdminWithdrawalPaid(w.PublicID), url.Values{"note": {"the provider took its fee; see its panel"}, "code": {code()}}); r.Status != http.StatusSeeOther {
			t.Fatalf("close as paid: %d", r.Status)
		}
		if got := withdrawaltest.Get(t, db, w.PublicID); got.Status != withdrawal.StatusPaid || got.StatusReason != string(withdrawal.ReasonPaidByAdmin) {
			t.Fatalf("closed as paid: %s %s", got.Status, got.StatusReason)
		}
		// "Close as failed" posted anyway is refused and changes nothing.
		if r := admin.Forge(detail, routes.AdminWithdrawalFail(w.PublicID), url.Values{"note": {"not in the panel"}, "code": {code()}}); r.Status != http.StatusConflict {
			t.Fatalf("close as failed: %d", r.Status)
		}
		if got := withdrawaltest.Get(t, db, w.PublicID); got.Status != withdrawal.StatusPaid || got.StatusReason != string(withdrawal.ReasonPaidByAdmin) {
			t.Fatalf("after close as failed was refused: %s %s", got.Status, got.StatusReason)
		}
		after := withdrawaltest.Wallet(t, db, w.WalletID)
		if after.Posted != held.Posted-2_500_000 || after.Held != held.Held-2_500_000 {
			t.Fatalf("wallet before %+v, after %+v: want the hold captured", held, after)
		}
		if n := withdrawaltest.AuditActions(t, db, "withdrawal_paid"); n != 1 {
			t.Errorf("%d audit rows of the close as paid", n)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}

// TestWithdrawalFailOfferedAfterFailedOnly: a withdrawal under review that
// the provider said it transferred (for another amount) is offered "close
// as failed" on its page once the provider has said since that it failed
// it (the worker records that word; the close waits until it has stood
// long enough), never once it said since that it does not know it: every
// such close is refused (it needs "failed" now), so the page says what to
// do instead and offers close as paid only. Posted anyway, that close is
// refused and changes nothing.
func TestWithdrawalFailOfferedAfterFailedOnly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, code, _, uid := withdrawalAdminSetup(t, db)
		ctx := context.Background()
		acct := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 42))
		request := func(rials int64) withdrawal.Withdrawal {
			r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: rials})
			if err != nil {
				t.Fatal(err)
			}
			return r.Withdrawal
		}
		failed, forgot := request(2_500_000), request(1_500_000)
		if _, err := app.Server.PayoutWorker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		// Both under review on the provider's word that it transferred
		// them (another amount, say).
		withdrawaltest.ForceProviderPaid(t, db, failed.PublicID, "PROV-1")
		withdrawaltest.ForceProviderPaid(t, db, forgot.PublicID, "PROV-2")
		// (a) The provider says now that it failed the one; (b) it does
		// not know the other. The worker's next check records each word.
		if _, err := app.Server.Bank.Payouts().Fail(failed.Provider, failed.PublicID); err != nil {
			t.Fatal(err)
		}
		app.Server.Bank.Payouts().Forget(forgot.Provider, forgot.PublicID)
		for _, w := range []withdrawal.Withdrawal{failed, forgot} {
			if _, err := app.Server.Withdrawals.Resolve(ctx, w.ID, withdrawal.ActorWorker); err != nil {
				t.Fatal(err)
			}
			if got := withdrawaltest.Get(t, db, w.PublicID); got.Status != withdrawal.StatusNeedsReview ||
				got.ProviderState != withdrawal.ProviderTransferred || got.UnknownSince == nil {
				t.Fatalf("%s after the check: %s, %q, contradicted since %v", w.PublicID, got.Status, got.ProviderState, got.UnknownSince)
			}
		}

		// (a): both closes offered, no word of waiting.
		d := apptest.Parse(admin.Get(routes.AdminWithdrawal(failed.PublicID)).Body)
		if d.TestID("form-fail-"+failed.PublicID) == nil || d.TestID("form-paid-"+failed.PublicID) == nil {
			t.Fatal(`after "transferred" then "failed" the page does not offer both closes`)
		}
		if d.TestID("admin-withdrawal-fail-waits") != nil {
			t.Fatal(`after "failed" the page says the close as failed waits`)
		}

		// (b): no close as failed; the page says what to do instead.
		detail := routes.AdminWithdrawal(forgot.PublicID)
		d = apptest.Parse(admin.Get(detail).Body)
		if d.TestID("form-fail-"+forgot.PublicID) != nil {
			t.Fatal(`after "transferred" then "not found" the page offers close as failed, which is refused at every press`)
		}
		if d.TestID("form-paid-"+forgot.PublicID) == nil {
			t.Fatal("the page does not offer close as paid")
		}
		if s := d.TestID("admin-withdrawal-fail-waits"); s == nil || !strings.Contains(s.Text(), "WITHDRAWAL_UNKNOWN_REVIEW_AFTER") {
			t.Fatalf("the page does not say what to do instead: %v", s)
		}
		// Posted anyway, it is refused (the provider, asked first, still
		// does not know it) and nothing changes.
		if r := admin.Forge(detail, routes.AdminWithdrawalFail(forgot.PublicID), url.Values{"note": {"not in the panel"}, "code": {code()}}); r.Status != http.StatusConflict {
			t.Fatalf("close as failed: %d", r.Status)
		}
		if got := withdrawaltest.Get(t, db, forgot.PublicID); got.Status != withdrawal.StatusNeedsReview || got.Contradiction != withdrawal.ContradictionNotFound {
			t.Fatalf("after close as failed was refused: %s, %q", got.Status, got.Contradiction)
		}

		// The same on the words as recorded (the fixture's, both ways):
		// "not found" last hides it, "failed" last offers it.
		withdrawaltest.ForceContradictedBy(t, db, failed.PublicID, withdrawal.ContradictionNotFound, time.Now())
		if d := apptest.Parse(admin.Get(routes.AdminWithdrawal(failed.PublicID)).Body); d.TestID("form-fail-"+failed.PublicID) != nil ||
			d.TestID("admin-withdrawal-fail-waits") == nil {
			t.Fatal(`"not found" recorded last: close as failed still offered`)
		}
		withdrawaltest.ForceContradictedBy(t, db, forgot.PublicID, withdrawal.ContradictionFailed, time.Now())
		if d := apptest.Parse(admin.Get(detail).Body); d.TestID("form-fail-"+forgot.PublicID) == nil || d.TestID("admin-withdrawal-fail-waits") != nil {
			t.Fatal(`"failed" recorded last: close as failed not offered`)
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}
