package account_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// /account/webhooks/{id}/rotate of an endpoint an administrator disabled:
// refused with a 409 and the page's sentence (fa and en), no secret shown,
// the endpoint as the administrator left it; the list's button and the
// password form's answer alike.
func TestWebhookRotateDisabledByAdmin(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}})
		owner := app.NewClient(t)
		owner.SignUp("rotate-held@example.com")
		if r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"},
			"url": {"http://127.0.0.1:9/hook"}, "events": {"topup.credited"}}); r.Status != http.StatusOK || hookSecret(r.Body) == "" {
			t.Fatalf("create: %d", r.Status)
		}
		eps := app.Endpoints(t)
		if len(eps) != 1 {
			t.Fatalf("%d endpoints", len(eps))
		}
		id := eps[0].ID
		staff := app.NewClient(t)
		staff.SignUp("rotate-admin@example.com")
		if _, err := app.Server.Webhooks.AdminDisable(ctx, userID(t, db, "rotate-admin@example.com"), id); err != nil {
			t.Fatal(err)
		}
		before, err := app.Server.Webhooks.Get(ctx, id)
		if err != nil || !before.DisabledByAdmin() {
			t.Fatalf("after the admin's disable: %+v %v", before, err)
		}
		refused := func(when string, lang i18n.Lang, r apptest.Response) {
			t.Helper()
			if r.Status != http.StatusConflict || hookSecret(r.Body) != "" ||
				apptest.Parse(r.Body).TestID("webhooks-list-error").Text() != i18n.T(lang, "webhooks.error_rotate_by_admin") {
				t.Fatalf("%s: %d %q", when, r.Status, apptest.Parse(r.Body).TestID("webhooks-list-error").Text())
			}
			after, err := app.Server.Webhooks.Get(ctx, id)
			if err != nil || after.SecretEnc != before.SecretEnc || after.PreviousSecretEnc != nil || after.PreviousSecretUntil != nil ||
				after.DisabledAt == nil || !after.DisabledByAdmin() {
				t.Fatalf("%s: the endpoint changed: %+v %v", when, after, err)
			}
		}
		// The list's button (a page read before the disable offers it).
		refused("the button", i18n.FA, owner.Forge(routes.Webhooks, routes.WebhookRotate(id), nil))
		// The password form's answer.
		refused("with the password", i18n.FA, owner.Forge(routes.Webhooks, routes.WebhookRotate(id),
			url.Values{"confirm": {"1"}, "password": {"correct horse battery"}}))
		// In English too.
		owner.GetIn("en", routes.Webhooks)
		refused("in English", i18n.EN, owner.Forge(routes.Webhooks, routes.WebhookRotate(id),
			url.Values{"confirm": {"1"}, "password": {"correct horse battery"}}))
	})
}
