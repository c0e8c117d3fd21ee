package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The audit log's rows of the command line and of a gateway's switch read
// in the page's language (issue 29, item 15): roles by their names (never
// "[status.admin]"), "from the command line" translated, the command's
// name isolated in its parentheses, and the switched gateway by its
// Persian name, bidi-isolated.
func TestAuditRowsInThePagesLanguage(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	ctx := context.Background()
	boss, err := app.Server.Auth.SignUp(ctx, "boss@example.com", "correct horse battery", "admin", "fa")
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Server.Auth.RecordAdminCreated(ctx, boss.ID); err != nil {
		t.Fatal(err)
	}
	sara, err := app.Server.Auth.SignUp(ctx, "sara@example.com", "correct horse battery", "user", "fa")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Server.Auth.SetRole(ctx, "sara@example.com", "admin"); err != nil {
		t.Fatal(err)
	}
	if err := app.Server.TopUps.SwitchGateway(ctx, boss.ID, "zarinpal", true, ""); err != nil {
		t.Fatal(err)
	}
	admin := app.NewClient(t)
	admin.SignInAdmin("boss@example.com", "correct horse battery")
	for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
		page := admin.GetIn(string(l), routes.AdminAudit)
		d := apptest.Parse(page.Body)
		log := d.TestID("audit-log")
		if log == nil {
			t.Fatalf("%s: no audit log", l)
		}
		text := log.Text()
		for _, bad := range []string{"[", "]"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: an untranslated key in the audit log: %q", l, text)
			}
		}
		if l == i18n.FA && (strings.Contains(text, "from the command line") || strings.Contains(text, "zarinpal")) {
			t.Errorf("fa: English in the audit log: %q", text)
		}
		if !strings.Contains(text, i18n.T(l, "admin.audit.cli_note")) {
			t.Errorf("%s: the command line's note is not %q", l, i18n.T(l, "admin.audit.cli_note"))
		}
		tos := d.TestIDs("audit-role-to")
		if len(tos) != 2 {
			t.Fatalf("%s: %d role changes shown, want the promotion and the creation", l, len(tos))
		}
		for _, to := range tos {
			if to.Text() != i18n.T(l, "admin.role.admin") {
				t.Errorf("%s: role %q, want %q", l, to.Text(), i18n.T(l, "admin.role.admin"))
			}
		}
		cli := d.TestID("audit-cli")
		if cli == nil || len(cli.Attrs("translate")) != 1 || !strings.Contains(cli.Text(), "(kifpool user)") {
			t.Errorf("%s: the command line's cell does not isolate the command", l)
		}
		// A command-line row names the account it acted on, linked to
		// that user's page.
		named := false
		for _, cell := range d.TestIDs("audit-target") {
			if strings.Contains(cell.Text(), "sara@example.com") {
				named = true
				if hrefs := cell.Attrs("href"); len(hrefs) != 1 || hrefs[0] != routes.AdminUser(sara.ID) {
					t.Errorf("%s: the promoted account links to %q, want %q", l, hrefs, routes.AdminUser(sara.ID))
				}
			}
		}
		if !named {
			t.Errorf("%s: no audit row names the promoted account sara@example.com", l)
		}
		want := i18n.T(l, "admin.audit.switched_off", "gateway", "\u2068"+i18n.T(l, "gateway.name.zarinpal")+"\u2069")
		if !strings.Contains(text, want) {
			t.Errorf("%s: the switch reads %q, want %q in it", l, text, want)
		}
	}
}
