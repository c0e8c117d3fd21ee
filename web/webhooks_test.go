package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
)

var hookSecretRE = regexp.MustCompile(`data-testid="webhook-secret">(whsec_[A-Za-z0-9_-]+)<`)

// /account/webhooks: an endpoint is added through the form (field url,
// checkboxes events) and its signing secret shown once; a private or
// plain-http URL is refused with a sentence; return origins are
// registered (field return_origin), canonical, once; the owner disables
// and deletes; another user cannot. Admins list every endpoint, read its
// delivery log (attempts, status, latency, next try), send a delivery
// again and disable the endpoint, audited.
func TestWebhooksPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
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

		owner := app.NewClient(t)
		owner.SignUp("partner@example.com")
		page := owner.Get("/account/webhooks")
		if page.Status != http.StatusOK || !strings.Contains(page.Body, `name="url"`) || !strings.Contains(page.Body, `name="return_origin"`) ||
			strings.Count(page.Body, `name="events"`) != 3 {
			t.Fatalf("page: %d", page.Status)
		}
		for _, bad := range []string{"https://10.1.2.3/hook", "http://partner.example/hook", "https://user:pw@partner.example/"} {
			r := owner.Submit("/account/webhooks", "/account/webhooks", url.Values{"url": {bad}, "events": {"topup.credited"}})
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `data-testid="webhook-error"`) || hookSecretRE.MatchString(r.Body) {
				t.Fatalf("%s: %d", bad, r.Status)
			}
		}
		if r := owner.Submit("/account/webhooks", "/account/webhooks", url.Values{"url": {srv.URL}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("no events: %d", r.Status)
		}
		r := owner.Submit("/account/webhooks", "/account/webhooks", url.Values{"url": {srv.URL + "/hook"}, "events": {"topup.credited", "topup.needs_review"}})
		m := hookSecretRE.FindStringSubmatch(r.Body)
		if r.Status != http.StatusOK || m == nil || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("create: %d, secret shown: %v", r.Status, m != nil)
		}
		secret := m[1]
		list := owner.Get("/account/webhooks")
		if strings.Contains(list.Body, secret) || !strings.Contains(list.Body, srv.URL+"/hook") || strings.Count(list.Body, `data-testid="webhook-row"`) != 1 {
			t.Fatalf("the list shows the secret again, or not the endpoint")
		}
		eps, err := app.Server.Webhooks.ForUser(ctx, userID(t, db, "partner@example.com"))
		if err != nil || len(eps) != 1 || strings.Join(eps[0].EventTypes(), ",") != "topup.credited,topup.needs_review" {
			t.Fatalf("stored %+v %v", eps, err)
		}
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_endpoints WHERE secret_enc LIKE ?`, "%"+secret+"%"); n != 0 {
			t.Fatal("the signing secret is stored in the clear")
		}

		// Return origins.
		if r := owner.Submit("/account/webhooks", "/account/webhooks/origins", url.Values{"return_origin": {"https://Shop.Example:443/"}}); r.Status != http.StatusSeeOther {
			t.Fatalf("origin: %d", r.Status)
		}
		for _, bad := range []string{"https://shop.example", "https://shop.example/path", "ftp://x.example"} {
			if r := owner.Submit("/account/webhooks", "/account/webhooks/origins", url.Values{"return_origin": {bad}}); r.Status != http.StatusUnprocessableEntity ||
				!strings.Contains(r.Body, `data-testid="origin-error"`) {
				t.Fatalf("origin %s: %d", bad, r.Status)
			}
		}
		if !strings.Contains(owner.Get("/account/webhooks").Body, ">https://shop.example<") {
			t.Fatal("origin not listed in canonical form")
		}

		// A credit through the site queues its event; its delivery fails and
		// gives up at once (a retry window of 1 ms), to see in the admin's log.
		csrf, token := owner.TopUpForm()
		start := owner.PostTopUp(csrf, token, "50000")
		back, err := app.Server.Bank.Pay(apptest.Authority(start.Location))
		if err != nil {
			t.Fatal(err)
		}
		if r := owner.Get(back); apptest.PaymentStatus(r.Body) != "credited" {
			t.Fatalf("return: %d %s", r.Status, apptest.PaymentStatus(r.Body))
		}
		var payID string
		db.Gorm.Raw(`SELECT public_id FROM payments`).Scan(&payID)
		s := webhook.NewSender(app.Server.Webhooks, webhook.SenderOptions{RetryFor: time.Millisecond})
		if n, err := s.DeliverDue(ctx); n != 1 || err != nil {
			t.Fatalf("deliver: %d %v", n, err)
		}

		// Another user can neither disable nor delete it.
		other := app.NewClient(t)
		other.SignUp("other@example.com")
		id := eps[0].ID
		for _, action := range []string{"disable", "delete"} {
			csrf := apptest.Input(other.Get("/account/webhooks").Body, "_csrf")
			if r := other.Post("/account/webhooks/"+itoa64(id)+"/"+action, url.Values{"_csrf": {csrf}}); r.Status != http.StatusNotFound {
				t.Fatalf("foreign %s: %d", action, r.Status)
			}
		}
		if r := other.Get("/admin/webhooks"); r.Status != http.StatusNotFound {
			t.Fatalf("admin page for a user: %d", r.Status)
		}

		admin := app.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		al := admin.Get("/admin/webhooks")
		if al.Status != http.StatusOK || !strings.Contains(al.Body, "partner@example.com") || !strings.Contains(al.Body, `data-state="failing"`) || strings.Contains(al.Body, secret) {
			t.Fatalf("admin list: %d", al.Status)
		}
		log := admin.Get("/admin/webhooks/" + itoa64(id))
		if log.Status != http.StatusOK || !strings.Contains(log.Body, `data-status="failed"`) || !strings.Contains(log.Body, ">500 ") ||
			!strings.Contains(log.Body, payID) || !strings.Contains(log.Body, `data-testid="delivery-resend"`) {
			t.Fatalf("delivery log: %d\n%s", log.Status, log.Body)
		}
		var did int64
		db.Gorm.Raw(`SELECT id FROM webhook_deliveries`).Scan(&did)
		answer.Store(200)
		if r := admin.Post("/admin/webhooks/deliveries/"+itoa64(did)+"/resend", url.Values{"_csrf": {apptest.Input(log.Body, "_csrf")}}); r.Status != http.StatusSeeOther {
			t.Fatalf("resend: %d", r.Status)
		}
		s = webhook.NewSender(app.Server.Webhooks, webhook.SenderOptions{})
		if n, _ := s.DeliverDue(ctx); n != 1 || got.Load() != 2 {
			t.Fatalf("resent delivery: claimed %d, receiver saw %d", n, got.Load())
		}
		if !strings.Contains(admin.Get("/admin/webhooks/"+itoa64(id)).Body, `data-status="delivered"`) {
			t.Fatal("log does not show the delivery")
		}
		if r := admin.Post("/admin/webhooks/"+itoa64(id)+"/disable", url.Values{"_csrf": {apptest.Input(log.Body, "_csrf")}}); r.Status != http.StatusSeeOther {
			t.Fatalf("admin disable: %d", r.Status)
		}
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM admin_actions WHERE action IN ('webhook_disable', 'webhook_resend')`); n != 2 {
			t.Fatalf("%d audit rows", n)
		}
		if !strings.Contains(owner.Get("/account/webhooks").Body, `data-state="disabled"`) {
			t.Fatal("the owner does not see it disabled")
		}
		if r := owner.Submit("/account/webhooks", "/account/webhooks/"+itoa64(id)+"/delete", nil); r.Status != http.StatusSeeOther {
			t.Fatalf("delete: %d", r.Status)
		}
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_endpoints`); n != 0 {
			t.Fatalf("%d endpoints after delete", n)
		}
	})
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func userID(t *testing.T, db *store.DB, email string) int64 {
	t.Helper()
	var id int64
	if err := db.Gorm.Raw(`SELECT id FROM users WHERE email = ?`, email).Scan(&id).Error; err != nil || id == 0 {
		t.Fatalf("user %s: %v", email, err)
	}
	return id
}
