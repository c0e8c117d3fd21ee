package admin_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/topupread"
)

var (
	publicIDAttr = regexp.MustCompile(`data-testid="payment-row" data-public-id="([a-z2-7]+)"`)
	nextLink     = regexp.MustCompile(`href="(` + regexp.QuoteMeta(routes.AdminTopUps) + `\?[^"]*cursor=[^"]*)" rel="next"`)
)

func publicIDs(rows []topuptest.SeedRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.PublicID
	}
	return out
}

// listAll follows the list's next links from path and returns every row's
// public id, in order.
func listAll(t *testing.T, c *apptest.Client, path string) []string {
	t.Helper()
	var ids []string
	for pages := 0; path != ""; pages++ {
		if pages > 50 {
			t.Fatal("pagination does not end")
		}
		r := c.Get(path)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, r.Status)
		}
		for _, m := range publicIDAttr.FindAllStringSubmatch(r.Body, -1) {
			ids = append(ids, m[1])
		}
		path = ""
		if m := nextLink.FindStringSubmatch(r.Body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	return ids
}

func TestConsoleTopUpListAndCSV(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Unchecked: "topuptest.SeedN writes top-ups without their events and ledger transactions"})
		rows := topuptest.SeedN(t, db, 120)
		admin := app.NewAdmin(t, "boss@example.com")
		all := func(topuptest.SeedRow) bool { return true }
		cases := []struct {
			name   string
			query  string
			oldest bool
			keep   func(topuptest.SeedRow) bool
		}{
			{"default view", "", false, all},
			{"oldest first", "sort=oldest", true, all},
			{"two statuses", "status=credited&status=failed", false, func(r topuptest.SeedRow) bool { return r.Status == "credited" || r.Status == "failed" }},
			{"gateway", "gateway=otherbank", false, func(r topuptest.SeedRow) bool { return r.Gateway == "otherbank" }},
			// The seeded payments were all made on 1 Farvardin 1403, Tehran time.
			{"Jalali day, Persian digits", "from=" + url.QueryEscape("۱۴۰۳/۰۱/۰۱") + "&to=1403/01/01", false, all},
			{"a later day", "from=1403/01/02", false, func(topuptest.SeedRow) bool { return false }},
			{"amount in tomans", "min=20000&max=" + url.QueryEscape("۳۰٬۰۰۰"), false,
				func(r topuptest.SeedRow) bool { return r.AmountRials >= 200_000 && r.AmountRials <= 300_000 }},
			{"card suffix", "q=1002", false, func(r topuptest.SeedRow) bool { return strings.HasSuffix(r.CardPANMasked, "1002") }},
			{"email, oldest first", "q=carol&sort=oldest", true, func(r topuptest.SeedRow) bool { return r.Email == "carol_x@test.org" }},
			{"public id", "q=" + rows[7].PublicID, false, func(r topuptest.SeedRow) bool { return r.ID == rows[7].ID }},
		}
		for _, tc := range cases {
			ordered := topuptest.InListOrder(rows, tc.oldest, tc.keep)
			want := publicIDs(ordered)
			got := listAll(t, admin, routes.AdminTopUps+"?"+tc.query)
			if !slices.Equal(got, want) {
				t.Errorf("%s: got %d rows %v, want %d %v", tc.name, len(got), got, len(want), want)
			}
			// The CSV of the same filter has exactly the same rows.
			r := admin.Get(routes.AdminTopUpsCSV + "?" + tc.query)
			if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
				t.Fatalf("%s: csv %d %s", tc.name, r.Status, r.Header.Get("Content-Type"))
			}
			if !strings.HasPrefix(r.Body, "\ufeff") {
				t.Fatalf("%s: csv without a byte order mark", tc.name)
			}
			recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(r.Body, "\ufeff"))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if recs[0][0] != "public_id" {
				t.Fatalf("csv header %v", recs[0])
			}
			var csvIDs []string
			for _, rec := range recs[1:] {
				csvIDs = append(csvIDs, rec[0])
			}
			if !slices.Equal(csvIDs, want) {
				t.Errorf("%s: csv rows %v, want %v", tc.name, csvIDs, want)
			}
			// From the list's cursor (what a cut file's last row names):
			// the rows after it, in the list's order.
			if len(ordered) > 10 {
				cur := topupread.Cursor{CreatedAt: ordered[9].CreatedAt, ID: ordered[9].ID}
				q := url.Values{"cursor": {cur.String()}}.Encode()
				if tc.query != "" {
					q = tc.query + "&" + q
				}
				r := admin.Get(routes.AdminTopUpsCSV + "?" + q)
				recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(r.Body, "\ufeff"))).ReadAll()
				var rest []string
				for _, rec := range recs[1:] {
					rest = append(rest, rec[0])
				}
				if err != nil || !slices.Equal(rest, want[10:]) {
					t.Errorf("%s: csv after the cursor: %v (%v), want %v", tc.name, rest, err, want[10:])
				}
			}
		}
		// A credited payment's CSV line carries its details.
		r := admin.Get(routes.AdminTopUpsCSV + "?status=credited&sort=oldest")
		recs, _ := csv.NewReader(strings.NewReader(strings.TrimPrefix(r.Body, "\ufeff"))).ReadAll()
		first := topuptest.InListOrder(rows, true, func(r topuptest.SeedRow) bool { return r.Status == "credited" })[0]
		if got := recs[1]; got[2] != "credited" || got[3] != fmt.Sprint(first.AmountRials) || got[9] != fmt.Sprint(*first.RefID) || got[6] != first.Email {
			t.Errorf("csv line %v for %+v", got, first)
		}
		// Beside the ISO instant: the Jalali date, the Tehran time and the
		// status in the admin's language (this admin chose English).
		if h, got := recs[0], recs[1]; len(got) != 15 || h[12] != "created_date_jalali" || h[14] != "status_en" ||
			got[12] != i18n.JalaliDate(i18n.EN, first.CreatedAt) || got[13] != i18n.TehranClock(first.CreatedAt) || got[14] != "Credited" {
			t.Errorf("csv localized columns %v / %v", h, got)
		}
		// Counts per status for the current filter.
		page := admin.Get(routes.AdminTopUps + "?gateway=otherbank")
		for _, st := range []string{"credited", "failed"} {
			n := len(topuptest.InListOrder(rows, false, func(r topuptest.SeedRow) bool { return r.Gateway == "otherbank" && r.Status == st }))
			if !strings.Contains(page.Body, fmt.Sprintf(`data-status="%s" data-count="%d"`, st, n)) {
				t.Errorf("count of %s under the filter: want %d", st, n)
			}
		}
		// Bad parameters: a clear 400, for the page and the CSV.
		for _, q := range []string{"from=yesterday", "status=paid", "cursor=abc", "min=-5", "sort=random", "from=1403/02/01&to=1403/01/01"} {
			if r := admin.Get(routes.AdminTopUps + "?" + q); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, `data-testid="filter-error"`) {
				t.Errorf("%s: %d", q, r.Status)
			}
			if r := admin.Get(routes.AdminTopUpsCSV + "?" + q); r.Status != http.StatusBadRequest {
				t.Errorf("csv %s: %d", q, r.Status)
			}
		}
	})
}

// TestConsoleFragmentTooWide: a search by part of an e-mail address that
// more than topupread.FragmentUsers addresses contain answers 400 with a
// message asking for more of the address (in the page's language, with
// the number), lists nothing, and its CSV is refused; a longer part lists.
func TestConsoleFragmentTooWide(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Unchecked: "topuptest.SeedN writes top-ups without their events and ledger transactions"})
		topuptest.SeedN(t, db, 10)
		var emails []string
		for i := range topupread.FragmentUsers + 1 {
			emails = append(emails, fmt.Sprintf("many%d@example.org", i))
		}
		topuptest.SeedUsers(t, db, emails...)
		admin := app.NewAdmin(t, "boss@example.com")
		for _, l := range []i18n.Lang{i18n.EN, i18n.FA} {
			r := admin.GetIn(string(l), routes.AdminTopUps+"?q=many")
			el := apptest.Parse(r.Body).TestID("filter-error")
			if r.Status != http.StatusBadRequest || el == nil || el.Text() != i18n.T(l, "admin.error.fragment_wide") {
				t.Fatalf("%s: status %d, message %v", l, r.Status, el)
			}
			if !strings.Contains(el.Text(), i18n.Digits(l, strconv.Itoa(topupread.FragmentUsers))) {
				t.Errorf("%s: %q does not say how many", l, el.Text())
			}
		}
		if r := admin.Get(routes.AdminTopUpsCSV + "?q=many"); r.Status != http.StatusBadRequest {
			t.Errorf("CSV of a too wide search: %d", r.Status)
		}
		if r := admin.Get(routes.AdminTopUps + "?q=" + url.QueryEscape("alice")); r.Status != http.StatusOK || len(publicIDAttr.FindAllString(r.Body, -1)) == 0 {
			t.Errorf("a narrow part: status %d, no rows", r.Status)
		}
	})
}

// TestSearchTooShort: a search by part of an e-mail address without three
// letters or digits in a row (no index can find it: it would read every
// user) answers 400 with a sentence asking for more, in the page's
// language, on the payments list, its CSV and the users list, and lists
// nothing; the users list marks its field. Three in a row search, and so
// does a whole address however short (exactly: not "ax@y.ir" for
// "x@y.ir").
func TestSearchTooShort(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Unchecked: "topuptest.SeedN writes top-ups without their events and ledger transactions"})
		topuptest.SeedN(t, db, 10)
		admin := app.NewAdmin(t, "boss@example.com")
		for _, q := range []string{"al", "a.l", "b.s@e", "a_%"} {
			for _, l := range []i18n.Lang{i18n.EN, i18n.FA} {
				want := i18n.T(l, "admin.error.fragment_short")
				r := admin.GetIn(string(l), routes.AdminTopUps+"?q="+url.QueryEscape(q))
				page := apptest.Parse(r.Body)
				if el := page.TestID("filter-error"); r.Status != http.StatusBadRequest || el == nil || el.Text() != want {
					t.Errorf("payments ?q=%s (%s): status %d, message %v", q, l, r.Status, el)
				}
				if n := len(publicIDAttr.FindAllString(r.Body, -1)); n != 0 {
					t.Errorf("payments ?q=%s: %d rows listed", q, n)
				}
				r = admin.GetIn(string(l), routes.AdminUsers+"?q="+url.QueryEscape(q))
				page = apptest.Parse(r.Body)
				el := page.TestID("users-error")
				if r.Status != http.StatusBadRequest || el == nil || el.Text() != want || el.Attr("id") != "users-error" {
					t.Fatalf("users ?q=%s (%s): status %d, message %v", q, l, r.Status, el)
				}
				if in := page.ByID("u-q"); in == nil || in.Attr("aria-invalid") != "true" || in.Attr("aria-describedby") != "users-error" || in.Attr("value") != q {
					t.Errorf("users ?q=%s: the field is not marked, or lost the text", q)
				}
				if len(page.TestIDs("user-row")) != 0 || page.TestID("no-users") != nil {
					t.Errorf("users ?q=%s: a result section is shown", q)
				}
			}
			if r := admin.Get(routes.AdminTopUpsCSV + "?q=" + url.QueryEscape(q)); r.Status != http.StatusBadRequest {
				t.Errorf("CSV ?q=%s: %d", q, r.Status)
			}
		}
		// A whole address is that person, however short: searched exactly.
		topuptest.SeedUsers(t, db, "x@y.ir", "ax@y.ir")
		if r := admin.Get(routes.AdminUsers + "?q=" + url.QueryEscape("X@y.ir")); r.Status != http.StatusOK || strings.Count(r.Body, `data-testid="user-row"`) != 1 ||
			!strings.Contains(r.Body, "x@y.ir") {
			t.Errorf("users ?q=X@y.ir: status %d, %d rows, want the one person", r.Status, strings.Count(r.Body, `data-testid="user-row"`))
		}
		if r := admin.Get(routes.AdminTopUps + "?q=" + url.QueryEscape("x@y.ir")); r.Status != http.StatusOK {
			t.Errorf("payments ?q=x@y.ir: status %d, want 200 (a whole address)", r.Status)
		}
		// Three in a row, anywhere in the text: found.
		for _, q := range []string{"ali", "b.smi", "x@tes"} {
			if r := admin.Get(routes.AdminTopUps + "?q=" + url.QueryEscape(q)); r.Status != http.StatusOK || len(publicIDAttr.FindAllString(r.Body, -1)) == 0 {
				t.Errorf("payments ?q=%s: status %d, no rows", q, r.Status)
			}
			if r := admin.Get(routes.AdminUsers + "?q=" + url.QueryEscape(q)); r.Status != http.StatusOK || strings.Count(r.Body, `data-testid="user-row"`) != 1 {
				t.Errorf("users ?q=%s: status %d, %d rows, want 1", q, r.Status, strings.Count(r.Body, `data-testid="user-row"`))
			}
		}
	})
}
