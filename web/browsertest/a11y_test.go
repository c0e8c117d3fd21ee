package browsertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
)

// axeTags are the rule sets the audit runs.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"}

// axeWaivers are the axe findings accepted on purpose, each with its
// reason: a rule, on the pages whose audit name starts with page ("" for
// every page). Every other finding, of any impact, fails the test. Empty:
// no page has a finding today; a new one is fixed, or waived here with a
// reason a reviewer can weigh.
var axeWaivers = []struct{ rule, page, why string }{}

// waived is the reason a finding is accepted, or "".
func waived(rule, page string) string {
	for _, w := range axeWaivers {
		if w.rule == rule && strings.HasPrefix(page, w.page) {
			return w.why
		}
	}
	return ""
}

var axeScript struct {
	once sync.Once
	src  string
	err  error
}

// moduleRoot is the folder of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// axeSource reads axe-core ($AXE_CORE_JS or .ci/axe's npm install),
// skipping (or failing, under REQUIRE_BROWSER=1) when it is missing.
func axeSource(t *testing.T) string {
	t.Helper()
	axeScript.once.Do(func() {
		path := os.Getenv("AXE_CORE_JS")
		if path == "" {
			root, err := moduleRoot()
			if err != nil {
				axeScript.err = err
				return
			}
			path = filepath.Join(root, ".ci", "axe", "node_modules", "axe-core", "axe.min.js")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			axeScript.err = fmt.Errorf("no axe-core at %s (cd .ci/axe && npm install, or set AXE_CORE_JS): %v", path, err)
			return
		}
		axeScript.src = string(b)
	})
	if axeScript.err != nil {
		unavailable(t, "%v", axeScript.err)
	}
	return axeScript.src
}

type axeResult struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  string `json:"target"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

// Audit runs axe-core on the current page and fails the test on every
// violation, whatever its impact (rule, impact, elements), unless
// axeWaivers accepts it with a reason (then it is logged with that reason).
func (b *Tab) Audit(page string) {
	b.t.Helper()
	src := axeSource(b.t)
	var loaded bool
	b.Eval(`typeof window.axe !== 'undefined'`, &loaded)
	if !loaded {
		b.Run(chromedp.Evaluate(src+"\n;true", nil))
	}
	tags := `['` + strings.Join(axeTags, `','`) + `']`
	var violations []axeResult
	b.Run(chromedp.Evaluate(`axe.run(document, {runOnly: {type: 'tag', values: `+tags+`}, resultTypes: ['violations']}).then(r =>
		r.violations.map(v => ({id: v.id, impact: v.impact || '', help: v.help,
			nodes: v.nodes.map(n => ({target: n.target.map(String).join(' '), summary: n.failureSummary || ''}))})))`,
		&violations, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	for _, v := range violations {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s: axe %s (%s): %s", page, v.ID, v.Impact, v.Help)
		for _, n := range v.Nodes {
			fmt.Fprintf(&sb, "\n\t%s\n\t\t%s", n.Target, strings.ReplaceAll(n.Summary, "\n", "\n\t\t"))
		}
		if why := waived(v.ID, page); why != "" {
			b.t.Log(sb.String() + "\n\twaived: " + why)
		} else {
			b.t.Error(sb.String())
		}
	}
}

// focused is the id of the element that has the focus.
func (b *Tab) focused() string {
	b.t.Helper()
	var id string
	b.Eval(`document.activeElement ? document.activeElement.id : ''`, &id)
	return id
}

// TestAccessibility audits every main page with axe-core in both
// languages, and checks that a form with an error puts the focus on the
// first invalid field.
func TestAccessibility(t *testing.T) {
	axeSource(t)
	f := newFixture(t)
	for _, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			check := func(b *Tab, name string) {
				t.Helper()
				// The bank's pages too: they follow the app's choice.
				if l, _ := b.LangDir(); l != lang {
					t.Errorf("%s: page in %q", name, l)
				}
				b.Audit(name)
			}

			// Signed out.
			b := f.Tab(t, lang, "")
			b.Go(routes.Home)
			b.Wait("landing")
			check(b, "landing")
			b.Go(routes.SignIn)
			check(b, "sign-in")
			b.Type("#email", f.User)
			b.Type("#password", "wrong password")
			b.Click("auth-submit")
			b.Wait("form-error")
			check(b, "sign-in with an error")
			if id := b.focused(); id != "email" {
				t.Errorf("sign-in with an error: focus on %q, want the email field", id)
			}
			b.Go(routes.SignUp)
			check(b, "sign-up")
			b.Type("#email", "not-an-email")
			b.Type("#password", password)
			b.Click("auth-submit")
			b.Wait("form-error")
			check(b, "sign-up with an error")
			if id := b.focused(); id != "email" {
				t.Errorf("sign-up with an error: focus on %q, want the email field", id)
			}
			b.Go("/no-such-page")
			b.Wait("message")
			check(b, "not found")

			// A new user: empty wallet.
			b = f.Tab(t, lang, "")
			b.SignUp("new-" + lang + "@example.com")
			check(b, "wallet (empty)")
			// Its address not confirmed yet: the transfer page says so
			// instead of offering the form.
			b.Go(routes.Transfer)
			b.Wait("transfer-unconfirmed")
			check(b, "transfer (address not confirmed)")

			// The user with a history.
			b = f.Tab(t, lang, f.User)
			b.Go(routes.Wallet)
			b.Wait("history")
			check(b, "wallet (history)")
			b.Go(routes.WalletTopUps)
			b.Wait("payment-row")
			check(b, "all payments")
			b.Go(routes.WalletTopUps + "?from=1404/13/40")
			b.Wait("filter-error")
			check(b, "all payments with an error")
			b.Go(routes.TopUp)
			check(b, "top-up")
			b.Type(tid("amount"), "abc")
			b.Click("topup-submit")
			b.Wait("amount-error")
			check(b, "top-up with an error")
			if id := b.focused(); id != "amount" {
				t.Errorf("top-up with an error: focus on %q, want the amount field", id)
			}
			b.Type(tid("amount"), "99000")
			b.Click("topup-submit")
			b.Wait("gateway-failed")
			check(b, "gateway failed")
			// A fresh tab (and test deadline) for each group of audits:
			// axe is slow on a busy machine.
			b.CheckNoProblems()
			b = f.Tab(t, lang, f.User)
			for i, p := range []struct{ name, url, hook string }{
				{"result (credited)", f.CreditedReturn, "result-received"},
				{"receipt (credited)", routes.TopUpPage(f.Credited.PublicID), "result-received"},
				{"result (failed)", f.FailedReturn, "result-failed"},
				{"receipt (failed)", routes.TopUpPage(f.Failed.PublicID), "result-failed"},
				{"result (the time ran out)", f.ExpiredReturn, "result-failed"},
				{"receipt (the time ran out)", routes.TopUpPage(f.Expired.PublicID), "result-failed"},
				{"result (pending)", f.PendingReturn, "result-pending"},
				{"receipt (pending)", routes.TopUpPage(f.Pending.PublicID), "result-pending"},
				{"bank page", f.OpenPayURL, "bank-pay"},
				{"bank (already paid)", f.PaidPayURL, "bank-paid"},
				{"receipt (not paid yet)", routes.TopUpPage(f.openPublicID(t)), "result-unpaid"},
			} {
				if i == 4 || i == 8 {
					b.CheckNoProblems()
					b = f.Tab(t, lang, f.User)
				}
				b.Go(p.url)
				b.Wait(p.hook)
				check(b, p.name)
			}
			// API access: empty, with an error, with a new token and a list
			// (a tab of its own: each tab has one test time-out).
			b = f.Tab(t, lang, f.User)
			b.Go(routes.Tokens)
			b.Wait("token-form")
			check(b, "api tokens")
			b.Click("token-submit")
			b.Wait("token-error")
			check(b, "api tokens with an error")
			b.Type(tid("token-name"), "phone")
			b.Type(tid("token-password"), password)
			b.Click("token-submit")
			b.Wait("new-token")
			check(b, "api tokens (new token)")
			// Webhooks: empty, with an error, with a new signing secret.
			b.Go(routes.Webhooks)
			b.Wait("webhook-form")
			check(b, "webhooks")
			b.Click("webhook-submit")
			b.Wait("webhook-error")
			check(b, "webhooks with an error")
			b.Type(tid("webhook-url"), "https://partner.example/kifpool")
			b.Type(tid("webhook-password"), password)
			b.Click("webhook-submit")
			b.Wait("webhook-secret")
			check(b, "webhooks (new secret)")
			// The account and its password change (with an error).
			b.CheckNoProblems()
			b = f.Tab(t, lang, f.User)
			b.Go(routes.Account)
			b.Wait("change-password-link")
			check(b, "account")
			// A bidi override cannot be typed: set it as a paste would.
			var set bool
			b.Eval(`(() => { const i = document.querySelector('[data-testid=name-input]'); i.value = "\u202Eevil"; return true })()`, &set)
			b.Click("name-save")
			b.Wait("name-error")
			check(b, "account with a refused display name")
			b.Go(routes.AccountPassword)
			b.Wait("password-form")
			check(b, "password change")
			b.Type("#current_password", "not the password")
			b.Type("#new_password", "another long password")
			b.Click("password-submit")
			b.Wait("form-error")
			check(b, "password change with an error")
			if id := b.focused(); id != "current_password" {
				t.Errorf("password change with an error: focus on %q, want the current password", id)
			}
			// Pay and close: the bank's last page.
			b.CheckNoProblems()
			b = f.Tab(t, lang, f.User)
			b.StartTopUp("40000")
			b.Click("bank-pay-close")
			b.Wait("bank-closed")
			check(b, "bank (paid, window to close)")

			// The admin: the second factor (enrolment the first time, then
			// the check), the recovery codes, the console.
			b = f.Tab(t, lang, "")
			b.SignIn(f.Admin, password)
			b.Go(routes.Admin)
			b.Wait("two-factor")
			check(b, "admin second factor")
			var enrolling bool
			b.Eval(`document.querySelector("#enrol_code") !== null`, &enrolling)
			if enrolling {
				// The operator's one-time enrolment code, then the secret.
				b.Type("#enrol_code", apptest.EnrolmentCode(t, f.App.DB, f.Admin))
				b.Click("two-factor-submit")
				b.Run(chromedp.WaitVisible("#code", chromedp.ByQuery))
				check(b, "admin enrolment")
			}
			b.Type("#code", apptest.AdminTOTPCode(t, f.App.DB, f.Admin))
			b.Click("two-factor-submit")
			b.Run(chromedp.WaitNotPresent(tid("two-factor"), chromedp.ByQuery))
			if strings.Contains(b.Path(), routes.AdminTwoFactor) {
				b.Wait("recovery-codes")
				check(b, "admin recovery codes")
			}
			b.Go(routes.Admin)
			b.Wait("admin-payments")
			check(b, "admin")
			b.Go(routes.AdminTokens)
			b.Wait("tokens")
			check(b, "admin api tokens")
			b.Go(routes.AdminWebhooks)
			b.Wait("webhook-queue")
			check(b, "admin webhooks")
			b.CheckNoProblems()
		})
	}
}
