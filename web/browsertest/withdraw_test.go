package browsertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// Cash-out in the browser, in both languages (issue 30): the bank
// accounts page adds an account (its bank's name shown) and, when the
// provider's ownership inquiry has no upstream, leaves one waiting for
// review (axe on each state); the withdrawal form offers a radio per
// verified account only, takes tomans, and its confirmation shows the
// rail and the next Paya cycle in Tehran time (axe); a double-clicked
// Confirm makes one withdrawal, whose receipt is
// data-testid="withdrawal-receipt" (axe). Then an admin approves a
// withdrawal waiting for review in /admin/withdrawals with a note and a
// fresh second factor (axe on the queue, before and after).
func TestWithdrawInTheBrowser(t *testing.T) {
	axeSource(t)
	browserContext(t)
	clock := withdrawaltest.ClockAt(time.Now())
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{Server: server.Options{Now: clock.Now}})
	ctx := context.Background()
	const (
		userEmail  = "payee@example.com"
		adminEmail = "cashier@example.com"
	)
	u, err := app.Server.Auth.SignUp(ctx, userEmail, password, auth.RoleUser, "fa")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Server.Auth.SignUp(ctx, adminEmail, password, auth.RoleAdmin, "fa"); err != nil {
		t.Fatal(err)
	}
	withdrawaltest.FundUser(t, db, u.ID, 2_000_000_000)
	book := app.Server.Bank.Payouts()
	for i, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			melli, pending := withdrawaltest.Sheba("017", 4200+i), withdrawaltest.Sheba("012", 4300+i)
			bankName := map[string]string{"fa": "بانک ملی ایران", "en": "Bank Melli Iran"}[lang]
			b := NewTab(t, app.URL)
			b.Go(routes.SignIn + "?lang=" + lang)
			b.SignIn(userEmail, password)

			// The bank accounts page: a new account, verified by the
			// provider's inquiry, with its bank's name.
			b.Go(routes.BankAccounts)
			b.Wait("bank-account-form")
			b.Audit("bank accounts")
			b.Type(tid("iban"), melli)
			if i == 0 {
				b.Type(tid("national-code"), withdrawaltest.NationalCode(499370))
			} else {
				b.Wait("national-code-on-file")
			}
			b.Click("bank-account-submit")
			b.Wait("bank-accounts-notice")
			row := fmt.Sprintf(`%s[data-status="verified"]:last-of-type`, tid("bank-account"))
			if got := b.Text(row); !strings.Contains(got, bankName) {
				t.Errorf("the new account's row reads %q, want the bank's name %q", got, bankName)
			}
			b.Audit("bank accounts, one added")

			// No upstream provider for the inquiry: waiting for review.
			if err := book.SetFaults(payouts.Faults{Providers: map[string]payouts.ProviderFaults{payouts.Zibal: {NoUpstream: true}}}); err != nil {
				t.Fatal(err)
			}
			b.Go(routes.BankAccounts)
			b.Type(tid("iban"), pending)
			b.Click("bank-account-submit")
			b.Wait("bank-accounts-notice")
			if p := b.Path(); p != routes.BankAccounts+"?done=pending" {
				t.Errorf("no upstream for the inquiry: at %s, want the account waiting for review", p)
			}
			if err := book.SetFaults(payouts.Faults{}); err != nil {
				t.Fatal(err)
			}
			var statuses []string
			b.Eval(`[...document.querySelectorAll('[data-testid="bank-account"]')].map(e => e.dataset.status)`, &statuses)
			count := map[string]int{}
			for _, s := range statuses {
				count[s]++
			}
			if count["verified"] != i+1 || count["pending_review"] != i+1 {
				t.Errorf("the accounts' statuses %v, want %d verified and %d pending_review", statuses, i+1, i+1)
			}
			b.Audit("bank accounts, one waiting for review")

			// The form: a radio per verified account, none for the one
			// waiting.
			posts := countPosts(b, routes.Withdraw)
			b.Go(routes.Withdraw)
			b.Wait("withdraw-form")
			var radios int
			b.Eval(`document.querySelectorAll('[data-testid="bank-account-choice"] input[type=radio][name=bank_account]').length`, &radios)
			if radios != i+1 {
				t.Errorf("%d radios, want one per verified account (%d)", radios, i+1)
			}
			b.Audit("withdraw form")
			var acctID int64
			accts, err := app.Server.BankAccounts.List(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range accts {
				if a.Sheba == melli {
					acctID = a.ID
				}
			}
			if acctID == 0 {
				t.Fatalf("no account of %s among %+v", melli, accts)
			}
			b.Click(fmt.Sprintf("bank-account-%d", acctID))
			b.Type(tid("amount"), "200,000")
			b.Click("withdraw-continue")
			b.Wait("withdraw-confirm")
			if rl := b.Attr(tid("confirm-rail"), "data-rail"); rl != "paya" {
				t.Errorf("rail %q, want paya", rl)
			}
			cutoff, err := time.Parse(time.RFC3339, b.Attr(tid("confirm-eta"), "data-cutoff"))
			if err != nil || !cutoff.After(clock.Now()) {
				t.Errorf("the next Paya cycle %v (%v), want one ahead of %v", cutoff, err, clock.Now())
			}
			tehran := cutoff.In(time.FixedZone("Tehran", 3*3600+1800)).Format("15:04")
			if lang == "fa" {
				tehran = persianDigits(tehran)
			}
			if got := b.Text(tid("confirm-eta")); !strings.Contains(got, tehran) {
				t.Errorf("the estimate reads %q, want the cycle's Tehran time %s", got, tehran)
			}
			if got := b.Text(tid("confirm-account")); !strings.Contains(got, bankName) {
				t.Errorf("the confirmation names %q", got)
			}
			b.Audit("withdraw confirmation")
			before := len(withdrawaltest.ByUser(t, db, u.ID))
			b.Run(DoubleClick(tid("withdraw-submit")))
			b.Wait("withdrawal-receipt")
			if n := posts(); n != 2 {
				t.Errorf("%d form posts (Continue, a double-clicked Confirm), want 2", n)
			}
			ws := withdrawaltest.ByUser(t, db, u.ID)
			if len(ws) != before+1 || ws[len(ws)-1].AmountRials != 2_000_000 {
				t.Fatalf("%d withdrawals after a double click (was %d)", len(ws), before)
			}
			w := ws[len(ws)-1]
			if id := b.Attr(tid("withdrawal-receipt"), "data-public-id"); id != w.PublicID || b.Path() != routes.Withdrawal(w.PublicID) {
				t.Errorf("the receipt of %s at %s, want %s", id, b.Path(), w.PublicID)
			}
			b.Audit("withdrawal receipt")
			b.CheckNoProblems()

			// The admin's queue: a withdrawal above the review amount is
			// approved with a note and a fresh second factor.
			big, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: u.ID, FormToken: formtoken.New(), BankAccountID: acctID,
				AmountRials: 600_000_000})
			if err != nil || !big.Withdrawal.ReviewRequired {
				t.Fatalf("a withdrawal for review: %+v %v", big.Withdrawal, err)
			}
			id := big.Withdrawal.PublicID
			a := NewTab(t, app.URL)
			a.Go(routes.SignIn + "?lang=" + lang)
			a.SignIn(adminEmail, password)
			clock.Advance(30 * time.Second)
			a.PassAdminChecksAt(db, adminEmail, app.Server.Clock.Now)
			a.Go(routes.AdminWithdrawals)
			a.Wait("approve-" + id)
			a.Audit("admin withdrawals")
			clock.Advance(30 * time.Second)
			a.Type(tid("note-approve-"+id), "called the payee")
			a.Type(tid("code-approve-"+id), apptest.AdminTOTPCodeAt(t, db, adminEmail, app.Server.Clock.Now))
			a.Click("approve-" + id)
			a.Wait("admin-notice")
			if s := withdrawaltest.Get(t, db, id).Status; s != withdrawal.StatusApproved {
				t.Errorf("after approving: %s", s)
			}
			a.Run(chromedp.WaitNotPresent(tid("approve-"+id), chromedp.ByQuery))
			a.Audit("admin withdrawals, one approved")
			// Its page: status, figures, status changes, ledger.
			a.Go(routes.AdminWithdrawal(id))
			a.Wait("admin-withdrawal-events")
			a.Audit("admin withdrawal")
			a.CheckNoProblems()
		})
	}
	if n := withdrawaltest.AuditActions(t, db, "withdrawal_approve"); n != 2 {
		t.Errorf("%d withdrawal_approve audit rows, want 2", n)
	}
	withdrawaltest.CheckInvariants(t, db)
}

// persianDigits writes ASCII digits as Persian ones.
func persianDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			r = '۰' + (r - '0')
		}
		b.WriteRune(r)
	}
	return b.String()
}
