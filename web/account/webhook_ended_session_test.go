package account_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// A request that got past the session check just before "sign out
// everywhere" ended that session adds no webhook endpoint and turns none
// on again: the write checks the session under the user's row lock, and
// the browser is signed out. The window is made wide and certain here:
// this instance's session cache still holds the session (its clock stands
// still), while another instance, on its own connection to the same
// SQLite file (no signal between the two), ends it.
func TestWebhookWriteOfAnEndedSessionIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := storetest.URL(t, store.SQLite)
	open := func() *store.DB {
		t.Helper()
		db, err := store.Open(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	db := open()
	if err := db.Migrate(ctx, nil, store.PerSchemaLock()); err != nil {
		t.Fatal(err)
	}
	clk := topuptest.NewFrozenClock()
	opts := apptest.Options{Env: map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}, Server: server.Options{Now: clk.Now}}
	app := apptest.Start(t, db, opts)
	app.KeepSessionCache(t)
	other := apptest.Start(t, open(), opts)

	owner := app.NewClient(t)
	owner.SignUp("ended@example.com")
	uid := userID(t, db, "ended@example.com")
	add := func(path string) apptest.Response {
		t.Helper()
		return owner.Submit(routes.Webhooks, routes.Webhooks, url.Values{"password": {"correct horse battery"},
			"url": {"http://127.0.0.1:9" + path}, "events": {"topup.credited"}})
	}
	if r := add("/first"); r.Status != http.StatusOK {
		t.Fatalf("an endpoint added while signed in: %d", r.Status)
	}
	eps, err := app.Server.Webhooks.ForUser(ctx, uid)
	if err != nil || len(eps) != 1 {
		t.Fatalf("endpoints %v %v", eps, err)
	}
	first := eps[0]
	if r := owner.Submit(routes.Webhooks, routes.WebhookDisable(first.ID), nil); r.Status != http.StatusSeeOther {
		t.Fatalf("disable: %d", r.Status)
	}
	csrf := apptest.Input(owner.Get(routes.Webhooks).Body, "_csrf")

	if _, err := other.Server.Auth.EndAllSessions(ctx, uid); err != nil {
		t.Fatal(err)
	}
	// This instance still lets the session's requests through.
	if r := owner.Get(routes.Webhooks); r.Status != http.StatusOK {
		t.Fatalf("the cached session's page: %d (the window this test needs is gone)", r.Status)
	}
	r := owner.Post(routes.Webhooks, url.Values{"_csrf": {csrf}, "password": {"correct horse battery"},
		"url": {"http://127.0.0.1:9/late"}, "events": {"topup.credited"}})
	if r.Status != http.StatusSeeOther || r.Location != routes.SignIn {
		t.Fatalf("an add by the ended session: %d %q, want 303 to the sign-in page", r.Status, r.Location)
	}
	// Signed out: the browser's cookie is gone, so even this instance's
	// cache no longer lets it in.
	if r := owner.Get(routes.Webhooks); r.Status != http.StatusSeeOther {
		t.Fatalf("after the refusal: %d, want the sign-in redirect", r.Status)
	}
	eps, err = app.Server.Webhooks.ForUser(ctx, uid)
	if err != nil || len(eps) != 1 || eps[0].DisabledAt == nil {
		t.Fatalf("endpoints after the refused add: %+v %v", eps, err)
	}

	// Turning one on again, the same: a second browser signs in, the
	// owner ends everything elsewhere, its request is refused.
	again := app.NewClient(t)
	again.SignIn("ended@example.com", "correct horse battery")
	csrf = apptest.Input(again.Get(routes.Webhooks).Body, "_csrf")
	if _, err := other.Server.Auth.EndAllSessions(ctx, uid); err != nil {
		t.Fatal(err)
	}
	r = again.Post(routes.WebhookEnable(first.ID), url.Values{"_csrf": {csrf}, "confirm": {"1"}, "password": {"correct horse battery"}})
	if r.Status != http.StatusSeeOther || r.Location != routes.SignIn {
		t.Fatalf("an enable by the ended session: %d %q, want 303 to the sign-in page", r.Status, r.Location)
	}
	if ep, err := app.Server.Webhooks.Get(ctx, first.ID); err != nil || ep.DisabledAt == nil {
		t.Fatalf("the endpoint after the refused enable: %+v %v", ep, err)
	}
}
