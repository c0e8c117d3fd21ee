package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testport"
)

// Issue 31, item 12: the built-in sandbox bank keeps its payments under
// DATA_DIR, so a restart of serve (make run stopped and started again)
// orphans none of them. A payer starts a top-up of each gateway, serve is
// stopped and started again on the same DATA_DIR, and the payer then pays
// each on the bank's page of the new process: every one is credited.
func TestBuiltInBankKeepsOpenTopUpsAcrossARestart(t *testing.T) {
	eachDialect(t, func(t *testing.T, d store.Dialect) {
		dbURL := storetest.URL(t, d)
		addr := testport.Addr(t)
		env := serveEnv(t, addr, dbURL, "", map[string]string{"GATEWAYS": "sandbox", "ALLOW_SANDBOX": "1", "WORKER_INTERVAL": "1h"})
		for k := range env {
			if strings.HasPrefix(k, "ZARINPAL_") || strings.HasPrefix(k, "ZIBAL_") {
				delete(env, k)
			}
		}
		base := "http://" + addr
		srv := newProc(t, "serve", addr, base+routes.Healthz, env, "serve")
		if err := srv.start(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		bankURL := base + routes.Sandbank
		br := signedUp(ctx, t, base, "restart-"+string(d)+"@example.com")

		type open struct {
			gw    bankGateway
			token string
		}
		var opens []open
		for i, gw := range gatewayNames() {
			r, err := br.topUpAt(ctx, int64(10_000+1_000*i), gw)
			if err != nil {
				t.Fatal(err)
			}
			g, token, ok := toBank(bankURL, r)
			if !ok || g.name != gw {
				t.Fatalf("%s: top-up answered %d %q, not the bank", gw, r.status, r.location)
			}
			opens = append(opens, open{g, token})
		}

		srv.stop()
		if err := srv.start(); err != nil {
			t.Fatal(err)
		}

		for _, o := range opens {
			cb, err := payOnBankPage(ctx, br, bankURL, o.gw, o.token)
			if err != nil {
				t.Fatalf("%s after the restart: %v", o.gw.name, err)
			}
			r, err := br.back(ctx, cb)
			if err != nil {
				t.Fatal(err)
			}
			if got := apptest.TopUpStatus(r.body); r.status != http.StatusOK || got != "credited" {
				t.Fatalf("%s after the restart: back from the bank %d, status %q", o.gw.name, r.status, got)
			}
		}
		db := openDB(t, dbURL)
		var credited int64
		if err := db.Gorm.Raw(`SELECT COUNT(*) FROM topups WHERE status = 'credited'`).Scan(&credited).Error; err != nil {
			t.Fatal(err)
		}
		if credited != int64(len(opens)) {
			t.Fatalf("%d of %d payments credited", credited, len(opens))
		}
		checkLedger(t, db)
		checkEvents(t, db)
	})
}

// payOnBankPage opens a gateway's page at the bank (a GET, or a POST of
// the token for SEP and Mellat), presses Pay, and returns the request the
// bank then sends the payer back with (a 303 to our callback, or the form
// of its auto-posted page).
func payOnBankPage(ctx context.Context, br *browser, bankURL string, gw bankGateway, token string) (sandbank.CallbackRequest, error) {
	page := bankURL + gw.page
	var r response
	var err error
	if gw.field == "" {
		page += token
		r, err = br.do(ctx, http.MethodGet, page, nil)
	} else {
		r, err = br.do(ctx, http.MethodPost, page, url.Values{gw.field: {token}})
	}
	if err != nil {
		return sandbank.CallbackRequest{}, err
	}
	doc := apptest.Parse(r.body)
	if r.status != http.StatusOK || doc.TestID("bank-pay") == nil {
		return sandbank.CallbackRequest{}, fmt.Errorf("bank page %s: %d without a Pay button:\n%s", page, r.status, r.body)
	}
	var action string
	for _, a := range doc.Actions() {
		if p, _, _ := strings.Cut(a, "?"); strings.HasSuffix(p, "pay") {
			action = a
			break
		}
	}
	pageURL, _ := url.Parse(page)
	target, err := pageURL.Parse(action)
	if action == "" || err != nil {
		return sandbank.CallbackRequest{}, fmt.Errorf("bank page %s: no Pay form among %v", page, doc.Actions())
	}
	r, err = br.do(ctx, http.MethodPost, target.String(), doc.Form(action).Hidden())
	if err != nil {
		return sandbank.CallbackRequest{}, err
	}
	switch {
	case r.status == http.StatusSeeOther:
		return sandbank.CallbackRequest{URL: r.location, Method: http.MethodGet}, nil
	case r.status == http.StatusOK && len(apptest.Parse(r.body).Actions()) > 0:
		back := apptest.Parse(r.body)
		act := back.Actions()[0]
		cb := sandbank.CallbackRequest{URL: act, Method: http.MethodPost, Form: map[string]string{}}
		for k, v := range back.Form(act).Hidden() {
			cb.Form[k] = v[0]
		}
		return cb, nil
	}
	return sandbank.CallbackRequest{}, fmt.Errorf("Pay at %s: %d %q", target, r.status, r.location)
}
