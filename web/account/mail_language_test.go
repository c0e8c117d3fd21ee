package account_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// Receipts and "returns within 72 hours" notices come in the payer's
// language, text and HTML, each with the payment's short reference and
// link (issue 18, item 3): an English payer's and a Persian payer's, over
// a real SMTP exchange.
func TestReceiptAndNoticeInThePayersLanguage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app, smtpSrv, clk := startWithMail(t, db)
		ctx := context.Background()
		for _, l := range []i18n.Lang{i18n.EN, i18n.FA} {
			c := app.NewClient(t)
			c.GetIn(string(l), routes.SignUp)
			email := "mail-" + string(l) + "@example.com"
			c.SignUp(email)
			csrf, tok := c.TopUpForm()
			r := c.PostTopUp(csrf, tok, "40000")
			c.Get(c.PayAtBank(r.Location, "pay"))
			csrf, tok = c.TopUpForm()
			c.PostTopUp(csrf, tok, "30000")
			uid := authtest.UserID(t, db, email)
			paid := topuptest.Select(t, db, func(p topup.TopUp) bool { return p.UserID == uid && p.Status == topup.StatusCredited })[0]
			failed := topuptest.Select(t, db, func(p topup.TopUp) bool { return p.UserID == uid && p.Status != topup.StatusCredited })[0]
			topuptest.ForceStatus(t, db, failed.ID, "failed", "bank_reversed")
			clk.Advance(time.Minute)
			if n, err := app.Server.Notifier.Scan(ctx); err != nil || n != 2 {
				t.Fatalf("%s: scan queued %d %v, want the receipt and the notice", l, n, err)
			}
			app.DeliverMail(t)
			for _, tc := range []struct {
				p       topup.TopUp
				subject string
				says    string
			}{
				{paid, i18n.T(l, "mail.receipt.subject", "amount", i18n.Money(400_000)), i18n.T(l, "mail.receipt.intro", "amount", i18n.Money(400_000))},
				{failed, i18n.T(l, "mail.notice.subject", "ref", i18n.ShortRef(failed.PublicID)), i18n.T(l, "mail.notice.72h")},
			} {
				m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == email && m.Subject == tc.subject })
				link := app.URL + routes.TopUpPage(tc.p.PublicID)
				for part, body := range map[string]string{"text": m.Text, "html": m.HTML} {
					if !strings.Contains(body, tc.says) || !strings.Contains(body, i18n.ShortRef(tc.p.PublicID)) || !strings.Contains(body, link) {
						t.Errorf("%s %q, %s part: lacks its sentence, reference or link:\n%s", l, tc.subject, part, body)
					}
				}
				if !strings.Contains(m.HTML, `lang="`+string(l)+`"`) {
					t.Errorf("%s %q: HTML not marked %s", l, tc.subject, l)
				}
				// The card number in the mail's digits (issue 29, item 8).
				if tc.p == paid {
					card := topuptest.ByID(t, db, paid.ID).CardPANMasked
					if card == "" || !strings.Contains(m.Text, i18n.Digits(l, card)) || (l == i18n.FA && strings.Contains(m.Text, card)) {
						t.Errorf("%s receipt: card %q not in the mail's digits:\n%s", l, card, m.Text)
					}
				}
			}
		}
	})
}
