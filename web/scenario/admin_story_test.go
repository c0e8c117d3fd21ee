package scenario_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

var (
	timelineEventRE = regexp.MustCompile(`data-testid="timeline-event" data-from="([a-z_]*)" data-to="([a-z_]+)" data-actor="([a-z]+)"`)
	gatewayCallRE   = regexp.MustCompile(`data-testid="gateway-call" data-operation="([a-z_]+)" data-outcome="([a-z_]+)"`)
)

// TestTopUpStoryAfterFaultsAndAskTheBankNow: a payer pays, the bank's
// verify fails (503) on their return, so the payment waits; then the bank
// recovers and an admin presses "ask the bank now" twice at once. The
// payment is credited once, and its page tells the whole story: the status
// changes with their actors, every gateway call (the failed verifies
// included), the ledger entry, the user's balance, the admin's actions.
func TestTopUpStoryAfterFaultsAndAskTheBankNow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank, bankURL := rsBank(t)
		app := rsApp(t, db, bankURL, map[string]string{"WORKER_INTERVAL": "off"}, apptest.Options{})
		user := app.NewClient(t)
		user.SignUp("payer@example.com")
		authority, id := rsTopUp(t, db, user, bankURL, "50000")
		back, err := bank.Pay(authority)
		if err != nil {
			t.Fatal(err)
		}
		rsSetFaults(t, bank, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"verify": {ErrorRate: 1}}})
		if r := user.Get(back); apptest.TopUpStatus(r.Body) != "pending_verification" {
			t.Fatalf("return while the bank fails: %q", apptest.TopUpStatus(r.Body))
		}
		bank.ClearFaults()

		admin := app.NewAdmin(t, "boss@example.com")
		page := admin.Get(routes.AdminTopUp(id))
		if page.Status != http.StatusOK || !strings.Contains(page.Body, `data-testid="admin-recheck"`) {
			t.Fatalf("payment page: %d, no 'ask the bank now'", page.Status)
		}
		if strings.Contains(page.Body, `data-testid="admin-close"`) {
			t.Fatal("'close as failed' offered for a payment not under review")
		}
		csrf := apptest.Input(page.Body, "_csrf")
		var wg sync.WaitGroup
		results := make([]apptest.Response, 2)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = admin.Post(routes.AdminTopUpRecheck(id), url.Values{"_csrf": {csrf}, "back": {"payment"}})
			}()
		}
		wg.Wait()
		for i, r := range results {
			if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.AdminTopUp(id)+"?done=") {
				t.Errorf("press %d: %d %q", i, r.Status, r.Location)
			}
		}
		// Credited once, whatever the two presses saw.
		rsAssertCreditedOnce(t, db, bank, id)
		if b := user.Balance(); b != 500_000 {
			t.Fatalf("balance %d, want 500000", b)
		}
		// Pressed again after the credit: nothing to ask, nothing changes.
		if r := admin.Post(routes.AdminTopUpRecheck(id), url.Values{"_csrf": {csrf}, "back": {"payment"}}); !strings.HasSuffix(r.Location, "done=error_nothing_to_ask") {
			t.Errorf("press after the credit: %q", r.Location)
		}
		if b := user.Balance(); b != 500_000 {
			t.Fatalf("balance %d after a third press", b)
		}

		for _, lang := range []string{"en", "fa"} {
			admin.Get(routes.Admin + "?lang=" + lang)
			story := admin.Get(routes.AdminTopUp(id))
			if !strings.Contains(story.Body, `data-testid="timeline"`) {
				t.Fatalf("%s: no timeline", lang)
			}
			var changes []string
			for _, m := range timelineEventRE.FindAllStringSubmatch(story.Body, -1) {
				changes = append(changes, m[1]+">"+m[2]+"/"+m[3])
			}
			joined := strings.Join(changes, " ")
			for _, want := range []string{">awaiting_payment/submit", "awaiting_payment>pending_verification/callback", "pending_verification>credited/admin"} {
				if !strings.Contains(joined, want) {
					t.Errorf("%s: timeline %v lacks %s", lang, changes, want)
				}
			}
			if !strings.HasSuffix(joined, ">credited/admin") {
				t.Errorf("%s: timeline does not end with the admin's credit: %v", lang, changes)
			}
			// Every recorded call is listed: the request, the failed verify
			// attempts, the verify that paid.
			calls := gatewayCallRE.FindAllStringSubmatch(story.Body, -1)
			want := topuptest.CountCallsOf(t, db, topuptest.ByPublicID(t, db, id).ID, "")
			if int64(len(calls)) != want {
				t.Errorf("%s: %d calls shown, %d recorded", lang, len(calls), want)
			}
			var failed, paid bool
			for _, c := range calls {
				failed = failed || (c[1] == "verify" && c[2] == "transient")
				paid = paid || (c[1] == "verify" && c[2] == "paid")
			}
			if !failed || !paid || calls[0][1] != "request" {
				t.Errorf("%s: calls %v", lang, calls)
			}
			for _, hook := range []string{`data-testid="ledger-entry" data-rials="500000"`, `data-testid="user-balance" data-rials="500000"`,
				`data-testid="audit-row" data-action="recheck" data-result="done"`, `data-testid="user-payment" data-public-id="` + id + `"`} {
				if !strings.Contains(story.Body, hook) {
					t.Errorf("%s: page lacks %s", lang, hook)
				}
			}
			// Reasons in words, not codes.
			if strings.Contains(story.Body, "verify_unknown") || strings.Contains(story.Body, "verified_paid") {
				t.Errorf("%s: a reason code shown as is", lang)
			}
		}
		// The user's pages: found by part of the address; wallet, ledger, payments.
		userID := authtest.UserID(t, db, "payer@example.com")
		if r := admin.Get(routes.AdminUsers + "?q=PAYER@"); strings.Count(r.Body, `data-testid="user-row"`) != 1 || !strings.Contains(r.Body, `data-user-id="`+strconv.FormatInt(userID, 10)+`"`) {
			t.Errorf("user search: %d rows", strings.Count(r.Body, `data-testid="user-row"`))
		}
		if r := admin.Get(routes.AdminUsers + "?q=nobody"); !strings.Contains(r.Body, `data-testid="no-users"`) {
			t.Error("user search finds someone for 'nobody'")
		}
		up := admin.Get(routes.AdminUser(userID))
		if !strings.Contains(up.Body, `data-testid="user-balance" data-rials="500000"`) || strings.Count(up.Body, `data-testid="ledger-row"`) != 1 ||
			!strings.Contains(up.Body, `data-public-id="`+id+`"`) {
			t.Errorf("user page lacks the wallet, ledger or payment")
		}
		// The audit log, filtered by payment and by admin.
		byTopUp := admin.Get(routes.AdminAudit + "?payment=" + id)
		if n := strings.Count(byTopUp.Body, `data-testid="audit-row"`); int64(n) != app.CountAudit(t) || n < 1 {
			t.Errorf("audit of the payment: %d rows", n)
		}
		if r := admin.Get(routes.AdminAudit + "?admin=BOSS@example.com"); strings.Count(r.Body, `data-testid="audit-row"`) != strings.Count(byTopUp.Body, `data-testid="audit-row"`) {
			t.Error("audit by admin differs")
		}
		if r := admin.Get(routes.AdminAudit + "?admin=other@example.com"); strings.Contains(r.Body, `data-testid="audit-row"`) {
			t.Error("audit of another admin shows rows")
		}
		if p := rsRow(t, db, id); p.Status != topup.StatusCredited {
			t.Fatalf("status %s", p.Status)
		}
		apptest.CheckInvariants(t, db)
	})
}

var topupsHourRE = regexp.MustCompile(`data-testid="topups-hour" data-total="(\d+)" data-credited="(\d+)"`)

// TestDashboardCharts: after one credited top-up and one left at the bank,
// the dashboard's charts and tables count them, list the bank's latency
// per operation and the worker's backlog.
func TestDashboardCharts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		user, payURL := app.StartTopUp(t, "chart@example.com", "20000")
		back, err := app.Server.Bank.Pay(apptest.Authority(payURL))
		if err != nil {
			t.Fatal(err)
		}
		if r := user.Get(back + "&Status=OK"); apptest.TopUpStatus(r.Body) != "credited" {
			t.Fatalf("flow: %q", apptest.TopUpStatus(r.Body))
		}
		csrf, token := user.TopUpForm()
		user.PostTopUp(csrf, token, "30000") // left at the bank
		admin := app.NewAdmin(t, "boss@example.com")
		for _, lang := range []string{"fa", "en"} {
			admin.Get(routes.Admin + "?lang=" + lang)
			page := admin.Get(routes.Admin)
			for _, hook := range []string{`data-testid="chart-topups"`, `data-testid="chart-latency"`, `<svg`, `role="img"`,
				`data-testid="latency-row" data-operation="request"`, `data-testid="latency-row" data-operation="verify"`, `data-testid="worker-backlog"`,
				`data-testid="admin-reconcile"`, `data-testid="topups-fresh"`, `data-testid="latency-fresh"`} {
				if !strings.Contains(page.Body, hook) {
					t.Errorf("%s: dashboard lacks %s", lang, hook)
				}
			}
			hours := topupsHourRE.FindAllStringSubmatch(page.Body, -1)
			var total, credited int
			for _, h := range hours {
				total += atoi(h[1])
				credited += atoi(h[2])
			}
			if len(hours) != 24 || total != 2 || credited != 1 {
				t.Errorf("%s: %d hours, %d top-ups, %d credited", lang, len(hours), total, credited)
			}
		}
	})
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
