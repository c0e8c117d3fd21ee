package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Persian is the product's language: a browser asking for English gets
// Persian until the person chooses English (issue 10, point 6); the
// choice sticks, and the switch is on every page.
func TestAcceptLanguageDoesNotChoose(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c := app.NewClient(t)
	get := func(path, acceptLanguage string) apptest.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, app.URL+path, nil)
		req.Header.Set("Accept-Language", acceptLanguage)
		return c.Do(req)
	}
	for _, al := range []string{"en", "en-US,en;q=0.9", "de, en;q=0.5"} {
		r := get(routes.SignIn, al)
		if r.Status != http.StatusOK || pageLang(r.Body) != "fa rtl" {
			t.Errorf("Accept-Language %q: %d, page not in Persian", al, r.Status)
		}
		if apptest.Parse(r.Body).TestID("lang-switch") == nil {
			t.Errorf("Accept-Language %q: no language switch", al)
		}
	}
	// The person chooses English: it sticks, whatever the browser asks.
	if r := get(routes.SignIn+"?lang=en", "fa"); r.Status != http.StatusSeeOther {
		t.Fatalf("choose English: %d", r.Status)
	}
	if r := get(routes.SignIn, "fa-IR"); pageLang(r.Body) != "en ltr" {
		t.Errorf("after choosing English: page not in English")
	}
	c.SignUp("persian-first@example.com")
	for _, path := range []string{routes.Wallet, routes.TopUp} {
		r := get(path, "fa")
		if pageLang(r.Body) != "en ltr" || apptest.Parse(r.Body).TestID("lang-switch") == nil {
			t.Errorf("%s: not in English or no switch", path)
		}
	}
}

// pageLang is the language and direction of a page's html element
// ("fa rtl").
func pageLang(body string) string {
	h := apptest.Parse(body).Elements("html")
	if len(h) != 1 {
		return ""
	}
	return h[0].Attr("lang") + " " + h[0].Attr("dir")
}
