package pay_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

var cspNonce = regexp.MustCompile(`'nonce-([A-Za-z0-9_-]+)'`)

// A replay of an ended top-up's return link without a session is served
// from the kept neutral page: every answer has its own CSP nonce (the one
// its header names, in every script tag), the rest of the page is the
// same bytes, the language still follows the visitor, and a signed-in
// visitor who is not the payer still gets a page of their own (their
// header), never the kept one.
func TestNeutralReplayKeepsPerRequestValues(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	_, payURL := app.StartTopUp(t, "payer@example.com", "25000")
	back, err := app.Server.Bank.Pay(apptest.Authority(payURL))
	if err != nil {
		t.Fatal(err)
	}
	anon := app.NewClient(t)
	var pages []string
	seen := map[string]bool{}
	for range 3 {
		r := anon.Get(back)
		if r.Status != http.StatusOK || apptest.TopUpStatus(r.Body) != "credited" || apptest.Parse(r.Body).TestID("result-neutral") == nil {
			t.Fatalf("replay: %d %q", r.Status, apptest.TopUpStatus(r.Body))
		}
		m := cspNonce.FindStringSubmatch(r.Header.Get("Content-Security-Policy"))
		if m == nil {
			t.Fatalf("no nonce in the CSP: %q", r.Header.Get("Content-Security-Policy"))
		}
		nonce := m[1]
		if seen[nonce] {
			t.Fatalf("nonce %q answered twice", nonce)
		}
		seen[nonce] = true
		if n := strings.Count(r.Body, `nonce="`+nonce+`"`); n != strings.Count(r.Body, `nonce="`) || n == 0 {
			t.Fatalf("the page's scripts carry another nonce than its header's (%d of %d)", n, strings.Count(r.Body, `nonce="`))
		}
		if r.Header.Get("Cache-Control") != "no-store" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("headers: %v", r.Header)
		}
		pages = append(pages, strings.ReplaceAll(r.Body, nonce, "NONCE"))
	}
	if pages[0] != pages[1] || pages[1] != pages[2] {
		t.Fatalf("the kept page changed between replays")
	}
	if strings.Contains(pages[0], `data-testid="signout"`) || !strings.Contains(pages[0], `lang="fa"`) {
		t.Fatalf("the anonymous page: %s", pages[0])
	}
	// The link to the other language follows each request's own query.
	if r := anon.Get(back + "&x=y1"); !strings.Contains(apptest.Parse(r.Body).TestID("lang-switch").Attr("href"), "x=y1") {
		t.Fatalf("the other-language link is not this request's: %q", apptest.Parse(r.Body).TestID("lang-switch").Attr("href"))
	}
	en := app.NewClient(t)
	en.Get(back + "&lang=en")
	if r := en.Get(back); !strings.Contains(r.Body, `lang="en"`) || apptest.Parse(r.Body).TestID("result-neutral") == nil {
		t.Fatalf("the visitor's language is not followed")
	}
	stranger := app.NewClient(t)
	stranger.SignUp("stranger@example.com")
	r := stranger.Get(back)
	if apptest.Parse(r.Body).TestID("result-neutral") == nil || apptest.Parse(r.Body).TestID("signout") == nil {
		t.Fatalf("a signed-in stranger got the visitor's kept page")
	}
}
