package admin_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// TestWithdrawalQueue: a withdrawal above the review amount waits in
// /admin/withdrawals; approving, rejecting and closing one under review
// each need a note and a fresh second factor (a wrong code changes
// nothing), and are in the audit log; a bank account waiting for review
// is verified the same way.
func TestWithdrawalQueue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, code, payee, uid, clock := withdrawalAdminSetupClock(t, db)
		ctx := context.Background()
		acct := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 42))
		pending := withdrawaltest.PendingAccount(t, db, uid, withdrawaltest.Sheba("056", 43))
		request := func(rials int64) withdrawal.Withdrawal {
			r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: rials})
			if err != nil {
				t.Fatal(err)
			}
			return r.Withdrawal
		}
		big, other, small := request(600_000_000), request(700_000_000), request(1_000_000)

		resp := admin.Get(routes.AdminWithdrawals)
		page := apptest.Parse(resp.Body)
		items := page.TestIDs("wd-review-item")
		if resp.Status != http.StatusOK {
			t.Fatalf("the queue: %d %s %.500s", resp.Status, resp.Location, resp.Body)
		}
		if len(items) != 2 || page.TestID("wd-account-item") == nil {
			t.Fatalf("the queue: %d waiting", len(items))
		}
		for _, it := range items {
			if it.Attr("data-public-id") == small.PublicID {
				t.Fatal("a small withdrawal waits for review")
			}
		}
		approve := routes.AdminWithdrawalApprove(big.PublicID)
		// A wrong code, then no note: nothing changes. The refused form's
		// field at fault is marked invalid and described by the sentence,
		// and the form keeps its note; the other forms are untouched.
		// refused checks a refused submission of form id (typed with note):
		// its field at fault (or none) is marked, the form keeps its note,
		// and the forms named in others are untouched.
		refused := func(r apptest.Response, id, field, note string, others ...string) {
			t.Helper()
			page := apptest.Parse(r.Body)
			if page.TestID("admin-error") == nil || page.TestID("admin-error").Attr("id") != "form-error" {
				t.Fatalf("%s: no sentence to describe the field: %.300s", id, r.Body)
			}
			for _, f := range []string{"code", "note"} {
				el := page.TestID(f + "-" + id)
				if el == nil {
					t.Fatalf("%s: no %s field in the refused form", id, f)
				}
				if got, want := el.Attr("aria-invalid") == "true", f == field; got != want {
					t.Errorf("%s: %s field invalid: %v, want %v", id, f, got, want)
				}
				if f == field && !strings.Contains(el.Attr("aria-describedby"), "form-error") {
					t.Errorf("%s: %s field not described by the sentence: %q", id, f, el.Attr("aria-describedby"))
				}
			}
			if got := page.TestID("note-" + id).Attr("value"); got != note {
				t.Errorf("%s: the refused form's note is %q, want %q", id, got, note)
			}
			for _, name := range others {
				if el := page.TestID(name); el == nil || el.Attr("aria-invalid") != "" || el.Attr("value") != "" {
					t.Errorf("%s: another form's field %s is missing, marked or filled", id, name)
				}
			}
		}
		r := admin.Submit(routes.AdminWithdrawals, approve, url.Values{"note": {"called the payee"}, "code": {"000000"}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("a wrong code: %d", r.Status)
		}
		others := []string{"code-reject-" + big.PublicID, "code-approve-" + other.PublicID, "note-reject-" + big.PublicID}
		refused(r, "approve-"+big.PublicID, "code", "called the payee", others...)
		unspent := code()
		r = admin.Submit(routes.AdminWithdrawals, approve, url.Values{"note": {""}, "code": {unspent}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("no note: %d", r.Status)
		}
		refused(r, "approve-"+big.PublicID, "note", "", others...)
		if s := withdrawaltest.Get(t, db, big.PublicID).Status; s != withdrawal.StatusRequested {
			t.Fatalf("changed to %s", s)
		}
		// The refusal for the note spent no code: the same one approves.
		r = admin.Submit(routes.AdminWithdrawals, approve, url.Values{"note": {"called the payee"}, "code": {unspent}})
		if r.Status != http.StatusSeeOther || r.Location != routes.AdminWithdrawals+"?done=approved" {
			t.Fatalf("approve: %d %q", r.Status, r.Location)
		}
		if s := withdrawaltest.Get(t, db, big.PublicID).Status; s != withdrawal.StatusApproved {
			t.Fatalf("approved: %s", s)
		}
		// A rejection refused for a wrong code, then for no note.
		r = admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalReject(other.PublicID), url.Values{"note": {"no answer"}, "code": {"000000"}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("reject, a wrong code: %d", r.Status)
		}
		refused(r, "reject-"+other.PublicID, "code", "no answer", "code-approve-"+other.PublicID, "note-approve-"+other.PublicID)
		r = admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalReject(other.PublicID), url.Values{"note": {"  "}, "code": {code()}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("reject, no note: %d", r.Status)
		}
		refused(r, "reject-"+other.PublicID, "note", "  ", "code-approve-"+other.PublicID)
		if s := withdrawaltest.Get(t, db, other.PublicID).Status; s != withdrawal.StatusRequested {
			t.Fatalf("a refused rejection changed it to %s", s)
		}
		if r := admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalReject(other.PublicID), url.Values{"note": {"no answer"}, "code": {code()}}); r.Status != http.StatusSeeOther {
			t.Fatalf("reject: %d", r.Status)
		}
		if f := withdrawaltest.WalletOf(t, db, uid); f.Held != 600_000_000+1_000_000 {
			t.Fatalf("held %d after the rejection", f.Held)
		}
		// The user's page shows what is held and what is left to spend:
		// an admin deciding on their withdrawals sees both.
		up := apptest.Parse(admin.Get(routes.AdminUser(uid)).Body)
		if h, av := up.TestID("user-held"), up.TestID("user-available"); h == nil || av == nil ||
			h.Attr("data-rials") != strconv.Itoa(600_000_000+1_000_000) || av.Attr("data-rials") != strconv.Itoa(3_000_000_000-600_000_000-1_000_000) {
			t.Fatalf("the user's page: held %v, available %v", h, av)
		}
		// One under review, closed as failed.
		if _, err := app.Server.PayoutWorker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		withdrawaltest.ForceNeedsReview(t, db, small.PublicID)
		// The provider still has it in progress: the close is refused,
		// with the sentence, and nothing changes.
		r = admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalFail(small.PublicID), url.Values{"note": {"the panel shows nothing"}, "code": {code()}})
		if r.Status != http.StatusConflict || !strings.Contains(r.Body, "has just said it has this payout in progress") {
			t.Fatalf("fail of a payout in progress: %d %.300s", r.Status, r.Body)
		}
		if s := withdrawaltest.Get(t, db, small.PublicID).Status; s != withdrawal.StatusNeedsReview {
			t.Fatalf("a refused close moved it to %s", s)
		}
		app.Server.Bank.Payouts().Forget(small.Provider, small.PublicID) // the provider's panel has no such payout
		// The provider had it in progress and now does not know it: it may
		// still pay it (an inquiry that forgets payouts once they leave
		// its queue), so a close as failed waits until it has not known it
		// for WITHDRAWAL_UNKNOWN_REVIEW_AFTER (24h), and nothing moves.
		r = admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalFail(small.PublicID), url.Values{"note": {"the panel shows nothing"}, "code": {code()}})
		if r.Status != http.StatusConflict || !strings.Contains(r.Body, "now says it does not know it") {
			t.Fatalf("fail of a payout the provider just forgot: %d %.300s", r.Status, r.Body)
		}
		if s, f := withdrawaltest.Get(t, db, small.PublicID).Status, withdrawaltest.WalletOf(t, db, uid); s != withdrawal.StatusNeedsReview || f.Held != 600_000_000+1_000_000 {
			t.Fatalf("a refused close of a forgotten payout: %s, held %d", s, f.Held)
		}
		clock.Advance(24*time.Hour + time.Minute)
		page = apptest.Parse(admin.Get(routes.AdminWithdrawals).Body)
		if page.TestID("wd-under-review-item") == nil {
			t.Fatal("nothing under review")
		}
		// Closing it refused for a wrong code, then for no note.
		for _, c := range []struct{ note, code, field string }{
			{"the provider's panel has no such payout", "000000", "code"},
			{"", code(), "note"},
		} {
			r = admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalFail(small.PublicID), url.Values{"note": {c.note}, "code": {c.code}})
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("fail refused for its %s: %d", c.field, r.Status)
			}
			refused(r, "fail-"+small.PublicID, c.field, c.note)
		}
		if s := withdrawaltest.Get(t, db, small.PublicID).Status; s == withdrawal.StatusFailed {
			t.Fatal("a refused close failed it")
		}
		if r := admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalFail(small.PublicID), url.Values{"note": {"the provider's panel has no such payout"}, "code": {code()}}); r.Status != http.StatusSeeOther {
			t.Fatalf("fail: %d %.300s", r.Status, r.Body)
		}
		if s := withdrawaltest.Get(t, db, small.PublicID).Status; s != withdrawal.StatusFailed {
			t.Fatalf("closed: %s", s)
		}
		// The bank account: a wrong code marks that form's code field.
		r = admin.Submit(routes.AdminWithdrawals, routes.AdminBankAccountApprove(pending), url.Values{"note": {"saw the card"}, "code": {"000000"}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("account, a wrong code: %d", r.Status)
		}
		acctID := strconv.FormatInt(pending, 10)
		refused(r, "account-approve-"+acctID, "code", "saw the card", "code-account-reject-"+acctID, "note-account-reject-"+acctID)
		// Rejecting it without a note: its note field.
		r = admin.Submit(routes.AdminWithdrawals, routes.AdminBankAccountReject(pending), url.Values{"note": {""}, "code": {code()}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("account reject, no note: %d", r.Status)
		}
		refused(r, "account-reject-"+acctID, "note", "", "code-account-approve-"+acctID)
		if s := withdrawaltest.BankAccountStatus(t, db, pending); s != "pending_review" {
			t.Fatalf("a refused review changed the account to %s", s)
		}
		// The dashboard says what waits: the account, linked to its queue.
		if k := apptest.Parse(admin.Get(routes.Admin).Body).TestIDs("admin-waiting-kind"); !slices.ContainsFunc(k, func(e *apptest.Element) bool {
			return e.Attr("data-kind") == "bank_accounts" && e.Attr("data-count") == "1" && slices.Contains(e.Attrs("href"), routes.AdminWithdrawals+"#wd-accounts")
		}) {
			t.Fatal("the dashboard does not count the bank account waiting for review")
		}
		if r := admin.Submit(routes.AdminWithdrawals, routes.AdminBankAccountApprove(pending), url.Values{"note": {"saw the card"}, "code": {code()}}); r.Status != http.StatusSeeOther {
			t.Fatalf("account: %d", r.Status)
		}
		if s := withdrawaltest.BankAccountStatus(t, db, pending); s != "verified" {
			t.Fatalf("account %s", s)
		}
		// Reconcile now, then the report is shown.
		if r := admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalsReconcile, nil); r.Status != http.StatusSeeOther {
			t.Fatalf("reconcile: %d", r.Status)
		}
		page = apptest.Parse(admin.Get(routes.AdminWithdrawals + "?done=reconciled").Body)
		if len(page.TestIDs("wd-report")) == 0 || page.TestID("admin-notice") == nil {
			t.Fatal("no report")
		}
		for _, a := range []string{"withdrawal_approve", "withdrawal_reject", "withdrawal_fail", "bank_account_approve", "payout_reconcile"} {
			if n := withdrawaltest.AuditActions(t, db, a); n != 1 {
				t.Errorf("%s: %d audit rows", a, n)
			}
		}
		// In English, and the audit page names the actions.
		en := admin.GetIn("en", routes.AdminAudit)
		if !strings.Contains(en.Body, "approved a withdrawal") {
			t.Fatal("the audit log's label")
		}
		// Not for a payer.
		if r := payee.Get(routes.AdminWithdrawals); r.Status != http.StatusNotFound {
			t.Fatalf("a payer on the queue: %d", r.Status)
		}
		_ = strconv.Itoa
		withdrawaltest.CheckInvariants(t, db)
	})
}

// withdrawalAdminSetup starts the app on a clock the test moves, with an
// admin (boss@example.com) whose code() is a fresh second-factor code, and
// a signed-up payee (payee@example.com, user uid) funded with 3,000,000,000
// rials: what the withdrawal queue's and the withdrawal page's tests share.
func withdrawalAdminSetup(t *testing.T, db *store.DB) (app *apptest.App, admin *apptest.Client, code func() string, payee *apptest.Client, uid int64) {
	t.Helper()
	app, admin, code, payee, uid, _ = withdrawalAdminSetupClock(t, db)
	return app, admin, code, payee, uid
}

// withdrawalAdminSetupClock is withdrawalAdminSetup, with the app's clock
// (for the tests whose waits it moves past).
func withdrawalAdminSetupClock(t *testing.T, db *store.DB) (app *apptest.App, admin *apptest.Client, code func() string, payee *apptest.Client, uid int64, clock *withdrawaltest.Clock) {
	t.Helper()
	clock = withdrawaltest.ClockAt(time.Now())
	app = apptest.Start(t, db, apptest.Options{Server: server.Options{Now: clock.Now}})
	const adminEmail = "boss@example.com"
	admin = app.NewAdmin(t, adminEmail)
	code = func() string {
		clock.Advance(30 * time.Second)
		return apptest.AdminTOTPCodeAt(t, db, adminEmail, app.Server.Clock.Now)
	}
	payee = app.NewClient(t)
	payee.SignUp("payee@example.com")
	uid = authtest.UserID(t, db, "payee@example.com")
	withdrawaltest.FundUser(t, db, uid, 3_000_000_000)
	return app, admin, code, payee, uid, clock
}

// An admin's own withdrawal and own bank account waiting for review are
// another admin's: the page refuses them (403) before a code is spent,
// and nothing changes.
func TestAdminsOwnWithdrawalIsAnotherAdmins(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, admin, code, _, _ := withdrawalAdminSetup(t, db)
		ctx := context.Background()
		self := authtest.UserID(t, db, "boss@example.com")
		withdrawaltest.FundUser(t, db, self, 1_000_000_000)
		acct := withdrawaltest.VerifiedAccount(t, db, self, withdrawaltest.Sheba("017", 52))
		pending := withdrawaltest.PendingAccount(t, db, self, withdrawaltest.Sheba("056", 53))
		r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: self, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: 600_000_000})
		if err != nil || !r.Withdrawal.ReviewRequired {
			t.Fatalf("the admin's own withdrawal: %+v %v", r.Withdrawal, err)
		}
		unspent := code()
		for _, action := range []string{routes.AdminWithdrawalApprove(r.Withdrawal.PublicID), routes.AdminBankAccountApprove(pending)} {
			resp := admin.Submit(routes.AdminWithdrawals, action, url.Values{"note": {"it is mine"}, "code": {unspent}})
			if resp.Status != http.StatusForbidden || !strings.Contains(resp.Body, html.EscapeString(i18n.T(i18n.EN, "admin.wd.error_own"))) {
				t.Fatalf("%s by its own admin: %d", action, resp.Status)
			}
		}
		if s := withdrawaltest.Get(t, db, r.Withdrawal.PublicID).Status; s != withdrawal.StatusRequested {
			t.Fatalf("the admin's own withdrawal moved to %s", s)
		}
		if s := withdrawaltest.BankAccountStatus(t, db, pending); s != "pending_review" {
			t.Fatalf("the admin's own bank account is %s", s)
		}
		// No code was spent: it still passes the console's own check.
		if err := app.Server.Auth.ConfirmSecondFactor(ctx, self, unspent); err != nil {
			t.Fatalf("the code the refusals did not spend: %v", err)
		}
	})
}
