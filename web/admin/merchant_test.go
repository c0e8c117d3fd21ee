package admin_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// An admin makes a user a merchant on /admin/users/{id} with a display
// name, after a fresh second factor (a wrong code, or a bad name, changes
// nothing), audited; the same form renames the merchant.
func TestAdminMakesMerchant(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		app := apptest.Start(t, db, apptest.Options{Server: server.Options{Now: clock.Now}})
		ctx := context.Background()
		const adminEmail = "boss@example.com"
		admin := app.NewAdmin(t, adminEmail)
		code := func() string {
			clock.Advance(30 * time.Second)
			return apptest.AdminTOTPCodeAt(t, db, adminEmail, app.Server.Clock.Now)
		}
		shop := app.NewClient(t)
		shop.SignUpUnconfirmed("shop@example.com")
		uid := authtest.UserID(t, db, "shop@example.com")
		page := routes.AdminUser(uid)
		if p := apptest.Parse(admin.Get(page).Body); p.TestID("form-merchant") == nil || p.TestID("merchant-name") != nil {
			t.Fatal("the user's page has no merchant form, or names a merchant")
		}
		action := routes.AdminUserMerchant(uid)
		// Not while the address is unconfirmed: the account may be a
		// stranger's who signed up with the shop's address.
		// Its refusal spends no code: the same code works after.
		first := code()
		if r := admin.Submit(page, action, url.Values{"display_name": {"Book Shop"}, "code": {first}}); r.Status != http.StatusUnprocessableEntity ||
			apptest.Parse(r.Body).TestID("admin-error").Text() != i18n.T(i18n.EN, "admin.merchant.error_unconfirmed") {
			t.Fatalf("an unconfirmed address: %d", r.Status)
		}
		if _, err := app.Server.Charges.Merchant(ctx, uid); !errors.Is(err, charge.ErrNotMerchant) {
			t.Fatalf("an unconfirmed address made a merchant: %v", err)
		}
		authtest.ConfirmEmail(t, db, "shop@example.com")
		if r := admin.Submit(page, action, url.Values{"display_name": {"Book\u202eShop"}, "code": {first}}); r.Status != http.StatusUnprocessableEntity ||
			apptest.Parse(r.Body).TestID("admin-error").Text() != i18n.T(i18n.EN, "admin.merchant.error_name") {
			t.Fatalf("the code the refusal did not spend: %d", r.Status)
		}
		if r := admin.Submit(page, action, url.Values{"display_name": {"Book Shop"}, "code": {"000000"}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("a wrong code: %d", r.Status)
		}
		// A bad name is refused before the code: the same code serves the
		// good name after.
		next := code()
		if r := admin.Submit(page, action, url.Values{"display_name": {"Book\u202eShop"}, "code": {next}}); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("a bad name: %d", r.Status)
		}
		if _, err := app.Server.Charges.Merchant(ctx, uid); !errors.Is(err, charge.ErrNotMerchant) {
			t.Fatalf("a merchant after refusals: %v", err)
		}
		r := admin.Submit(page, action, url.Values{"display_name": {"Book Shop"}, "code": {next}})
		if r.Status != http.StatusSeeOther || r.Location != page+"?done=merchant" {
			t.Fatalf("make merchant: %d %q", r.Status, r.Location)
		}
		m, err := app.Server.Charges.Merchant(ctx, uid)
		if err != nil || m.DisplayName != "Book Shop" || m.AccountID == 0 {
			t.Fatalf("merchant %+v %v", m, err)
		}
		p := apptest.Parse(admin.Get(page + "?done=merchant").Body)
		if n := p.TestID("merchant-name"); n == nil || n.Text() != "Book Shop" || p.TestID("admin-notice") == nil {
			t.Fatal("the page does not name the merchant")
		}
		if r := admin.Submit(page, action, url.Values{"display_name": {"Books & Co"}, "code": {code()}}); r.Status != http.StatusSeeOther {
			t.Fatalf("rename: %d", r.Status)
		}
		if m, _ := app.Server.Charges.Merchant(ctx, uid); m.DisplayName != "Books & Co" || m.AccountID == 0 {
			t.Fatalf("renamed %+v", m)
		}
		if n := withdrawaltest.AuditActions(t, db, "merchant"); n != 2 {
			t.Fatalf("%d audit rows", n)
		}
		// Not their own account: another admin makes it a merchant. The
		// refusal spends no code, and writes nothing.
		self := authtest.UserID(t, db, adminEmail)
		mine := code()
		if r := admin.Submit(routes.AdminUser(self), routes.AdminUserMerchant(self), url.Values{"display_name": {"My Shop"}, "code": {mine}}); r.Status != http.StatusForbidden ||
			apptest.Parse(r.Body).TestID("admin-error").Text() != i18n.T(i18n.EN, "admin.merchant.error_own") {
			t.Fatalf("an admin made themselves a merchant: %d", r.Status)
		}
		if _, _, err := app.Server.Charges.MakeMerchant(ctx, self, "My Shop", &self); !errors.Is(err, charge.ErrOwnMerchant) {
			t.Fatalf("the use case: %v, want ErrOwnMerchant", err)
		}
		if _, err := app.Server.Charges.Merchant(ctx, self); !errors.Is(err, charge.ErrNotMerchant) {
			t.Fatalf("the admin is a merchant: %v", err)
		}
		if r := admin.Submit(page, action, url.Values{"display_name": {"Books & Co."}, "code": {mine}}); r.Status != http.StatusSeeOther {
			t.Fatalf("the code the refusal did not spend: %d", r.Status)
		}
	})
}
