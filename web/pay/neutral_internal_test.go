package pay

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// The kept page, put back together with a request's nonce and CSRF token,
// is byte for byte the page rendered for that request.
func TestNeutralPageSegmentsRebuildThePage(t *testing.T) {
	n := newNeutralPages(2)
	pg := views.Page{Lang: i18n.Lang("en"), TitleKey: views.ResultTitleKey("credited")}
	v := views.TopUpView{PublicID: "abcdefgh", Status: "credited", Neutral: true}
	render := func(pg views.Page) []byte {
		var b bytes.Buffer
		if err := views.Result(pg, v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	tmpl := pg
	tmpl.Nonce, tmpl.CSRF, tmpl.SwitchLangURL = n.nonce, n.csrf, n.swtch
	segs := n.split(render(tmpl))
	for _, req := range []struct{ nonce, csrf, swtch string }{
		{"AAAAAAAAAAAAAAAAAAAAAA", "tok1", routes.TopUpReturn("x") + "?lang=fa"},
		{"BBBBBBBBBBBBBBBBBBBBBB", "", routes.TopUpReturn("x") + "?Authority=A%26B&Status=%22OK%22&lang=fa"},
		{"CCCCCCCCCCCCCCCCCCCCCC", "t\"<&", "//evil.example/<script>?x='&lang=en"},
	} {
		var got bytes.Buffer
		nonces := 0
		for _, s := range segs {
			got.Write(s.text)
			switch s.then {
			case 'n':
				got.WriteString(templ.EscapeString(req.nonce))
				nonces++
			case 'c':
				got.WriteString(templ.EscapeString(req.csrf))
			case 's':
				got.WriteString(templ.EscapeString(views.LocalHref(req.swtch)))
			}
		}
		want := pg
		want.Nonce, want.CSRF, want.SwitchLangURL = req.nonce, req.csrf, req.swtch
		if !bytes.Equal(got.Bytes(), render(want)) {
			t.Fatalf("rebuilt page differs from the rendered one:\n%s\n---\n%s", got.Bytes(), render(want))
		}
		if nonces == 0 {
			t.Fatal("no nonce placeholder found: the page's scripts would carry none")
		}
	}
	if len(n.nonce) < 32 || n.nonce == newNeutralPages(2).nonce {
		t.Fatal("placeholders must be long and random per process")
	}
}

// The kept pages are bounded: more top-ups replayed than it holds never
// grow the cache past its maximum.
func TestNeutralPagesAreBounded(t *testing.T) {
	n := newNeutralPages(2)
	app := fiber.New()
	app.Get("/:q", func(c *fiber.Ctx) error {
		pg := views.Page{Lang: i18n.Lang("en"), TitleKey: views.ResultTitleKey("credited"), SwitchLangURL: "/x?lang=fa", Nonce: "N"}
		return n.write(c, pg, views.TopUpView{PublicID: "abcdefgh" + c.Params("q"), Status: "credited", Neutral: true})
	})
	for i, q := range []string{"a", "b", "a", "c", "d", "e"} {
		res, err := app.Test(httptest.NewRequest(http.MethodGet, "/"+q, nil))
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %v %v", i, res, err)
		}
		_ = res.Body.Close()
		n.mu.RLock()
		size := len(n.pages)
		n.mu.RUnlock()
		if size > 2 {
			t.Fatalf("after %d requests the cache holds %d pages, more than its 2", i+1, size)
		}
	}
	if r := n.rendered(); r != 5 {
		t.Fatalf("%d renders, want 5 (the second \"a\" served from the cache)", r)
	}
}
