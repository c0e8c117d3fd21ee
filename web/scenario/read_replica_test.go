package scenario_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topupread"
)

// TestReadPagesUseTheReadDatabase runs the app with DATABASE_READ_URL on a
// second connection string: a role that may only read a snapshot of the
// test's schema (storetest.SnapshotReplica), standing in for a replica
// that has replayed up to the last Refresh. The lists, searches, users and
// dashboard read it (a top-up after the snapshot is missing from them
// until the next Refresh); the receipt, the admin's page of the top-up and
// the balance read the primary (there at once); every write lands on the
// primary (the read role could not make any). When the read database stops
// answering, the pages read the primary and the dashboard says so.
func TestReadPagesUseTheReadDatabase(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.Postgres)
	snap := storetest.SnapshotReplica(t, db)
	bank, bankURL := rsBank(t)
	app := rsApp(t, db, bankURL, map[string]string{"WORKER_INTERVAL": "off",
		"DATABASE_URL": snap.PrimaryURL, "DATABASE_READ_URL": snap.URL}, apptest.Options{})
	if got := app.Server.Reads.Replica(); got == nil {
		t.Fatal("DATABASE_READ_URL set, but the server has no read database")
	}
	user := app.NewClient(t)
	user.SignUp("payer@example.com")
	admin := app.NewAdmin(t, "boss@example.com")

	// A credited top-up, written after the snapshot.
	authority, id := rsTopUp(t, db, user, bankURL, "50000")
	back, err := bank.Pay(authority)
	if err != nil {
		t.Fatal(err)
	}
	if r := user.Get(back); apptest.TopUpStatus(r.Body) != "credited" {
		t.Fatalf("receipt right after the credit (primary): status %q, want credited", apptest.TopUpStatus(r.Body))
	}
	if b := user.Balance(); b != 500_000 {
		t.Fatalf("balance %d right after the credit (primary), want 500000", b)
	}
	one := admin.Get(routes.AdminTopUp(id))
	if one.Status != http.StatusOK || !strings.Contains(one.Body, id) {
		t.Fatalf("the admin's page of one top-up (primary): %d", one.Status)
	}
	// An admin's action on it, recorded after the snapshot: the top-up's
	// page lists it at once (the audit rows read the primary too), so
	// the admin who just acted sees their action, not a page without it.
	d, err := topupread.New(db).Detail(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	tid := d.TopUp.ID
	boss, err := people.New(db).Users(context.Background(), "boss@example.com", 1)
	if err != nil || len(boss) != 1 {
		t.Fatalf("the admin: %v %v", boss, err)
	}
	if err := audit.NewLog(db).Record(context.Background(), audit.Entry{AdminID: boss[0].ID, Action: audit.ActionRecheck, TopUpID: &tid, Result: "unchanged"}); err != nil {
		t.Fatal(err)
	}
	if r := admin.Get(routes.AdminTopUp(id)); !strings.Contains(r.Body, `data-action="recheck"`) {
		t.Error("the admin's page of one top-up does not show an action recorded after the replica's snapshot: its audit rows read the replica")
	}
	// The admin's page of one user (where an admin makes a merchant and
	// comes back to) reads the primary too: the user and their balance
	// as they are, not 404 while the replica has not replayed the sign-up.
	userPage := regexp.MustCompile(regexp.QuoteMeta(routes.AdminUsers) + `/[0-9]+`).FindString(one.Body)
	if userPage == "" {
		t.Fatal("the top-up's page links no user page")
	}
	if r := admin.Get(userPage); r.Status != http.StatusOK || !strings.Contains(r.Body, "payer@example.com") {
		t.Fatalf("the admin's page of one user before the replica caught up (primary): %d", r.Status)
	}

	// The read pages have not seen it yet: they read the snapshot.
	type page struct {
		name   string
		client *apptest.Client
		path   string
		want   string
	}
	pages := []page{
		{"admin list", admin, routes.AdminTopUps, routes.AdminTopUp(id)},
		{"admin search by id", admin, routes.AdminTopUps + "?q=" + id, routes.AdminTopUp(id)},
		{"admin CSV", admin, routes.AdminTopUpsCSV, id},
		{"admin users", admin, routes.AdminUsers + "?q=payer", "payer@example.com"},
		{"payer's list", user, routes.WalletTopUps, `data-public-id="` + id + `"`},
		{"payer's CSV", user, routes.WalletTopUpsCSV, id},
	}
	for _, p := range pages {
		r := p.client.Get(p.path)
		if r.Status != http.StatusOK {
			t.Fatalf("%s before the replica caught up: %d", p.name, r.Status)
		}
		if strings.Contains(r.Body, p.want) {
			t.Errorf("%s shows %s before the replica has it: it read the primary", p.name, p.want)
		}
	}
	dash := admin.Get(routes.Admin)
	if dash.Status != http.StatusOK || !strings.Contains(dash.Body, `data-testid="read-replica" data-state="not_standby"`) {
		t.Fatalf("dashboard: %d, no read database shown as another database (not a standby):\n%.2000s", dash.Status, dash.Body)
	}

	// The replica replays: every read page shows it.
	snap.Refresh()
	for _, p := range pages {
		if r := p.client.Get(p.path); r.Status != http.StatusOK || !strings.Contains(r.Body, p.want) {
			t.Errorf("%s after the replica caught up: %d, %s missing", p.name, r.Status, p.want)
		}
	}
	if r := user.Get(routes.Wallet); !strings.Contains(r.Body, `data-testid="history"`) {
		t.Errorf("wallet history from the replica: no history")
	}

	// The replica goes down: the next check sends the pages to the
	// primary, which has a top-up the snapshot never saw.
	authority2, id2 := rsTopUp(t, db, user, bankURL, "60000")
	back2, err := bank.Pay(authority2)
	if err != nil {
		t.Fatal(err)
	}
	user.Get(back2)
	snap.Stop()
	dash = admin.Get(routes.Admin) // the dashboard checks the read database
	if dash.Status != http.StatusOK || !strings.Contains(dash.Body, `data-testid="read-replica" data-state="down"`) {
		t.Fatalf("dashboard with the replica down: %d, not shown as down", dash.Status)
	}
	for _, p := range []page{{"admin list", admin, routes.AdminTopUps, routes.AdminTopUp(id2)}, {"payer's list", user, routes.WalletTopUps, `data-public-id="` + id2 + `"`}} {
		if r := p.client.Get(p.path); r.Status != http.StatusOK || !strings.Contains(r.Body, p.want) {
			t.Errorf("%s with the replica down: %d, %s missing (no fallback to the primary)", p.name, r.Status, p.want)
		}
	}
	// Back: the pages read the replica again.
	snap.Start()
	if dash = admin.Get(routes.Admin); !strings.Contains(dash.Body, `data-state="not_standby"`) {
		t.Fatal("dashboard: the read database back, still not read")
	}
	if r := admin.Get(routes.AdminTopUps); strings.Contains(r.Body, routes.AdminTopUp(id2)) {
		t.Error("admin list shows a top-up the replica has not replayed: it still reads the primary")
	}
}
