package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

func TestAdminActionsOnTopUpsUnderReview(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		ctx := context.Background()
		if _, err := app.Server.Auth.SignUp(ctx, "boss@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		// Two payments put under review (say, an unclear bank answer):
		// one the payer did pay, one never paid.
		user, paidURL := app.StartTopUp(t, "review@example.com", "20000")
		csrf, token := user.TopUpForm()
		unpaid := user.PostTopUp(csrf, token, "30000")
		if _, err := app.Server.Bank.Pay(apptest.Authority(paidURL)); err != nil {
			t.Fatal(err)
		}
		topuptest.ForceAll(t, db, "needs_review", "verify_rejected")
		byAmount := func(rials int64) string {
			return topuptest.Select(t, db, func(p topup.TopUp) bool { return p.AmountRials == rials })[0].PublicID
		}
		paidID, unpaidID := byAmount(200000), byAmount(300000)
		_ = unpaid

		list := admin.Get(routes.Admin)
		if strings.Count(list.Body, `data-testid="admin-recheck"`) != 2 {
			t.Fatalf("admin page does not offer a recheck for both payments")
		}
		adminCSRF := apptest.Input(list.Body, "_csrf")
		post := func(c *apptest.Client, path string, form url.Values) apptest.Response {
			form.Set("_csrf", adminCSRF)
			return c.Post(path, form)
		}
		// Someone else cannot act (the page does not exist for them).
		if r := user.Post(routes.AdminTopUpRecheck(paidID), url.Values{"_csrf": {csrf}}); r.Status != http.StatusNotFound {
			t.Fatalf("non-admin recheck: %d", r.Status)
		}
		// Recheck the paid one: the bank confirms, it is credited.
		if r := post(admin, routes.AdminTopUpRecheck(paidID), url.Values{}); r.Location != routes.Admin+"?done=done_recheck_credited" {
			t.Fatalf("recheck paid: %d %q", r.Status, r.Location)
		}
		if user.Balance() != 200_000 {
			t.Fatalf("balance %d after the recheck", user.Balance())
		}
		// Recheck the unpaid one: the bank says its payer is still at the
		// bank page, so it is open again (the worker keeps asking).
		if r := post(admin, routes.AdminTopUpRecheck(unpaidID), url.Values{}); r.Location != routes.Admin+"?done=done_recheck_open" {
			t.Fatalf("recheck unpaid: %q", r.Location)
		}
		reopened := string(topuptest.ByPublicID(t, db, unpaidID).Status)
		if reopened != "pending_verification" {
			t.Fatalf("rechecked unpaid payment is %q, want pending_verification", reopened)
		}
		// (Its deadline passes: back under review.)
		unpaidRow := topuptest.ByPublicID(t, db, unpaidID).ID
		topuptest.ReleaseLease(t, db, unpaidRow)
		topuptest.ForceStatus(t, db, unpaidRow, "needs_review", "unknown_too_long")
		// Closing needs a reason; then it is failed, with the reason kept.
		if r := post(admin, routes.AdminTopUpClose(unpaidID), url.Values{"note": {"  "}}); r.Location != routes.Admin+"?done=error_note" {
			t.Fatalf("close without note: %q", r.Location)
		}
		// And a fresh second factor: none, or a wrong one, closes nothing.
		for _, code := range []string{"", "000000"} {
			if r := post(admin, routes.AdminTopUpClose(unpaidID), url.Values{"note": {"bank statement shows no debit"}, "code": {code}}); r.Location != routes.Admin+"?done=error_code" {
				t.Fatalf("close with code %q: %q", code, r.Location)
			}
		}
		if st := topuptest.ByPublicID(t, db, unpaidID).Status; st != "needs_review" {
			t.Fatalf("closed without the second factor: %s", st)
		}
		// A note the use case would refuse is refused before the code: the
		// same code closes it after.
		closeCode := apptest.AdminTOTPCode(t, db, "boss@example.com")
		if r := post(admin, routes.AdminTopUpClose(unpaidID), url.Values{"note": {"bank\u202e statement"}, "code": {closeCode}}); r.Location != routes.Admin+"?done=error_note" {
			t.Fatalf("close with a note holding a bidi override: %q", r.Location)
		}
		if r := post(admin, routes.AdminTopUpClose(unpaidID), url.Values{"note": {"bank statement shows no debit"},
			"code": {closeCode}}); r.Location != routes.Admin+"?done=done_closed" {
			t.Fatalf("close: %q", r.Location)
		}
		// (A recovery code: the authenticator's next one is a step away.)
		if r := post(admin, routes.AdminTopUpClose(paidID), url.Values{"note": {"x"}, "code": {admin.LastRecoveryCodes[0]}}); r.Location != routes.Admin+"?done=error_not_review" {
			t.Fatalf("close a credited payment: %q", r.Location)
		}
		closed := topuptest.ByPublicID(t, db, unpaidID)
		if status, reason := closed.Status, closed.StatusReason; status != "failed" || reason != "closed_by_admin" {
			t.Fatalf("closed payment: %s %q", status, reason)
		}
		if n := app.CountAudit(t); n != 3 {
			t.Fatalf("%d admin actions recorded, want 3 (two rechecks, one close)", n)
		}
		closes := 0
		for _, e := range app.AuditLog(t) {
			if e.Action == audit.ActionCloseFailed && e.Note == "bank statement shows no debit" && e.FromStatus == "needs_review" && e.ToStatus == "failed" {
				closes++
			}
		}
		if n := closes; n != 1 {
			t.Fatalf("close action not recorded as it happened")
		}
		if done := admin.Get(routes.Admin + "?done=done_closed"); !strings.Contains(done.Body, `data-testid="admin-notice"`) {
			t.Fatalf("no notice after the action")
		}
		apptest.CheckInvariants(t, db)
	})
}
