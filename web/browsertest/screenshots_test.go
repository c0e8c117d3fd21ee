package browsertest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
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
	// A fixed clock, seeded bank and fixed ids: an unchanged UI gives
	// unchanged files. The clock is in the future so that the session
	// cookies it dates stay valid for the browser, which lives in real time.
	at := time.Date(2030, 3, 25, 9, 30, 0, 0, time.UTC)
	f := newFixtureAt(t, at)
	// A live reset link for the "choose a new password" page (only its
	// hash is stored, as the app stores it).
	const resetToken = "screenshot-reset-link-0123456789abcdefghijkl"
	sum := sha256.Sum256([]byte(resetToken))
	if err := f.App.DB.Gorm.Exec(`INSERT INTO password_resets (user_id, token_hash, created_at, expires_at)
		SELECT id, ?, ?, ? FROM users WHERE email = ?`, hex.EncodeToString(sum[:]), at, at.Add(30*time.Minute), f.User).Error; err != nil {
		t.Fatal(err)
	}
	devices := []struct {
		name string
		view chromedp.Action
	}{
		{"phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))},
		{"desktop", chromedp.EmulateViewport(1280, 800)},
	}
	for _, lang := range []string{"fa", "en"} {
		for _, d := range devices {
			// Fresh tabs per device: switching the emulated viewport of a
			// right-to-left page from phone to desktop leaves it scrolled.
			user := f.Tab(t, lang, f.User, d.view)
			admin := f.Tab(t, lang, f.Admin, d.view)
			shot := func(b *Tab, name, url, hook string, prepare ...func()) {
				t.Helper()
				b.Go(url)
				b.Wait(hook)
				for _, p := range prepare {
					p()
				}
				// Same pixels every time: the typeface loaded, no caret or
				// focus ring, nothing scrolled.
				b.Run(chromedp.Evaluate(`document.fonts.ready.then(() => { if (document.activeElement) document.activeElement.blur(); scrollTo(0, 0); return true; })`, nil,
					func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
				if d.name == "phone" {
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
				path := filepath.Join(dir, name+"-"+lang+"-"+d.name+".png")
				if err := os.WriteFile(path, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s (%d KB)", path, len(png)/1024)
			}
			shot(user, "wallet", "/wallet", "history")
			shot(user, "topup", "/wallet/topup", "amount", func() { user.Type(tid("amount"), "50000") })
			// The bank's countdown runs in JavaScript: without it the page
			// shows the (fixed) time left when it was served.
			user.Run(emulation.SetScriptExecutionDisabled(true))
			shot(user, "bank", f.ShotPayURL, "bank-pay")
			user.Run(emulation.SetScriptExecutionDisabled(false))
			shot(user, "receipt", "/payments/"+f.Credited.PublicID, "result-received")
			shot(user, "pending", f.PendingReturn, "result-pending")
			shot(user, "failed", f.FailedReturn, "result-failed")
			shot(user, "expired", f.ExpiredReturn, "failure-cause")
			shot(user, "account", "/account", "account-email")
			shot(user, "tokens", "/account/tokens", "token-form")
			shot(admin, "admin", "/admin", "admin-payments")
			admin.CheckNoProblems()
			// The admin console's pages, in a tab of their own (each tab has
			// one test's time).
			console := f.Tab(t, lang, f.Admin, d.view)
			shot(console, "admin-payments", "/admin/payments", "payment-row")
			shot(console, "admin-payment", "/admin/payments/"+f.Credited.PublicID, "timeline")
			shot(console, "admin-user", "/admin/users/"+strconv.FormatInt(f.Credited.UserID, 10), "user-detail")
			shot(console, "admin-audit", "/admin/audit", "audit-filter")
			console.CheckNoProblems()
			// The account's pages (issue 18), in a tab of their own.
			account := f.Tab(t, lang, f.User, d.view)
			shot(account, "payments", "/wallet/payments", "payment-row")
			shot(account, "unpaid", "/payments/"+f.openPublicID(t), "result-unpaid")
			shot(account, "account", "/account", "receipts-form")
			shot(account, "password", "/account/password", "password-form")
			account.CheckNoProblems()
			anon := f.Tab(t, lang, "", d.view)
			shot(anon, "forgot", "/password/forgot", "forgot-form")
			shot(anon, "reset", "/password/reset/"+resetToken, "reset-form")
			anon.CheckNoProblems()
			user.CheckNoProblems()
		}
	}
}
