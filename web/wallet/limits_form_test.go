package wallet_test

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// The top-up form in each language shows what each limit leaves today,
// and refuses a top-up over the daily amount, the balance cap or the
// daily count with that limit's own sentence in the payer's language,
// writing nothing (issue 18, item 6).
func TestTopUpFormSaysEachLimitInBothLanguages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{
			"TOPUP_DAILY_MAX_RIALS": "1000000", "TOPUP_DAILY_MAX_COUNT": "2", "BALANCE_MAX_RIALS": "700000", "RATE_LIMIT_TOPUP": "0",
		}})
		for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
			c := app.NewClient(t)
			c.GetIn(string(l), routes.SignUp)
			email := "capped-" + string(l) + "@example.com"
			c.SignUp(email)
			says := func(r apptest.Response, key string, args ...any) bool {
				return strings.Contains(r.Body, html.EscapeString(i18n.T(l, key, args...)))
			}
			form := c.Get(routes.TopUp)
			doc := apptest.Parse(form.Body)
			for id, want := range map[string]string{
				"left-today":   i18n.T(l, "limits.left_today", "left", i18n.Money(1_000_000), "limit", i18n.Money(1_000_000)),
				"left-count":   i18n.T(l, "limits.left_count", "left", 2, "limit", 2),
				"left-balance": i18n.T(l, "limits.left_balance", "left", i18n.Money(700_000), "limit", i18n.Money(700_000)),
			} {
				if e := doc.TestID(id); e == nil || strings.TrimSpace(e.Text()) != want {
					t.Errorf("%s: %s on the form, want %q", l, id, want)
				}
			}
			// A refusal of the amount keeps what is left of today on the
			// form, as the fresh form says it.
			csrf, tok := c.TopUpForm()
			if r := apptest.Parse(c.PostTopUp(csrf, tok, "12,5").Body); r.TestID("left-today") == nil || r.TestID("left-count") == nil {
				t.Errorf("%s: a refused amount's form lost what is left of today", l)
			}
			for _, tc := range []struct {
				tomans string
				key    string
				args   []any
			}{
				{"120000", "limits.error_daily_amount", []any{"limit", i18n.Money(1_000_000), "left", i18n.Money(1_000_000)}},
				{"80000", "limits.error_balance", []any{"limit", i18n.Money(700_000), "left", i18n.Money(700_000)}},
			} {
				csrf, tok := c.TopUpForm()
				r := c.PostTopUp(csrf, tok, tc.tomans)
				if r.Status != http.StatusUnprocessableEntity || !says(r, tc.key, tc.args...) {
					t.Errorf("%s: %s tomans: %d, want the sentence of %s", l, tc.tomans, r.Status, tc.key)
				}
			}
			for range 2 {
				csrf, tok := c.TopUpForm()
				if r := c.PostTopUp(csrf, tok, "10000"); r.Status != http.StatusSeeOther {
					t.Fatalf("%s: a top-up within the limits: %d", l, r.Status)
				}
			}
			csrf, tok = c.TopUpForm()
			r := c.PostTopUp(csrf, tok, "10000")
			if r.Status != http.StatusUnprocessableEntity || !says(r, "limits.error_daily_count", "limit", int64(2)) {
				t.Errorf("%s: the third top-up of the day: %d", l, r.Status)
			}
			uid := authtest.UserID(t, db, email)
			if n := len(topuptest.Select(t, db, func(p topup.TopUp) bool { return p.UserID == uid })); n != 2 {
				t.Errorf("%s: %d payments written, want the 2 within the limits", l, n)
			}
		}
	})
}
