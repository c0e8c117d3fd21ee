package admin_test

import (
	"context"
	"io"
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

// scrapedMetric is series' value in app's /metrics, scraped now.
func scrapedMetric(t *testing.T, app *apptest.App, series string) float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, app.URL+routes.Metrics, nil)
	req.Header.Set("Authorization", "Bearer "+apptest.MetricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return apptest.MetricValue(t, string(body), series)
}

// TestAwaitingAdminMetrics: what waits for an admin's decision, its money
// or account held meanwhile, is counted at every scrape by kind, with the
// time the oldest was made (0 when none), so that an alert can say it
// waits too long: withdrawals above the review amount, and bank accounts
// to verify; an approval takes one off. Card refunds under review are the
// third kind (none here; counted in cardrefund's own test).
func TestAwaitingAdminMetrics(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"METRICS_TOKEN": apptest.MetricsToken}, Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		app.NewAdmin(t, "boss@example.com")
		metric := func(series string) float64 { t.Helper(); return scrapedMetric(t, app, series) }
		for _, kind := range []string{"withdrawal", "bank_account", "card_refund"} {
			if n, at := metric(`kifpool_awaiting_admin{kind="`+kind+`"}`), metric(`kifpool_awaiting_admin_oldest_timestamp_seconds{kind="`+kind+`"}`); n != 0 || at != 0 {
				t.Fatalf("%s before anything: %v since %v, want 0 since 0", kind, n, at)
			}
		}
		payee := app.NewClient(t)
		payee.SignUp("payee@example.com")
		uid := authtest.UserID(t, db, "payee@example.com")
		withdrawaltest.FundUser(t, db, uid, 3_000_000_000)
		acct := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 62))
		withdrawaltest.PendingAccount(t, db, uid, withdrawaltest.Sheba("056", 63))
		var ws []withdrawal.Withdrawal
		for _, rials := range []int64{600_000_000, 700_000_000, 1_000_000} {
			r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: rials})
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, r.Withdrawal)
			clock.Advance(time.Minute)
		}
		if n := metric(`kifpool_awaiting_admin{kind="withdrawal"}`); n != 2 {
			t.Errorf("withdrawals awaiting an admin: %v, want the two above the review amount", n)
		}
		if at := metric(`kifpool_awaiting_admin_oldest_timestamp_seconds{kind="withdrawal"}`); at != float64(ws[0].CreatedAt.Unix()) {
			t.Errorf("the oldest withdrawal awaiting an admin made at %v, want %d", at, ws[0].CreatedAt.Unix())
		}
		if n, at := metric(`kifpool_awaiting_admin{kind="bank_account"}`), metric(`kifpool_awaiting_admin_oldest_timestamp_seconds{kind="bank_account"}`); n != 1 || at <= 0 {
			t.Errorf("bank accounts awaiting an admin: %v since %v, want 1", n, at)
		}
		admin := authtest.UserID(t, db, "boss@example.com")
		if _, err := app.Server.Withdrawals.Approve(ctx, admin, ws[0].PublicID, "called the payee"); err != nil {
			t.Fatal(err)
		}
		if n, at := metric(`kifpool_awaiting_admin{kind="withdrawal"}`), metric(`kifpool_awaiting_admin_oldest_timestamp_seconds{kind="withdrawal"}`); n != 1 || at != float64(ws[1].CreatedAt.Unix()) {
			t.Errorf("after an approval: %v since %v, want 1 since %d", n, at, ws[1].CreatedAt.Unix())
		}
	})
}
