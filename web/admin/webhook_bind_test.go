package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Issue 31, item 8: an admin's disable binds the endpoint's URL for its
// owner until an admin lifts it. The owner can neither delete the
// disabled endpoint nor add the same URL again (409, the page says why,
// nothing changes); another URL is theirs to add. Once an admin enables
// it again, the owner deletes it and may add the URL anew.
func TestAdminDisableBindsTheURL(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
		admin, err := app.Server.Auth.SignUp(ctx, "boss@example.com", "correct horse battery", "admin", "en")
		if err != nil {
			t.Fatal(err)
		}
		owner := app.NewClient(t)
		owner.SignUp("partner@example.com")
		uid := authtest.UserID(t, db, "partner@example.com")
		const hookURL = "https://hooks.example/kifpool"
		ep, _, err := app.Server.Webhooks.Create(ctx, uid, hookURL, []string{webhook.TypeCredited}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.Webhooks.AdminDisable(ctx, admin.ID, ep.ID); err != nil {
			t.Fatal(err)
		}
		endpoints := func() int64 {
			var n int64
			for _, e := range app.Endpoints(t) {
				if e.UserID == uid {
					n++
				}
			}
			return n
		}

		if apptest.Parse(owner.Get(routes.Webhooks).Body).Form(routes.WebhookDelete(ep.ID)) != nil {
			t.Fatal("the owner is offered to delete an endpoint an admin disabled")
		}
		if r := owner.Forge(routes.Webhooks, routes.WebhookDelete(ep.ID), nil); r.Status != http.StatusConflict ||
			apptest.Parse(r.Body).TestID("webhooks-list-error") == nil {
			t.Fatalf("the owner's delete of an admin's disable: %d", r.Status)
		}
		for _, again := range []string{hookURL, "https://HOOKS.example:443/kifpool", "https://hooks.example:0443/kifpool",
			"https://hooks.example/%6bifpool", "https://hooks.example/kifpool#x"} {
			r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"}, "url": {again}, "events": {webhook.TypeCredited}})
			if r.Status != http.StatusConflict || apptest.Parse(r.Body).TestID("new-secret") != nil {
				t.Fatalf("the owner adds %s again after an admin's disable: %d", again, r.Status)
			}
		}
		if n := endpoints(); n != 1 {
			t.Fatalf("%d endpoints, want the disabled one only", n)
		}
		if e, err := app.Server.Webhooks.Get(ctx, ep.ID); err != nil || !e.DisabledByAdmin() {
			t.Fatalf("the admin's disable was undone: %+v %v", e, err)
		}
		// Another URL is the owner's to add.
		if r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"}, "url": {"https://other.example/kifpool"}, "events": {webhook.TypeCredited}}); r.Status != http.StatusOK {
			t.Fatalf("another URL: %d", r.Status)
		}
		// An admin lifts it: the owner deletes it and may add it anew.
		if _, err := app.Server.Webhooks.AdminEnable(ctx, admin.ID, ep.ID); err != nil {
			t.Fatal(err)
		}
		if r := owner.Forge(routes.Webhooks, routes.WebhookDelete(ep.ID), nil); r.Status != http.StatusSeeOther {
			t.Fatalf("delete after the admin's enable: %d", r.Status)
		}
		if r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"}, "url": {hookURL}, "events": {webhook.TypeCredited}}); r.Status != http.StatusOK {
			t.Fatalf("the URL again after the admin's enable: %d", r.Status)
		}
	})
}
