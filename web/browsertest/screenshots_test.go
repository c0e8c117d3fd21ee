package browsertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// TestScreenshots writes PNGs of the main pages, in both languages, on a
// phone (360 CSS pixels wide, at 2x) and a desktop (1280×800), into
// $SCREENSHOTS_DIR (relative paths from the module root), named like
// wallet-fa-phone.png. `make screenshots` runs it; without SCREENSHOTS_DIR
// it is skipped.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("SCREENSHOTS_DIR")
	if dir == "" {
		t.Skip("screenshots not requested: set SCREENSHOTS_DIR (make screenshots)")
	}
	if !filepath.IsAbs(dir) {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	eachMainPage(t, allDevices, func(b *Tab, name, lang, device string) {
		if device == "phone" {
			b.noHorizontalScroll(name + "-" + lang)
		}
		// The whole page only when it is taller than the screen:
		// smaller files, and chromium's capture beyond the
		// viewport shifts short right-to-left pages sideways.
		var png []byte
		var tall bool
		b.Eval(`document.documentElement.scrollHeight > innerHeight`, &tall)
		if tall {
			b.Run(chromedp.FullScreenshot(&png, 100))
		} else {
			b.Run(chromedp.CaptureScreenshot(&png))
		}
		path := filepath.Join(dir, name+"-"+lang+"-"+device+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (%d KB)", path, len(png)/1024)
	})
}

// TestPagesUseOnlyShippedFonts: every text of every page of the
// screenshots, in both languages, is drawn with a typeface the app ships
// (static/: Vazirmatn, DejaVu Sans Mono), never with one of the machine's
// fonts, as Chromium's platform-font report for each element says. A
// character the shipped fonts lack falls back to a system font, which
// differs between machines: the screenshots would too.
func TestPagesUseOnlyShippedFonts(t *testing.T) {
	eachMainPage(t, allDevices[1:], func(b *Tab, name, lang, _ string) {
		used := b.platformFonts()
		if len(used) == 0 {
			t.Errorf("%s (%s): no font reported for any text", name, lang)
		}
		// One line per machine font, with some of the texts it drew.
		type foreign struct {
			glyphs float64
			texts  []string
		}
		byFont := map[string]*foreign{}
		var fonts []string
		for _, u := range used {
			if u.IsCustomFont {
				continue
			}
			key := fmt.Sprintf("%q (%s)", u.FamilyName, u.PostScriptName)
			f := byFont[key]
			if f == nil {
				f = &foreign{}
				byFont[key] = f
				fonts = append(fonts, key)
			}
			f.glyphs += u.GlyphCount
			if u.text != "" && len(f.texts) < 3 && !slices.Contains(f.texts, u.text) {
				f.texts = append(f.texts, u.text)
			}
		}
		for _, key := range fonts {
			t.Errorf("%s (%s): %.0f glyphs drawn with the machine's font %s, not a shipped one: %q",
				name, lang, byFont[key].glyphs, key, byFont[key].texts)
		}
	})
}

// fontUse is one font an element's text was drawn with.
type fontUse struct {
	css.PlatformFontUsage
	text string // the element's text, for the message
}

// platformFonts reports, for every element of the page, the fonts
// Chromium drew its text with (CSS.getPlatformFontsForNode), once the
// page's web fonts are loaded.
func (b *Tab) platformFonts() []fontUse {
	b.t.Helper()
	b.Run(chromedp.Evaluate(`document.fonts.ready.then(() => true)`, nil,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	var nodes []*cdp.Node
	b.Run(css.Enable(), chromedp.Nodes("body, body *", &nodes, chromedp.ByQueryAll))
	var out []fontUse
	seen := map[string]bool{}
	b.Run(chromedp.ActionFunc(func(ctx context.Context) error {
		for _, n := range nodes {
			fonts, err := css.GetPlatformFontsForNode(n.NodeID).Do(ctx)
			if err != nil {
				return fmt.Errorf("platform fonts of <%s>: %w", n.LocalName, err)
			}
			for _, f := range fonts {
				key := f.PostScriptName + fmt.Sprint(f.IsCustomFont)
				if f.IsCustomFont && seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, fontUse{PlatformFontUsage: *f, text: nodeText(n)})
			}
		}
		return nil
	}))
	return out
}

// nodeText is an element's own text (its text children), for messages.
func nodeText(n *cdp.Node) string {
	var sb strings.Builder
	for _, c := range n.Children {
		if c.NodeType == cdp.NodeTypeText {
			sb.WriteString(c.NodeValue)
		}
	}
	return strings.Join(strings.Fields(sb.String()), " ")
}

type device struct {
	name string
	view chromedp.Action
}

var allDevices = []device{
	{"phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))},
	{"desktop", chromedp.EmulateViewport(1280, 800)},
}

// eachMainPage opens each main page of the app (and the sandbox bank's
// page) on each device in both languages, on the fixed fixture of the
// screenshots, and calls visit once the page is still: the typeface
// loaded, no caret or focus ring, nothing scrolled.
func eachMainPage(t *testing.T, devices []device, visit func(b *Tab, name, lang, device string)) {
	// A fixed clock, seeded bank and fixed ids: an unchanged UI gives
	// unchanged files. The clock is in the future so that the session
	// cookies it dates stay valid for the browser, which lives in real time.
	at := time.Date(2030, 3, 25, 9, 30, 0, 0, time.UTC)
	f := newFixtureAt(t, at)
	// A live reset link for the "choose a new password" page (only its
	// hash is stored, as the app stores it).
	const resetToken = "screenshot-reset-link-0123456789abcdefghijkl"
	sum := sha256.Sum256([]byte(resetToken))
	authtest.AddReset(t, f.App.DB, f.User, hex.EncodeToString(sum[:]), at, at.Add(30*time.Minute))
	// The top-up form as a fresh clone shows it: the default GATEWAYS
	// (the built-in sandbox bank offering all four gateways), on the same
	// fixed clock (issue 29, item 1).
	four := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{Server: server.Options{Now: func() time.Time { return at }}})
	if _, err := four.Server.Auth.SignUp(context.Background(), f.User, password, auth.RoleUser, "fa"); err != nil {
		t.Fatal(err)
	}
	// Cash-out on the same app (PAYOUTS=sandbox by default): the user's
	// accounts and withdrawals, and an admin for the queue.
	cash := cashOutShots(t, four, f.User, at)
	// Two people for the transfer pages: one with money, one without.
	for _, email := range []string{"reza@example.com", "mina@example.com"} {
		u, err := f.App.Server.Auth.SignUp(context.Background(), email, password, auth.RoleUser, "fa")
		if err != nil {
			t.Fatal(err)
		}
		if email == "reza@example.com" {
			w, err := f.App.Server.Wallets.ForUser(context.Background(), u.ID)
			if err != nil {
				t.Fatal(err)
			}
			ledgertest.Fund(t, f.App.DB, w.AccountID, 5_000_000, email)
		}
	}
	// A merchant with charges paid, authorized and waiting, and two payers
	// for its checkout: one with enough money, one short of it. The
	// pages shown carry no charge id and the clock is fixed.
	checkout := screenshotCharges(t, f.App)
	for _, lang := range []string{"fa", "en"} {
		for _, d := range devices {
			// Fresh tabs per device: switching the emulated viewport of a
			// right-to-left page from phone to desktop leaves it scrolled.
			user := f.Tab(t, lang, f.User, d.view)
			admin := f.Tab(t, lang, f.Admin, d.view)
			shot := func(b *Tab, name, url, hook string, prepare ...func()) {
				t.Helper()
				if url != "" {
					b.Go(url)
				}
				b.Wait(hook)
				for _, p := range prepare {
					p()
				}
				b.Run(chromedp.Evaluate(`document.fonts.ready.then(() => { if (document.activeElement) document.activeElement.blur(); scrollTo(0, 0); return true; })`, nil,
					func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
				visit(b, name, lang, d.name)
			}
			shot(user, "wallet", routes.Wallet, "history")
			// The bank's countdown runs in JavaScript: without it the page
			// shows the (fixed) time left when it was served.
			user.Run(emulation.SetScriptExecutionDisabled(true))
			shot(user, "bank", f.ShotPayURL, "bank-pay")
			user.Run(emulation.SetScriptExecutionDisabled(false))
			shot(user, "receipt", routes.TopUpPage(f.Credited.PublicID), "result-received")
			shot(user, "pending", f.PendingReturn, "result-pending")
			shot(user, "failed", f.FailedReturn, "result-failed")
			shot(user, "expired", f.ExpiredReturn, "failure-cause")
			shot(user, "account", routes.Account, "account-email")
			shot(user, "tokens", routes.Tokens, "token-form")
			shot(admin, "admin", routes.Admin, "admin-payments")
			admin.CheckNoProblems()
			// The admin console's pages, in a tab of their own (each tab has
			// one test's time).
			console := f.Tab(t, lang, f.Admin, d.view)
			shot(console, "admin-payments", routes.AdminTopUps, "payment-row")
			shot(console, "admin-payment", routes.AdminTopUp(f.Credited.PublicID), "timeline")
			shot(console, "admin-user", routes.AdminUser(f.Credited.UserID), "user-detail")
			shot(console, "admin-audit", routes.AdminAudit, "audit-filter")
			console.CheckNoProblems()
			// The account's pages (issue 18), in a tab of their own.
			account := f.Tab(t, lang, f.User, d.view)
			shot(account, "payments", routes.WalletTopUps, "payment-row")
			shot(account, "unpaid", routes.TopUpPage(f.openPublicID(t)), "result-unpaid")
			shot(account, "account", routes.Account, "receipts-form")
			shot(account, "password", routes.AccountPassword, "password-form")
			account.CheckNoProblems()
			// The four-gateway form, in a tab of its own on the default app.
			fresh := NewTab(t, four.URL)
			fresh.Run(d.view)
			fresh.Go(routes.SignIn + "?lang=" + lang)
			fresh.SignIn(f.User, password)
			shot(fresh, "topup", routes.TopUp, "gateway-choice", func() { fresh.Type(tid("amount"), "50000") })
			fresh.CheckNoProblems()
			// A transfer: the form filled in, its confirmation step, its
			// receipt (ids differ between runs: a transfer's id is random).
			sender := f.Tab(t, lang, "reza@example.com", d.view)
			shot(sender, "transfer", routes.Transfer, "transfer-form", func() {
				sender.Type("#to", "mina@example.com")
				sender.Type(tid("amount"), "10000")
				sender.Type("#note", "کتاب")
			})
			sender.Click("transfer-review")
			shot(sender, "transfer-confirm", "", "transfer-confirm")
			sender.Click("transfer-submit")
			shot(sender, "transfer-receipt", "", "transfer-receipt")
			sender.CheckNoProblems()
			// Cash-out (issue 30): the bank accounts, the withdraw form
			// filled in and its confirmation with the arrival estimate,
			// a paid withdrawal's receipt, and the admin's queue.
			payee := NewTab(t, four.URL)
			payee.Run(d.view)
			payee.Go(routes.SignIn + "?lang=" + lang)
			payee.SignIn(f.User, password)
			shot(payee, "bank-accounts", routes.BankAccounts, "bank-accounts")
			shot(payee, "withdraw", routes.Withdraw, "withdraw-form", func() { payee.Type(tid("amount"), "150000") })
			payee.Click("withdraw-continue")
			shot(payee, "withdraw-confirm", "", "withdraw-confirm")
			shot(payee, "withdrawal", routes.Withdrawal(cash.paid), "withdrawal-receipt")
			payee.CheckNoProblems()
			cashier := NewTab(t, four.URL)
			cashier.Run(d.view)
			cashier.Go(routes.SignIn + "?lang=" + lang)
			cashier.SignIn(cash.admin, password)
			cash.passAdmin(t, cashier)
			shot(cashier, "admin-withdrawals", routes.AdminWithdrawals, "wd-review-item")
			shot(cashier, "admin-withdrawal", routes.AdminWithdrawal(cash.paid), "admin-withdrawal-events")
			cashier.CheckNoProblems()
			// The checkout, with enough money and short of it, and the
			// merchant's page (issue 33 §2).
			payer := f.Tab(t, lang, "sara.payer@example.com", d.view)
			shot(payer, "checkout", routes.Checkout(checkout), "checkout-pay")
			payer.CheckNoProblems()
			short := f.Tab(t, lang, "omid.payer@example.com", d.view)
			shot(short, "checkout-short", routes.Checkout(checkout), "checkout-short")
			short.CheckNoProblems()
			shop := f.Tab(t, lang, "bookshop@example.com", d.view)
			shot(shop, "merchant", routes.Merchant, "merchant-charges")
			shop.CheckNoProblems()
			anon := f.Tab(t, lang, "", d.view)
			shot(anon, "landing", routes.Home, "landing")
			shot(anon, "forgot", routes.PasswordForgot, "forgot-form")
			shot(anon, "reset", routes.PasswordReset(resetToken), "reset-form")
			anon.CheckNoProblems()
			user.CheckNoProblems()
		}
	}
}

// cashOut is the screenshots' cash-out fixture: a paid withdrawal (its
// receipt) and an admin for the queue.
type cashOut struct {
	app    *apptest.App
	at     time.Time
	paid   string // the paid withdrawal's public id
	admin  string
	passed bool
}

// cashOutShots gives email (a user of app, whose clock stands at at) a
// verified and a pending bank account, money, a withdrawal paid through
// the built-in bank's payout provider and one above the review amount
// waiting for an admin, each with a fixed public id; and signs up an
// admin.
func cashOutShots(t *testing.T, app *apptest.App, email string, at time.Time) *cashOut {
	t.Helper()
	ctx := context.Background()
	db := app.DB
	uid := authtest.UserID(t, db, email)
	acct := withdrawaltest.VerifiedAccount(t, db, uid, withdrawaltest.Sheba("017", 4_210_042))
	withdrawaltest.PendingAccount(t, db, uid, withdrawaltest.Sheba("012", 4_210_043))
	withdrawaltest.RestampAccounts(t, db, uid, at.Add(-26*time.Hour))
	withdrawaltest.FundUser(t, db, uid, 9_000_000_000)
	request := func(rials int64, id string) withdrawal.Withdrawal {
		t.Helper()
		r, err := app.Server.Withdrawals.Request(ctx, withdrawal.Request{UserID: uid, FormToken: formtoken.New(), BankAccountID: acct, AmountRials: rials})
		if err != nil {
			t.Fatal(err)
		}
		withdrawaltest.Rename(t, db, r.Withdrawal.PublicID, id)
		return withdrawaltest.Get(t, db, id)
	}
	paid := request(2_500_000, "wd_screenshotpaidwithdrawal")
	request(650_000_000, "wd_screenshotreviewwithdraw")
	if _, err := app.Server.PayoutWorker.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	w := withdrawaltest.Get(t, db, paid.PublicID)
	if _, err := app.Server.Bank.Payouts().Settle(w.Provider, w.PublicID); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Server.Withdrawals.Resolve(ctx, w.ID, withdrawal.ActorWorker); err != nil {
		t.Fatal(err)
	}
	if w = withdrawaltest.Get(t, db, paid.PublicID); w.Status != withdrawal.StatusPaid {
		t.Fatalf("the screenshots' withdrawal is %s, not paid", w.Status)
	}
	c := &cashOut{app: app, at: at, paid: paid.PublicID, admin: "cashier@example.com"}
	if _, err := app.Server.Auth.SignUp(ctx, c.admin, password, auth.RoleAdmin, "fa"); err != nil {
		t.Fatal(err)
	}
	return c
}

// passAdmin passes the admin's second factor in the tab: through the
// page the first time, then by marking the new session (the fixed clock
// never gives a fresh code).
func (c *cashOut) passAdmin(t *testing.T, b *Tab) {
	t.Helper()
	if !c.passed {
		b.PassAdminChecksAt(c.app.DB, c.admin, func() time.Time { return c.at })
		c.passed = true
		return
	}
	authtest.PassSecondFactor(t, c.app.DB, c.admin, c.at)
}

// screenshotCharges makes the merchant "Book Shop" (bookshop@example.com)
// with a charge paid, one authorized and one waiting at its checkout,
// and the payers sara.payer@example.com (enough money) and omid.payer@example.com
// (short); it returns the waiting charge's id.
func screenshotCharges(t *testing.T, app *apptest.App) string {
	t.Helper()
	ctx := context.Background()
	ids := map[string]int64{}
	for _, p := range []struct {
		email string
		rials int64
	}{{"bookshop@example.com", 0}, {"sara.payer@example.com", 3_000_000}, {"omid.payer@example.com", 200_000}} {
		u, err := app.Server.Auth.SignUp(ctx, p.email, password, auth.RoleUser, "fa")
		if err != nil {
			t.Fatal(err)
		}
		ids[p.email] = u.ID
		if p.rials > 0 {
			w, err := app.Server.Wallets.ForUser(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			ledgertest.Fund(t, app.DB, w.AccountID, p.rials, p.email)
		}
	}
	shop := ids["bookshop@example.com"]
	if _, _, err := app.Server.Charges.MakeMerchant(ctx, shop, "Book Shop", nil); err != nil {
		t.Fatal(err)
	}
	var waiting string
	for i, c := range []struct {
		order   string
		rials   int64
		capture charge.CaptureMethod
		pay     bool
	}{
		{"1001", 450_000, charge.CaptureAutomatic, true},
		{"1002", 1_200_000, charge.CaptureManual, true},
		{"1003", 850_000, charge.CaptureAutomatic, false},
	} {
		res, err := app.Server.Charges.Create(ctx, charge.CreateRequest{MerchantUserID: shop, FormToken: fmt.Sprintf("screenshot-charge-%d", i),
			AmountRials: c.rials, Description: "سفارش کتاب " + c.order, OrderID: c.order, Capture: c.capture})
		if err != nil {
			t.Fatal(err)
		}
		if c.pay {
			if _, err := app.Server.Charges.Confirm(ctx, ids["sara.payer@example.com"], res.Charge.PublicID); err != nil {
				t.Fatal(err)
			}
		} else {
			waiting = res.Charge.PublicID
		}
	}
	return waiting
}
