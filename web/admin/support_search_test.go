package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// Support finds what the payer reads them (issue 18, item 8), through the
// console's search over HTTP: the receipt's short reference with or
// without its dashes, the bank's reference in Persian digits, the card's
// last four digits; each finds the payer's payment and not another's.
func TestSupportFindsWhatThePayerReads(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		c, payURL := app.StartTopUp(t, "reader@example.com", "50000")
		if r := c.Get(c.PayAtBank(payURL, "pay")); apptest.TopUpStatus(r.Body) != "credited" {
			t.Fatalf("not credited: %q", apptest.TopUpStatus(r.Body))
		}
		other, _ := app.StartTopUp(t, "someone-else@example.com", "70000")
		_ = other
		credited := topuptest.Select(t, db, func(p topup.TopUp) bool { return p.Status == topup.StatusCredited })
		if len(credited) == 0 {
			t.Fatal("no credited payment")
		}
		p := struct {
			PublicID      string
			RefID         int64
			CardPANMasked string
		}{credited[0].PublicID, credited[0].RefIDValue(), credited[0].CardPANMasked}
		if p.PublicID == "" || p.RefID == 0 || len(p.CardPANMasked) < 4 {
			t.Fatalf("the credited payment lacks what the payer reads: %+v", p)
		}
		// What the receipt shows the payer.
		if !strings.Contains(c.Get(routes.TopUpPage(p.PublicID)).Body, i18n.ShortRef(p.PublicID)) {
			t.Fatalf("the receipt does not show %s", i18n.ShortRef(p.PublicID))
		}

		if _, err := app.Server.Auth.SignUp(context.Background(), "support@example.com", "correct horse battery", "admin", "fa"); err != nil {
			t.Fatal(err)
		}
		admin := app.NewClient(t)
		admin.SignInAdmin("support@example.com", "correct horse battery")
		short := i18n.ShortRef(p.PublicID) // Q6SX-INDU-UGAZ
		last4 := p.CardPANMasked[len(p.CardPANMasked)-4:]
		for name, q := range map[string]string{
			"short reference":                    short,
			"short reference without dashes":     strings.ReplaceAll(short, "-", ""),
			"short reference in lower case":      strings.ToLower(short),
			"bank reference in Persian digits":   i18n.Digits(i18n.FA, strconv.FormatInt(p.RefID, 10)),
			"bank reference":                     strconv.FormatInt(p.RefID, 10),
			"card's last four":                   last4,
			"card's last four in Persian digits": i18n.Digits(i18n.FA, last4),
		} {
			r := admin.Get(routes.AdminTopUps + "?q=" + url.QueryEscape(q))
			var ids []string
			for _, row := range apptest.Parse(r.Body).TestIDs("payment-row") {
				ids = append(ids, row.Attr("data-public-id"))
			}
			if r.Status != http.StatusOK || !slices.Equal(ids, []string{p.PublicID}) {
				t.Errorf("%s (%q): %d, rows %v, want only %s", name, q, r.Status, ids, p.PublicID)
			}
		}
	})
}
