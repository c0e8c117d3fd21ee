package admin_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// TestPayoutDifferencesFlagged: a withdrawal paid, then failed by hand at
// the built-in bank's provider after it was transferred (its late manual
// failure) while no worker watched. "Reconcile payouts now" returns it
// (the money back once) and flags it: the withdrawals page lists the
// difference, the dashboard points there, and /metrics counts the
// provider's open differences; a later run that finds both sides
// agreeing clears the flag and the metric.
func TestPayoutDifferencesFlagged(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"METRICS_TOKEN": apptest.MetricsToken}, Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		admin := app.NewAdmin(t, "boss@example.com")
		payee := app.NewClient(t)
		payee.SignUp("payee@example.com")
		uid := authtest.UserID(t, db, "payee@example.com")
		withdrawaltest.FundUser(t, db, uid, 5_000_000)
		acct := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 42))
		r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		w := r.Withdrawal
		if _, err := app.Server.PayoutWorker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		w = withdrawaltest.Get(t, db, w.PublicID)
		book := app.Server.Bank.Payouts()
		if _, err := book.Settle(w.Provider, w.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.Withdrawals.Resolve(ctx, w.ID, withdrawal.ActorWorker); err != nil {
			t.Fatal(err)
		}
		if _, err := book.Return(w.Provider, w.PublicID); err != nil {
			t.Fatal(err)
		}
		metric := func(series string) float64 { t.Helper(); return scrapedMetric(t, app, series) }
		diffs := `kifpool_payout_reconcile_differences{provider="` + w.Provider + `"}`
		if dash := apptest.Parse(admin.Get(routes.Admin).Body); dash.TestID("payout-differences") != nil {
			t.Fatal("a flag before any reconciliation")
		}
		// Never reconciled: the series says so (0), for the alert on a
		// provider never reconciled.
		finished := `kifpool_payout_reconcile_last_finished_timestamp_seconds{provider="` + w.Provider + `"}`
		if got := metric(finished); got != 0 {
			t.Fatalf("before any reconciliation %s = %v, want 0", finished, got)
		}

		if r := admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalsReconcile, nil); r.Status != http.StatusSeeOther {
			t.Fatalf("reconcile: %d", r.Status)
		}
		if got := withdrawaltest.Get(t, db, w.PublicID).Status; got != withdrawal.StatusReturned {
			t.Fatalf("after reconciliation: %s", got)
		}
		if n := withdrawaltest.Returns(t, db, w.PublicID); n != 1 {
			t.Fatalf("%d returns", n)
		}
		page := apptest.Parse(admin.Get(routes.AdminWithdrawals).Body)
		d := page.TestID("wd-diff")
		if d == nil || d.Attr("data-kind") != withdrawal.DiffLateReturn {
			t.Fatalf("the withdrawals page's difference: %v", d)
		}
		flag := apptest.Parse(admin.GetIn("en", routes.Admin).Body).TestID("payout-differences")
		if flag == nil || flag.Attr("data-provider") != w.Provider {
			t.Fatal("the dashboard does not flag the difference")
		}
		if got := metric(diffs); got != 1 {
			t.Fatalf("%s = %v, want 1", diffs, got)
		}
		if got := metric(`kifpool_payout_reconcile_last_failed{provider="` + w.Provider + `"}`); got != 0 {
			t.Fatalf("last failed %v", got)
		}
		if got := metric(finished); got < float64(clock.Now().Unix()-5) {
			t.Fatalf("last finished %v", got)
		}

		// The next day both sides say returned: nothing open.
		clock.Advance(24 * time.Hour)
		if _, err := app.Server.Withdrawals.Reconcile(ctx, app.Server.PayoutStore); err != nil {
			t.Fatal(err)
		}
		if got := metric(diffs); got != 0 {
			t.Fatalf("%s = %v after a clean run", diffs, got)
		}
		if apptest.Parse(admin.Get(routes.Admin).Body).TestID("payout-differences") != nil {
			t.Fatal("the dashboard still flags it")
		}
		withdrawaltest.CheckInvariants(t, db)
	})
}
