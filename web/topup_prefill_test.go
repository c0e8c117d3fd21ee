package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

var amountValueRE = regexp.MustCompile(`<input id="amount"[^>]* value="([^"]*)"`)

// GET /wallet/topup?amount=N (whole tomans) fills the form in (quick picks
// without JavaScript, "try again"); anything else gives the empty form,
// never an error page, and nothing is written.
func TestTopUpFormPrefill(t *testing.T) {
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c := app.NewClient(t)
	c.SignUp("prefill@example.com")
	for _, tc := range []struct{ amount, want string }{
		{"100000", "۱۰۰٬۰۰۰"},
		{"۵۰۰۰۰", "۵۰٬۰۰۰"},
		{"1,000,000", "۱٬۰۰۰٬۰۰۰"},
		{"", ""},
		{"abc", ""},
		{"0", ""},
		{"-5000", ""},
		{"1.5", ""},
		{"999", ""},                   // below the minimum (1,000 tomans)
		{"999999999999", ""},          // above the maximum
		{strings.Repeat("9", 40), ""}, // too long
		{"<script>", ""},
	} {
		r := c.Get(routes.TopUp + "?amount=" + url.QueryEscape(tc.amount))
		if r.Status != http.StatusOK {
			t.Errorf("amount=%q: HTTP %d", tc.amount, r.Status)
			continue
		}
		m := amountValueRE.FindStringSubmatch(r.Body)
		if m == nil || m[1] != tc.want {
			t.Errorf("amount=%q: field %v, want %q", tc.amount, m, tc.want)
		}
		if strings.Contains(r.Body, `data-testid="amount-error"`) {
			t.Errorf("amount=%q: an error is shown", tc.amount)
		}
	}
	// The quick picks link to the prefilled form and submit nothing.
	r := c.Get(routes.TopUp)
	if !strings.Contains(r.Body, `href="/wallet/topup?amount=100000"`) || strings.Contains(r.Body, `form="topup-quick"`) {
		t.Errorf("quick picks are not links to the prefilled form")
	}
	if n := apptest.Count(t, app.DB, `SELECT COUNT(*) FROM payments`); n != 0 {
		t.Errorf("%d payments written", n)
	}
	// English digits in the English form.
	c.Get(routes.TopUp + "?lang=en")
	if m := amountValueRE.FindStringSubmatch(c.Get(routes.TopUp + "?amount=250000").Body); m == nil || m[1] != "250,000" {
		t.Errorf("English prefill: %v", m)
	}
}
