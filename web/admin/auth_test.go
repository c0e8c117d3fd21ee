package admin_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// TestAdminAuthorizationMatrix tries every admin route and action as
// someone anonymous, a signed-in user and an admin: anonymous people are
// sent to sign in, users find nothing (404), admins get the page; every
// action needs the form's CSRF token (403 without it or with a wrong one,
// and nothing changes).
func TestAdminAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Unchecked: "topuptest.SeedN writes top-ups without their events and ledger transactions"})
		rows := topuptest.SeedN(t, db, 6)
		review := rows[2] // i = 3: needs_review
		if review.Status != "needs_review" {
			t.Fatalf("seed: %s", review.Status)
		}
		admin := app.NewAdmin(t, "boss@example.com")
		user := app.NewClient(t)
		user.SignUp("someone@example.com")
		anon := app.NewClient(t)

		userID := authtest.UserID(t, db, "someone@example.com")
		pages := []string{
			routes.Admin, routes.AdminTopUps, routes.AdminTopUps + "?status=failed", routes.AdminTopUpsCSV,
			routes.AdminTopUp(review.PublicID), routes.AdminUsers, routes.AdminUsers + "?q=alice",
			routes.AdminUser(review.UserID), routes.AdminAudit, routes.AdminAudit + "?payment=" + review.PublicID,
		}
		actions := []struct {
			path string
			form url.Values
		}{
			{routes.AdminTopUpRecheck(review.PublicID), url.Values{}},
			{routes.AdminTopUpClose(review.PublicID), url.Values{"note": {"the bank says no"}}},
			{routes.AdminReconcile, url.Values{}},
		}
		csrfOf := func(c *apptest.Client, page string) string {
			return apptest.Input(c.Get(page).Body, "_csrf")
		}
		snapshot := func() string {
			st := string(topuptest.ByID(t, db, review.ID).Status)
			return st + "/" + strconv.FormatInt(app.CountAudit(t), 10) +
				"/" + strconv.Itoa(len(topuptest.Reconciles(t, db)))
		}
		before := snapshot()

		for _, p := range pages {
			if r := anon.Get(p); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.SignIn) {
				t.Errorf("anonymous GET %s: %d %q, want 303 to sign in", p, r.Status, r.Location)
			}
			if r := user.Get(p); r.Status != http.StatusNotFound {
				t.Errorf("user GET %s: %d, want 404", p, r.Status)
			}
			if r := admin.Get(p); r.Status != http.StatusOK {
				t.Errorf("admin GET %s: %d, want 200", p, r.Status)
			}
		}
		anonCSRF, userCSRF, adminCSRF := csrfOf(anon, routes.SignIn), csrfOf(user, routes.Wallet), csrfOf(admin, routes.Admin)
		for _, a := range actions {
			with := func(tok string) url.Values {
				f := url.Values{}
				for k, v := range a.form {
					f[k] = v
				}
				if tok != "" {
					f.Set("_csrf", tok)
				}
				return f
			}
			for who, c := range map[string]*apptest.Client{"anonymous": anon, "user": user, "admin": admin} {
				if r := c.Post(a.path, with("")); r.Status != http.StatusForbidden {
					t.Errorf("%s POST %s without a CSRF token: %d, want 403", who, a.path, r.Status)
				}
				if r := c.Post(a.path, with("forged-token-0123456789abcdefghijklmnop")); r.Status != http.StatusForbidden {
					t.Errorf("%s POST %s with a wrong CSRF token: %d, want 403", who, a.path, r.Status)
				}
			}
			// Another browser's valid token is wrong for this one.
			if r := admin.Post(a.path, with(userCSRF)); r.Status != http.StatusForbidden {
				t.Errorf("admin POST %s with the user's token: %d, want 403", a.path, r.Status)
			}
			if r := anon.Post(a.path, with(anonCSRF)); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, routes.SignIn) {
				t.Errorf("anonymous POST %s: %d %q, want 303 to sign in", a.path, r.Status, r.Location)
			}
			if r := user.Post(a.path, with(userCSRF)); r.Status != http.StatusNotFound {
				t.Errorf("user POST %s: %d, want 404", a.path, r.Status)
			}
		}
		if after := snapshot(); after != before {
			t.Fatalf("refused requests changed something: %s → %s", before, after)
		}
		// With the token, the admin's actions go through (and are recorded).
		if r := admin.Post(actions[1].path, url.Values{"_csrf": {adminCSRF}, "note": {"the bank says no"}, "code": {admin.LastRecoveryCodes[0]}}); r.Status != http.StatusSeeOther {
			t.Fatalf("admin close: %d", r.Status)
		}
		if n := app.CountAudit(t, "close_failed"); n != 1 {
			t.Fatalf("%d close actions recorded", n)
		}
		// The audit log has no way to change it.
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			req, _ := http.NewRequest(m, app.URL+routes.AdminAudit, strings.NewReader(url.Values{"_csrf": {adminCSRF}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if r := admin.Do(req); r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
				t.Errorf("%s /admin/audit: %d", m, r.Status)
			}
		}
		if n := app.CountAudit(t); n != 1 {
			t.Fatalf("%d audit entries after attempts to change the log", n)
		}
		// Unknown payments and users are 404 for admins too.
		for _, p := range []string{routes.AdminTopUp("aaaaaaaaaaaaaaaaaaaaaaa9"), routes.AdminTopUp("zzzzzzzzzzzzzzzzzzzzzzzz"), routes.AdminUser(999999), routes.AdminUsers + "/abc"} {
			if r := admin.Get(p); r.Status != http.StatusNotFound {
				t.Errorf("admin GET %s: %d, want 404", p, r.Status)
			}
		}
		_ = userID
	})
}
