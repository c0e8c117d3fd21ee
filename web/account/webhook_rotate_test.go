package account_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// /account/webhooks: "New signing secret" on an endpoint's row asks for
// the password (a CSRF-protected form); with it, the same endpoint gets a
// new secret, shown once (no-store, never on the list again, never in a
// log line) with the end of the grace period during which the previous
// one signs too. Without the CSRF token, or with a wrong password,
// nothing changes; another user's rotation of it is not found.
func TestWebhookRotateSecret(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var logs apptest.LogBuffer
		clk := topuptest.NewFrozenClock()
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"},
			Server: server.Options{Now: clk.Now, Log: logging.New(&logs, slog.LevelDebug, "json")}})
		owner := app.NewClient(t)
		owner.SignUp("rotator@example.com")
		r := owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"},
			"url": {"http://127.0.0.1:9/hook"}, "events": {"topup.credited"}})
		first := hookSecret(r.Body)
		if r.Status != http.StatusOK || first == "" {
			t.Fatalf("create: %d", r.Status)
		}
		eps, err := app.Server.Webhooks.ForUser(ctx, userID(t, db, "rotator@example.com"))
		if err != nil || len(eps) != 1 {
			t.Fatalf("endpoints %+v %v", eps, err)
		}
		ep := eps[0]
		unchanged := func(when string) {
			t.Helper()
			got, err := app.Server.Webhooks.Get(ctx, ep.ID)
			if err != nil || got.SecretEnc != ep.SecretEnc || got.PreviousSecretEnc != nil {
				t.Fatalf("%s: the endpoint's secret changed: %+v %v", when, got, err)
			}
		}

		// The row's button asks for the password; it changes nothing.
		ask := owner.Submit(routes.Webhooks, routes.WebhookRotate(ep.ID), nil)
		if ask.Status != http.StatusOK || apptest.Parse(ask.Body).Form(routes.WebhookRotate(ep.ID)) == nil ||
			apptest.Parse(ask.Body).TestID("webhook-rotate-password") == nil || hookSecret(ask.Body) != "" {
			t.Fatalf("rotate button: %d", ask.Status)
		}
		unchanged("asked")
		csrf := apptest.Input(ask.Body, "_csrf")
		good := func() url.Values { return url.Values{"confirm": {"1"}, "password": {"correct horse battery"}} }

		// Without the CSRF token: refused, nothing changes.
		if r := owner.Post(routes.WebhookRotate(ep.ID), good()); r.Status != http.StatusForbidden || hookSecret(r.Body) != "" {
			t.Fatalf("without the CSRF token: %d", r.Status)
		}
		unchanged("without the CSRF token")
		// A session alone does not rotate it: the password is asked.
		for _, pw := range []string{"", "wrong horse battery"} {
			r := owner.Post(routes.WebhookRotate(ep.ID), url.Values{"_csrf": {csrf}, "confirm": {"1"}, "password": {pw}})
			if r.Status != http.StatusUnprocessableEntity || hookSecret(r.Body) != "" ||
				apptest.Parse(r.Body).TestID("webhook-rotate-error").Text() != i18n.T(i18n.FA, "webhooks.error_rotate_password") {
				t.Fatalf("password %q: %d", pw, r.Status)
			}
		}
		unchanged("a wrong password")

		// Another user: not found, nothing changes.
		other := app.NewClient(t)
		other.SignUp("stranger@example.com")
		if r := other.Forge(routes.Webhooks, routes.WebhookRotate(ep.ID), good()); r.Status != http.StatusNotFound || hookSecret(r.Body) != "" {
			t.Fatalf("another user's rotation: %d", r.Status)
		}
		unchanged("another user's rotation")

		// Rotated: the new secret shown once, with the grace period.
		form := good()
		form.Set("_csrf", csrf)
		r = owner.Post(routes.WebhookRotate(ep.ID), form)
		second := hookSecret(r.Body)
		if r.Status != http.StatusOK || second == "" || second == first || r.Header.Get("Cache-Control") != "no-store" ||
			apptest.Parse(r.Body).TestID("webhook-rotated-grace") == nil {
			t.Fatalf("rotate: %d, a new secret shown: %v", r.Status, second != "" && second != first)
		}
		got, err := app.Server.Webhooks.Get(ctx, ep.ID)
		if err != nil || got.ID != ep.ID || got.PreviousSecretEnc == nil || *got.PreviousSecretEnc != ep.SecretEnc ||
			got.SecretEnc == ep.SecretEnc || strings.Contains(got.SecretEnc, second) ||
			got.PreviousSecretUntil == nil || !got.PreviousSecretUntil.Equal(clk.Now().UTC().Truncate(time.Microsecond).Add(webhook.RotationGrace)) {
			t.Fatalf("the endpoint after the rotation: %+v %v", got, err)
		}
		if n := len(app.Endpoints(t)); n != 1 {
			t.Fatalf("%d endpoints after the rotation, want the same one", n)
		}
		// Never again: not on the list, not in a log line.
		if list := owner.Get(routes.Webhooks); strings.Contains(list.Body, second) || hookSecret(list.Body) != "" {
			t.Fatal("the list shows the new secret again")
		}
		if strings.Contains(logs.String(), second) || strings.Contains(logs.String(), first) {
			t.Fatal("a signing secret is in the log")
		}
		if !strings.Contains(logs.String(), "webhook endpoint signing secret rotated") {
			t.Fatalf("no log line of the rotation")
		}
	})
}
