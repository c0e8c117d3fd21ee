package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
)

// TestReconcileItemKindsShown: every kind of a reconciliation item has
// its words in Persian and English, and the admin overview shows a
// stored report's items each with its kind's words in the admin's
// language — the items the bank's API could not be asked about (past
// SEP's receipt hour, Mellat without a callback) among them.
func TestReconcileItemKindsShown(t *testing.T) {
	kinds := topup.ReconcileKinds()
	for _, k := range kinds {
		for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
			if !i18n.Has(l, "admin.recon_kind."+k) {
				t.Errorf("no %s words for the reconciliation kind %q", l, k)
			}
		}
	}
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	var items []topup.ReconcileItem
	for i, k := range kinds {
		items = append(items, topup.ReconcileItem{Authority: "tok" + k, AmountRials: int64(10_000 * (i + 1)), Kind: k, Detail: "detail of " + k})
	}
	details, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	rep := topup.ReconcileReport{Gateway: "sep", StartedAt: app.Server.Clock.Now(), FinishedAt: app.Server.Clock.Now(), Ours: len(items), Details: string(details)}
	if err := sqlstore.New(db).SaveReconcileReport(context.Background(), &rep); err != nil {
		t.Fatal(err)
	}
	admin := app.NewAdmin(t, "recon-admin@example.com")
	for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
		r := admin.GetIn(string(l), routes.Admin)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d", l, r.Status)
		}
		shown := map[string]string{}
		for _, li := range apptest.Parse(r.Body).TestIDs("reconcile-item") {
			shown[li.Attr("data-kind")] = li.Text()
		}
		for _, k := range kinds {
			if text, ok := shown[k]; !ok || !strings.Contains(text, i18n.T(l, "admin.recon_kind."+k)) || !strings.Contains(text, "detail of "+k) {
				t.Errorf("%s: the %s item shows %q", l, k, text)
			}
		}
	}
}
