package wallet_test

import (
	"encoding/csv"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	ptime "github.com/yaa110/go-persian-calendar"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// paymentRows reads the list's rows: each one's public id and status.
func topUpRows(body string) (ids, statuses []string) {
	for _, row := range apptest.Parse(body).TestIDs("payment-row") {
		ids, statuses = append(ids, row.Attr("data-public-id")), append(statuses, row.Attr("data-status"))
	}
	return ids, statuses
}

// /wallet/payments lists every attempt of the payer (credited, open,
// failed), newest first, filtered by status and a Jalali date range typed
// in any digits, keyset-paged, each row linking to its page; the CSV has
// the same rows with a BOM, Jalali date, Tehran time, ISO UTC and the
// status in the payer's language. Nobody sees another payer's rows.
func TestWalletTopUpsListAndCSV(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c, payURL := app.StartTopUp(t, "history@example.com", "50000")
		c.Get(c.PayAtBank(payURL, "pay")) // credited
		csrf, tok := c.TopUpForm()
		r := c.PostTopUp(csrf, tok, "20000")
		c.Get(c.PayAtBank(r.Location, "cancel")) // failed
		csrf, tok = c.TopUpForm()
		c.PostTopUp(csrf, tok, "30000") // open
		other, _ := app.StartTopUp(t, "other@example.com", "70000")
		_ = other

		wallet := c.Get(routes.Wallet)
		if !slices.Contains(apptest.Parse(wallet.Body).Attrs("href"), routes.WalletTopUps) {
			t.Fatal("the wallet page does not link to the payments list")
		}
		page := c.Get(routes.WalletTopUps)
		ids, statuses := topUpRows(page.Body)
		if page.Status != http.StatusOK || strings.Join(statuses, ",") != "awaiting_payment,failed,credited" {
			t.Fatalf("list: %d %v", page.Status, statuses)
		}
		links := apptest.Parse(page.Body).Attrs("href")
		// Each row names its gateway, in the page's language; the date
		// fields' placeholders read as a format, not as a date (issue 29,
		// item 4).
		for _, g := range apptest.Parse(page.Body).TestIDs("payment-gateway") {
			if g.Text() != i18n.T(i18n.FA, "gateway.name.zarinpal") {
				t.Errorf("gateway column %q", g.Text())
			}
		}
		if n := len(apptest.Parse(page.Body).TestIDs("payment-gateway")); n != 3 {
			t.Errorf("%d gateway cells, want 3", n)
		}
		for _, id := range []string{"filter-from", "filter-to"} {
			if ph := apptest.Parse(page.Body).TestID(id).Attr("placeholder"); ph != i18n.T(i18n.FA, "paylist.date_placeholder") || strings.ContainsAny(ph, "0123456789۰۱۲۳۴۵۶۷۸۹") {
				t.Errorf("%s placeholder %q looks like a value", id, ph)
			}
		}
		for _, id := range ids {
			if !slices.Contains(links, routes.TopUpPage(id)) {
				t.Fatalf("row %s does not link to its page", id)
			}
		}
		for filter, want := range map[string]string{"failed": "failed", "credited": "credited", "open": "awaiting_payment"} {
			_, st := topUpRows(c.Get(routes.WalletTopUps + "?status=" + filter).Body)
			if strings.Join(st, ",") != want {
				t.Errorf("status=%s: %v", filter, st)
			}
		}
		// Today in Persian digits (Jalali) includes all; yesterday's range none.
		now := time.Now()
		tehran := time.FixedZone("IRST", 3*3600+1800)
		today := i18n.Digits(i18n.FA, ptime.New(now.In(tehran)).Format("yyyy/MM/dd"))
		yesterday := ptime.New(now.Add(-24 * time.Hour).In(tehran)).Format("yyyy/MM/dd")
		if _, st := topUpRows(c.Get(routes.WalletTopUps + "?from=" + today + "&to=" + today).Body); len(st) != 3 {
			t.Fatalf("today (%s): %v", today, st)
		}
		if _, st := topUpRows(c.Get(routes.WalletTopUps + "?to=" + yesterday).Body); len(st) != 0 {
			t.Fatalf("until yesterday (%s): %v", yesterday, st)
		}
		if r := c.Get(routes.WalletTopUps + "?from=1404/13/40"); r.Status != http.StatusBadRequest || apptest.Parse(r.Body).TestID("filter-error") == nil {
			t.Fatalf("bad date: %d", r.Status)
		}
		if r := c.Get(routes.WalletTopUps + "?status=stolen"); r.Status != http.StatusBadRequest {
			t.Fatalf("bad status: %d", r.Status)
		}
		// Keyset paging: 30 more attempts, 25 a page, no row twice or lost.
		for range 30 {
			csrf, tok := c.TopUpForm()
			c.PostTopUp(csrf, tok, "10000")
		}
		seen := map[string]bool{}
		next := routes.WalletTopUps
		for pages := 0; next != ""; pages++ {
			body := c.Get(next).Body
			ids, _ := topUpRows(body)
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("row %s twice", id)
				}
				seen[id] = true
			}
			next = apptest.Parse(body).TestID("payments-older").Attr("href") // "" on the last page
			if next != "" && !strings.HasPrefix(next, routes.WalletTopUps+"?before=") {
				t.Fatalf("older rows at %q", next)
			}
			if pages > 3 {
				t.Fatal("paging does not end")
			}
		}
		if len(seen) != 33 {
			t.Fatalf("%d rows over the pages, want 33", len(seen))
		}

		// CSV in Persian (the payer's language), filtered.
		resp := c.Get(routes.WalletTopUpsCSV + "?status=failed")
		if resp.Status != http.StatusOK || !strings.HasPrefix(resp.Body, "\uFEFF") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
			t.Fatalf("csv: %d %q", resp.Status, resp.Header.Get("Content-Type"))
		}
		recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(resp.Body, "\uFEFF"))).ReadAll()
		if err != nil || len(recs) != 2 {
			t.Fatalf("csv rows: %d %v", len(recs), err)
		}
		row := recs[1]
		if !regexp.MustCompile(`^14\d\d/\d\d/\d\d$`).MatchString(row[0]) || !regexp.MustCompile(`^\d\d:\d\d:\d\d$`).MatchString(row[1]) {
			t.Fatalf("Jalali date / Tehran time: %q %q", row[0], row[1])
		}
		if _, err := time.Parse(time.RFC3339, row[2]); err != nil || row[3] != "200000" || row[5] != "ناموفق" || row[6] != "failed" ||
			recs[0][11] != i18n.T(i18n.FA, "paylist.col_gateway") || row[11] != i18n.T(i18n.FA, "gateway.name.zarinpal") {
			t.Fatalf("csv row %q", row)
		}
		c.GetIn("en", routes.Wallet)
		recs, _ = csv.NewReader(strings.NewReader(strings.TrimPrefix(c.Get(routes.WalletTopUpsCSV+"?status=failed").Body, "\uFEFF"))).ReadAll()
		if recs[0][0] != "Date (Jalali)" || recs[1][5] != "Failed" {
			t.Fatalf("English csv: %q", recs)
		}
		all, _ := csv.NewReader(strings.NewReader(strings.TrimPrefix(c.Get(routes.WalletTopUpsCSV).Body, "\uFEFF"))).ReadAll()
		if len(all) != 34 {
			t.Fatalf("csv of everything: %d rows, want 33 and the header", len(all))
		}
		// From a cursor (what a cut file's last row names): the older
		// rows only, as the list's next page (25 a page).
		older := apptest.Parse(c.Get(routes.WalletTopUps).Body).TestID("payments-older").Attr("href")
		rest, _ := csv.NewReader(strings.NewReader(strings.TrimPrefix(c.Get(routes.WalletTopUpsCSV+strings.TrimPrefix(older, routes.WalletTopUps)).Body, "\uFEFF"))).ReadAll()
		if !strings.Contains(older, "before=") || len(rest) != 34-25 {
			t.Fatalf("csv before %q: %d rows, want %d and the header", older, len(rest), 33-25)
		}
		if r := c.Get(routes.WalletTopUpsCSV + "?before=x"); r.Status != http.StatusBadRequest {
			t.Errorf("a bad cursor: %d", r.Status)
		}
		if strings.Contains(c.Get(routes.WalletTopUpsCSV).Body, "700000") {
			t.Fatal("another payer's payment is in the export")
		}
		if r := app.NewClient(t).Get(routes.WalletTopUps); r.Status != http.StatusSeeOther {
			t.Fatalf("signed out: %d", r.Status)
		}
	})
}
