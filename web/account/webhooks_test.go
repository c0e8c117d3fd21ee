package account_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// hookSecret is the signing secret a page shows once, after an endpoint
// is made, or "".
func hookSecret(body string) string {
	if s := apptest.Parse(body).TestID("webhook-secret").Text(); strings.HasPrefix(s, "whsec_") {
		return s
	}
	return ""
}

// /account/webhooks: an endpoint is added through the form (field url,
// checkboxes events) and its signing secret shown once; a private or
// plain-http URL is refused with a sentence; return origins are
// registered (field return_origin), canonical, once; the owner disables,
// enables again and deletes; another user cannot. Admins list every
// endpoint, read its delivery log (attempts, status, answer, latency,
// next try), send a delivery again and disable the endpoint, audited; an
// endpoint an admin disabled stays disabled for its owner.
func TestWebhooksPages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := topuptest.NewFrozenClock()
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}, Server: server.Options{Now: clk.Now}})
		if _, err := app.Server.Auth.SignUp(ctx, "boss@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		var answer atomic.Int32
		answer.Store(500)
		var got atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			got.Add(1)
			w.WriteHeader(int(answer.Load()))
		}))
		defer srv.Close()

		// The admin signs in first: the second factor's code is of real
		// time, which the app's clock leaves behind later.
		admin := app.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		owner := app.NewClient(t)
		owner.SignUp("partner@example.com")
		page := owner.Get(routes.Webhooks)
		if page.Status != http.StatusOK || !strings.Contains(page.Body, `name="url"`) || !strings.Contains(page.Body, `name="return_origin"`) ||
			strings.Count(page.Body, `name="events"`) != len(webhook.Types()) {
			t.Fatalf("page: %d", page.Status)
		}
		for _, bad := range []string{"https://10.1.2.3/hook", "http://partner.example/hook", "https://user:pw@partner.example/"} {
			r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"}, "url": {bad}, "events": {"topup.credited"}})
			if r.Status != http.StatusUnprocessableEntity || apptest.Parse(r.Body).TestID("webhook-error") == nil || hookSecret(r.Body) != "" {
				t.Fatalf("%s: %d", bad, r.Status)
			}
		}
		if r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"}, "url": {srv.URL}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("no events: %d", r.Status)
		}
		// A session alone (a borrowed or stolen one) adds no endpoint: the
		// password is asked again.
		for _, pw := range []string{"", "wrong password!"} {
			r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {pw}, "url": {srv.URL + "/hook"}, "events": {"topup.credited"}})
			if r.Status != http.StatusUnprocessableEntity || apptest.Parse(r.Body).TestID("webhook-error").Text() != i18n.T(i18n.FA, "webhooks.error_password") || hookSecret(r.Body) != "" {
				t.Fatalf("password %q: %d", pw, r.Status)
			}
		}
		if eps, err := app.Server.Webhooks.ForUser(ctx, userID(t, db, "partner@example.com")); err != nil || len(eps) != 0 {
			t.Fatalf("endpoints without the password: %d %v", len(eps), err)
		}
		r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"}, "url": {srv.URL + "/hook"}, "events": {"topup.credited", "topup.needs_review"}})
		secret := hookSecret(r.Body)
		// The key's own words, and no repository path for end users
		// (issue 29, item 11).
		if d := apptest.Parse(r.Body); d.TestID("copy-webhook-secret").Text() != i18n.T(i18n.FA, "webhooks.copy") ||
			d.TestID("webhook-verify-hint").Text() != i18n.T(i18n.FA, "webhooks.verify_hint") || strings.Contains(r.Body, "docs/") {
			t.Errorf("new key's card: copy button %q, hint %q", d.TestID("copy-webhook-secret").Text(), d.TestID("webhook-verify-hint").Text())
		}
		if r.Status != http.StatusOK || secret == "" || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("create: %d, secret shown: %v", r.Status, secret != "")
		}
		list := owner.Get(routes.Webhooks)
		if strings.Contains(list.Body, secret) || !strings.Contains(list.Body, srv.URL+"/hook") || len(apptest.Parse(list.Body).TestIDs("webhook-row")) != 1 {
			t.Fatalf("the list shows the secret again, or not the endpoint")
		}
		eps, err := app.Server.Webhooks.ForUser(ctx, userID(t, db, "partner@example.com"))
		if err != nil || len(eps) != 1 || strings.Join(eps[0].EventTypes(), ",") != "topup.credited,topup.needs_review" {
			t.Fatalf("stored %+v %v", eps, err)
		}
		for _, e := range app.Endpoints(t) {
			if strings.Contains(e.SecretEnc, secret) {
				t.Fatal("the signing secret is stored in the clear")
			}
		}
		id := eps[0].ID

		// Return origins: the password again (a session alone adds none).
		for _, pw := range []string{"", "not the password"} {
			r := owner.Submit(routes.Webhooks, routes.WebhookOrigins, url.Values{"return_origin": {"https://shop.example"}, "password": {pw}})
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `data-testid="origin-error"`) {
				t.Fatalf("origin with password %q: %d", pw, r.Status)
			}
			if apptest.Parse(owner.Get(routes.Webhooks).Body).TestID("origins-none") == nil {
				t.Fatalf("an origin added without the password")
			}
		}
		if r := owner.Submit(routes.Webhooks, routes.WebhookOrigins, url.Values{"return_origin": {"https://Shop.Example:443/"}, "password": {"correct horse battery"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("origin: %d", r.Status)
		}
		for _, bad := range []string{"https://shop.example", "https://shop.example/path", "ftp://x.example"} {
			if r := owner.Submit(routes.Webhooks, routes.WebhookOrigins, url.Values{"return_origin": {bad}, "password": {"correct horse battery"}}); r.Status != http.StatusUnprocessableEntity ||
				apptest.Parse(r.Body).TestID("origin-error") == nil {
				t.Fatalf("origin %s: %d", bad, r.Status)
			}
		}
		if !strings.Contains(owner.Get(routes.Webhooks).Body, ">https://shop.example<") {
			t.Fatal("origin not listed in canonical form")
		}

		// The owner disables it (no "enable again" while active) and enables
		// it again from the page.
		state := func(c *apptest.Client) *apptest.Element {
			t.Helper()
			return apptest.Parse(c.Get(routes.Webhooks).Body).TestID("webhook-row")
		}
		if apptest.Parse(owner.Get(routes.Webhooks).Body).Form(routes.WebhookEnable(id)) != nil {
			t.Fatal("an active endpoint offers to be enabled")
		}
		if r := owner.Submit(routes.Webhooks, routes.WebhookDisable(id), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("disable: %d", r.Status)
		}
		if row := state(owner); row.Attr("data-state") != "disabled" || row.Has("data-by-admin") {
			t.Fatalf("after the owner's disable: %q", row.Text())
		}
		// "Enable again" asks for the password first, as adding one does:
		// the button alone, or a wrong password, enables nothing.
		r = owner.Submit(routes.Webhooks, routes.WebhookEnable(id), nil)
		if doc := apptest.Parse(r.Body); r.Status != http.StatusOK || doc.TestID("webhook-enable-form") == nil ||
			!strings.Contains(doc.TestID("webhook-enable-card").Text(), srv.URL+"/hook") {
			t.Fatalf("enable's button: %d, want the password's form", r.Status)
		}
		if row := state(owner); row.Attr("data-state") != "disabled" {
			t.Fatalf("after enable's button alone: %q", row.Text())
		}
		csrf := apptest.Input(r.Body, "_csrf")
		if r := owner.Post(routes.WebhookEnable(id), url.Values{"_csrf": {csrf}, "confirm": {"1"}, "password": {""}}); r.Status != http.StatusUnprocessableEntity ||
			apptest.Parse(r.Body).TestID("webhook-enable-error") == nil {
			t.Fatalf("enable with no password: %d", r.Status)
		}
		if r := owner.Post(routes.WebhookEnable(id), url.Values{"_csrf": {csrf}, "confirm": {"1"}, "password": {"wrong horse battery"}}); r.Status != http.StatusUnprocessableEntity ||
			apptest.Parse(r.Body).TestID("webhook-enable-error") == nil {
			t.Fatalf("enable with a wrong password: %d", r.Status)
		}
		if row := state(owner); row.Attr("data-state") != "disabled" {
			t.Fatalf("after a wrong password: %q", row.Text())
		}
		if r := owner.Post(routes.WebhookEnable(id), url.Values{"_csrf": {csrf}, "confirm": {"1"}, "password": {"correct horse battery"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("enable: %d", r.Status)
		}
		if row := state(owner); row.Attr("data-state") != "active" {
			t.Fatalf("after enable: %q", row.Text())
		}

		// Two credits through the site queue their events. The first
		// delivery fails and gives up at once (a retry window of 1 ms), to
		// see in the admin's log; the second fails once and waits for its
		// next try.
		pay := func() string {
			t.Helper()
			csrf, token := owner.TopUpForm()
			start := owner.PostTopUp(csrf, token, "50000")
			back, err := app.Server.Bank.Pay(apptest.Authority(start.Location))
			if err != nil {
				t.Fatal(err)
			}
			if r := owner.Get(back); apptest.TopUpStatus(r.Body) != "credited" {
				t.Fatalf("return: %d %s", r.Status, apptest.TopUpStatus(r.Body))
			}
			payID := topuptest.Last(t, db).PublicID
			return payID
		}
		payID := pay()
		clk.Advance(time.Second) // past the window of 1 ms
		if n, err := webhook.NewSender(app.Server.Webhooks, webhook.SenderOptions{RetryFor: time.Millisecond}).DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("deliver: %d %v", n, err)
		}
		if row := state(owner); row.Attr("data-state") != "failing" || apptest.Parse(owner.Get(routes.Webhooks).Body).Form(routes.WebhookEnable(id)) == nil {
			t.Fatalf("the owner's failing endpoint: %q, enable offered: false", row.Text())
		}
		clk.Advance(time.Minute)
		pendingID := pay()
		if n, err := webhook.NewSender(app.Server.Webhooks, webhook.SenderOptions{Jitter: func() float64 { return 0 }, BaseBackoff: 4 * time.Hour}).DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("deliver the second: %d %v", n, err)
		}

		// Another user can neither disable, enable nor delete it.
		other := app.NewClient(t)
		other.SignUp("other@example.com")
		for _, action := range []string{routes.WebhookDisable(id), routes.WebhookEnable(id), routes.WebhookDelete(id)} {
			if r := other.Forge(routes.Webhooks, action, nil); r.Status != http.StatusNotFound {
				t.Fatalf("foreign %s: %d", action, r.Status)
			}
		}
		if r := other.Get(routes.AdminWebhooks); r.Status != http.StatusNotFound {
			t.Fatalf("admin page for a user: %d", r.Status)
		}

		al := admin.Get(routes.AdminWebhooks)
		if al.Status != http.StatusOK || !strings.Contains(al.Body, "partner@example.com") || !strings.Contains(al.Body, `data-state="failing"`) || strings.Contains(al.Body, secret) {
			t.Fatalf("admin list: %d", al.Status)
		}
		// The log: one row per delivery, newest first, with its status,
		// attempts, last answer, latency and (while pending) next try.
		log := admin.GetIn("en", routes.AdminWebhook(id))
		rows, err := app.Server.Webhooks.Deliveries(ctx, id, 500) // the one endpoint's: every delivery
		if err != nil {
			t.Fatal(err)
		}
		doc := apptest.Parse(log.Body)
		shown := doc.TestIDs("delivery-row")
		if log.Status != http.StatusOK || len(rows) != 2 || len(shown) != 2 {
			t.Fatalf("delivery log: %d, %d rows shown of %d", log.Status, len(shown), len(rows))
		}
		answers, latencies := doc.TestIDs("delivery-answer"), doc.TestIDs("delivery-latency")
		for i, d := range rows {
			row := shown[i]
			text := row.Text()
			want := []string{d.EventID, payID}
			if i == 0 {
				want[1] = pendingID
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("log row %d does not show %q: %q", i, w, text)
				}
			}
			if row.Attr("data-status") != d.Status || row.Attr("data-delivery-id") != itoa64(d.ID) || d.Attempts != 1 ||
				!strings.HasPrefix(answers[i].Text(), "500 HTTP 500") || latencies[i].Text() != strconv.FormatInt(*d.LastLatencyMS, 10) {
				t.Errorf("log row %d: %q %q, answer %q, latency %q; stored %+v", i, row.Attr("data-status"), row.Attr("data-delivery-id"),
					answers[i].Text(), latencies[i].Text(), d)
			}
		}
		// The next try, of the pending one only, as a time to come.
		if next := doc.TestIDs("delivery-next"); len(next) != 1 || next[0].Text() != i18n.Until("en", rows[0].NextAttemptAt, clk.Now()) ||
			next[0].Text() != "in 2 h" {
			t.Fatalf("next try shown: %d", len(next))
		}
		if rows[0].Status != webhook.StatusPending || rows[1].Status != webhook.StatusFailed {
			t.Fatalf("statuses %s, %s", rows[0].Status, rows[1].Status)
		}
		// The queue's oldest waiting event, in words and the page's digits,
		// never Go's duration text (issue 29, item 18).
		if q := apptest.Parse(admin.GetIn("fa", routes.AdminWebhooks).Body).TestID("webhook-queue").Text(); !strings.Contains(q, i18n.T(i18n.FA, "time.just_now")) ||
			strings.ContainsAny(q, "0123456789") {
			t.Errorf("queue line %q", q)
		}
		if a := doc.TestIDs("delivery-attempts"); len(a) != 2 || a[0].Text() != "1" || a[1].Text() != "1" {
			t.Fatalf("attempts shown: %d", len(a))
		}
		// Send again: only the one that gave up is offered it.
		if f := doc.Form(routes.AdminDeliveryResend(rows[0].ID)); f != nil {
			t.Fatal("a pending delivery offers to be sent again")
		}
		answer.Store(200)
		if r := admin.Submit(routes.AdminWebhook(id), routes.AdminDeliveryResend(rows[1].ID), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("resend: %d", r.Status)
		}
		if n, _ := webhook.NewSender(app.Server.Webhooks, webhook.SenderOptions{}).DeliverDue(ctx); n != 1 || got.Load() != 3 {
			t.Fatalf("resent delivery: claimed %d, receiver saw %d", n, got.Load())
		}
		if row := apptest.Parse(admin.Get(routes.AdminWebhook(id)).Body).TestIDs("delivery-row"); len(row) != 2 || row[1].Attr("data-status") != "delivered" {
			t.Fatal("log does not show the delivery")
		}

		// A page read before the disable below still offers to send the
		// delivered one again.
		stale := apptest.Parse(admin.Get(routes.AdminWebhook(id)).Body).Form(routes.AdminDeliveryResend(rows[1].ID))
		if stale == nil {
			t.Fatal("a delivered delivery is not offered to be sent again")
		}
		// An admin's disable: the owner sees who, is not offered to enable
		// it and cannot (409, nothing changed).
		if r := admin.Submit(routes.AdminWebhook(id), routes.AdminWebhookDisable(id), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("admin disable: %d", r.Status)
		}
		if n := app.CountAudit(t, "webhook_disable", "webhook_resend"); n != 2 {
			t.Fatalf("%d audit rows", n)
		}
		// Sent again from that page: refused, saying the endpoint is
		// disabled (not "still queued"), nothing queued or audited.
		if r := admin.Post(routes.AdminDeliveryResend(rows[1].ID), stale.Hidden()); r.Location != routes.AdminWebhook(id)+"?done=endpoint_disabled" {
			t.Fatalf("resend to a disabled endpoint: %d %q", r.Status, r.Location)
		}
		if n := app.CountAudit(t, "webhook_resend"); n != 1 {
			t.Fatalf("%d resends audited after a refused one, want 1", n)
		}
		// The waiting delivery ended with the endpoint: said in the page's
		// language, not as the stored English.
		var ended []string
		for _, e := range apptest.Parse(admin.GetIn("fa", routes.AdminWebhook(id)).Body).TestIDs("delivery-error") {
			ended = append(ended, e.Text())
		}
		if !slices.Contains(ended, i18n.T(i18n.FA, "webhooks.error_disabled")) || slices.Contains(ended, webhook.LastErrorEndpointDisabled) {
			t.Errorf("delivery errors %q", ended)
		}
		ownPage := owner.GetIn("en", routes.Webhooks)
		odoc := apptest.Parse(ownPage.Body)
		if row := odoc.TestID("webhook-row"); row.Attr("data-state") != "disabled" || !row.Has("data-by-admin") ||
			!strings.Contains(odoc.TestID("webhook-state").Text(), "administrator") || odoc.Form(routes.WebhookEnable(id)) != nil {
			t.Fatalf("the owner's view of an admin's disable: %q", row.Text())
		}
		if r := owner.Forge(routes.Webhooks, routes.WebhookEnable(id), nil); r.Status != http.StatusConflict ||
			apptest.Parse(r.Body).TestID("webhooks-list-error") == nil {
			t.Fatalf("the owner's enable of an admin's disable: %d", r.Status)
		}
		if e, _ := app.Server.Webhooks.Get(ctx, id); e.DisabledAt == nil {
			t.Fatal("enabled by its owner after an admin's disable")
		}
		// An admin enables it again (audited); then it is the owner's.
		if r := admin.Submit(routes.AdminWebhooks, routes.AdminWebhookEnable(id), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("admin enable: %d", r.Status)
		}
		if row := state(owner); row.Attr("data-state") != "active" || row.Has("data-by-admin") {
			t.Fatalf("after the admin's enable: %q", row.Text())
		}
		if n := app.CountAudit(t, "webhook_enable"); n != 1 {
			t.Fatalf("%d audit rows of the enable", n)
		}
		// The owner's own disable is not the admin's to undo.
		if r := owner.Submit(routes.Webhooks, routes.WebhookDisable(id), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("disable: %d", r.Status)
		}
		if apptest.Parse(admin.Get(routes.AdminWebhooks).Body).Form(routes.AdminWebhookEnable(id)) != nil {
			t.Fatal("the admin is offered to enable the owner's disable")
		}
		if r := admin.Forge(routes.AdminWebhooks, routes.AdminWebhookEnable(id), nil); r.Status != http.StatusSeeOther ||
			!strings.HasSuffix(r.Location, "done=owner") {
			t.Fatalf("admin enable of the owner's disable: %d %s", r.Status, r.Location)
		}
		if e, _ := app.Server.Webhooks.Get(ctx, id); e.DisabledAt == nil {
			t.Fatal("enabled by an admin over its owner's disable")
		}
		if r := owner.Submit(routes.Webhooks, routes.WebhookDelete(id), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("delete: %d", r.Status)
		}
		if n := int64(len(app.Endpoints(t))); n != 0 {
			t.Fatalf("%d endpoints after delete", n)
		}
	})
}

// /metrics shows the outbox: queue depth and the age of the oldest
// undelivered event while a credit's event waits, attempts by result and
// their durations, then the give-up, the failed deliveries and the
// failing endpoint once the retry window has passed.
func TestWebhookMetrics(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := topuptest.NewFrozenClock()
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1", "METRICS_TOKEN": apptest.MetricsToken},
			Server: server.Options{Now: clk.Now}})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusInternalServerError)
		}))
		defer srv.Close()
		user, payURL := app.StartTopUp(t, "metrics-hooks@example.com", "20000")
		if _, _, err := app.Server.Webhooks.Create(ctx, userID(t, db, "metrics-hooks@example.com"), srv.URL, webhook.Types(), nil); err != nil {
			t.Fatal(err)
		}
		back, err := app.Server.Bank.Pay(apptest.Authority(payURL))
		if err != nil {
			t.Fatal(err)
		}
		if r := user.Get(back); apptest.TopUpStatus(r.Body) != "credited" {
			t.Fatalf("pay: %q", apptest.TopUpStatus(r.Body))
		}
		scrape := func(want map[string]float64) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, app.URL+routes.Metrics, nil)
			req.Header.Set("Authorization", "Bearer "+apptest.MetricsToken)
			m := user.Do(req)
			if m.Status != http.StatusOK {
				t.Fatalf("metrics: %d", m.Status)
			}
			for series, v := range want {
				if got := apptest.MetricValue(t, m.Body, series); got != v {
					t.Errorf("%s = %v, want %v", series, got, v)
				}
			}
		}
		clk.Advance(90 * time.Second)
		scrape(map[string]float64{
			"kifpool_webhook_queue_depth":                     1,
			"kifpool_webhook_oldest_pending_age_seconds":      90,
			"kifpool_webhook_failed_deliveries":               0,
			"kifpool_webhook_failing_endpoints":               0,
			`kifpool_webhook_attempts_total{result="failed"}`: 0, // born at 0 (increase() sees the first)
			"kifpool_webhook_attempt_duration_seconds_count":  0,
			"kifpool_webhook_gave_up_total":                   0,
		})
		// The instance's own sender (its observer is the metrics).
		if n, err := app.Server.Hooks.DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("deliver: %d %v", n, err)
		}
		clk.Advance(30 * time.Second)
		scrape(map[string]float64{
			"kifpool_webhook_queue_depth":                     1,
			"kifpool_webhook_oldest_pending_age_seconds":      120,
			`kifpool_webhook_attempts_total{result="failed"}`: 1,
			"kifpool_webhook_attempt_duration_seconds_count":  1,
			"kifpool_webhook_gave_up_total":                   0,
		})
		// Past the retry window (72 h): the next attempt gives up.
		clk.Advance(webhook.DefaultRetryFor)
		if n, err := app.Server.Hooks.DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("deliver after the window: %d %v", n, err)
		}
		scrape(map[string]float64{
			"kifpool_webhook_queue_depth":                     0,
			"kifpool_webhook_oldest_pending_age_seconds":      0,
			"kifpool_webhook_failed_deliveries":               1,
			"kifpool_webhook_failing_endpoints":               1,
			`kifpool_webhook_attempts_total{result="failed"}`: 2,
			"kifpool_webhook_attempt_duration_seconds_count":  2,
			"kifpool_webhook_gave_up_total":                   1,
		})
	})
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func userID(t *testing.T, db *store.DB, email string) int64 {
	t.Helper()
	return authtest.UserID(t, db, email)
}
