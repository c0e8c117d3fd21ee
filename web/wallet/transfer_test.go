package wallet_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

const transferPW = "correct horse battery"

// signUpFunded makes a user with rials in their wallet and returns their
// wallet id.
func signUpFunded(t *testing.T, app *apptest.App, addr string, rials int64) int64 {
	t.Helper()
	ctx := context.Background()
	u, err := app.Server.Auth.SignUp(ctx, addr, transferPW, "", "fa")
	if err != nil {
		t.Fatal(err)
	}
	w, err := app.Server.Wallets.ForUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rials > 0 {
		ledgertest.Fund(t, app.DB, w.AccountID, rials, addr)
	}
	return w.ID
}

// bobUser is bob@example.com's user id.
func bobUser(t *testing.T, app *apptest.App) int64 {
	t.Helper()
	u, err := app.Server.Auth.Authenticate(context.Background(), "bob@example.com", transferPW)
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	return u.ID
}

// review fills the transfer form and continues to its confirmation step.
func review(t *testing.T, c *apptest.Client, to, amount, note string) apptest.Response {
	t.Helper()
	return c.Submit(routes.Transfer, routes.Transfer, url.Values{"to": {to}, "amount": {amount}, "note": {note}})
}

// The whole flow: the form, its confirmation step (masked address, amount
// in tomans and in words, balance after), the receipt; a double click,
// a resubmission and Back then Send make one transfer; both people see it
// in their history with the note, and no one else reads it.
func TestTransferPageFlow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		alice := signUpFunded(t, app, "alice@example.com", 5_000_000)
		bob := signUpFunded(t, app, "bob@example.com", 0)
		signUpFunded(t, app, "carol@example.com", 0)
		c := app.NewClient(t)
		c.SignIn("alice@example.com", transferPW)

		// Persian digits and separators, as on the top-up form.
		r := review(t, c, "Bob@Example.com", "۱۲۰٬۰۰۰", "ناهار دیروز")
		if r.Status != http.StatusOK {
			t.Fatalf("review: %d %s", r.Status, r.Body)
		}
		confirm := apptest.Parse(r.Body)
		if confirm.TestID("transfer-confirm") == nil {
			t.Fatal("no confirmation step")
		}
		if got := confirm.TestID("confirm-recipient").Text(); !strings.Contains(got, "b***@example.com") || strings.Contains(got, "bob@") {
			t.Errorf("recipient shown as %q", got)
		}
		if confirm.TestID("confirm-recipient-name") != nil {
			t.Error("a name is shown for a recipient who gave none")
		}
		// Once Bob gives a display name, the sender sees it beside the
		// masked address.
		if _, err := app.Server.Auth.SetDisplayName(context.Background(), bobUser(t, app), "باب\u200cمرد"); err != nil {
			t.Fatal(err)
		}
		confirm = apptest.Parse(review(t, c, "Bob@Example.com", "۱۲۰٬۰۰۰", "ناهار دیروز").Body)
		if n := confirm.TestID("confirm-recipient-name"); n == nil || n.Text() != "باب\u200cمرد" {
			t.Errorf("recipient's name: %v", n)
		}
		if a := confirm.TestID("confirm-amount"); a.Attr("data-rials") != "1200000" {
			t.Errorf("amount %q", a.Attr("data-rials"))
		}
		if w := confirm.TestID("confirm-words").Text(); !strings.Contains(w, "صد و بیست هزار") {
			t.Errorf("amount in words %q", w)
		}
		if a := confirm.TestID("confirm-after"); a == nil || a.Attr("data-rials") != "3800000" {
			t.Errorf("balance after: %v", a)
		}
		// Nothing is written before Send.
		if ledgertest.Balance(t, db, alice) != 5_000_000 {
			t.Fatal("the confirmation step moved money")
		}
		send := confirm.Form(routes.Transfer).Hidden()
		if send.Get("confirmed") != "1" {
			t.Fatalf("the confirmation's first form is not Send: %v", send)
		}
		// A double click: two Sends at once; then the same Send again
		// (a resubmission, or Back then Send).
		var wg sync.WaitGroup
		locs := make([]string, 3)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				locs[i] = c.Post(routes.Transfer, send).Location
			}()
		}
		wg.Wait()
		locs[2] = c.Post(routes.Transfer, send).Location
		// Back to the first step and Continue with the same form: the
		// transfer it made, not a second confirmation.
		back := url.Values{"_csrf": {send.Get("_csrf")}, "token": {send.Get("token")}, "to": {"bob@example.com"}, "amount": {"120000"}, "note": {"ناهار دیروز"}}
		if r := c.Post(routes.Transfer, back); r.Status != http.StatusSeeOther || r.Location != locs[0] {
			t.Errorf("back then continue: %d %q, want %q", r.Status, r.Location, locs[0])
		}
		if locs[0] == "" || locs[0] != locs[1] || locs[1] != locs[2] || !strings.HasPrefix(locs[0], routes.Transfers+"/") {
			t.Fatalf("the submits went to %q", locs)
		}
		if a, b := ledgertest.Balance(t, db, alice), ledgertest.Balance(t, db, bob); a != 3_800_000 || b != 1_200_000 {
			t.Fatalf("balances %d %d", a, b)
		}
		rec := apptest.Parse(c.Get(locs[0]).Body)
		if e := rec.TestID("transfer-receipt"); e == nil || e.Attr("data-rials") != "1200000" {
			t.Fatalf("receipt: %v", e)
		}
		if n := rec.TestID("transfer-receipt-note"); n == nil || n.Text() != "ناهار دیروز" {
			t.Errorf("receipt note: %v", n)
		}
		// The sender's history: "to bob" with the note, in both languages;
		// the recipient's: "from alice" (the words of history.transfer_to
		// and history.transfer_from).
		historyRow := func(r apptest.Response) string {
			t.Helper()
			row := apptest.Parse(r.Body).TestID("history-transfer")
			if row == nil {
				t.Fatal("no transfer in the history")
			}
			return row.Text()
		}
		if row := historyRow(c.Get(routes.Wallet)); !strings.Contains(row, "انتقال به \u2068bob@example.com\u2069") || !strings.Contains(row, "ناهار دیروز") {
			t.Errorf("sender's history row: %q", row)
		}
		if row := historyRow(c.GetIn("en", routes.Wallet)); !strings.Contains(row, "Transfer to \u2068bob@example.com\u2069") || !strings.Contains(row, "ناهار دیروز") ||
			strings.Contains(row, "from") {
			t.Errorf("sender's history row in English: %q", row)
		}
		// The recipient's, and the receipt.
		b := app.NewClient(t)
		b.SignIn("bob@example.com", transferPW)
		if row := historyRow(b.GetIn("en", routes.Wallet)); !strings.Contains(row, "Transfer from \u2068alice@example.com\u2069") || !strings.Contains(row, "ناهار دیروز") ||
			strings.Contains(row, "Transfer to") {
			t.Errorf("recipient's history row: %q", row)
		}
		if r := b.Get(locs[0]); r.Status != http.StatusOK || apptest.Parse(r.Body).TestID("transfer-receipt") == nil {
			t.Errorf("the recipient's receipt: %d", r.Status)
		}
		// Anyone else: not found.
		cc := app.NewClient(t)
		cc.SignIn("carol@example.com", transferPW)
		if r := cc.Get(locs[0]); r.Status != http.StatusNotFound {
			t.Errorf("a third person reads the receipt: %d", r.Status)
		}
		apptest.CheckInvariants(t, db)
	})
}

// Each refusal says one sentence (in the page's language), keeps what
// was typed, and writes nothing.
func TestTransferPageRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"TRANSFER_DAILY_MAX_RIALS": "20000000"}})
		alice := signUpFunded(t, app, "alice@example.com", 3_000_000)
		signUpFunded(t, app, "bob@example.com", 0)
		c := app.NewClient(t)
		c.SignIn("alice@example.com", transferPW)
		for _, tc := range []struct {
			name, to, amount, note, fa, en string
		}{
			{"short balance", "bob@example.com", "400000", "", "کافی نیست", "not enough"},
			{"unknown recipient", "nobody@example.com", "10000", "", "کسی با این ایمیل", "No one has"},
			{"self", "alice@example.com", "10000", "", "خودتان", "your own wallet"},
			{"below the minimum", "bob@example.com", "500", "", "کمترین مبلغ", "smallest transfer"},
			{"not a number", "bob@example.com", "abc", "", "عددی درست", "whole number"},
			{"empty", "bob@example.com", "", "", "مبلغ را بنویسید", "Enter an amount"},
			{"zero", "bob@example.com", "۰", "", "بیشتر از صفر", "more than zero"},
			{"daily limit", "bob@example.com", "2500000", "", "سقف انتقال روزانه", "daily transfer limit"},
			{"note too long", "bob@example.com", "10000", strings.Repeat("x", 141), "۱۴۰", "140"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, lang := range []string{"fa", "en"} {
					c.GetIn(lang, routes.Transfer)
					r := review(t, c, tc.to, tc.amount, tc.note)
					doc := apptest.Parse(r.Body)
					e := doc.TestID("transfer-error")
					want := tc.fa
					if lang == "en" {
						want = tc.en
					}
					if r.Status != http.StatusUnprocessableEntity || e == nil || !strings.Contains(e.Text(), want) {
						t.Fatalf("%s: %d, error %v, want %q", lang, r.Status, e, want)
					}
					if doc.Input("to") != tc.to || doc.Input("token") == "" {
						t.Errorf("%s: the form lost what was typed", lang)
					}
				}
			})
		}
		if ledgertest.Balance(t, db, alice) != 3_000_000 {
			t.Fatal("a refusal moved money")
		}
		if ts, _, err := app.Server.Transfers.List(context.Background(), 1, 0, 10); err != nil || len(ts) != 0 {
			t.Fatalf("transfers after refusals: %v %v", ts, err)
		}
		apptest.CheckInvariants(t, db)
	})
}

// An account whose address is not confirmed sends nothing, whatever its
// balance: the page says so with "send the link again" instead of the
// form, and a form posted all the same (Continue or Send) is refused with
// 403 and writes nothing; once the address is confirmed, the same session
// sends.
func TestTransferWaitsForTheSendersAddress(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		bob := signUpFunded(t, app, "bob@example.com", 0)
		c := app.NewClient(t)
		c.GetIn("en", routes.SignUp)
		c.SignUpUnconfirmed("carol@example.com")
		carol := app.Fund(t, "carol@example.com", 1_000_000)
		page := c.Get(routes.Transfer)
		doc := apptest.Parse(page.Body)
		if page.Status != http.StatusOK || doc.TestID("transfer-unconfirmed") == nil || doc.TestID("transfer-form") != nil ||
			doc.Form(routes.AccountEmailVerify) == nil || !strings.Contains(doc.TestID("transfer-unconfirmed").Text(), "Confirm your e-mail address") {
			t.Fatalf("the page while unconfirmed: %d\n%s", page.Status, page.Body)
		}
		token := formtoken.New()
		// Continue, Send, Edit, a stale form, an amount that does not
		// parse, unknown addresses past the hourly allowance: each is
		// the same refusal, with no form.
		posts := []url.Values{
			{"token": {token}, "to": {"bob@example.com"}, "amount": {"10000"}},
			{"token": {token}, "to": {"bob@example.com"}, "amount": {"10000"}, "confirmed": {"1"}},
			{"token": {token}, "to": {"bob@example.com"}, "amount": {"10000"}, "edit": {"1"}},
			{"token": {"stale"}, "to": {"bob@example.com"}, "amount": {"10000"}},
			{"token": {token}, "to": {"bob@example.com"}, "amount": {"abc"}},
		}
		for i := range 30 {
			posts = append(posts, url.Values{"token": {formtoken.New()}, "to": {fmt.Sprintf("nobody%d@example.com", i)}, "amount": {"10000"}})
		}
		for _, form := range posts {
			r := c.Forge(routes.Transfer, routes.Transfer, form)
			if d := apptest.Parse(r.Body); r.Status != http.StatusForbidden || d.TestID("transfer-unconfirmed") == nil || d.TestID("transfer-form") != nil ||
				d.TestID("transfer-confirm") != nil {
				t.Fatalf("posted while unconfirmed (%v): %d\n%s", form, r.Status, r.Body)
			}
		}
		if ledgertest.Balance(t, db, carol) != 1_000_000 || ledgertest.Balance(t, db, bob) != 0 {
			t.Fatal("a refusal moved money")
		}
		if ts, _, err := app.Server.Transfers.List(context.Background(), authtest.UserID(t, db, "carol@example.com"), 0, 10); err != nil || len(ts) != 0 {
			t.Fatalf("transfers while unconfirmed: %v %v", ts, err)
		}
		authtest.ConfirmEmail(t, db, "carol@example.com")
		if d := apptest.Parse(c.Get(routes.Transfer).Body); d.TestID("transfer-form") == nil || d.TestID("transfer-unconfirmed") != nil {
			t.Fatal("no form once confirmed")
		}
		r := c.Forge(routes.Transfer, routes.Transfer, url.Values{"token": {token}, "to": {"bob@example.com"}, "amount": {"10000"}, "confirmed": {"1"}})
		if r.Status != http.StatusSeeOther {
			t.Fatalf("send once confirmed: %d\n%s", r.Status, r.Body)
		}
		if ledgertest.Balance(t, db, carol) != 900_000 || ledgertest.Balance(t, db, bob) != 100_000 {
			t.Fatalf("balances once confirmed %d %d", ledgertest.Balance(t, db, carol), ledgertest.Balance(t, db, bob))
		}
		apptest.CheckInvariants(t, db)
	})
}

// Each person of a transfer gets a mail in their language, queued after
// the fact from the committed transfer (never in its transaction), once;
// one whose receipts are off gets none.
func TestTransferMails(t *testing.T) {
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
		signUpFunded(t, app, "alice@example.com", 1_000_000)
		signUpFunded(t, app, "bob@example.com", 0)
		c := app.NewClient(t)
		c.SignIn("alice@example.com", transferPW)
		send := apptest.Parse(review(t, c, "bob@example.com", "25000", "کتاب").Body).Form(routes.Transfer).Hidden()
		if r := c.Post(routes.Transfer, send); r.Status != http.StatusSeeOther {
			t.Fatalf("send: %d", r.Status)
		}
		if n := len(mailtest.Rows(t, db)); n != 0 {
			t.Fatalf("%d mails written with the transfer", n)
		}
		if n, err := app.Server.Notifier.ScanTransfers(ctx); err != nil || n != 0 {
			t.Fatalf("scan of an unsettled transfer: %d %v", n, err)
		}
		now.Add(int64(time.Minute))
		if n, err := app.Server.Notifier.ScanTransfers(ctx); err != nil || n != 2 {
			t.Fatalf("scan: %d %v", n, err)
		}
		if n, _ := app.Server.Notifier.ScanTransfers(ctx); n != 0 {
			t.Fatalf("a second scan queued %d more", n)
		}
		app.DeliverMail(t)
		for _, who := range []string{"alice@example.com", "bob@example.com"} {
			m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == who })
			if !strings.Contains(m.Subject, "۲۵٬۰۰۰") || !strings.Contains(m.Text, "کتاب") || !strings.Contains(m.Text, routes.Transfers+"/tr_") {
				t.Errorf("mail to %s: %q\n%s", who, m.Subject, m.Text)
			}
		}
	})
}

// A transfer's form sent again after the operator raised
// TRANSFER_MIN_RIALS above its amount (and restarted) is answered with its
// receipt, Send and Continue alike: the limits apply only once the form's
// token is looked up, so a made transfer is never shown as refused.
func TestTransferFormAgainAfterTheMinimumRose(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		alice := signUpFunded(t, app, "alice@example.com", 5_000_000)
		bob := signUpFunded(t, app, "bob@example.com", 0)
		c := app.NewClient(t)
		c.SignIn("alice@example.com", transferPW)
		send := apptest.Parse(review(t, c, "bob@example.com", "2000", "").Body).Form(routes.Transfer).Hidden()
		first := c.Post(routes.Transfer, send)
		if first.Status != http.StatusSeeOther || !strings.HasPrefix(first.Location, routes.Transfers+"/") {
			t.Fatalf("send: %d %s", first.Status, first.Location)
		}

		raised := apptest.Start(t, db, apptest.Options{Env: map[string]string{"TRANSFER_MIN_RIALS": "50000"}})
		c2 := raised.NewClient(t)
		c2.SignIn("alice@example.com", transferPW)
		if r := review(t, c2, "bob@example.com", "2000", ""); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("a new form of 20,000 rials under a minimum of 50,000: %d", r.Status)
		}
		csrf := apptest.Input(c2.Get(routes.Transfer).Body, "_csrf")
		for _, confirmed := range []string{"1", ""} {
			again := url.Values{"_csrf": {csrf}, "token": {send.Get("token")}, "to": {send.Get("to")}, "amount": {send.Get("amount")}, "note": {""}}
			if confirmed != "" {
				again.Set("confirmed", confirmed)
			}
			if r := c2.Post(routes.Transfer, again); r.Status != http.StatusSeeOther || r.Location != first.Location {
				t.Fatalf("the form again (confirmed %q) after the minimum rose: %d %s, want the receipt %s", confirmed, r.Status, r.Location, first.Location)
			}
		}
		if ledgertest.Balance(t, db, alice) != 4_980_000 || ledgertest.Balance(t, db, bob) != 20_000 {
			t.Fatalf("balances %d %d", ledgertest.Balance(t, db, alice), ledgertest.Balance(t, db, bob))
		}
	})
}

// A transfer's fields come from the form's body alone: a query string on
// the form's address (a link's, or a page's that posts to itself) names
// neither the recipient nor the amount.
func TestTransferReadsTheFormNotTheQuery(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		alice := signUpFunded(t, app, "alice@example.com", 5_000_000)
		bob := signUpFunded(t, app, "bob@example.com", 0)
		carol := signUpFunded(t, app, "carol@example.com", 0)
		c := app.NewClient(t)
		c.SignIn("alice@example.com", transferPW)
		send := apptest.Parse(review(t, c, "bob@example.com", "10000", "").Body).Form(routes.Transfer).Hidden()
		query := url.Values{"to": {"carol@example.com"}, "amount": {"400000"}, "token": {send.Get("token")}, "confirmed": {"1"}}
		if r := c.Post(routes.Transfer+"?"+query.Encode(), send); r.Status != http.StatusSeeOther {
			t.Fatalf("send: %d %s", r.Status, r.Body)
		}
		if a, b, cb := ledgertest.Balance(t, db, alice), ledgertest.Balance(t, db, bob), ledgertest.Balance(t, db, carol); a != 4_900_000 || b != 100_000 || cb != 0 {
			t.Fatalf("balances alice %d bob %d carol %d, want the form's 10,000 tomans to bob", a, b, cb)
		}
	})
}
