package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/web/api"
)

// The daily and balance limits: shown on the form with what is left
// today, checked before anything is written, refused with one sentence on
// the form and daily_limit_exceeded / balance_limit_exceeded in the API;
// a repeat of a submitted form is never refused; and a payment the bank
// already took is credited even over the cap, flagged for admins.
func TestTopUpLimits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bank := sandbank.New(sandbank.Options{NoControlAPI: true})
		f := start(t, db, apptest.Options{
			Env:    map[string]string{"TOPUP_DAILY_MAX_RIALS": "1000000", "TOPUP_DAILY_MAX_COUNT": "3"},
			Server: server.Options{Bank: bank},
		})
		web := f.app.NewClient(t)
		web.SignUp("limits@example.com")
		uid := authtest.UserID(t, db, "limits@example.com")
		c := f.token(t, uid, apitoken.ScopeTopUp)

		form := web.Get(routes.TopUp)
		if doc := apptest.Parse(form.Body); doc.TestID("left-today").Attr("data-rials") != "1000000" || doc.TestID("left-count").Attr("data-count") != "3" {
			t.Fatal("the form does not show what is left today")
		}
		csrf, tok := web.TopUpForm()
		if r := web.PostTopUp(csrf, tok, "60000"); r.Status != http.StatusSeeOther {
			t.Fatalf("first top-up: %d", r.Status)
		}
		if r := web.PostTopUp(csrf, tok, "60000"); r.Status != http.StatusSeeOther {
			t.Fatalf("a repeat of the submitted form was refused: %d", r.Status)
		}
		csrf, tok = web.TopUpForm()
		r := web.PostTopUp(csrf, tok, "50000")
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "سقف شارژ روزانه") || !strings.Contains(r.Body, `data-rials="400000"`) {
			t.Fatalf("over the daily amount: %d", r.Status)
		}
		if n := topuptest.Count(t, db); n != 1 {
			t.Fatalf("%d payments after a refusal, want 1", n)
		}
		a := c.post(routes.APITopUps, "day-1", `{"amount_rials": 500000}`)
		if a.Status != http.StatusUnprocessableEntity || a.Code() != "daily_limit_exceeded" {
			t.Fatalf("API over the daily amount: %d %s", a.Status, a.Body)
		}
		// Nothing was stored under the key: it works for an amount that fits.
		if a := c.post(routes.APITopUps, "day-1", `{"amount_rials": 400000}`); a.Status != http.StatusCreated {
			t.Fatalf("API within the limit: %d %s", a.Status, a.Body)
		}
		if a := c.post(routes.APITopUps, "day-2", `{"amount_rials": 10000}`); a.Code() != "daily_limit_exceeded" {
			t.Fatalf("API past the daily amount: %d %s", a.Status, a.Body)
		}

		// The balance cap counts open payments; a second instance with
		// only that limit, on the same bank.
		capped := apptest.Start(t, db, apptest.Options{Env: map[string]string{"BALANCE_MAX_RIALS": "1500000"}, Server: server.Options{Bank: bank}})
		cf := &fixture{app: capped, db: db, spec: f.spec}
		c2, _ := cf.user(t, "rich@example.com", apitoken.ScopeTopUp)
		first := decode[api.TopUp](t, c2.post(routes.APITopUps, "b-1", `{"amount_rials": 1000000}`))
		if a := c2.post(routes.APITopUps, "b-2", `{"amount_rials": 600000}`); a.Status != http.StatusUnprocessableEntity || a.Code() != "balance_limit_exceeded" {
			t.Fatalf("over the balance cap: %d %s", a.Status, a.Body)
		}
		second := decode[api.TopUp](t, c2.post(routes.APITopUps, "b-3", `{"amount_rials": 500000}`))

		// The cap is lowered while both are at the bank: both are paid and
		// both credited all the same; the admin sees the one over the cap.
		lowered := apptest.Start(t, db, apptest.Options{Env: map[string]string{"BALANCE_MAX_RIALS": "1000000"}, Server: server.Options{Bank: bank}})
		browser := lowered.NewClient(t)
		for _, tu := range []api.TopUp{first, second} {
			back := browser.Post(*tu.PaymentURL+"/pay", url.Values{})
			ret := strings.Replace(back.Location, capped.URL, lowered.URL, 1)
			if got := browser.Get(ret); apptest.TopUpStatus(got.Body) != "credited" {
				t.Fatalf("payment %s not credited over the lowered cap: %q", tu.ID, apptest.TopUpStatus(got.Body))
			}
		}
		if w := decode[api.Wallet](t, c2.get(routes.APIWallet)); w.BalanceRials != 1_500_000 {
			t.Fatalf("balance %d, want both credits", w.BalanceRials)
		}
		if _, err := lowered.Server.Auth.SignUp(context.Background(), "boss@example.com", "correct horse battery", "admin", "en"); err != nil {
			t.Fatal(err)
		}
		admin := lowered.NewClient(t)
		admin.SignInAdmin("boss@example.com", "correct horse battery")
		if p := admin.Get(routes.AdminTopUp(second.ID)); apptest.Parse(p.Body).TestID("over-limit") == nil {
			t.Fatalf("the credit over the cap is not flagged: %d", p.Status)
		}
		if p := admin.Get(routes.AdminTopUp(first.ID)); apptest.Parse(p.Body).TestID("over-limit") != nil {
			t.Fatal("a credit within the cap is flagged")
		}
	})
}

// The limits hold under concurrency: many top-ups of one payer started at
// once, through the form and the API, cannot together pass a limit that
// only some of them fit (the check runs again in the transaction that
// inserts the payment, under a lock of the payer's wallet row). Exactly
// the allowed number start; every other one is refused and writes nothing.
func TestTopUpLimitsHoldUnderConcurrentStarts(t *testing.T) {
	const n = 12
	for _, tc := range []struct {
		name    string
		env     map[string]string
		amount  int64 // rials
		allowed int
		problem string
	}{
		{"daily count", map[string]string{"TOPUP_DAILY_MAX_COUNT": "3"}, 100_000, 3, "daily_limit_exceeded"},
		{"daily amount", map[string]string{"TOPUP_DAILY_MAX_RIALS": "450000"}, 100_000, 4, "daily_limit_exceeded"},
		{"balance", map[string]string{"BALANCE_MAX_RIALS": "250000"}, 100_000, 2, "balance_limit_exceeded"},
		{"waiting", map[string]string{"TOPUP_WAITING_MAX_COUNT": "5"}, 100_000, 5, "waiting_limit_exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				tc.env["RATE_LIMIT_TOPUP"] = "0"
				f := start(t, db, apptest.Options{Env: tc.env})
				web := f.app.NewClient(t)
				web.SignUp("rush@example.com")
				uid := authtest.UserID(t, db, "rush@example.com")
				c := f.token(t, uid, apitoken.ScopeTopUp)
				c.fail = t.Errorf
				// Half through the API, half through the form, all at once.
				forms := make([][2]string, n/2)
				for i := range forms {
					forms[i][0], forms[i][1] = web.TopUpForm()
				}
				var wg sync.WaitGroup
				var started, refused atomic.Int64
				release := make(chan struct{})
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-release
						if i%2 == 0 {
							a := c.post(routes.APITopUps, fmt.Sprintf("rush-%d", i), fmt.Sprintf(`{"amount_rials": %d}`, tc.amount))
							switch {
							case a.Status == http.StatusCreated:
								started.Add(1)
							case a.Status == http.StatusUnprocessableEntity && a.Code() == tc.problem:
								refused.Add(1)
							default:
								t.Errorf("API start %d: %d %s", i, a.Status, a.Body)
							}
							return
						}
						fm := forms[i/2]
						r := web.PostTopUp(fm[0], fm[1], strconv.FormatInt(tc.amount/10, 10))
						switch r.Status {
						case http.StatusSeeOther:
							started.Add(1)
						case http.StatusUnprocessableEntity:
							refused.Add(1)
						default:
							t.Errorf("form start %d: %d", i, r.Status)
						}
					}()
				}
				close(release)
				wg.Wait()
				if started.Load() != int64(tc.allowed) || refused.Load() != int64(n-tc.allowed) {
					t.Fatalf("%d started, %d refused; want exactly %d started", started.Load(), refused.Load(), tc.allowed)
				}
				if got := int64(len(topuptest.Select(t, db, func(p topup.TopUp) bool { return p.UserID == uid }))); got != int64(tc.allowed) {
					t.Fatalf("%d payments written, want %d (a refused start writes nothing)", got, tc.allowed)
				}
			})
		})
	}
}
