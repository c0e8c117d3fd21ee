package wallet_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// GET /wallet/topup?amount=N (whole tomans) fills the form in (quick picks
// without JavaScript, "try again"); anything else gives the empty form,
// never an error page, and nothing is written.
func TestTopUpFormPrefill(t *testing.T) {
	t.Parallel()
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
		doc := apptest.Parse(r.Body)
		if field := doc.ByID("amount"); field == nil || field.Attr("value") != tc.want {
			t.Errorf("amount=%q: field %q, want %q", tc.amount, field.Attr("value"), tc.want)
		}
		if doc.TestID("amount-error") != nil {
			t.Errorf("amount=%q: an error is shown", tc.amount)
		}
	}
	// The quick picks link to the prefilled form and submit nothing.
	doc := apptest.Parse(c.Get(routes.TopUp).Body)
	if !slices.Contains(doc.Attrs("href"), routes.TopUp+"?amount=100000") || slices.Contains(doc.Attrs("form"), "topup-quick") {
		t.Errorf("quick picks are not links to the prefilled form")
	}
	if n := topuptest.Count(t, app.DB); n != 0 {
		t.Errorf("%d payments written", n)
	}
	// English digits in the English form.
	c.Get(routes.TopUp + "?lang=en")
	if got := apptest.Parse(c.Get(routes.TopUp + "?amount=250000").Body).ByID("amount").Attr("value"); got != "250,000" {
		t.Errorf("English prefill: %q", got)
	}
}
