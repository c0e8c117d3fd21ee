package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

// TestReconcileNowTakesTheTurn: two "reconcile now" posts at once (a
// double click, two admins, a proxy's retry) make one run: the bank's
// list is asked once and one report per gateway is stored, and the other
// post is told another run is still asking the bank. The run gives its
// turn back when it ends: the next post runs again.
func TestReconcileNowTakesTheTurn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		admin := app.NewAdmin(t, "turn-admin@example.com")
		bank := app.Server.Bank
		reports := len(topuptest.Reconciles(t, db))
		csrf := apptest.Input(admin.Get(routes.Admin).Body, "_csrf")
		// The bank's list answers slowly: the first run still asks it
		// when the second post arrives.
		if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"unverified": {LatencyMS: 1500}}}); err != nil {
			t.Fatal(err)
		}
		bank.ResetStats()
		var wg sync.WaitGroup
		locations := make([]string, 2)
		errs := make([]error, 2)
		for i := range locations {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, app.URL+routes.AdminReconcile,
					strings.NewReader(url.Values{"_csrf": {csrf}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := admin.HTTP.Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusSeeOther {
					t.Errorf("post %d: %d", i, resp.StatusCode)
				}
				locations[i] = resp.Header.Get("Location")
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := bank.SetFaults(sandbank.Faults{}); err != nil {
			t.Fatal(err)
		}
		if n := bank.Stats()["unverified"].Calls; n != 1 {
			t.Errorf("the bank's list was asked %d times by two posts at once, want 1", n)
		}
		got := map[string]int{}
		for _, l := range locations {
			got[l]++
		}
		ran, busy := routes.Admin+"?done=done_reconcile", routes.Admin+"?done=busy_reconcile"
		if got[ran] != 1 || got[busy] != 1 {
			t.Errorf("the two posts went to %q, want one to %s and one to %s", locations, ran, busy)
		}
		one := len(topuptest.Reconciles(t, db)) - reports
		if one == 0 {
			t.Fatal("no report stored")
		}
		page := apptest.Parse(admin.GetIn("en", busy).Body)
		if n := page.TestID("admin-notice"); n == nil || !strings.Contains(n.Text(), i18n.T(i18n.EN, "admin.busy_reconcile")) {
			t.Errorf("the notice of a run not started again is not shown")
		}
		var rows int
		for _, r := range apptest.Parse(admin.Get(routes.AdminAudit).Body).TestIDs("audit-row") {
			if r.Attr("data-action") == string(audit.ActionReconcile) {
				rows++
			}
		}
		if rows != 1 {
			t.Errorf("%d reconciliations in the audit log, want 1 (the one that ran)", rows)
		}

		// Ended, the run gave its turn back: the next post runs.
		if r := admin.Post(routes.AdminReconcile, url.Values{"_csrf": {csrf}}); r.Status != http.StatusSeeOther || r.Location != ran {
			t.Errorf("a post after the run ended: %d %s, want %s", r.Status, r.Location, ran)
		}
		if n := bank.Stats()["unverified"].Calls; n != 2 {
			t.Errorf("the bank's list was asked %d times after a third post, want 2", n)
		}
		if n := len(topuptest.Reconciles(t, db)) - reports; n != 2*one {
			t.Errorf("%d reports after the run that followed, want %d", n, 2*one)
		}
	})
}

// TestReconcilePayoutsNowTakesTheTurn: while another run holds the
// payout providers' turns, "reconcile payouts now" asks none of them and
// stores no report, and the admin is told why; once the turns are free,
// it runs.
func TestReconcilePayoutsNowTakesTheTurn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		ctx := context.Background()
		admin := app.NewAdmin(t, "payout-turn@example.com")
		stored := func() int {
			t.Helper()
			reps, err := app.Server.PayoutStore.Reports(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			return len(reps)
		}
		offers := app.Server.Withdrawals.Offers()
		if len(offers) == 0 {
			t.Fatal("no payout provider offered")
		}
		now := app.Server.Clock.Now()
		for _, o := range offers {
			if ok, err := app.Server.TopUps.ClaimReconcileTurn(ctx, withdrawal.TurnName(o.Name), now, now.Add(withdrawal.ReconcileHold)); err != nil || !ok {
				t.Fatalf("another run's turn of %s: %v %v", o.Name, ok, err)
			}
		}
		r := admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalsReconcile, nil)
		if busy := routes.AdminWithdrawals + "?done=reconcile_busy"; r.Status != http.StatusSeeOther || r.Location != busy {
			t.Fatalf("reconcile while another run holds the turns: %d %s, want %s", r.Status, r.Location, busy)
		}
		if n := stored(); n != 0 {
			t.Errorf("%d payout reports stored while another run held the turns", n)
		}
		page := apptest.Parse(admin.GetIn("en", r.Location).Body)
		if n := page.TestID("admin-notice"); n == nil || !strings.Contains(n.Text(), i18n.T(i18n.EN, "admin.wd.done.reconcile_busy")) {
			t.Errorf("the notice of a run not started is not shown")
		}
		// The other run gives its turns back (as a run does when it ends).
		for _, o := range offers {
			if _, err := app.Server.TopUps.ClaimReconcileTurn(ctx, withdrawal.TurnName(o.Name), now.Add(withdrawal.ReconcileHold), now); err != nil {
				t.Fatal(err)
			}
		}
		if r := admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalsReconcile, nil); r.Location != routes.AdminWithdrawals+"?done=reconciled" {
			t.Fatalf("reconcile with the turns free: %d %s", r.Status, r.Location)
		}
		if n := stored(); n != len(offers) {
			t.Errorf("%d payout reports, want %d", n, len(offers))
		}
		// The turns were given back: at once, again.
		if r := admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalsReconcile, nil); r.Location != routes.AdminWithdrawals+"?done=reconciled" {
			t.Fatalf("reconcile right after: %d %s", r.Status, r.Location)
		}
	})
}

// TestFailedReconcileAudited: a top-up reconciliation and a payout
// reconciliation that fail (the bank down, a provider under maintenance)
// are both recorded with one result, failed, shown with its own words:
// not the recheck's "recording the outcome failed; ask again", nor done.
func TestFailedReconcileAudited(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		admin := app.NewAdmin(t, "recon-boss@example.com")
		if err := app.Server.Bank.SetFaults(sandbank.Faults{Down: true, DownStatus: 503}); err != nil {
			t.Fatal(err)
		}
		if r := admin.Submit(routes.Admin, routes.AdminReconcile, nil); r.Location != routes.Admin+"?done=error_reconcile" {
			t.Errorf("a reconciliation with the bank down: %d %s", r.Status, r.Location)
		}
		if err := app.Server.Bank.SetFaults(sandbank.Faults{}); err != nil {
			t.Fatal(err)
		}
		book := app.Server.Bank.Payouts()
		down := payouts.Faults{Providers: map[string]payouts.ProviderFaults{}}
		for _, o := range app.Server.Withdrawals.Offers() {
			down.Providers[o.Name] = payouts.ProviderFaults{Maintenance: true}
		}
		if err := book.SetFaults(down); err != nil {
			t.Fatal(err)
		}
		if r := admin.Submit(routes.AdminWithdrawals, routes.AdminWithdrawalsReconcile, nil); r.Status != http.StatusSeeOther {
			t.Errorf("a payout reconciliation with the providers under maintenance: %d", r.Status)
		}
		if err := book.SetFaults(payouts.Faults{}); err != nil {
			t.Fatal(err)
		}
		for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
			results := map[string]string{}
			for _, r := range apptest.Parse(admin.GetIn(string(l), routes.AdminAudit).Body).TestIDs("audit-row") {
				if a := r.Attr("data-action"); a == string(audit.ActionReconcile) || a == string(audit.ActionPayoutReconcile) {
					results[a] = r.Attr("data-result")
					if !strings.Contains(r.Text(), i18n.T(l, "admin.result.failed")) || strings.Contains(r.Text(), i18n.T(l, "admin.result.error")) {
						t.Errorf("%s: the failed %s is shown as %q", l, a, r.Text())
					}
				}
			}
			if results[string(audit.ActionReconcile)] != "failed" || results[string(audit.ActionPayoutReconcile)] != "failed" {
				t.Errorf("%s: the failed runs' results: %v, want failed for both", l, results)
			}
		}
	})
}
