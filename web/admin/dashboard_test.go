package admin_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/topupread"
)

// TestDashboardTotals: GET /admin shows every status's total, exactly
// while a status has at most topupread.TotalCap top-ups. Beyond that,
// on PostgreSQL, the total is the database's estimate and the page says so
// in both languages ("≈" and a sentence); SQLite still counts exactly.
// The metrics gauge of payments by status reads the same totals.
func TestDashboardTotals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Unchecked: "topuptest.SeedN writes top-ups without their events and ledger transactions", Env: map[string]string{"METRICS_TOKEN": apptest.MetricsToken}})
		ctx := context.Background()
		if _, err := app.Server.Auth.SignUp(ctx, "boss@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		rows := topuptest.SeedN(t, db, 40)
		want := map[string]int64{}
		for _, r := range rows {
			want[r.Status]++
		}
		page := admin.Get(routes.Admin)
		for _, st := range topupread.Statuses {
			if !strings.Contains(page.Body, fmt.Sprintf(`data-status="%s" data-count="%d">`, st, want[st])) {
				t.Errorf("dashboard: %s is not shown as exactly %d", st, want[st])
			}
		}
		if strings.Contains(page.Body, "data-estimate") || strings.Contains(page.Body, `data-testid="counts-estimated"`) {
			t.Error("dashboard marks an exact count as an estimate")
		}
		if strings.Contains(page.Body, `data-testid="admin-unresolved-all"`) {
			t.Error("every unresolved top-up is shown, yet a link to more") // 40 seeded, fewer unresolved than DashboardUnresolved
		}

		many := int64(topupread.TotalCap + 500)
		topuptest.SeedFailed(t, db, rows[0].UserID, rows[0].WalletID, many)
		failed := want["failed"] + many
		req, _ := http.NewRequest(http.MethodGet, app.URL+routes.Metrics, nil)
		req.Header.Set("Authorization", "Bearer "+apptest.MetricsToken)
		metrics := admin.Do(req).Body
		tots, err := topupread.New(db).Totals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tot := range tots {
			if got := apptest.MetricValue(t, metrics, `kifpool_topups{status="`+tot.Status+`"}`); got != float64(tot.N) {
				t.Errorf("metric of %s payments: %v, want the dashboard's %d", tot.Status, got, tot.N)
			}
		}
		for _, lang := range []struct{ code, phrase string }{{"fa", "تخمینی از آمار پایگاه داده"}, {"en", "is an estimate from the database"}} {
			admin.Get(routes.Admin + "?lang=" + lang.code)
			page := admin.Get(routes.Admin)
			if !strings.Contains(page.Body, `<html lang="`+lang.code+`"`) {
				t.Fatalf("dashboard not in %s", lang.code)
			}
			if db.Dialect == store.SQLite {
				if !strings.Contains(page.Body, fmt.Sprintf(`data-status="failed" data-count="%d">`, failed)) || strings.Contains(page.Body, "data-estimate") {
					t.Errorf("%s: SQLite does not show the %d failed payments exactly", lang.code, failed)
				}
				continue
			}
			est := tots[len(tots)-1]
			if est.Status != "failed" || !est.Estimate || est.N < failed*9/10 || est.N > failed*11/10 {
				t.Fatalf("failed total %+v, want an estimate near %d", est, failed)
			}
			shown := fmt.Sprintf(`data-status="failed" data-count="%d" data-estimate="true">`, est.N)
			if !strings.Contains(page.Body, shown) || !strings.Contains(page.Body, "≈") {
				t.Errorf("%s: the failed total is not shown as an estimate (%s)", lang.code, shown)
			}
			if !strings.Contains(page.Body, `data-testid="counts-estimated"`) || !strings.Contains(page.Body, lang.phrase) {
				t.Errorf("%s: no sentence saying the totals are estimates", lang.code)
			}
			for _, st := range topupread.Statuses[:4] { // the open statuses: still exact
				if !strings.Contains(page.Body, fmt.Sprintf(`data-status="%s" data-count="%d">`, st, want[st])) {
					t.Errorf("%s: %s is not shown as exactly %d", lang.code, st, want[st])
				}
			}
		}
	})
}

// unresolvedAll is the dashboard's link to every unresolved top-up.
var unresolvedAll = regexp.MustCompile(`<a href="([^"]*)" data-testid="admin-unresolved-all">([^<]*)</a>`)

// TestDashboardLinksToEveryUnresolved: the dashboard lists the oldest
// topupread.DashboardUnresolved unresolved top-ups; when there are more,
// it says so in both languages and links to the list of all of them,
// oldest first (with fewer, no link: TestDashboardTotals).
func TestDashboardLinksToEveryUnresolved(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Unchecked: "topuptest.SeedN writes top-ups without their events and ledger transactions"})
		admin := app.NewAdmin(t, "boss@example.com")
		// Statuses in turn: five of every seven unresolved, more than shown.
		rows := topuptest.SeedN(t, db, 2*topupread.DashboardUnresolved)
		open := 0
		for _, r := range rows {
			if r.Status != "credited" && r.Status != "failed" {
				open++
			}
		}
		if open <= topupread.DashboardUnresolved {
			t.Fatalf("only %d unresolved seeded", open)
		}
		for _, lang := range []struct{ code, phrase string }{{"fa", "همهٔ افزایش موجودی"}, {"en", "see every top-up without an outcome"}} {
			admin.Get(routes.Admin + "?lang=" + lang.code)
			page := admin.Get(routes.Admin)
			if n := strings.Count(page.Body, `data-testid="admin-payment"`); n != topupread.DashboardUnresolved {
				t.Fatalf("%s: %d rows shown, want %d", lang.code, n, topupread.DashboardUnresolved)
			}
			m := unresolvedAll.FindStringSubmatch(page.Body)
			if m == nil {
				t.Fatalf("%s: no link to every unresolved top-up", lang.code)
			}
			href, text := html.UnescapeString(m[1]), m[2]
			if !strings.HasPrefix(href, routes.AdminTopUps+"?") || !strings.Contains(href, "sort=oldest") || !strings.Contains(href, "status=needs_review") ||
				!strings.Contains(text, lang.phrase) {
				t.Errorf("%s: link %q %q", lang.code, href, text)
			}
			list := admin.Get(href)
			if list.Status != http.StatusOK {
				t.Fatalf("%s: the link answers %d", lang.code, list.Status)
			}
		}
	})
}
