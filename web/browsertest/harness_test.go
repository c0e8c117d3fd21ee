package browsertest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testwait"
)

// testTimeout bounds every browser test (queries otherwise wait forever).
const testTimeout = 60 * time.Second

const password = "correct horse battery"

// The one browser of this test binary, started by the first test that
// needs it and closed by TestMain.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// make test-quick: no Chromium (make test runs these).
		fmt.Println("web/browsertest: skipped under -short (make test-quick); make test runs it")
		os.Exit(0)
	}
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// required reports whether a missing browser or axe-core is a failure.
func required() bool { return os.Getenv("REQUIRE_BROWSER") == "1" }

// unavailable skips the test, or fails it under REQUIRE_BROWSER=1.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if required() {
		t.Fatalf("REQUIRE_BROWSER=1 but %s", msg)
	}
	t.Skipf("browser test skipped: %s (REQUIRE_BROWSER=1 makes this a failure)", msg)
}

func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

func startBrowser() (context.Context, func(), error) {
	path := chromiumPath()
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("no chromium at %s (apt-get install chromium, or set CHROMIUM): %v", path, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 800),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	cancel := func() { cancelBrowser(); cancelAlloc() }
	// The first Run starts the browser; a deadline on its context would
	// stop the browser when it expires, so wait for it separately.
	errc := make(chan error, 1)
	go func() { errc <- chromedp.Run(ctx) }()
	select {
	case err := <-errc:
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("start %s: %w", path, err)
		}
	case <-time.After(60 * time.Second):
		cancel()
		return nil, nil, fmt.Errorf("start %s: no answer in 60s", path)
	}
	return ctx, cancel, nil
}

// browserContext returns the shared browser, skipping (or failing) the
// test when there is none.
func browserContext(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(func() {
		browser.ctx, browser.cancel, browser.err = startBrowser()
	})
	if browser.err != nil {
		unavailable(t, "%v", browser.err)
	}
	return browser.ctx
}

var artifacts struct {
	once sync.Once
	dir  string
	err  error

	mu   sync.Mutex
	seen map[string]int // failure captures per test name
}

// artifactsDir is $BROWSER_ARTIFACTS, or a temporary folder that outlives
// the test run (so that the logged paths can be opened).
func artifactsDir() (string, error) {
	artifacts.once.Do(func() {
		if d := os.Getenv("BROWSER_ARTIFACTS"); d != "" {
			artifacts.dir, artifacts.err = d, os.MkdirAll(d, 0o755)
			return
		}
		artifacts.dir, artifacts.err = os.MkdirTemp("", "kifpool-browser-artifacts-")
	})
	return artifacts.dir, artifacts.err
}

// Tab is one browser tab, in a browser context of its own (own cookies:
// every app runs on 127.0.0.1 and cookies ignore the port), with the
// test's deadline.
type Tab struct {
	t    *testing.T
	ctx  context.Context // with the test's deadline
	tab  context.Context // without it, for diagnostics after a timeout
	Base string          // the app's URL; paths are relative to it

	cancels []func() // run at the end of the test, last first

	mu       sync.Mutex
	problems []string // JavaScript exceptions and CSP violations
}

// NewTab opens a tab on base (the app's URL). On failure, a full-page
// screenshot and the page's HTML are saved and their paths logged.
func NewTab(t *testing.T, base string) *Tab {
	t.Helper()
	bctx := browserContext(t)
	tabCtx, cancelTab, err := newIsolatedTab(bctx)
	if err != nil {
		t.Fatalf("open tab: %v", err)
	}
	b := &Tab{t: t, tab: tabCtx, Base: base}
	chromedp.ListenTarget(tabCtx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.problem("javascript exception: %s", ev.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if strings.Contains(ev.Entry.Text, "Content Security Policy") {
				b.problem("CSP: %s (%s)", ev.Entry.Text, ev.Entry.URL)
			}
		}
	})
	// Create the tab before the deadline applies (see chromedp.Run), and
	// make the browser ask for English, as many phones in Iran do: the app
	// is Persian all the same until the person chooses English.
	if err := chromedp.Run(tabCtx, network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": "en-US,en;q=0.9"})); err != nil {
		cancelTab()
		t.Fatalf("open tab: %v", err)
	}
	ctx, cancel := context.WithTimeout(tabCtx, testTimeout)
	b.ctx = ctx
	b.cancels = append(b.cancels, cancelTab, cancel)
	t.Cleanup(func() {
		if t.Failed() {
			b.saveFailure()
		}
		for i := len(b.cancels) - 1; i >= 0; i-- {
			b.cancels[i]()
		}
	})
	return b
}

func (b *Tab) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// CheckNoProblems fails the test if a page threw a JavaScript exception or
// the browser reported a Content-Security-Policy violation.
func (b *Tab) CheckNoProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("browser reported: %s", p)
	}
	b.problems = nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// saveFailure writes a full-page screenshot and the HTML of the page.
func (b *Tab) saveFailure() {
	dir, err := artifactsDir()
	if err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(b.tab, 15*time.Second)
	defer cancel()
	var png []byte
	var html, loc string
	if err := chromedp.Run(ctx, chromedp.Location(&loc), chromedp.FullScreenshot(&png, 100)); err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	_ = chromedp.Run(ctx, chromedp.Evaluate(`document.documentElement.outerHTML`, &html))
	name := unsafeName.ReplaceAllString(b.t.Name(), "_")
	artifacts.mu.Lock()
	if artifacts.seen == nil {
		artifacts.seen = map[string]int{}
	}
	artifacts.seen[name]++
	if n := artifacts.seen[name]; n > 1 { // a test's second tab
		name += "-" + strconv.Itoa(n)
	}
	artifacts.mu.Unlock()
	base := filepath.Join(dir, name)
	if err := os.WriteFile(base+".png", png, 0o644); err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	_ = os.WriteFile(base+".html", []byte(html), 0o644)
	b.t.Logf("failure screenshot of %s: %s.png (HTML: %s.html)", loc, base, base)
}

// newIsolatedTab opens a tab in a new browser context (like an incognito
// window: its own cookies and cache), disposed with the tab. New headless
// chromium refuses a tab in a new context without a window of its own,
// hence CreateTarget with newWindow instead of chromedp.WithNewBrowserContext.
func newIsolatedTab(bctx context.Context) (context.Context, func(), error) {
	ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	exec := cdp.WithExecutor(ctx, chromedp.FromContext(bctx).Browser)
	bcID, err := target.CreateBrowserContext().WithDisposeOnDetach(true).Do(exec)
	if err != nil {
		return nil, nil, fmt.Errorf("create browser context: %w", err)
	}
	dispose := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = target.DisposeBrowserContext(bcID).Do(cdp.WithExecutor(ctx, chromedp.FromContext(bctx).Browser))
	}
	id, err := target.CreateTarget("about:blank").WithBrowserContextID(bcID).WithNewWindow(true).Do(exec)
	if err != nil {
		dispose()
		return nil, nil, fmt.Errorf("create tab: %w", err)
	}
	tabCtx, cancelTab := chromedp.NewContext(bctx, chromedp.WithTargetID(id))
	return tabCtx, func() { cancelTab(); dispose() }, nil
}

// Run runs actions, failing the test on error.
func (b *Tab) Run(actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v (page %s)", err, b.location())
	}
}

// location is the current URL, for messages (never blocks long).
func (b *Tab) location() string {
	ctx, cancel := context.WithTimeout(b.tab, 3*time.Second)
	defer cancel()
	var u string
	if err := chromedp.Run(ctx, chromedp.Location(&u)); err != nil {
		return "?"
	}
	return u
}

// Back presses the browser's Back button and waits for the previous page,
// loaded anew or restored from the back/forward cache (no load event then,
// which chromedp.NavigateBack would wait for forever).
func (b *Tab) Back() {
	b.t.Helper()
	var cur int64
	var entries []*page.NavigationEntry
	b.Run(chromedp.NavigationEntries(&cur, &entries))
	if cur == 0 {
		b.t.Fatalf("Back: no previous page")
	}
	want := entries[cur-1]
	b.Run(page.NavigateToHistoryEntry(want.ID))
	var state, href string
	if err := testwait.UntilContext(b.ctx, testTimeout, "Back to "+want.URL, func() bool {
		var now int64
		err := chromedp.Run(b.ctx, chromedp.NavigationEntries(&now, &entries),
			chromedp.Evaluate(`document.readyState`, &state), chromedp.Location(&href))
		return err == nil && now == cur-1 && state == "complete" && href == want.URL
	}); err != nil {
		b.t.Fatalf("%v: still at %s (%s)", err, href, state)
	}
	b.reattach()
}

// reattach opens a new DevTools session on the tab. A page restored from
// the back/forward cache announces its frame after its document, so
// chromedp's session is left without a document root and its queries wait
// forever; a new session starts from the frame tree as it is. The old
// session stays attached (its listeners keep working).
func (b *Tab) reattach() {
	b.t.Helper()
	id := chromedp.FromContext(b.tab).Target.TargetID
	tabCtx, cancelTab := chromedp.NewContext(browserContext(b.t), chromedp.WithTargetID(id))
	if err := chromedp.Run(tabCtx); err != nil {
		cancelTab()
		b.t.Fatalf("reattach to the tab: %v", err)
	}
	deadline, _ := b.ctx.Deadline()
	ctx, cancel := context.WithDeadline(tabCtx, deadline)
	b.tab, b.ctx = tabCtx, ctx
	b.cancels = append(b.cancels, cancel, cancelTab)
}

// tid is the CSS selector of a data-testid hook.
func tid(id string) string { return `[data-testid="` + id + `"]` }

func (b *Tab) abs(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return b.Base + path
}

// Go navigates to a path of the app (or an absolute URL) and waits for
// the page to load.
func (b *Tab) Go(path string) {
	b.t.Helper()
	b.Run(chromedp.Navigate(b.abs(path)))
}

// Wait waits until the hook is visible.
func (b *Tab) Wait(testid string) {
	b.t.Helper()
	b.Run(chromedp.WaitVisible(tid(testid), chromedp.ByQuery))
}

// Click clicks the hook (once it is visible).
func (b *Tab) Click(testid string) {
	b.t.Helper()
	b.Run(chromedp.Click(tid(testid), chromedp.ByQuery))
}

// Type focuses a field and types text into it, key by key. It focuses
// and then sends key events rather than using chromedp.SendKeys, which
// reads the node's attributes without their lock while chromedp's event
// loop updates them (a data race in chromedp v0.16.0, query.go: it
// failed the -race browser suite once, right after Clear had changed
// the field's value attribute).
func (b *Tab) Type(sel, text string) {
	b.t.Helper()
	b.Run(chromedp.Clear(sel, chromedp.ByQuery), chromedp.WaitVisible(sel, chromedp.ByQuery),
		chromedp.Focus(sel, chromedp.ByQuery), chromedp.KeyEvent(text))
}

// Attr reads an attribute of the first element matching sel.
func (b *Tab) Attr(sel, name string) string {
	b.t.Helper()
	var v string
	var ok bool
	b.Run(chromedp.WaitReady(sel, chromedp.ByQuery), chromedp.AttributeValue(sel, name, &v, &ok, chromedp.ByQuery))
	if !ok {
		b.t.Fatalf("%s has no %s attribute (page %s)", sel, name, b.location())
	}
	return v
}

// Text is the visible text of the first element matching sel.
func (b *Tab) Text(sel string) string {
	b.t.Helper()
	var s string
	b.Run(chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

// Eval evaluates a JavaScript expression into out.
func (b *Tab) Eval(js string, out any) {
	b.t.Helper()
	b.Run(chromedp.Evaluate(js, out))
}

// Path is the current page's path and query.
func (b *Tab) Path() string {
	b.t.Helper()
	var p string
	b.Eval(`location.pathname + location.search`, &p)
	return p
}

// LangDir reads <html lang dir>.
func (b *Tab) LangDir() (lang, dir string) {
	b.t.Helper()
	var v []string
	b.Eval(`[document.documentElement.lang, document.documentElement.dir]`, &v)
	return v[0], v[1]
}

// SignUp creates an account through the form and lands on the wallet.
func (b *Tab) SignUp(email string) {
	b.t.Helper()
	b.Go(routes.SignUp)
	b.Type("#email", email)
	b.Type("#password", password)
	b.Click("auth-submit")
	b.Wait("balance")
}

// SignIn signs in through the form.
func (b *Tab) SignIn(email, pw string) {
	b.t.Helper()
	b.Go(routes.SignIn)
	b.Type("#email", email)
	b.Type("#password", pw)
	b.Click("auth-submit")
	b.Run(chromedp.WaitNotPresent(tid("auth-form"), chromedp.ByQuery))
}

// PassAdminChecks passes the admin console's second factor through its
// form, with a code the admin's authenticator would show (enrolling on
// the first visit, which then shows the recovery codes).
func (b *Tab) PassAdminChecks(db *store.DB, email string) {
	b.t.Helper()
	b.PassAdminChecksAt(db, email, nil)
}

// PassAdminChecksAt is PassAdminChecks for an app whose clock is now.
func (b *Tab) PassAdminChecksAt(db *store.DB, email string, now func() time.Time) {
	b.t.Helper()
	b.Go(routes.AdminTwoFactor)
	b.Wait("two-factor")
	var enrolling bool
	b.Eval(`document.querySelector("#enrol_code") !== null`, &enrolling)
	if enrolling {
		// Not enrolled: the operator's one-time enrolment code first.
		b.Type("#enrol_code", apptest.EnrolmentCode(b.t, db, email))
		b.Click("two-factor-submit")
		b.Run(chromedp.WaitVisible("#code", chromedp.ByQuery))
	}
	b.Type("#code", apptest.AdminTOTPCodeAt(b.t, db, email, now))
	b.Click("two-factor-submit")
	b.Run(chromedp.WaitNotPresent(tid("two-factor"), chromedp.ByQuery))
}

// Balance opens the wallet and reads the exact balance in rials.
func (b *Tab) Balance() int64 {
	b.t.Helper()
	b.Go(routes.Wallet)
	return b.shownBalance()
}

func (b *Tab) shownBalance() int64 {
	b.t.Helper()
	s := b.Attr(tid("balance"), "data-rials")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		b.t.Fatalf("balance data-rials %q", s)
	}
	return n
}

// FillTopUp opens the top-up form and types an amount.
func (b *Tab) FillTopUp(amount string) {
	b.t.Helper()
	b.Go(routes.TopUp)
	b.Type(tid("amount"), amount)
}

// StartTopUp fills the form, submits it and waits for the bank's page;
// it returns the authority the bank shows.
func (b *Tab) StartTopUp(amount string) string {
	b.t.Helper()
	b.FillTopUp(amount)
	b.Click("topup-submit")
	b.Wait("bank-pay")
	return b.Text(tid("bank-authority"))
}

// Status waits for the payment status block and returns its data-status.
func (b *Tab) Status() string {
	b.t.Helper()
	b.Wait("payment-status")
	return b.Attr(tid("payment-status"), "data-status")
}

// DoubleClick presses the mouse twice in quick succession on the element,
// as a person double-clicking does: two clicks reach the page before the
// first one's navigation can replace it.
func DoubleClick(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var nodes []*cdp.Node
		if err := chromedp.Nodes(sel, &nodes, chromedp.ByQuery).Do(ctx); err != nil {
			return err
		}
		if err := dom.ScrollIntoViewIfNeeded().WithNodeID(nodes[0].NodeID).Do(ctx); err != nil {
			return err
		}
		quads, err := dom.GetContentQuads().WithNodeID(nodes[0].NodeID).Do(ctx)
		if err != nil {
			return err
		}
		if len(quads) == 0 || len(quads[0]) != 8 {
			return errors.New("double click: element has no box")
		}
		q := quads[0]
		x, y := (q[0]+q[2]+q[4]+q[6])/4, (q[1]+q[3]+q[5]+q[7])/4
		for _, n := range []int64{1, 2} {
			for _, typ := range []input.MouseType{input.MousePressed, input.MouseReleased} {
				if err := input.DispatchMouseEvent(typ, x, y).WithButton(input.Left).WithClickCount(n).Do(ctx); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// noHorizontalScroll fails when the page is wider than the viewport.
func (b *Tab) noHorizontalScroll(what string) {
	b.t.Helper()
	var w []int
	b.Eval(`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`, &w)
	if w[0] > w[1] {
		var wide []string
		// Elements past the edge, leaving out those inside a box that
		// scrolls or clips them (a wide table in its scroll box) and the
		// skip link parked off screen.
		b.Eval(`Array.from(document.querySelectorAll('body *')).filter(e => {
			const r = e.getBoundingClientRect();
			const w = document.documentElement.clientWidth; // innerWidth grows with the overflow on a phone
			if (!(r.right > w + 0.5 || r.left < -0.5) || e.classList.contains('skip')) return false;
			for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
				if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return false;
			}
			return true;
		}).slice(0, 8).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + String(e.className).replace(/ +/g, '.') : '') + ' ' + Math.round(e.getBoundingClientRect().left) + '..' + Math.round(e.getBoundingClientRect().right))`, &wide)
		b.t.Errorf("%s: horizontal scroll (scrollWidth %d > clientWidth %d); elements outside: %v", what, w[0], w[1], wide)
	}
}
