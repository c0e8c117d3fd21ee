package browsertest

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
)

// A transfer in the browser, in both languages: the form (axe), a refusal
// with its one sentence and the focus on its field (axe), the
// confirmation step (axe), a double-clicked Send making one transfer and
// its receipt (axe), a reload of the receipt changing nothing; then the
// recipient's wallet says who it came from, with the note (axe).
func TestTransferInTheBrowser(t *testing.T) {
	axeSource(t)
	app, _ := startApp(t, apptest.Options{})
	ctx := context.Background()
	wallets := map[string]int64{}
	for _, email := range []string{"reza@example.com", "mina@example.com"} {
		u, err := app.Server.Auth.SignUp(ctx, email, password, auth.RoleUser, "fa")
		if err != nil {
			t.Fatal(err)
		}
		w, err := app.Server.Wallets.ForUser(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		wallets[email] = w.ID
		if email == "reza@example.com" {
			ledgertest.Fund(t, app.DB, w.AccountID, 2_000_000, email)
		}
	}
	sent := int64(0)
	for _, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			b := NewTab(t, app.URL)
			posts := countPosts(b, routes.Transfer)
			b.Go(routes.SignIn + "?lang=" + lang)
			b.SignIn("reza@example.com", password)
			b.Go(routes.Transfer)
			b.Wait("transfer-form")
			b.Audit("transfer form")
			b.Type("#to", "nobody@example.com")
			b.Type(tid("amount"), "50,000")
			b.Click("transfer-review")
			b.Wait("transfer-error")
			b.Audit("transfer form with an error")
			if id := b.focused(); id != "to" {
				t.Errorf("a refused recipient: focus on %q, want the to field", id)
			}
			b.Type("#to", "mina@example.com")
			b.Type("#note", "کتاب")
			b.Click("transfer-review")
			b.Wait("transfer-confirm")
			b.Audit("transfer confirmation")
			if got := b.Text(tid("confirm-recipient")); !strings.Contains(got, "m***@example.com") {
				t.Errorf("confirmation names %q", got)
			}
			b.Run(DoubleClick(tid("transfer-submit")))
			b.Wait("transfer-receipt")
			b.Audit("transfer receipt")
			if n := posts(); n != 3 {
				t.Errorf("%d form posts (a refusal, Continue, a double-clicked Send), want 3 (app.js guard)", n)
			}
			b.Run(chromedp.Reload())
			b.Wait("transfer-receipt")
			sent += 500_000
			if got := ledgertest.Balance(t, app.DB, wallets["reza@example.com"]); got != 2_000_000-sent {
				t.Errorf("sender's balance %d, want %d", got, 2_000_000-sent)
			}
			if got := ledgertest.Balance(t, app.DB, wallets["mina@example.com"]); got != sent {
				t.Errorf("recipient's balance %d, want %d", got, sent)
			}
			b.CheckNoProblems()

			r := NewTab(t, app.URL)
			r.Go(routes.SignIn + "?lang=" + lang)
			r.SignIn("mina@example.com", password)
			r.Go(routes.Wallet)
			r.Wait("history-transfer")
			if got := r.Text(tid("history-transfer")); !strings.Contains(got, "reza@example.com") || !strings.Contains(got, "کتاب") {
				t.Errorf("recipient's history row %q", got)
			}
			r.Audit("wallet with a transfer received")
			r.CheckNoProblems()
		})
	}
	apptest.CheckInvariants(t, app.DB)
}
