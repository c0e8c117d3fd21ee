package topupread_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/topupread"
)

// expect lists the ids of the rows keep selects, in the list's order.
func expect(rows []topuptest.SeedRow, oldest bool, keep func(topuptest.SeedRow) bool) []int64 {
	var sel []topuptest.SeedRow
	for _, r := range rows {
		if keep(r) {
			sel = append(sel, r)
		}
	}
	sort.Slice(sel, func(i, j int) bool {
		a, b := sel[i], sel[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt) == oldest
		}
		return (a.ID < b.ID) == oldest
	})
	ids := make([]int64, len(sel))
	for i, r := range sel {
		ids[i] = r.ID
	}
	return ids
}

// all pages through the list with a small page size.
func all(t *testing.T, c *topupread.Reader, f topupread.Filter, pageSize int) []int64 {
	t.Helper()
	var ids []int64
	var after *topupread.Cursor
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		if after != nil {
			// The cursor goes through a URL.
			parsed, err := topupread.ParseCursor(after.String())
			if err != nil || !parsed.CreatedAt.Equal(after.CreatedAt) || parsed.ID != after.ID {
				t.Fatalf("cursor %v → %q → %v %v", *after, after.String(), parsed, err)
			}
			after = &parsed
		}
		rows, next, err := c.List(context.Background(), f, after, pageSize)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if next == nil {
			return ids
		}
		after = next
	}
}

func TestTopUpListFiltersSearchAndPagination(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rows := topuptest.Seed(t, db)
		c := topupread.New(db)
		authority := *rows[10].Authority // row 11: awaiting_payment... any with an authority
		var credited topuptest.SeedRow
		for _, r := range rows {
			if r.Status == "credited" {
				credited = r
				break
			}
		}
		from, to := topuptest.SeedBase.Add(2*time.Hour), topuptest.SeedBase.Add(5*time.Hour)
		// A real-looking public id for the receipt's short reference (the
		// seeded ones share their first characters).
		const realID = "q6sxinduugazbcdefghijklm"
		if err := db.Gorm.Exec(`UPDATE topups SET public_id = ? WHERE id = ?`, realID, rows[20].ID).Error; err != nil {
			t.Fatal(err)
		}
		rows[20].PublicID = realID
		// A short reference of letters only, which people also type in
		// lower case without dashes, and an address with a run of twelve
		// letters: such a search is the reference when a top-up's id
		// starts with it (also when an address holds the same twelve
		// letters), else part of an address.
		const lettersID = "qwsxinduugazbcdefghijklm"
		if err := db.Gorm.Exec(`UPDATE topups SET public_id = ? WHERE id = ?`, lettersID, rows[21].ID).Error; err != nil {
			t.Fatal(err)
		}
		rows[21].PublicID = lettersID
		// moveTo gives top-up i to a new user of address email.
		moveTo := func(i int, email string) {
			t.Helper()
			var uid, wid int64
			if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, role, locale, created_at) VALUES (?, 'x', 'user', 'fa', ?) RETURNING id`, email, topuptest.SeedBase).Scan(&uid).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Gorm.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, topuptest.SeedBase, topuptest.SeedBase).Scan(&wid).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Gorm.Exec(`UPDATE topups SET user_id = ?, wallet_id = ? WHERE id = ?`, uid, wid, rows[i].ID).Error; err != nil {
				t.Fatal(err)
			}
			rows[i].UserID, rows[i].WalletID, rows[i].Email = uid, wid, email
		}
		moveTo(22, "Mohammadreza.K@example.net")
		// An address holding the reference's twelve letters too.
		moveTo(23, "qwsxinduugaz.fan@example.org")
		cases := []struct {
			name string
			f    topupread.Filter
			keep func(topuptest.SeedRow) bool
		}{
			{"everything", topupread.Filter{}, func(topuptest.SeedRow) bool { return true }},
			{"one status", topupread.Filter{Statuses: []string{"failed"}}, func(r topuptest.SeedRow) bool { return r.Status == "failed" }},
			{"open statuses", topupread.Filter{Statuses: []string{"awaiting_payment", "pending_verification"}},
				func(r topuptest.SeedRow) bool {
					return r.Status == "awaiting_payment" || r.Status == "pending_verification"
				}},
			{"a status named twice", topupread.Filter{Statuses: []string{"failed", "credited", "failed"}},
				func(r topuptest.SeedRow) bool { return r.Status == "failed" || r.Status == "credited" }},
			{"two statuses and a gateway", topupread.Filter{Statuses: []string{"failed", "credited"}, Gateway: "otherbank"},
				func(r topuptest.SeedRow) bool {
					return (r.Status == "failed" || r.Status == "credited") && r.Gateway == "otherbank"
				}},
			{"two statuses and an amount range", topupread.Filter{Statuses: []string{"awaiting_payment", "credited"}, MinRials: 200_000, MaxRials: 300_000},
				func(r topuptest.SeedRow) bool {
					return (r.Status == "awaiting_payment" || r.Status == "credited") && r.AmountRials >= 200_000 && r.AmountRials <= 300_000
				}},
			{"two statuses of one whole address", topupread.Filter{Statuses: []string{"failed", "credited"}, Query: "alice@example.com"},
				func(r topuptest.SeedRow) bool {
					return (r.Status == "failed" || r.Status == "credited") && r.Email == "alice@example.com"
				}},
			{"gateway", topupread.Filter{Gateway: "otherbank"}, func(r topuptest.SeedRow) bool { return r.Gateway == "otherbank" }},
			// Not a name to write as a literal: a parameter, and nothing found.
			{"gateway not a name", topupread.Filter{Gateway: "other'bank"}, func(topuptest.SeedRow) bool { return false }},
			{"created range", topupread.Filter{From: from, To: to}, func(r topuptest.SeedRow) bool { return !r.CreatedAt.Before(from) && r.CreatedAt.Before(to) }},
			{"amount range", topupread.Filter{MinRials: 200_000, MaxRials: 300_000},
				func(r topuptest.SeedRow) bool { return r.AmountRials >= 200_000 && r.AmountRials <= 300_000 }},
			{"one amount (min = max)", topupread.Filter{MinRials: rows[6].AmountRials, MaxRials: rows[6].AmountRials},
				func(r topuptest.SeedRow) bool { return r.AmountRials == rows[6].AmountRials }},
			{"public id", topupread.Filter{Query: rows[6].PublicID}, func(r topuptest.SeedRow) bool { return r.ID == rows[6].ID }},
			{"authority", topupread.Filter{Query: authority}, func(r topuptest.SeedRow) bool { return r.Authority != nil && *r.Authority == authority }},
			{"bank reference", topupread.Filter{Query: fmt.Sprint(*credited.RefID)}, func(r topuptest.SeedRow) bool { return r.ID == credited.ID }},
			{"card suffix", topupread.Filter{Query: "1001"}, func(r topuptest.SeedRow) bool { return strings.HasSuffix(r.CardPANMasked, "1001") }},
			{"card suffix in Persian digits", topupread.Filter{Query: "۱۰۰۱"}, func(r topuptest.SeedRow) bool { return strings.HasSuffix(r.CardPANMasked, "1001") }},
			{"bank reference in Persian digits", topupread.Filter{Query: i18n.Digits(i18n.FA, fmt.Sprint(*credited.RefID))}, func(r topuptest.SeedRow) bool { return r.ID == credited.ID }},
			{"receipt's short reference", topupread.Filter{Query: i18n.ShortRef(realID)}, func(r topuptest.SeedRow) bool { return r.ID == rows[20].ID }},
			{"short reference without dashes, lower case", topupread.Filter{Query: " q6sxinduugaz "}, func(r topuptest.SeedRow) bool { return r.ID == rows[20].ID }},
			{"short reference of letters, lower case, no dashes", topupread.Filter{Query: "qwsxinduugaz"}, func(r topuptest.SeedRow) bool { return r.ID == rows[21].ID }},
			{"same shape, upper case: only the reference", topupread.Filter{Query: "QWSXINDUUGAZ"}, func(r topuptest.SeedRow) bool { return r.ID == rows[21].ID }},
			{"twelve letters of an address", topupread.Filter{Query: "mohammadreza"}, func(r topuptest.SeedRow) bool { return r.ID == rows[22].ID }},
			{"twelve letters of a reference and of an address: the reference", topupread.Filter{Query: "qwsxinduugaz"}, func(r topuptest.SeedRow) bool { return r.ID == rows[21].ID }},
			{"twelve letters with a status", topupread.Filter{Query: "qwsxinduugaz", Statuses: []string{rows[22].Status}}, func(r topuptest.SeedRow) bool { return r.ID == rows[21].ID && r.Status == rows[22].Status }},
			{"email part, any case", topupread.Filter{Query: "BOB.smith"}, func(r topuptest.SeedRow) bool { return r.Email == "Bob.Smith@Example.com" }},
			{"whole email", topupread.Filter{Query: "alice@example.com"}, func(r topuptest.SeedRow) bool { return r.Email == "alice@example.com" }},
			{"email wildcard is literal", topupread.Filter{Query: "carol_x"}, func(r topuptest.SeedRow) bool { return r.Email == "carol_x@test.org" }},
			{"underscore matches no other", topupread.Filter{Query: "carol%"}, func(topuptest.SeedRow) bool { return false }},
			{"nothing found", topupread.Filter{Query: "99999999999999999999999"}, func(topuptest.SeedRow) bool { return false }},
			{"combined", topupread.Filter{Statuses: []string{"credited", "failed"}, Query: "example.com", MinRials: 150_000},
				func(r topuptest.SeedRow) bool {
					return (r.Status == "credited" || r.Status == "failed") && strings.HasSuffix(strings.ToLower(r.Email), "example.com") && r.AmountRials >= 150_000
				}},
		}
		for _, tc := range cases {
			for _, oldest := range []bool{false, true} {
				f := tc.f
				f.Oldest = oldest
				want := expect(rows, oldest, tc.keep)
				for _, size := range []int{3, 50} {
					got := all(t, c, f, size)
					if !slices.Equal(got, want) {
						t.Errorf("%s (oldest %v, pages of %d): got %v, want %v", tc.name, oldest, size, got, want)
					}
				}
				// Counts per status under the same filter (status left out).
				counts, err := c.StatusCounts(context.Background(), f, topupread.CountCap)
				if err != nil {
					t.Fatal(err)
				}
				for _, st := range topupread.Statuses {
					f2 := f
					f2.Statuses = nil
					n := len(expect(rows, oldest, func(r topuptest.SeedRow) bool { return r.Status == st && slices.Contains(all(t, c, f2, 50), r.ID) }))
					if counts[st] != int64(n) {
						t.Errorf("%s: count of %s = %d, want %d", tc.name, st, counts[st], n)
					}
				}
			}
		}
		// A count is capped.
		capped, err := c.StatusCounts(context.Background(), topupread.Filter{}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if capped["credited"] != 3 {
			t.Errorf("capped count %d, want 3 (more than 2)", capped["credited"])
		}
		// Every row once, through EachPayment.
		var each []int64
		if err := c.EachTopUp(context.Background(), topupread.Filter{}, nil, func(p topupread.TopUp) error { each = append(each, p.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(each, expect(rows, false, func(topuptest.SeedRow) bool { return true })) {
			t.Errorf("EachPayment: %v", each)
		}
		// An unknown status is refused, not ignored.
		if _, _, err := c.List(context.Background(), topupread.Filter{Statuses: []string{"paid'; DROP TABLE topups; --"}}, nil, 10); err == nil {
			t.Error("unknown status accepted")
		}
	})
}

func TestSearchKind(t *testing.T) {
	for q, want := range map[string]topupread.SearchKind{
		"":                                       topupread.SearchNone,
		"1234":                                   topupread.SearchCard,
		"12345678901":                            topupread.SearchRefID,
		"abcdefghijklmnopqrstuvwx":               topupread.SearchPublicID,
		"S00000000000000000000000000000000001":   topupread.SearchAuthority,
		"A0000000000000000000000000000000000001": topupread.SearchAuthority,
		"sara":                                   topupread.SearchEmail,
		"sara@example.com":                       topupread.SearchEmail,
		"abcdefghijklmnopq":                      topupread.SearchEmail,
		"Q6SX-INDU-UGAZ":                         topupread.SearchShortRef,
		"q6sx-indu-ugaz":                         topupread.SearchShortRef,
		"Q6SXINDUUGAZ":                           topupread.SearchShortRef,
		"q6sxinduugaz":                           topupread.SearchShortRef,
		"mohammadreza":                           topupread.SearchShortRefOrEmail,
		"MOHAMMADREZA":                           topupread.SearchShortRef,
		"۶۰۳۷":                                   topupread.SearchCard,
		"۵۰۰۰۰۰۱۶":                               topupread.SearchRefID,
	} {
		if got := topupread.KindOf(q); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", q, got, want)
		}
	}
	for _, bad := range []string{"", "x", "12", "-1-2", "1-0", "a-1"} {
		if _, err := topupread.ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q) accepted", bad)
		}
	}
}

// TestFragmentTooWide: a search by part of an e-mail address that more
// than FragmentUsers addresses contain is refused (the page asks for a
// longer part); at FragmentUsers it is run; a whole address or another
// kind of search is never refused.
func TestFragmentTooWide(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		c := topupread.New(db)
		var emails []string
		for i := range topupread.FragmentUsers {
			emails = append(emails, fmt.Sprintf("wide%d@example.com", i))
		}
		topuptest.SeedUsers(t, db, emails...)
		wide := func(q string) bool {
			t.Helper()
			w, err := c.FragmentTooWide(context.Background(), topupread.Filter{Query: q})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		if wide("WIDE") {
			t.Errorf("%d addresses: refused", topupread.FragmentUsers)
		}
		topuptest.SeedUsers(t, db, "another.wide@example.com")
		for q, want := range map[string]bool{"WIDE": true, "wide1": false, "wide1@example.com": false, "example.com": true, "1234": false} {
			if got := wide(q); got != want {
				t.Errorf("%q: too wide %v, want %v", q, got, want)
			}
		}
	})
}

// TestLiteralsRefuseAnythingButAStatus: the statuses written into a
// statement as literals are bare words; anything else panics before it
// reaches SQL.
func TestLiteralsRefuseAnythingButAStatus(t *testing.T) {
	for _, bad := range []string{"", "credited' OR '1'='1", "Credited", "needs review", "a;b"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%q written as a literal", bad)
				}
			}()
			_ = topupread.LiteralsForTest([]string{"credited", bad})
		}()
	}
	if got := topupread.LiteralsForTest([]string{"credited", "needs_review"}); got != "'credited', 'needs_review'" {
		t.Errorf("literals: %s", got)
	}
}

// The range of the public ids a short reference starts with holds in a
// linguistic collation too (PostgreSQL's ICU): a bound such as the prefix
// and "~" holds in byte order only, where punctuation sorts after letters.
func TestPrefixRangeUnderLinguisticCollation(t *testing.T) {
	db := storetest.New(t, store.Postgres)
	const id = "qwsxinduugazbcdefghijklm"
	lo, hi := topupread.PrefixRangeForTest("qwsxinduugaz")
	var icu int64
	if err := db.Gorm.Raw(`SELECT COUNT(*) FROM pg_collation WHERE collname = 'en-US-x-icu'`).Scan(&icu).Error; err != nil {
		t.Fatal(err)
	}
	collations := []string{"C"}
	if icu > 0 {
		collations = append(collations, "en-US-x-icu")
	}
	for _, coll := range collations {
		var in, tilde bool
		if err := db.Gorm.Raw(`SELECT ?::text COLLATE "`+coll+`" BETWEEN ? AND ?, ?::text COLLATE "`+coll+`" < ?`,
			id, lo, hi, id, "qwsxinduugaz~").Row().Scan(&in, &tilde); err != nil {
			t.Fatal(err)
		}
		if !in {
			t.Errorf("collation %s: %s is not in [%s, %s]", coll, id, lo, hi)
		}
		t.Logf("collation %s: the old bound (prefix + \"~\") held: %v", coll, tilde)
	}
	for _, other := range []string{"qwsxinduugaa" + "zzzzzzzzzzzz", "qwsxinduugb2" + "222222222222"} {
		var in bool
		if err := db.Gorm.Raw(`SELECT ?::text BETWEEN ? AND ?`, other, lo, hi).Row().Scan(&in); err != nil {
			t.Fatal(err)
		}
		if in {
			t.Errorf("%s, another prefix, is in [%s, %s]", other, lo, hi)
		}
	}
}
