package scenario_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

const sealHTML = `<a referrerpolicy="origin" target="_blank" href="https://trustseal.enamad.ir/?id=1&Code=x"><img referrerpolicy="origin" src="https://trustseal.enamad.ir/logo.aspx?id=1&Code=x" alt="" style="cursor:pointer" code="x"></a>`

// Support is reachable wherever the payer is told to contact it (issue 29,
// item 2): the footer of every page names the operator, support's
// contacts (the phone in the page's digits), the terms and privacy pages
// and the eNamad seal, whose images the CSP allows; the failure, review
// and error pages and the "returns within 72 hours" mail give the
// contacts too, and every mail names the operator. Without them set,
// none of it shows.
func TestSupportContactsEverywhere(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	smtpSrv := mailtest.Start(t, mailtest.Options{})
	clk := topuptest.NewFrozenClock()
	app := apptest.Start(t, db, apptest.Options{
		Env: map[string]string{"SMTP_URL": smtpSrv.URL,
			"SUPPORT_EMAIL": "help@example.com", "SUPPORT_PHONE": "021 1234 5678", "SUPPORT_URL": "https://help.example.com",
			"OPERATOR_NAME": "Example Pay", "TERMS_URL": "https://example.com/terms", "PRIVACY_URL": "https://example.com/privacy",
			"ENAMAD_HTML": sealHTML},
		Server: server.Options{MailRootCAs: smtpSrv.RootCAs, Now: clk.Now},
	})
	checkSupport := func(t *testing.T, where string, el *apptest.Element, l i18n.Lang) {
		t.Helper()
		if el == nil {
			t.Fatalf("%s: no support contacts", where)
		}
		if got := el.Attrs("href"); len(got) != 3 || got[0] != "mailto:help@example.com" || got[1] != "tel:02112345678" || got[2] != "https://help.example.com" {
			t.Errorf("%s: links %q, want the e-mail first, then the phone and the page", where, got)
		}
		if !strings.Contains(el.Text(), i18n.Digits(l, "021 1234 5678")) {
			t.Errorf("%s: %q does not give the phone in the page's digits", where, el.Text())
		}
	}

	c := app.NewClient(t)
	for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
		c.Get(routes.SignIn + "?lang=" + string(l)) // sets the language, then back here
		r := c.Get(routes.SignIn)
		d := apptest.Parse(r.Body)
		if got := d.TestID("footer-operator"); got == nil || got.Text() != i18n.T(l, "footer.operator", "name", "\u2068Example Pay\u2069") {
			t.Errorf("%s: footer does not name the operator", l)
		}
		checkSupport(t, string(l)+" footer", d.TestID("footer-support"), l)
		if d.TestID("footer-terms").Attr("href") != "https://example.com/terms" || d.TestID("footer-privacy").Attr("href") != "https://example.com/privacy" {
			t.Errorf("%s: terms and privacy links missing", l)
		}
		seal := d.TestID("enamad-seal")
		if seal == nil || len(seal.Attrs("src")) != 1 || seal.Attrs("src")[0] != "https://trustseal.enamad.ir/logo.aspx?id=1&Code=x" || len(seal.Attrs("style")) != 0 {
			t.Errorf("%s: seal not shown as configured, or with its inline style", l)
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data: https://trustseal.enamad.ir;") {
			t.Errorf("CSP does not allow the seal's image: %s", csp)
		}
		if d.TestID("support-note") != nil {
			t.Errorf("%s: the sign-in page says to contact support", l)
		}
	}
	c.Get(routes.SignIn + "?lang=fa")
	nf := c.Get(routes.Wallet + "/no-such-page")
	checkSupport(t, "not-found page", apptest.Parse(nf.Body).TestID("support-note"), i18n.FA)

	// A failed payment the bank may have charged, and one under review.
	payer, _ := app.StartTopUp(t, "payer@example.com", "30000")
	failed := topuptest.First(t, db)
	topuptest.ForceStatus(t, db, failed.ID, "failed", "bank_reversed")
	csrf, tok := payer.TopUpForm()
	payer.PostTopUp(csrf, tok, "40000")
	review := topuptest.Last(t, db) // the second
	topuptest.ForceStatus(t, db, review.ID, "needs_review", "amount_mismatch")
	for _, p := range []struct{ what, publicID, hook string }{{"failed", failed.PublicID, "result-failed"}, {"review", review.PublicID, "result-review"}} {
		d := apptest.Parse(payer.Get(routes.TopUpPage(p.publicID)).Body)
		if d.TestID(p.hook) == nil {
			t.Fatalf("%s page not shown", p.what)
		}
		checkSupport(t, p.what+" page", d.TestID("support-note"), i18n.FA)
	}

	clk.Advance(time.Minute)
	if _, err := app.Server.Notifier.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	app.DeliverMail(t)
	m := smtpSrv.Wait(t, 5*time.Second, func(m mailtest.Received) bool { return m.To == "payer@example.com" })
	for _, want := range []string{i18n.T(i18n.FA, "mail.notice.support"), "help@example.com", "۰۲۱ ۱۲۳۴ ۵۶۷۸", "https://help.example.com",
		i18n.T(i18n.FA, "mail.operator", "name", "\u2068Example Pay\u2069")} {
		if !strings.Contains(m.Text, want) || !strings.Contains(m.HTML, want) {
			t.Errorf("notice mail lacks %q:\n%s", want, m.Text)
		}
	}

	// Nothing set: no support line, no operator, no seal, the CSP as before.
	bare := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	bc := bare.NewClient(t)
	r := bc.Get(routes.SignIn)
	d := apptest.Parse(r.Body)
	for _, id := range []string{"footer-operator", "footer-support", "footer-terms", "enamad-seal"} {
		if d.TestID(id) != nil {
			t.Errorf("%s shown with nothing configured", id)
		}
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data:;") {
		t.Errorf("CSP: %s", csp)
	}
	if apptest.Parse(bc.Get(routes.Wallet+"/no-such-page").Body).TestID("support-note") != nil {
		t.Error("support note without a contact")
	}
}
