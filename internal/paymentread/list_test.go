package paymentread_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/payment/paymenttest"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// expect lists the ids of the rows keep selects, in the list's order.
func expect(rows []paymenttest.SeedRow, oldest bool, keep func(paymenttest.SeedRow) bool) []int64 {
	var sel []paymenttest.SeedRow
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
func all(t *testing.T, c *paymentread.Reader, f paymentread.Filter, pageSize int) []int64 {
	t.Helper()
	var ids []int64
	var after *paymentread.Cursor
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		if after != nil {
			// The cursor goes through a URL.
			parsed, err := paymentread.ParseCursor(after.String())
			if err != nil || !parsed.CreatedAt.Equal(after.CreatedAt) || parsed.ID != after.ID {
				t.Fatalf("cursor %v → %q → %v %v", *after, after.String(), parsed, err)
			}
			after = &parsed
		}
		rows, next, err := c.Payments(context.Background(), f, after, pageSize)
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

func TestPaymentListFiltersSearchAndPagination(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rows := paymenttest.Seed(t, db)
		c := paymentread.New(db)
		authority := *rows[10].Authority // row 11: awaiting_payment... any with an authority
		var credited paymenttest.SeedRow
		for _, r := range rows {
			if r.Status == "credited" {
				credited = r
				break
			}
		}
		from, to := paymenttest.SeedBase.Add(2*time.Hour), paymenttest.SeedBase.Add(5*time.Hour)
		// A real-looking public id for the receipt's short reference (the
		// seeded ones share their first characters).
		const realID = "q6sxinduugazbcdefghijklm"
		if err := db.Gorm.Exec(`UPDATE payments SET public_id = ? WHERE id = ?`, realID, rows[20].ID).Error; err != nil {
			t.Fatal(err)
		}
		rows[20].PublicID = realID
		// A short reference of letters only, which people also type in
		// lower case without dashes, and an address with a run of twelve
		// letters: such a search looks for both.
		const lettersID = "qwsxinduugazbcdefghijklm"
		if err := db.Gorm.Exec(`UPDATE payments SET public_id = ? WHERE id = ?`, lettersID, rows[21].ID).Error; err != nil {
			t.Fatal(err)
		}
		rows[21].PublicID = lettersID
		const twelveEmail = "Mohammadreza.K@example.net"
		var uid, wid int64
		if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, role, locale, created_at) VALUES (?, 'x', 'user', 'fa', ?) RETURNING id`, twelveEmail, paymenttest.SeedBase).Scan(&uid).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Raw(`INSERT INTO wallets (user_id, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, uid, paymenttest.SeedBase, paymenttest.SeedBase).Scan(&wid).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Exec(`UPDATE payments SET user_id = ?, wallet_id = ? WHERE id = ?`, uid, wid, rows[22].ID).Error; err != nil {
			t.Fatal(err)
		}
		rows[22].UserID, rows[22].WalletID, rows[22].Email = uid, wid, twelveEmail
		cases := []struct {
			name string
			f    paymentread.Filter
			keep func(paymenttest.SeedRow) bool
		}{
			{"everything", paymentread.Filter{}, func(paymenttest.SeedRow) bool { return true }},
			{"one status", paymentread.Filter{Statuses: []string{"failed"}}, func(r paymenttest.SeedRow) bool { return r.Status == "failed" }},
			{"open statuses", paymentread.Filter{Statuses: []string{"awaiting_payment", "pending_verification"}},
				func(r paymenttest.SeedRow) bool {
					return r.Status == "awaiting_payment" || r.Status == "pending_verification"
				}},
			{"gateway", paymentread.Filter{Gateway: "otherbank"}, func(r paymenttest.SeedRow) bool { return r.Gateway == "otherbank" }},
			{"created range", paymentread.Filter{From: from, To: to}, func(r paymenttest.SeedRow) bool { return !r.CreatedAt.Before(from) && r.CreatedAt.Before(to) }},
			{"amount range", paymentread.Filter{MinRials: 200_000, MaxRials: 300_000},
				func(r paymenttest.SeedRow) bool { return r.AmountRials >= 200_000 && r.AmountRials <= 300_000 }},
			{"public id", paymentread.Filter{Query: rows[6].PublicID}, func(r paymenttest.SeedRow) bool { return r.ID == rows[6].ID }},
			{"authority", paymentread.Filter{Query: authority}, func(r paymenttest.SeedRow) bool { return r.Authority != nil && *r.Authority == authority }},
			{"bank reference", paymentread.Filter{Query: fmt.Sprint(*credited.RefID)}, func(r paymenttest.SeedRow) bool { return r.ID == credited.ID }},
			{"card suffix", paymentread.Filter{Query: "1001"}, func(r paymenttest.SeedRow) bool { return strings.HasSuffix(r.CardPANMasked, "1001") }},
			{"card suffix in Persian digits", paymentread.Filter{Query: "۱۰۰۱"}, func(r paymenttest.SeedRow) bool { return strings.HasSuffix(r.CardPANMasked, "1001") }},
			{"bank reference in Persian digits", paymentread.Filter{Query: i18n.Digits(i18n.FA, fmt.Sprint(*credited.RefID))}, func(r paymenttest.SeedRow) bool { return r.ID == credited.ID }},
			{"receipt's short reference", paymentread.Filter{Query: i18n.ShortRef(realID)}, func(r paymenttest.SeedRow) bool { return r.ID == rows[20].ID }},
			{"short reference without dashes, lower case", paymentread.Filter{Query: " q6sxinduugaz "}, func(r paymenttest.SeedRow) bool { return r.ID == rows[20].ID }},
			{"short reference of letters, lower case, no dashes", paymentread.Filter{Query: "qwsxinduugaz"}, func(r paymenttest.SeedRow) bool { return r.ID == rows[21].ID }},
			{"same shape, upper case: only the reference", paymentread.Filter{Query: "QWSXINDUUGAZ"}, func(r paymenttest.SeedRow) bool { return r.ID == rows[21].ID }},
			{"twelve letters of an address", paymentread.Filter{Query: "mohammadreza"}, func(r paymenttest.SeedRow) bool { return r.ID == rows[22].ID }},
			{"twelve letters with a status", paymentread.Filter{Query: "qwsxinduugaz", Statuses: []string{rows[22].Status}}, func(r paymenttest.SeedRow) bool { return r.ID == rows[21].ID && r.Status == rows[22].Status }},
			{"email part, any case", paymentread.Filter{Query: "BOB.smith"}, func(r paymenttest.SeedRow) bool { return r.Email == "Bob.Smith@Example.com" }},
			{"whole email", paymentread.Filter{Query: "alice@example.com"}, func(r paymenttest.SeedRow) bool { return r.Email == "alice@example.com" }},
			{"email wildcard is literal", paymentread.Filter{Query: "carol_x"}, func(r paymenttest.SeedRow) bool { return r.Email == "carol_x@test.org" }},
			{"underscore matches no other", paymentread.Filter{Query: "carol%"}, func(paymenttest.SeedRow) bool { return false }},
			{"nothing found", paymentread.Filter{Query: "99999999999999999999999"}, func(paymenttest.SeedRow) bool { return false }},
			{"combined", paymentread.Filter{Statuses: []string{"credited", "failed"}, Query: "example.com", MinRials: 150_000},
				func(r paymenttest.SeedRow) bool {
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
				counts, err := c.StatusCounts(context.Background(), f, paymentread.CountCap)
				if err != nil {
					t.Fatal(err)
				}
				for _, st := range paymentread.Statuses {
					f2 := f
					f2.Statuses = nil
					n := len(expect(rows, oldest, func(r paymenttest.SeedRow) bool { return r.Status == st && slices.Contains(all(t, c, f2, 50), r.ID) }))
					if counts[st] != int64(n) {
						t.Errorf("%s: count of %s = %d, want %d", tc.name, st, counts[st], n)
					}
				}
			}
		}
		// A count is capped.
		capped, err := c.StatusCounts(context.Background(), paymentread.Filter{}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if capped["credited"] != 3 {
			t.Errorf("capped count %d, want 3 (more than 2)", capped["credited"])
		}
		// Every row once, through EachPayment.
		var each []int64
		if err := c.EachPayment(context.Background(), paymentread.Filter{}, func(p paymentread.Payment) error { each = append(each, p.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(each, expect(rows, false, func(paymenttest.SeedRow) bool { return true })) {
			t.Errorf("EachPayment: %v", each)
		}
		// An unknown status is refused, not ignored.
		if _, _, err := c.Payments(context.Background(), paymentread.Filter{Statuses: []string{"paid'; DROP TABLE payments; --"}}, nil, 10); err == nil {
			t.Error("unknown status accepted")
		}
	})
}

func TestSearchKind(t *testing.T) {
	for q, want := range map[string]paymentread.SearchKind{
		"":                                       paymentread.SearchNone,
		"1234":                                   paymentread.SearchCard,
		"12345678901":                            paymentread.SearchRefID,
		"abcdefghijklmnopqrstuvwx":               paymentread.SearchPublicID,
		"S00000000000000000000000000000000001":   paymentread.SearchAuthority,
		"A0000000000000000000000000000000000001": paymentread.SearchAuthority,
		"sara":                                   paymentread.SearchEmail,
		"sara@example.com":                       paymentread.SearchEmail,
		"abcdefghijklmnopq":                      paymentread.SearchEmail,
		"Q6SX-INDU-UGAZ":                         paymentread.SearchShortRef,
		"q6sx-indu-ugaz":                         paymentread.SearchShortRef,
		"Q6SXINDUUGAZ":                           paymentread.SearchShortRef,
		"q6sxinduugaz":                           paymentread.SearchShortRef,
		"mohammadreza":                           paymentread.SearchShortRefOrEmail,
		"MOHAMMADREZA":                           paymentread.SearchShortRef,
		"۶۰۳۷":                                   paymentread.SearchCard,
		"۵۰۰۰۰۰۱۶":                               paymentread.SearchRefID,
	} {
		if got := paymentread.KindOf(q); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", q, got, want)
		}
	}
	for _, bad := range []string{"", "x", "12", "-1-2", "1-0", "a-1"} {
		if _, err := paymentread.ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q) accepted", bad)
		}
	}
}
