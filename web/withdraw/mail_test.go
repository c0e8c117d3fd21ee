package withdraw_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// TestWithdrawalMails: the owner of a withdrawal paid and then returned
// (English) gets a mail for each, and the owner of one that failed
// (Persian) gets one, each in their language, naming the bank and the
// account's last four digits and linking the receipt; queued after the
// fact from the committed moves (never in their transaction), once each,
// however often the scan runs; a withdrawal cancelled by its owner sends
// none, and a paid one sends none to an owner whose receipts are off.
func TestWithdrawalMails(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		smtpSrv := mailtest.Start(t, mailtest.Options{TLS: mailtest.StartTLS, User: "kifpool", Pass: "mail pass"})
		var now atomic.Int64
		now.Store(time.Now().UnixNano())
		clock := func() time.Time { return time.Unix(0, now.Load()) }
		app := apptest.Start(t, db, apptest.Options{
			Env:    map[string]string{"SMTP_URL": smtpSrv.URL, "MAIL_FROM": "Kifpool <wallet@example.com>"},
			Server: server.Options{MailRootCAs: smtpSrv.RootCAs, Now: clock},
		})
		ctx := context.Background()
		user := func(email, locale string, receipts bool) (int64, int64) {
			u, err := app.Server.Auth.SignUp(ctx, email, "correct horse battery", "", locale)
			if err != nil {
				t.Fatal(err)
			}
			if !receipts {
				if err := app.Server.Auth.SetReceipts(ctx, u.ID, false); err != nil {
					t.Fatal(err)
				}
			}
			withdrawaltest.FundUser(t, db, u.ID, 10_000_000)
			return u.ID, withdrawaltest.VerifiedAccount(t, db, u.ID, withdrawaltest.Sheba("017", 42))
		}
		enID, enAcct := user("en@example.com", "en", true)
		faID, faAcct := user("fa@example.com", "fa", true)
		quietID, quietAcct := user("quiet@example.com", "en", false)
		request := func(uid, acct, rials int64) withdrawal.Withdrawal {
			r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: rials})
			if err != nil {
				t.Fatal(err)
			}
			return r.Withdrawal
		}
		returned, failed, quiet := request(enID, enAcct, 1_000_000), request(faID, faAcct, 2_000_000), request(quietID, quietAcct, 3_000_000)
		cancelled := request(enID, enAcct, 500_000)
		if _, err := app.Server.Withdrawals.Cancel(ctx, enID, cancelled.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Server.PayoutWorker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		resolve := func(w withdrawal.Withdrawal, action string) {
			t.Helper()
			control(t, app, w.Provider, w.PublicID, action)
			if _, err := app.Server.Withdrawals.Resolve(ctx, w.ID, withdrawal.ActorWorker); err != nil {
				t.Fatal(err)
			}
		}
		resolve(returned, "settle")
		resolve(failed, "fail")
		resolve(quiet, "settle")
		resolve(returned, "return")
		if got := withdrawaltest.Get(t, db, returned.PublicID).Status; got != withdrawal.StatusReturned {
			t.Fatalf("returned is %s", got)
		}
		if n := len(mailtest.Rows(t, db)); n != 0 {
			t.Fatalf("%d mails written with the moves", n)
		}
		if n, err := app.Server.Notifier.Scan(ctx); err != nil || n != 0 {
			t.Fatalf("scan of unsettled moves: %d %v", n, err)
		}
		now.Add(int64(time.Minute))
		if n, err := app.Server.Notifier.Scan(ctx); err != nil || n != 3 {
			t.Fatalf("scan: %d %v", n, err)
		}
		for range 2 {
			if n, _ := app.Server.Notifier.Scan(ctx); n != 0 {
				t.Fatalf("a later scan queued %d more", n)
			}
		}
		kinds := map[string]int{}
		for _, r := range mailtest.Rows(t, db) {
			kinds[r.Kind]++
		}
		if kinds["withdrawal_paid"] != 1 || kinds["withdrawal_returned"] != 1 || kinds["withdrawal_failed"] != 1 || len(kinds) != 3 {
			t.Fatalf("mails by kind %v", kinds)
		}
		app.DeliverMail(t)
		for _, tc := range []struct {
			to, subject, id string
			text            []string
		}{
			{"en@example.com", "paid into your bank account", returned.PublicID, []string{"to your account at Bank Melli Iran …0042", "100,000"}},
			{"en@example.com", "came back", returned.PublicID, []string{"back in your wallet", "to your account at Bank Melli Iran …0042"}},
			{"fa@example.com", "انجام نشد", failed.PublicID, []string{"به حساب شما در بانک ملی ایران …۰۰۴۲", "دوباره در کیف\u200cپول شماست"}},
		} {
			m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool {
				return m.To == tc.to && strings.Contains(m.Subject, tc.subject)
			})
			if !strings.Contains(m.Text, routes.Withdrawal(tc.id)) {
				t.Errorf("mail %q to %s has no link to its receipt:\n%s", m.Subject, tc.to, m.Text)
			}
			for _, s := range tc.text {
				if !strings.Contains(m.Text, s) {
					t.Errorf("mail %q to %s lacks %q:\n%s", m.Subject, tc.to, s, m.Text)
				}
			}
		}
	})
}
