package scenario_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// The transfers', withdrawals' and audit lists read the read database, as
// the top-up lists do (TestReadPagesUseTheReadDatabase): a transfer, a
// withdrawal and an admin's action written after the snapshot are missing
// from the admin's lists and the API's until the next Refresh, while the
// admin's page of the one transfer reads the primary (there at once).
func TestMovementListsUseTheReadDatabase(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.Postgres)
	snap := storetest.SnapshotReplica(t, db)
	app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"WORKER_INTERVAL": "off",
		"DATABASE_URL": snap.PrimaryURL, "DATABASE_READ_URL": snap.URL}})
	ctx := context.Background()
	admin := app.NewAdmin(t, "boss@example.com")
	app.NewClient(t).SignUp("sender@example.com")
	app.NewClient(t).SignUp("friend@example.com")
	sender := authtest.UserID(t, db, "sender@example.com")
	withdrawaltest.FundUser(t, db, sender, 5_000_000)
	acct := withdrawaltest.VerifiedAccount(t, db, sender, withdrawaltest.Sheba("017", 42))
	secret, _, err := app.Server.Tokens.Create(ctx, apitoken.CreateInput{UserID: sender, Name: "lists", Scope: string(apitoken.ScopeRead)})
	if err != nil {
		t.Fatal(err)
	}
	// apiList is the public ids one of the sender's API lists answers.
	apiList := func(path string) []string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, app.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		ids := make([]string, 0, len(body.Items))
		for _, d := range body.Items {
			ids = append(ids, d.ID)
		}
		return ids
	}
	snap.Refresh()

	audits := func() int { return len(apptest.Parse(admin.Get(routes.AdminAudit).Body).TestIDs("audit-row")) }
	auditsBefore := audits()
	tr, err := app.Server.Transfers.Send(ctx, transfer.Request{SenderUserID: sender, FormToken: formtoken.New(), ToEmail: "friend@example.com", AmountRials: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	wr, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: sender, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if r := admin.Submit(routes.Admin, routes.AdminReconcile, nil); r.Status != http.StatusSeeOther {
		t.Fatalf("run reconciliation: %d", r.Status)
	}
	tid, wid := tr.Transfer.PublicID, wr.Withdrawal.PublicID

	// The admin's page of the one transfer reads the primary.
	if r := admin.Get(routes.AdminTransfer(tid)); r.Status != http.StatusOK || !strings.Contains(r.Body, tid) {
		t.Fatalf("the admin's page of one transfer (primary): %d", r.Status)
	}
	pages := []struct{ name, path, want string }{
		{"admin transfers", routes.AdminTransfers, routes.AdminTransfer(tid)},
		{"admin transfers search", routes.AdminTransfers + "?q=" + tid, routes.AdminTransfer(tid)},
		{"admin withdrawals", routes.AdminWithdrawals, `data-public-id="` + wid + `"`},
	}
	for _, p := range pages {
		r := admin.Get(p.path)
		if r.Status != http.StatusOK {
			t.Fatalf("%s before the replica caught up: %d", p.name, r.Status)
		}
		if strings.Contains(r.Body, p.want) {
			t.Errorf("%s shows %s before the replica has it: it read the primary", p.name, p.want)
		}
	}
	if ws, _, err := app.Server.Withdrawals.List(ctx, sender, 0, 20); err != nil || len(ws) != 0 {
		t.Errorf("the payer's withdrawals before the replica caught up: %d (%v), want none", len(ws), err)
	}
	apiLists := []struct{ path, want string }{{routes.APITransfers, tid}, {routes.APIWithdrawals, wid}}
	for _, l := range apiLists {
		if ids := apiList(l.path); slices.Contains(ids, l.want) {
			t.Errorf("GET %s shows %s before the replica has it: it read the primary", l.path, l.want)
		}
	}
	if n := audits(); n != auditsBefore {
		t.Errorf("audit log: %d rows before the replica caught up, want %d", n, auditsBefore)
	}

	snap.Refresh()
	for _, p := range pages {
		if r := admin.Get(p.path); r.Status != http.StatusOK || !strings.Contains(r.Body, p.want) {
			t.Errorf("%s after the replica caught up: %d, %s missing", p.name, r.Status, p.want)
		}
	}
	if ws, _, err := app.Server.Withdrawals.List(ctx, sender, 0, 20); err != nil || len(ws) != 1 || ws[0].PublicID != wid {
		t.Errorf("the payer's withdrawals after the replica caught up: %d (%v)", len(ws), err)
	}
	for _, l := range apiLists {
		if ids := apiList(l.path); !slices.Contains(ids, l.want) {
			t.Errorf("GET %s after the replica caught up: %v, %s missing", l.path, ids, l.want)
		}
	}
	if n := audits(); n != auditsBefore+1 {
		t.Errorf("audit log: %d rows after the replica caught up, want %d", n, auditsBefore+1)
	}
}
